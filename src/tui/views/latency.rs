//! The latency view: a runqlat-style log2 histogram with percentiles, for every task, one
//! CPU, one domain, one process or one cgroup, chosen in the list on the left (up/down).

use super::{scroll_start, us, waiting};
use crate::analyze::{LatencySummary, Snapshot};
use crate::tui::app::App;
use crate::tui::term::Palette;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// The choices of the list, in order: all, CPUs, domains, processes, cgroups (each group as
/// the snapshot orders it: processes and cgroups most samples first).
pub fn choices(s: &Snapshot) -> Vec<(String, &LatencySummary)> {
    let mut v = vec![("all tasks".to_string(), &s.runqlat_us)];
    for c in &s.runqlat_by_cpu {
        v.push((format!("cpu {}", c.cpu), &c.latency));
    }
    for d in &s.runqlat_by_domain {
        v.push((format!("{} {}", d.level, d.span), &d.latency));
    }
    for p in &s.runqlat_by_process {
        let name = p.comm.clone().unwrap_or_else(|| "?".into());
        let id = p.tgid.map_or("?".to_string(), |t| t.to_string());
        v.push((format!("{id} {name}"), &p.latency));
    }
    for c in &s.runqlat_by_cgroup {
        v.push((format!("cgroup {}", c.path), &c.latency));
    }
    v
}

/// Draws the latency view.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let Some(s) = app.current() else {
        return waiting(f, area, app);
    };
    let list = choices(s);
    let sel = app.latency_sel.min(list.len() - 1);
    let [left, right] =
        Layout::horizontal([Constraint::Length(30), Constraint::Min(20)]).areas(area);
    let block = Block::default().borders(Borders::RIGHT).title("show");
    let inner = block.inner(left);
    f.render_widget(block, left);
    let h = inner.height as usize;
    let start = scroll_start(sel, h, list.len());
    let lines: Vec<Line> = list
        .iter()
        .enumerate()
        .skip(start)
        .take(h)
        .map(|(i, (name, l))| {
            let t = format!("{:<20}{:>8}", fit_label(name, 20), l.count);
            if i == sel {
                Line::styled(t, pal.selected())
            } else {
                Line::raw(t)
            }
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
    histogram(f, right, &list[sel].0, list[sel].1, pal);
}

/// A row's label `s` in `n` characters, cut with no marker (unlike `views::fit`): its head,
/// or for a cgroup (whose leaf says most) "cg …" and the tail of its path.
fn fit_label(s: &str, n: usize) -> String {
    let len = s.chars().count();
    match s.strip_prefix("cgroup ") {
        Some(path) if len > n => {
            let tail = path.chars().count().saturating_sub(n.saturating_sub(4));
            format!("cg …{}", path.chars().skip(tail).collect::<String>())
        }
        Some(path) => format!("cg {path}"),
        None => s.chars().take(n).collect(),
    }
}

/// runqlat's slot label: "0 -> 1", "2 -> 3", "4 -> 7", ...
fn slot_range(i: usize) -> (u64, u64) {
    if i == 0 {
        (0, 1)
    } else {
        (1u64 << i, (1u64 << (i + 1)) - 1)
    }
}

fn histogram(f: &mut Frame, area: Rect, name: &str, l: &LatencySummary, pal: Palette) {
    let mut lines = vec![
        Line::styled(format!(" {name}: run-queue latency"), pal.title()),
        // Two lines of three figures: the histogram's pane is about 50 columns at 80.
        Line::raw(format!(
            " p50 {}  p90 {}  p99 {}",
            us(l.p50),
            us(l.p90),
            us(l.p99),
        )),
        Line::raw(format!(
            " p99.9 {}  max {}  n={}",
            us(l.p999),
            us(l.max),
            l.count
        )),
    ];
    let first = l.log2_buckets.iter().position(|&c| c > 0);
    let Some(first) = first else {
        lines.push(Line::raw(" no samples in this interval"));
        f.render_widget(Paragraph::new(lines), area);
        return;
    };
    let peak = l.log2_buckets.iter().copied().max().unwrap_or(1).max(1);
    // "     usecs        : count    |bar|"
    let bar_w = (area.width as usize).saturating_sub(30).clamp(4, 40);
    lines.push(Line::styled(
        format!("{:>16} : {:<7} distribution", "usecs", "count"),
        pal.dim(),
    ));
    let room = (area.height as usize).saturating_sub(lines.len());
    let slots = &l.log2_buckets[first..];
    // Too many slots for the screen: keep the tail (where p99 lives) visible.
    let skip = slots.len().saturating_sub(room);
    for (k, &c) in slots.iter().enumerate().skip(skip) {
        let (lo, hi) = slot_range(first + k);
        let n = (c * bar_w as u64).div_ceil(peak) as usize;
        lines.push(Line::from(vec![
            Span::raw(format!("{lo:>6} -> {hi:<6} : {c:<7} |")),
            Span::styled("*".repeat(n), pal.bar()),
            Span::raw(format!("{}|", " ".repeat(bar_w - n))),
        ]));
    }
    f.render_widget(Paragraph::new(lines), area);
}
