//! The overview: headline figures of the interval (migrations per second by reason,
//! run-queue latency p50/p99, idle-while-others-wait, findings, lost events, probe mode),
//! a recording's metadata in replay, the history chart of the last `window` intervals
//! (the series `s` picks), and one cell per CPU (idle or running, tasks waiting).

use super::{history_chart, rate, us, waiting};
use crate::tui::app::{App, SourceInfo};
use crate::tui::history;
use crate::tui::state::{self, MODEL_NA};
use crate::tui::term::Palette;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// Width of one CPU cell: "cpu  15 run  +12  ".
const CELL: u16 = 18;

/// Draws the overview.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let Some(s) = app.current() else {
        let mut lines = meta_lines(app, area.width);
        lines.insert(0, Line::raw("collecting the first interval..."));
        if app.ended {
            waiting(f, area, app);
        } else {
            f.render_widget(Paragraph::new(lines), area);
        }
        return;
    };
    let mut lines = Vec::new();
    let len = s.len_ns();
    let mut reasons: Vec<(&String, &u64)> = s
        .migrations
        .by_reason
        .iter()
        .filter(|(_, c)| **c > 0)
        .collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let total = rate(s.migrations.total, len);
    let mut used = "migrations/s ".len() + total.chars().count();
    let mut mig = vec![Span::styled("migrations/s ", pal.title()), Span::raw(total)];
    // The busiest reasons, up to five, as many as fit whole (the Migrations view has all).
    for (r, c) in reasons.iter().take(5) {
        let part = format!("  {r} {}", rate(**c, len));
        used += part.chars().count();
        if used >= usize::from(area.width) {
            break;
        }
        mig.push(Span::raw(part));
    }
    lines.push(Line::from(mig));
    let l = &s.runqlat_us;
    lines.push(Line::from(vec![
        Span::styled("runqlat ", pal.title()),
        Span::raw(format!(
            "p50 {}  p99 {}  max {}  ({} samples)",
            us(l.p50),
            us(l.p99),
            us(l.max),
            l.count
        )),
    ]));
    let idle = match state::headline_idle(&app.topo, s) {
        Some((lvl, span, fr)) => {
            let st = if fr >= 0.05 { pal.hot() } else { pal.busy() };
            vec![
                Span::styled("idle while others wait ", pal.title()),
                Span::styled(format!("{:.1}%", fr * 100.0), st),
                Span::raw(format!(" ({lvl} {span})")),
            ]
        }
        None => vec![
            Span::styled("idle while others wait ", pal.title()),
            Span::raw("-"),
        ],
    };
    lines.push(Line::from(idle));
    let findings = if state::has_model(s) {
        state::findings_text(s)
    } else {
        format!(
            "{MODEL_NA} ({} measured signals)",
            state::measured_signals(&app.topo, s).len()
        )
    };
    let lost_style = if s.lost_events > 0 {
        pal.hot()
    } else {
        Default::default()
    };
    lines.push(Line::from(vec![
        Span::styled("findings ", pal.title()),
        Span::raw(findings),
        Span::styled("  lost events ", pal.title()),
        Span::styled(s.lost_events.to_string(), lost_style),
    ]));
    if s.switch_gaps > 0 || s.migrations.unseen > 0 {
        lines.push(Line::from(vec![
            Span::styled("unrecorded ", pal.title()),
            Span::styled(
                format!(
                    "{} switch gaps, {} unseen migrations (no BPF run there)",
                    s.switch_gaps, s.migrations.unseen
                ),
                pal.hot(),
            ),
        ]));
    }
    lines.extend(meta_lines(app, area.width));
    let head = lines.len() as u16;
    let snaps = app.window_snaps();
    let chart = history::chart(app.series, &app.topo, &snaps);
    // Two text rows per sparkline on a tall screen; the CPU grid keeps a title and 2 rows.
    let height = if area.height >= 34 { 2 } else { 1 };
    let needed = (2 + chart.rows.len() * height) as u16;
    let room = area.height.saturating_sub(head + 3);
    let chart_h = if room >= 3 { needed.min(room) } else { 0 };
    let [top, hist, grid] = Layout::vertical([
        Constraint::Length(head),
        Constraint::Length(chart_h),
        Constraint::Min(0),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(lines), top);
    if chart_h > 0 {
        history_chart(f, hist, app, &chart, &snaps, height, pal);
    }
    cpu_grid(f, grid, app, pal);
}

/// The probe mode (live) or the recording's metadata (replay), `width` columns wide: parts
/// that would be cut at the edge go on lines of their own.
fn meta_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    // The recording's line stands alone; the other parts join while they fit.
    let (alone, parts, sep) = match &app.source {
        SourceInfo::Live { probe_mode, .. } => (
            None,
            vec![
                format!("probes: {probe_mode}"),
                format!("{} CPUs", app.topo.online.len()),
            ],
            "  |  ",
        ),
        SourceInfo::Replay(r) => (
            Some(format!(
                "recording: host {}  kernel {}  {}",
                r.hostname, r.kernel, r.date
            )),
            vec![
                format!("topology {}", r.topology),
                format!("probes: {}", r.probes),
            ],
            "  ",
        ),
        SourceInfo::Diff => return Vec::new(),
    };
    alone
        .into_iter()
        .chain(super::pack(
            parts.iter().map(String::as_str),
            sep,
            usize::from(width),
        ))
        .map(Line::raw)
        .collect()
}

fn cpu_grid(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let Some(s) = app.current() else { return };
    let block = Block::default()
        .borders(Borders::TOP)
        .title("CPUs: run/idle, +tasks waiting");
    let inner = block.inner(area);
    f.render_widget(block, area);
    let per_row = (inner.width / CELL).max(1) as usize;
    let mut lines = Vec::new();
    for chunk in s.cpus.chunks(per_row).take(inner.height as usize) {
        let mut spans = Vec::new();
        for c in chunk {
            let (word, st) = match c.idle {
                Some(true) => ("idle", pal.dim()),
                Some(false) => ("run ", pal.busy()),
                None => ("?   ", pal.dim()),
            };
            spans.push(Span::raw(format!("cpu{:>4} ", c.cpu)));
            spans.push(Span::styled(word, st));
            let w = if c.waiting > 0 {
                Span::styled(format!(" +{:<4}", c.waiting), pal.hot())
            } else {
                Span::raw("      ")
            };
            spans.push(w);
        }
        lines.push(Line::from(spans));
    }
    let shown = per_row * inner.height as usize;
    if s.cpus.len() > shown && !lines.is_empty() {
        let last = lines.len() - 1;
        lines[last] = Line::raw(format!(
            "... {} more CPUs: enlarge the window",
            s.cpus.len() - shown + per_row
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
