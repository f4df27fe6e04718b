//! `diff --tui`'s timeline view: the baseline's first run above, the new side's below, each
//! a CPU grid as the timeline view draws it, at the same zoom and the same time from its own
//! run's start; the cursor is the last column of both, described per side under its grid.

use super::timeline::{cell_text, describe, grid_lines, legend_lines, per_text, reason_letter};
use crate::analyze::timeline::MarkKind;
use crate::tui::app::App;
use crate::tui::diff_timeline::DiffSide;
use crate::tui::term::Palette;
use crate::tui::timeline::{rows, Row};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// Seconds from a run's start, to the millisecond (negative: before it).
fn secs(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

/// What the cursor cell `[a, b)` of `row` holds on one side: its state, its migrations
/// (reason letters) and the balancer's searches that found an imbalance.
fn cursor_text(side: &DiffSide, row: &Row, a: u64, b: u64) -> String {
    let tl = &side.timeline;
    let mut moves = String::new();
    let mut found = 0;
    for m in tl.marks(a, b) {
        match &m.kind {
            MarkKind::Migrate {
                src, dst, reason, ..
            } if row.cpus.contains(*src as usize) || row.cpus.contains(*dst as usize) => {
                moves.push(reason_letter(*reason));
            }
            MarkKind::Balance {
                cpu,
                balanced: false,
                pid: None,
                ..
            } if row.cpus.contains(*cpu as usize) => found += 1,
            _ => {}
        }
    }
    let mut s = format!(
        "{}: {}",
        row.label.trim_start_matches(['+', '-', ' ']),
        describe(tl, row, a, b)
    );
    if !moves.is_empty() {
        s.push_str(&format!(", migrations {moves}"));
    }
    if found > 0 {
        s.push_str(&format!(", {found} balancer searches found an imbalance"));
    }
    s
}

/// One side's lines in `height` text lines: a title, the grid and the cursor line.
fn side_lines(
    side: &DiffSide,
    app: &App,
    (offset, cell_ns, cols): (u64, u64, usize),
    label_w: usize,
    height: usize,
    pal: Palette,
) -> Vec<Line<'static>> {
    let rows = rows(&side.topo, &app.tl);
    let sel = app.tl.row.min(rows.len().saturating_sub(1));
    let grid_h = height.saturating_sub(2).max(1);
    let first = super::scroll_start(sel, grid_h, rows.len());
    let end_ns = side.start_ns + offset + 1;
    let end_ns = side.start_ns + (end_ns - side.start_ns).div_ceil(cell_ns) * cell_ns;
    let past = if offset >= side.len_ns() {
        "  (past this run's end)"
    } else {
        ""
    };
    let mut out = vec![Line::styled(
        format!(
            "{}  rows {}-{} of {}{past}",
            side.label,
            first + 1,
            (first + grid_h).min(rows.len()),
            rows.len()
        ),
        pal.title(),
    )];
    let shown = &rows[first..(first + grid_h).min(rows.len())];
    out.extend(grid_lines(
        &side.timeline,
        shown,
        Some(sel - first),
        (end_ns, cell_ns, cols),
        label_w,
        pal,
    ));
    if let Some(r) = rows.get(sel) {
        out.push(Line::raw(format!(
            "{:<label_w$}{}",
            "^",
            cursor_text(side, r, end_ns - cell_ns, end_ns)
        )));
    }
    out
}

/// Draws the diff timeline, or says why there is none.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let Some(d) = app.diff_timelines.as_deref() else {
        f.render_widget(
            Paragraph::new("no timeline: the recordings could not be read again"),
            area,
        );
        return;
    };
    let cell_ns = app.tl.cell_ns();
    let offset = d.offset(cell_ns);
    let label_w = d
        .sides
        .iter()
        .flat_map(|s| rows(&s.topo, &app.tl))
        .map(|r| r.label.len())
        .max()
        .unwrap_or(6)
        + 1;
    let cols = (area.width as usize).saturating_sub(label_w).max(1);
    // The cursor's cell is the last column; cells start at whole multiples of their length
    // from each run's start.
    let end = ((offset + 1).div_ceil(cell_ns) * cell_ns) as i64;
    let start = end - (cell_ns * cols as u64) as i64;
    let mut lines = vec![Line::styled(
        format!(
            "cell {}  t={}..{} s from each run's start  cursor {} s  {}",
            cell_text(cell_ns),
            secs(start),
            secs(end),
            secs(offset as i64),
            per_text(d.sides.iter().map(|s| &s.topo), &app.tl)
        ),
        pal.title(),
    )];
    let legend = legend_lines(2, area.width).map_or_else(Vec::new, <[_]>::to_vec);
    let body = (area.height as usize).saturating_sub(1 + legend.len());
    let half = body / 2;
    for (i, side) in d.sides.iter().enumerate() {
        let h = if i == 0 { half } else { body - half };
        let mut l = side_lines(side, app, (offset, cell_ns, cols), label_w, h, pal);
        l.truncate(h);
        lines.extend(l);
    }
    for l in legend {
        lines.push(Line::styled(l.to_string(), pal.dim()));
    }
    f.render_widget(Paragraph::new(lines), area);
}
