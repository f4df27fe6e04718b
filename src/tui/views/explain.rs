//! A finding explained: the rule it says was broken, its CPUs on the timeline around it
//! (the idle stretch or the round trip underlined), and an evidence pane that scrolls:
//! what the timeline shows on each CPU it names, the moves of the tasks it names, the
//! balancer's decisions in that window where the recording has them, and the model's own
//! figures. [`lines`] builds the pane's text, so tests read it without a screen.

use super::timeline::{base_ns, describe, grid_lines, rel, SAMPLED_NOTE};
use crate::analyze::timeline::{MarkKind, Timeline};
use crate::cpuset::CpuSet;
use crate::tui::app::App;
use crate::tui::term::Palette;
use crate::tui::timeline::{Explain, Row, ZOOMS_NS};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

/// The rule a kind of finding says was broken.
pub fn rule(kind: &str) -> &'static str {
    match kind {
        "missed_pull" => "an idle CPU pulls a task waiting on another CPU of its domain (one allowed on it) within the balancer's own limit for the domain (limit_ns); this one stayed idle longer",
        "busy_wakeup" => "a wakeup places the task on an idle CPU of the target's LLC when one is allowed; this one queued it behind a running task",
        "harmful_migration" => "a balancer move leaves the source and destination groups closer in tasks (and load) per capacity, and does not send a task off a node that has an idle CPU for it; this one did not",
        "ping_pong" => "a task the balancer moves stays moved; this one went A -> B -> A within the ping-pong window",
        "churn" => "migrations buy a falling imbalance; this domain moved tasks faster than the churn threshold while its imbalance did not fall",
        "uneven_spread" => "a process's threads spread over NUMA nodes (or LLCs) while capacity is free; these sat more than the spread ratio apart",
        _ => "measured, not judged by the model: a CPU of the span was idle while a task allowed on it waited on another CPU of the span",
    }
}

/// The rule line for `fr`: [`rule`], except that a round trip names what moved the task.
/// The model finds a ping_pong in any two moves (wakeup placements too), so the rule says
/// "the balancer" only when both moves were the balancer's, and otherwise names the reasons.
pub fn rule_for(fr: &crate::tui::state::FindingRow) -> String {
    use crate::event::Reason;
    if fr.kind != "ping_pong" {
        return rule(&fr.kind).to_string();
    }
    // An evidence line is `key: value`, the value as JSON: a reason reads back as itself.
    let reason = |key: &str| {
        fr.evidence.iter().find_map(|l| {
            let v = l.strip_prefix(key)?.strip_prefix(": ")?;
            serde_json::from_str::<Reason>(v).ok()
        })
    };
    match (reason("first_reason"), reason("second_reason")) {
        (Some(a), Some(b)) if a.is_balancer() && b.is_balancer() => {
            format!("{} (by {}, then {})", rule(&fr.kind), a.name(), b.name())
        }
        (Some(a), Some(b)) => format!(
            "a task moved off a CPU is not moved back within the ping-pong window, whatever moves it; this one went A -> B ({}) -> A ({}) within it",
            a.name(),
            b.name()
        ),
        _ => rule(&fr.kind).to_string(),
    }
}

/// What the underline below the grid names.
fn stretch_name(kind: &str) -> &'static str {
    match kind {
        "missed_pull" => "idle stretch",
        "ping_pong" => "round trip",
        "busy_wakeup" | "harmful_migration" => "event",
        "uneven_spread" => "time it held",
        _ => "interval",
    }
}

/// The window shown: `(end_ns, cell_ns)` for `cols` cells, the finding's span centred.
pub fn window(e: &Explain, cols: usize) -> (u64, u64) {
    let (from, to) = e.finding.span_ns;
    let len = (to - from).max(1_000_000);
    let cols = cols.max(1) as u64;
    let zoom = e.zoom.unwrap_or_else(|| {
        // The span fills about 60% of the grid.
        ZOOMS_NS
            .iter()
            .position(|&z| z * cols * 6 / 10 >= len)
            .unwrap_or(ZOOMS_NS.len() - 1)
    });
    let cell = ZOOMS_NS[zoom.min(ZOOMS_NS.len() - 1)];
    let mid = from + (to - from) / 2;
    let end = (mid + cell * cols / 2) as i64 + e.shift * cell as i64;
    let end = (end.max((cell * cols) as i64) as u64) / cell * cell;
    (end, cell)
}

fn cpu_row(c: u32) -> Row {
    Row {
        label: format!("cpu {c}"),
        cpus: std::iter::once(c as usize).collect(),
        group: false,
        nested: false,
    }
}

