//! The help view: every key from the keymap's tables, what each view shows, and how a
//! timeline cell sums up its span.

use crate::tui::app::App;
use crate::tui::keymap::{KEYS, TIMELINE_KEYS};
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
        "findings and measured signals; enter: the finding on its timeline",
    ),
    (
        "7 Timeline",
        "one row per CPU (or LLC/node, folded), time across",
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
    lines.push(Line::styled("timeline keys", pal.title()));
    for (k, what) in TIMELINE_KEYS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {k:<18}"), pal.title()),
            Span::raw(*what),
        ]));
    }
    lines.push(Line::styled(
        "timeline cells (a cell sums up its span: the most waiting at any instant, else the time running)",
        pal.title(),
    ));
    for l in super::timeline::LEGEND {
        lines.push(Line::raw(format!("  {l}")));
    }
    let skip = app.scroll.min(lines.len().saturating_sub(1));
    f.render_widget(
        Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()),
        area,
    );
}
