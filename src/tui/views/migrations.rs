//! The migrations view: migrations per second as a reason x level-crossed matrix, with row
//! and column totals, the most migrated tasks, then the kernel stacks no reason matched.

use super::{rate, waiting};
use crate::tui::app::App;
use crate::tui::term::Palette;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// Width of a number column.
const COL: usize = 8;
/// Most migrated tasks shown.
const TASK_ROWS: usize = 5;

/// Draws the migrations view.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let Some(s) = app.current() else {
        return waiting(f, area, app);
    };
    let m = &s.migrations;
    let len = s.len_ns();
    let mut cols: Vec<String> = app.topo.levels.iter().map(|l| l.key.clone()).collect();
    for k in m.by_level.keys() {
        if !cols.contains(k) {
            cols.push(k.clone());
        }
    }
    let mut reasons: Vec<(&String, &u64)> = m.by_reason.iter().filter(|(_, c)| **c > 0).collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    // The reason column holds the longest name whole (nohz_idle_balance), never cut.
    let rw = reasons
        .iter()
        .map(|(r, _)| r.len())
        .max()
        .unwrap_or(0)
        .max("reason \\ level".len())
        + 1;
    // As many level columns as fit next to the reason and total columns.
    let fit = (area.width as usize).saturating_sub(rw + COL) / COL;
    cols.truncate(fit.max(1));
    let mut lines = vec![Line::styled(
        format!(
            "migrations/s: {} total, {} classified from context (no stack){}",
            rate(m.total, len),
            m.context_classified,
            match m.unseen {
                0 => String::new(),
                n => format!(", {} unseen", rate(n, len)),
            }
        ),
        pal.title(),
    )];
    let mut head = format!("{:<rw$}", "reason \\ level");
    for c in &cols {
        head.push_str(&format!("{c:>COL$}"));
    }
    head.push_str(&format!("{:>COL$}", "total"));
    lines.push(Line::styled(head, pal.title()));
    for (r, total) in &reasons {
        let mut row = format!("{r:<rw$}");
        let cells = m.matrix.get(*r);
        for c in &cols {
            let n = cells.and_then(|x| x.get(c)).copied().unwrap_or(0);
            let cell = if n == 0 {
                ".".to_string()
            } else {
                rate(n, len)
            };
            row.push_str(&format!("{cell:>COL$}"));
        }
        row.push_str(&format!("{:>COL$}", rate(**total, len)));
        lines.push(Line::raw(row));
    }
    if reasons.is_empty() {
        lines.push(Line::styled("no migrations in this interval", pal.dim()));
    }
    let mut foot = format!("{:<rw$}", "all");
    for c in &cols {
        foot.push_str(&format!(
            "{:>COL$}",
            rate(m.by_level.get(c).copied().unwrap_or(0), len)
        ));
    }
    foot.push_str(&format!("{:>COL$}", rate(m.total, len)));
    lines.push(Line::styled(foot, pal.title()));
    lines.push(Line::raw(""));
    let tasks = app.current_tasks();
    lines.push(Line::styled(
        format!(
            "most migrated tasks (moves; fork placements not counted): {}",
            if tasks.is_empty() { "none" } else { "" }
        ),
        pal.title(),
    ));
    for t in tasks.iter().take(TASK_ROWS) {
        lines.push(Line::raw(format!(
            "{:>8} {:<16} {:>12} {:>8}/s",
            t.pid,
            t.comm.clone().unwrap_or_else(|| "?".into()),
            t.tgid.map_or("-".into(), |g| format!("tgid {g}")),
            rate(t.count, len)
        )));
    }
    lines.push(Line::styled(
        format!("unknown stacks ({}):", m.unknown_stacks.len()),
        pal.title(),
    ));
    for u in &m.unknown_stacks {
        let frames = if u.frames.is_empty() {
            "(frames not described)".to_string()
        } else {
            u.frames.join(" <- ")
        };
        lines.push(Line::raw(format!("{:>6}x  {frames}", u.count)));
    }
    f.render_widget(Paragraph::new(lines), area);
}
