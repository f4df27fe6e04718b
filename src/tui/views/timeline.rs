//! The CPU timeline view: one row per CPU (or per LLC or node, folded), time across, each
//! cell the state the timeline holds for its span, with migrations and balancer decisions
//! drawn over it; the last column is the cursor, described in full on the line below the
//! grid. [`grid_lines`] draws rows for the finding explained too.

use super::waiting;
use crate::analyze::timeline::{CellKind, MarkKind, Timeline};
use crate::event::Reason;
use crate::topology::Topology;
use crate::tui::app::App;
use crate::tui::term::Palette;
use crate::tui::timeline::{focus_ns, per, rows, Fold, Row, TimelineUi};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// The summary rule and the glyphs, as the help view and the wide legend say them.
pub const LEGEND: &[&str] = &[
    "cell: · idle  ▄ partly running  █ running  1-9 running with N waiting (the most at any instant; + 10 or more)",
    "marks: the reason's letter, UPPER on the destination row, lower on the source; * a balancer search found an imbalance",
    "W wakeup F fork E exec P periodic N nohz I newidle A active U numa X affinity H hotplug R rt D dl S ext ? unknown",
    "grouped rows: times summed over the group's CPUs, a digit is the most waiting on one of its CPUs; enter expands",
];

/// The first `n` lines of [`LEGEND`] when each fits `width`'s text room, else none: a legend
/// line is never cut at the screen's edge. (Its glyphs take one column each.)
pub fn legend_lines(n: usize, width: u16) -> Option<&'static [&'static str]> {
    let lines = &LEGEND[..n.min(LEGEND.len())];
    let room = super::text_room(width);
    lines
        .iter()
        .all(|l| l.chars().count() <= room)
        .then_some(lines)
}

/// What the header and a finding's evidence add when the source folds in the kernel
/// (`--fold`): waiting counts above 2 are samples of `nr_running`.
pub const SAMPLED_NOTE: &str = "--fold: waiting above 2 sampled each ms";

/// The one-line legend of a narrow screen.
const SHORT_LEGEND: &str = "·idle ▄part █run 1-9 waiting  W/w moved in/out  * balancer  (? legend)";

/// A reason's letter (upper case: the destination row).
pub fn reason_letter(r: Reason) -> char {
    match r {
        Reason::Wakeup => 'W',
        Reason::Fork => 'F',
        Reason::Exec => 'E',
        Reason::PeriodicBalance => 'P',
        Reason::NohzIdleBalance => 'N',
        Reason::NewidleBalance => 'I',
        Reason::ActiveBalance => 'A',
        Reason::NumaBalancing => 'U',
        Reason::Affinity => 'X',
        Reason::Hotplug => 'H',
        Reason::RtPushPull => 'R',
        Reason::DlPushPull => 'D',
        Reason::SchedExt => 'S',
        Reason::Unknown => '?',
    }
}

/// The glyph of a cell's state.
pub fn state_glyph(k: CellKind) -> char {
    match k {
        CellKind::Unknown => ' ',
        CellKind::Idle => '·',
        CellKind::Part => '▄',
        CellKind::Busy => '█',
        CellKind::Waiting(n) if n < 10 => char::from(b'0' + n as u8),
        CellKind::Waiting(_) => '+',
    }
}

/// What one cell of `row` over `[a, b)` draws.
pub fn cell(tl: &Timeline, row: &Row, a: u64, b: u64, pal: Palette) -> (char, Style) {
    let mut balance = false;
    for m in tl.marks(a, b) {
        match m.kind {
            MarkKind::Migrate {
                src, dst, reason, ..
            } => {
                let style = if reason.is_balancer() {
                    pal.hot()
                } else {
                    pal.bar()
                };
                if row.cpus.contains(dst as usize) {
                    return (reason_letter(reason), style);
                }
                if row.cpus.contains(src as usize) {
                    return (reason_letter(reason).to_ascii_lowercase(), style);
                }
            }
            MarkKind::Balance { cpu, balanced, .. } => {
                balance |= !balanced && row.cpus.contains(cpu as usize);
            }
        }
    }
    if balance {
        return ('*', pal.warn());
    }
    let k = CellKind::of(&tl.group_cell(&row.cpus, a, b));
    let style = match k {
        CellKind::Waiting(1) => pal.warn(),
        CellKind::Waiting(_) => pal.hot(),
        CellKind::Busy | CellKind::Part => pal.busy(),
        _ => pal.dim(),
    };
    (state_glyph(k), style)
}