/// The evidence pane's lines for the window `[a, b)`.
pub fn lines(tl: Option<&Timeline>, e: &Explain, (a, b): (u64, u64), base: u64) -> Vec<String> {
    let f = &e.finding;
    let (from, to) = f.span_ns;
    let mut v = vec![format!(
        "found at t={} s; the {} t={}-{} s ({:.1} ms); t is seconds from the first interval's start",
        rel(to, base),
        stretch_name(&f.kind),
        rel(from, base),
        rel(to, base),
        (to - from) as f64 / 1e6
    )];
    let Some(tl) = tl else {
        v.push("no timeline here (a comparison has none)".into());
        v.extend(f.evidence.iter().cloned());
        return v;
    };
    v.push(if tl.waiting_sampled() {
        format!("what the timeline shows on its CPUs ({SAMPLED_NOTE}):")
    } else {
        "what the timeline shows on its CPUs:".into()
    });
    for &c in &f.cpus {
        let row = cpu_row(c);
        let at = match tl.state_at(c, to.saturating_sub(1)) {
            Some(s) if s.waiting > 0 => format!(
                "{} with {} waiting",
                if s.running { "running" } else { "idle" },
                s.waiting
            ),
            Some(s) if s.running => "running".into(),
            Some(_) => "idle".into(),
            None => "not known".into(),
        };
        let mut line = format!("  cpu {c}: at the finding {at}");
        if to > from {
            line.push_str(&format!("; over the span {}", describe(tl, &row, from, to)));
        }
        v.push(line);
        for (s, t) in tl.idle_stretches(c, a, b) {
            if t.saturating_sub(s) >= (to - from) / 4 && t > s {
                v.push(format!(
                    "    idle t={}-{} s ({:.1} ms)",
                    rel(s, base),
                    rel(t, base),
                    (t - s) as f64 / 1e6
                ));
            }
        }
    }
    if !f.pids.is_empty() {
        v.push(format!(
            "tasks it names: {}",
            f.pids
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    for m in tl.marks(a, b) {
        if let MarkKind::Migrate {
            pid,
            src,
            dst,
            reason,
        } = m.kind
        {
            if f.pids.contains(&pid) {
                v.push(format!(
                    "  t={} s task {pid} moved cpu {src} -> {dst} ({})",
                    rel(m.t_ns, base),
                    reason.name()
                ));
            }
        }
    }
    let cpus: CpuSet = f.cpus.iter().map(|&c| c as usize).collect();
    if tl.has_balance() {
        let decisions: Vec<String> = tl
            .marks(a, b)
            .filter_map(|m| match &m.kind {
                MarkKind::Balance {
                    cpu,
                    level,
                    balanced,
                    imbalance,
                    migration_type,
                    pid,
                    src,
                } if cpus.contains(*cpu as usize) => Some(match pid {
                    Some(p) => format!(
                        "  t={} s cpu {cpu} level {level}: detached task {p} from cpu {src}",
                        rel(m.t_ns, base)
                    ),
                    None if *balanced => format!(
                        "  t={} s cpu {cpu} level {level}: searched, found it balanced",
                        rel(m.t_ns, base)
                    ),
                    None => format!(
                        "  t={} s cpu {cpu} level {level}: found imbalance {imbalance} ({})",
                        rel(m.t_ns, base),
                        migration_type.name()
                    ),
                }),
                _ => None,
            })
            .collect();
        v.push(format!(
            "the balancer's decisions for these CPUs in the window: {}",
            decisions.len()
        ));
        v.extend(decisions);
    } else {
        v.push(
            "the balancer's decisions: not in this recording (made without balancer hooks)".into(),
        );
    }
    v.push("the figures behind it:".into());
    v.extend(f.evidence.iter().map(|l| format!("  {l}")));
    v
}

/// Draws the finding explained.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let Some(e) = &app.tl.explain else {
        return;
    };
    let fr = &e.finding;
    let rows: Vec<Row> = fr.cpus.iter().map(|&c| cpu_row(c)).collect();
    let label_w = rows.iter().map(|r| r.label.len()).max().unwrap_or(6) + 1;
    let cols = (area.width as usize).saturating_sub(label_w).max(1);
    let (end, cell) = window(e, cols);
    let start = end.saturating_sub(cell * cols as u64);
    let base = base_ns(app);
    let grid_h = rows.len().min((area.height as usize / 3).max(1));
    let [head, grid, ev] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(grid_h as u16 + 2),
        Constraint::Min(1),
    ])
    .areas(area);
    let head_lines = vec![
        Line::styled(
            format!("{} {}: {}", fr.kind, fr.place, fr.summary),
            pal.title(),
        ),
        Line::raw(format!("rule: {}", rule_for(fr))),
    ];
    f.render_widget(Paragraph::new(head_lines).wrap(Wrap { trim: false }), head);
    let mut g = Vec::new();
    if let Some(tl) = &app.timeline {
        g.push(Line::styled(
            format!(
                "cell {}  t={}..{} s  (= below: the {})",
                super::timeline::cell_text(cell),
                rel(start, base),
                rel(end, base),
                stretch_name(&fr.kind)
            ),
            pal.dim(),
        ));
        g.extend(grid_lines(
            tl,
            &rows[..grid_h],
            None,
            (end, cell, cols),
            label_w,
            pal,
        ));
        // The span underlined: `=` over the cells it covers.
        let (from, to) = fr.span_ns;
        let mut under = String::new();
        for c in 0..cols as u64 {
            let (a, b) = (start + c * cell, start + (c + 1) * cell);
            under.push(if a < to.max(from + 1) && b > from {
                '='
            } else {
                ' '
            });
        }
        g.push(Line::styled(format!("{:<label_w$}{under}", ""), pal.warn()));
    }
    f.render_widget(Paragraph::new(g), grid);
    let text = lines(app.timeline.as_ref(), e, (start, end), base);
    let skip = e.scroll.min(text.len().saturating_sub(1));
    let block = Block::default().borders(Borders::TOP).title(format!(
        "evidence: {} {} (j/k scroll, esc back)",
        fr.kind, fr.place
    ));
    f.render_widget(
        Paragraph::new(
            text.into_iter()
                .skip(skip)
                .map(Line::raw)
                .collect::<Vec<_>>(),
        )
        .block(block)
        .wrap(Wrap { trim: false }),
        ev,
    );
}
