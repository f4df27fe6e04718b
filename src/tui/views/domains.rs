//! The domains view: the sched-domain tree (level, span, groups) with each domain's
//! idle-while-others-wait time and p99 latency, and below it the groups of the selected
//! domain with what is known of them (rows from `tui::state`) under the balancer's counters of
//! its level in the interval; between them, when the screen has room, the selected domain's
//! history (idle-while-others-wait movable and pinned, p99, the model's imbalance) over the
//! window.

use super::{history_chart, scroll_start, us, waiting};
use crate::tui::app::App;
use crate::tui::history;
use crate::tui::state::{self, DomainRow, MODEL_NA};
use crate::tui::term::Palette;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// Draws the domains view.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    if app.current().is_none() && app.ended {
        return waiting(f, area, app);
    }
    let rows = state::domains(&app.topo, app.current());
    if rows.is_empty() {
        f.render_widget(
            Paragraph::new("no sched domains: a single CPU, or the topology was not read"),
            area,
        );
        return;
    }
    let sel = app.domain_sel.min(rows.len() - 1);
    let counters = state::level_counters(app.current(), &rows[sel].level);
    let groups = rows[sel].groups.len() as u16 + u16::from(counters.is_some());
    // The group table gets its rows, plus header and title, within half the screen.
    let detail_h = (groups + 3).min(area.height / 2).max(4);
    let snaps = app.window_snaps();
    let chart = history::domain_chart(&rows[sel].level, &rows[sel].span, &snaps);
    // The chart's title, four rows and axis, when the tree keeps at least 3 rows.
    let chart_h = if area.height >= detail_h + 9 && !snaps.is_empty() {
        6
    } else {
        0
    };
    let [tree, hist, detail] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(chart_h),
        Constraint::Length(detail_h),
    ])
    .areas(area);
    draw_tree(f, tree, &rows, sel, pal);
    if chart_h > 0 {
        history_chart(f, hist, app, &chart, &snaps, 1, pal);
    }
    draw_groups(f, detail, &rows[sel], counters, pal);
}

fn draw_tree(f: &mut Frame, area: Rect, rows: &[DomainRow], sel: usize, pal: Palette) {
    let mut lines = vec![Line::styled(
        format!(
            "{:<18} {:<14} {:>6} {:>9} {:>8} {:>9}  imbalance",
            "level", "span", "groups", "idle-wait", "pinned", "p99"
        ),
        pal.title(),
    )];
    let height = area.height.saturating_sub(1) as usize;
    let start = scroll_start(sel, height, rows.len());
    for (i, d) in rows.iter().enumerate().skip(start).take(height) {
        let level = format!("{}{} ({})", "  ".repeat(d.depth), d.level, d.level_name);
        let text = format!(
            "{:<18} {:<14} {:>6} {:>8.1}% {:>7.1}% {:>9}  {}",
            level,
            d.span.to_string(),
            d.groups.len(),
            d.movable * 100.0,
            d.pinned * 100.0,
            d.p99_us.map_or("-".into(), us),
            d.imbalance.map_or("n/a".into(), |v| v.to_string()),
        );
        let st = if i == sel {
            pal.selected()
        } else if d.movable >= 0.05 {
            pal.hot()
        } else {
            Default::default()
        };
        lines.push(Line::styled(text, st));
    }
    f.render_widget(Paragraph::new(lines), area);
}

fn draw_groups(f: &mut Frame, area: Rect, d: &DomainRow, counters: Option<String>, pal: Palette) {
    let block = Block::default()
        .borders(Borders::TOP)
        .title(format!("groups of {} {}", d.level, d.span));
    let inner = block.inner(area);
    f.render_widget(block, area);
    // The level's balancer counters of the interval first (all of its domains).
    let mut lines: Vec<Line> = counters.into_iter().map(Line::raw).collect();
    lines.push(Line::styled(
        format!(
            "{:<14} {:>5} {:>5} {:>5} {:>5} {:>6} {:>6}  class",
            "span", "idle", "run", "nr", "wait", "util", "cap"
        ),
        pal.title(),
    ));
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |x| x.to_string());
    for g in &d.groups {
        let run = g.known_cpus - g.idle_cpus;
        lines.push(Line::from(vec![
            Span::raw(format!(
                "{:<14} {:>5} {:>5} {:>5} {:>5} {:>6} {:>6}  ",
                g.span.to_string(),
                g.idle_cpus,
                run,
                g.nr_running,
                g.waiting,
                opt(g.util),
                opt(g.capacity),
            )),
            match &g.class {
                Some(c) => Span::raw(c.clone()),
                None => Span::styled(MODEL_NA, pal.dim()),
            },
        ]));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