/// The grid's lines: each row's label padded to `label_w`, then `cols` cells, the last
/// ending at `end_ns`.
pub fn grid_lines(
    tl: &Timeline,
    rows: &[Row],
    sel: Option<usize>,
    (end_ns, cell_ns, cols): (u64, u64, usize),
    label_w: usize,
    pal: Palette,
) -> Vec<Line<'static>> {
    let start = end_ns.saturating_sub(cell_ns * cols as u64);
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let label = format!("{:<label_w$.label_w$}", r.label);
            let mut spans = vec![if Some(i) == sel {
                Span::styled(label, pal.selected())
            } else {
                Span::styled(label, pal.title())
            }];
            let mut run = String::new();
            let mut run_style = Style::default();
            for c in 0..cols as u64 {
                let a = start + c * cell_ns;
                let (g, st) = cell(tl, r, a, a + cell_ns, pal);
                if st != run_style && !run.is_empty() {
                    spans.push(Span::styled(std::mem::take(&mut run), run_style));
                }
                run_style = st;
                run.push(g);
            }
            spans.push(Span::styled(run, run_style));
            Line::from(spans)
        })
        .collect()
}

/// What the header says the rows are per: "per llc" as `f` chose, "per cpu (auto)" where it
/// left the choice to the machine, and ", enter expands" when the rows are groups. Over the
/// runs of a diff, each grouping they settle on ("per cpu/llc (auto)").
pub fn per_text<'a>(topos: impl IntoIterator<Item = &'a Topology>, ui: &TimelineUi) -> String {
    let mut names: Vec<&str> = Vec::new();
    let mut grouped = false;
    for t in topos {
        let p = per(t, ui);
        grouped |= p != Fold::Cpus;
        if !names.contains(&p.name()) {
            names.push(p.name());
        }
    }
    format!(
        "per {}{}{}",
        names.join("/"),
        if ui.fold == Fold::Auto { " (auto)" } else { "" },
        if grouped { ", enter expands" } else { "" }
    )
}

/// A cell's length: `100 us`, `20 ms`, `2 s`.
pub fn cell_text(ns: u64) -> String {
    match ns {
        n if n < 1_000_000 => format!("{} us", n / 1_000),
        n if n < 1_000_000_000 => format!("{} ms", n / 1_000_000),
        n => format!("{} s", n / 1_000_000_000),
    }
}

/// Seconds from `base`, to the microsecond.
pub fn rel(t: u64, base: u64) -> String {
    format!("{:.6}", t.saturating_sub(base) as f64 / 1e9)
}

/// Seconds from `base`, to the millisecond.
fn rel_ms(t: u64, base: u64) -> String {
    format!("{:.3}", t.saturating_sub(base) as f64 / 1e9)
}

/// Seconds from `base` for an axis of cells `cell_ns` long: as many decimals as a cell's
/// boundary needs (`8.12` under 10 ms cells, `8.1204` under 100 us ones), at least one.
pub fn rel_axis(t: u64, base: u64, cell_ns: u64) -> String {
    let mut decimals = 1;
    let mut step = 100_000_000u64;
    while decimals < 9 && (cell_ns % step != 0 || cell_ns == 0) {
        decimals += 1;
        step /= 10;
    }
    format!("{:.*}", decimals, t.saturating_sub(base) as f64 / 1e9)
}

/// The time origin of the screen: the first interval's start.
pub fn base_ns(app: &App) -> u64 {
    app.history.front().map_or(0, |s| s.t_start_ns)
}

/// "running with 2 waiting" and the like, for a CPU or group over `[a, b)`.
pub fn describe(tl: &Timeline, row: &Row, a: u64, b: u64) -> String {
    let c = tl.group_cell(&row.cpus, a, b);
    let busy = if c.known_ns > 0 {
        // The newest cell is known only up to the last event drained: say how much.
        let cpus = row.cpus.len().max(1) as u64;
        let of = if c.known_ns < b.saturating_sub(a) * cpus {
            format!("the {} known", cell_text(c.known_ns / cpus))
        } else {
            "the time".to_string()
        };
        format!(
            ", running {:.0}% of {of}",
            c.busy_ns as f64 * 100.0 / c.known_ns as f64
        )
    } else {
        String::new()
    };
    match CellKind::of(&c) {
        CellKind::Unknown => "not known".into(),
        CellKind::Idle => "idle".into(),
        CellKind::Part => format!("partly running{busy}"),
        CellKind::Busy => "running".into(),
        CellKind::Waiting(n) => format!("{n} waiting at most{busy}"),
    }
}

