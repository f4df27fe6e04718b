//! The help view: every key from the keymap's table, and what each view shows.

use crate::tui::app::App;
use crate::tui::keymap::KEYS;
use crate::tui::term::Palette;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

const VIEWS: &[(&str, &str)] = &[
    (
        "1 Overview",
        "CPUs, migrations/s, runqlat p50/p99, idle-while-wait, history (s, w)",
    ),
    (
        "2 Domains",
        "sched-domain tree, groups, the selected domain's history",
    ),
    (
        "3 Latency",
        "runqlat histogram: all, a CPU, a domain, a process",
    ),
    ("4 Migrations", "reason x level matrix, unknown stacks"),
    (
        "5 Findings",
        "findings and measured signals; enter: evidence",
    ),
];

/// Draws the help view.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let mut lines = vec![Line::styled("keys", pal.title())];
    for (k, what) in KEYS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {k:<18}"), pal.title()),
            Span::raw(*what),
        ]));
    }
    lines.push(Line::styled("views", pal.title()));
    for (v, what) in VIEWS {
        lines.push(Line::raw(format!("  {v:<18}{what}")));
    }
    let skip = app.scroll.min(lines.len().saturating_sub(1));
    f.render_widget(
        Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()),
        area,
    );
}
