//! The help view: every key from the keymap's tables, what each view shows, and how a
//! timeline cell sums up its span. Every line is wrapped here, at word boundaries, so that one
//! line is one row and the scroll (`app.scroll`, in rows) reaches the last one.

use crate::tui::app::App;
use crate::tui::keymap::{KEYS, TIMELINE_KEYS};
use crate::tui::term::Palette;
use ratatui::layout::Rect;
use ratatui::style::Style;
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
        "one row per CPU (per LLC or node on wide machines), time across",
    ),
];

/// Columns before a description: two of margin and the key's 18.
const INDENT: usize = 20;

/// One key or view and its description, the description wrapped at word boundaries to
/// `width` columns under its own column (never cut at the screen's edge).
fn entry(k: &str, what: &str, width: u16, key_style: Style) -> Vec<Line<'static>> {
    wrapped(what, INDENT, width)
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let head = if i == 0 {
                format!("  {k:<18}")
            } else {
                " ".repeat(INDENT)
            };
            Line::from(vec![Span::styled(head, key_style), Span::raw(r)])
        })
        .collect()
}

/// Draws the help view.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let mut lines = vec![Line::styled("keys", pal.title())];
    for (k, what) in KEYS {
        lines.extend(entry(k, what, area.width, pal.title()));
    }
    lines.push(Line::styled("views", pal.title()));
    for (v, what) in VIEWS {
        lines.extend(entry(v, what, area.width, Style::default()));
    }
    lines.push(Line::styled("timeline keys", pal.title()));
    for (k, what) in TIMELINE_KEYS {
        lines.extend(entry(k, what, area.width, pal.title()));
    }
    lines.extend(text("title line", 0, area.width, pal.title()));
    lines.extend(text(
        &format!(
            "PAUSED, N BACK (an older interval) or END; the interval; comm= the filter; live, \
             self: lbscope's own CPU over the last {} s, percent of one core (its BPF programs \
             run in the traced tasks and are not in it); the clock of the interval shown",
            crate::selfcost::WINDOW
        ),
        2,
        area.width,
        Style::default(),
    ));
    lines.extend(text(
        "timeline cells (a cell sums up its span: the most waiting at any instant, else the time running)",
        0,
        area.width,
        pal.title(),
    ));
    for l in super::timeline::LEGEND {
        lines.extend(text(l, 2, area.width, Style::default()));
    }
    // The last page ends on the last line: scrolling stops where it comes into view.
    let max = lines.len().saturating_sub(usize::from(area.height));
    app.scroll_max.set(max);
    let skip = app.scroll.min(max);
    f.render_widget(
        Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()),
        area,
    );
}

/// `what` wrapped at word boundaries to `width`, each row `indent` columns in.
fn text(what: &str, indent: usize, width: u16, style: Style) -> Vec<Line<'static>> {
    wrapped(what, indent, width)
        .into_iter()
        .map(|r| Line::styled(format!("{}{r}", " ".repeat(indent)), style))
        .collect()
}

/// `what`'s rows for a column `indent` columns in on a screen `width` wide (20 at least).
fn wrapped(what: &str, indent: usize, width: u16) -> Vec<String> {
    let room = super::text_room(width).saturating_sub(indent).max(20);
    super::wrap_words(what, room, usize::MAX)
}