/// The cursor line: the selected row's last cell, its marks and the balancer's decisions.
fn cursor_line(tl: &Timeline, row: &Row, a: u64, b: u64, base: u64) -> String {
    let mut s = format!(
        "cursor t={}-{} s  {}: {}",
        rel(a, base),
        rel(b, base),
        row.label.trim_start_matches(['+', '-', ' ']),
        describe(tl, row, a, b)
    );
    let (mut searches, mut found, mut moves) = (0, 0, 0);
    for m in tl.marks(a, b) {
        match &m.kind {
            MarkKind::Migrate {
                pid,
                src,
                dst,
                reason,
            } if row.cpus.contains(*src as usize) || row.cpus.contains(*dst as usize) => {
                s.push_str(&format!(" | {pid} {src}>{dst} {}", reason.name()));
            }
            MarkKind::Balance {
                cpu, balanced, pid, ..
            } if row.cpus.contains(*cpu as usize) => match pid {
                Some(_) => moves += 1,
                None => {
                    searches += 1;
                    found += u32::from(!balanced);
                }
            },
            _ => {}
        }
    }
    if searches + moves > 0 {
        s.push_str(&format!(
            " | balancer: {searches} searches, {found} found an imbalance, {moves} tasks detached"
        ));
    }
    s
}

/// Draws the timeline view.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let (Some(tl), Some(end)) = (&app.timeline, focus_ns(app)) else {
        return waiting(f, area, app);
    };
    let ui = &app.tl;
    let rows = rows(&app.topo, ui);
    let label_w = rows.iter().map(|r| r.label.len()).max().unwrap_or(6) + 1;
    let cols = (area.width as usize).saturating_sub(label_w).max(1);
    let cell_ns = ui.cell_ns();
    // The cursor's cell is the last column; cells start at whole multiples of their
    // length from the screen's time origin.
    let base = base_ns(app);
    let end_ns = base + (end.saturating_sub(base) / cell_ns + 1) * cell_ns;
    let start_ns = end_ns.saturating_sub(cell_ns * cols as u64);
    let legend = legend_lines(3, area.width).map_or_else(|| vec![SHORT_LEGEND], <[_]>::to_vec);
    let width = super::text_room(area.width);
    let sel = ui.row.min(rows.len().saturating_sub(1));
    // The header and the cursor line wrap at their spaces rather than run past the edge
    // (the cursor line on two lines at most, its cut marked): the grid takes what is left.
    let cursor = rows.get(sel).map_or_else(Vec::new, |r| {
        let line = cursor_line(tl, r, end_ns - cell_ns, end_ns, base);
        super::wrap_words(&line, width, 2)
    });
    let per = per_text([&app.topo], ui);
    let header = |grid_h: usize| {
        let first = super::scroll_start(sel, grid_h, rows.len());
        let text = format!(
            "cell {}  t={}..{} s  {per}  rows {}-{} of {}{}{}",
            cell_text(cell_ns),
            rel_ms(start_ns, base),
            rel_ms(end_ns, base),
            first + 1,
            (first + grid_h).min(rows.len()),
            rows.len(),
            if tl.has_balance() {
                ""
            } else {
                "  (no balancer decisions recorded)"
            },
            if tl.waiting_sampled() {
                format!("  ({SAMPLED_NOTE})")
            } else {
                String::new()
            }
        );
        (first, super::wrap_words(&text, width, 2))
    };
    let fixed = 1 + cursor.len() + legend.len();
    let mut grid_h = (area.height as usize).saturating_sub(fixed + 1);
    let (mut first, mut head) = header(grid_h);
    if head.len() > 1 {
        grid_h = (area.height as usize).saturating_sub(fixed + head.len());
        (first, head) = header(grid_h);
    }
    let mut lines: Vec<Line> = head
        .into_iter()
        .map(|h| Line::styled(h, pal.title()))
        .collect();
    let shown = &rows[first..(first + grid_h).min(rows.len())];
    lines.extend(grid_lines(
        tl,
        shown,
        Some(sel - first),
        (end_ns, cell_ns, cols),
        label_w,
        pal,
    ));
    // The axis: the window's start on the left, the cursor under the last column.
    let left = format!("{:<label_w$}{}", "t (s)", rel_axis(start_ns, base, cell_ns));
    let right = format!("{} ^", rel_axis(end_ns - cell_ns, base, cell_ns));
    let pad = (label_w + cols).saturating_sub(left.chars().count() + right.chars().count());
    lines.push(Line::styled(
        format!("{left}{}{right}", " ".repeat(pad)),
        pal.dim(),
    ));
    lines.extend(cursor.into_iter().map(Line::raw));
    for l in legend {
        lines.push(Line::styled(l.to_string(), pal.dim()));
    }
    f.render_widget(Paragraph::new(lines), area);
}
