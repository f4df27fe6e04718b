//! The adapter between the analyzer's [`Snapshot`] and what the views draw for domains,
//! groups and findings. Views never dig into the snapshot for these: they read the rows
//! built here, so when the balancer model adds group classes, imbalance and findings to the
//! snapshot, only the functions of this file change.
//!
//! A group row carries what the per-CPU status says (idle CPUs, tasks running and waiting,
//! PELT utilisation and capacity where sampled) and, from the balancer model's view of the
//! domain, the group type and load; the domain row carries the model's imbalance. Where a
//! snapshot has no model view (older recordings' JSON), they stay `None` and are drawn as
//! "model not available". Findings are the model's; [`measured_signals`] lists what is
//! measured directly (idle-while-others-wait) beside them.

use crate::analyze::{CpuStatus, Snapshot};
use crate::cpuset::CpuSet;
use crate::topology::Topology;

/// What the views say where the balancer model would speak.
pub const MODEL_NA: &str = "model not available";

/// One scheduling group of a domain, as far as it is known.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRow {
    /// The group's CPUs.
    pub span: CpuSet,
    /// CPUs of the group running their idle task.
    pub idle_cpus: u32,
    /// CPUs whose state is known (first switch seen).
    pub known_cpus: u32,
    /// Sum of the run queues' `nr_running` (CPUs with a sample).
    pub nr_running: u32,
    /// Tasks seen waiting on the group's CPUs.
    pub waiting: u32,
    /// Sum of root CFS `util_avg` (CPUs with a sample), `None` without any.
    pub util: Option<u64>,
    /// Sum of `cpu_capacity` (CPUs with a sample), `None` without any.
    pub capacity: Option<u64>,
    /// The balancer's group type (has_spare, overloaded, ...): from the model.
    pub class: Option<String>,
    /// The balancer's load of the group: from the model.
    pub load: Option<u64>,
}

/// One sched domain of one level.
#[derive(Clone, Debug, PartialEq)]
pub struct DomainRow {
    /// Level key ("smt", "llc", "numa", ...).
    pub level: String,
    /// The kernel's level name ("SMT", "MC", ...).
    pub level_name: String,
    /// Depth in the tree (0 = lowest level).
    pub depth: usize,
    /// The domain's span.
    pub span: CpuSet,
    /// Its groups.
    pub groups: Vec<GroupRow>,
    /// Movable idle-while-others-wait, fraction of the interval.
    pub movable: f64,
    /// Pinned idle-while-others-wait, fraction of the interval.
    pub pinned: f64,
    /// p99 run-queue latency of tasks started in the span, us (domains with samples).
    pub p99_us: Option<f64>,
    /// The balancer's imbalance in this domain: from the model.
    pub imbalance: Option<i64>,
}

/// One finding: something the tool thinks went wrong, with the evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct FindingRow {
    /// Short kind ("idle while others wait", ...).
    pub kind: String,
    /// Where: a domain or CPU.
    pub place: String,
    /// One-line summary with the figure.
    pub summary: String,
    /// Lines of evidence shown on Enter.
    pub evidence: Vec<String>,
    /// Where it sits in time, for its timeline: from (the idle stretch's start, the first
    /// move of a round trip, the interval's start) to when it was found, event time (ns).
    pub span_ns: (u64, u64),
    /// The CPUs it names (its timeline's rows).
    pub cpus: Vec<u32>,
    /// The tasks it names.
    pub pids: Vec<u32>,
}

fn group_row(span: &CpuSet, cpus: &[CpuStatus]) -> GroupRow {
    let mut g = GroupRow {
        span: *span,
        idle_cpus: 0,
        known_cpus: 0,
        nr_running: 0,
        waiting: 0,
        util: None,
        capacity: None,
        class: None,
        load: None,
    };
    for c in cpus.iter().filter(|c| span.contains(c.cpu as usize)) {
        if let Some(idle) = c.idle {
            g.known_cpus += 1;
            g.idle_cpus += u32::from(idle);
        }
        g.nr_running += c.nr_running.unwrap_or(0);
        g.waiting += c.waiting;
        if let Some(u) = c.util_avg {
            g.util = Some(g.util.unwrap_or(0) + u);
        }
        if let Some(k) = c.capacity {
            g.capacity = Some(g.capacity.unwrap_or(0) + k);
        }
    }
    g
}

/// The balancer's counters at `level` in the snapshot, on one line (the domains view, under
/// the tree): per idle type the calls, balanced, failed and tasks gained where the calls were
/// recorded, else the tasks gained; `None` when the snapshot has none there.
pub fn level_counters(snap: Option<&Snapshot>, level: &str) -> Option<String> {
    let c = &snap?.balancer_counters;
    let cells: Vec<String> = c
        .rows
        .iter()
        .filter(|r| r.level == level)
        .map(|r| {
            let n = &r.counts;
            match c.calls_recorded {
                true => format!(
                    "{} {}/{}/{}/{}",
                    r.idle, n.lb_count, n.lb_balanced, n.lb_failed, n.lb_gained
                ),
                false => format!("{} {}", r.idle, n.lb_gained),
            }
        })
        .collect();
    if cells.is_empty() {
        return None;
    }
    let what = match c.calls_recorded {
        true => "calls/balanced/failed/gained",
        false => "tasks gained",
    };
    let pushed = c
        .alb_pushed
        .get(level)
        .map_or(String::new(), |n| format!(", {n} pushed by active balance"));
    Some(format!(
        "balancer at {level} ({what}): {}{pushed}",
        cells.join("  ")
    ))
}

/// Every domain of every level, bottom-up, with its groups and figures.
pub fn domains(topo: &Topology, snap: Option<&Snapshot>) -> Vec<DomainRow> {
    let mut rows = Vec::new();
    for (depth, level) in topo.levels.iter().enumerate() {
        for d in &level.domains {
            let cpus = snap.map_or(&[][..], |s| &s.cpus[..]);
            let iww = snap.and_then(|s| {
                s.idle_while_waiting
                    .iter()
                    .find(|w| w.level == level.key && w.span == d.span)
            });
            let p99 = snap.and_then(|s| {
                s.runqlat_by_domain
                    .iter()
                    .find(|l| l.level == level.key && l.span == d.span)
                    .map(|l| l.latency.p99)
            });
            let view = snap.and_then(|s| {
                s.domains
                    .iter()
                    .find(|v| v.level == level.key && v.span == d.span)
            });
            let groups = d
                .groups
                .iter()
                .map(|g| {
                    let mut row = group_row(g, cpus);
                    if let Some(st) = view.and_then(|v| v.groups.iter().find(|x| x.cpus == *g)) {
                        row.class = Some(st.group_type.name().to_string());
                        row.load = Some(st.load);
                    }
                    row
                })
                .collect();
            rows.push(DomainRow {
                level: level.key.clone(),
                level_name: level.name.clone(),
                depth,
                span: d.span,
                groups,
                movable: iww.map_or(0.0, |w| w.movable_fraction),
                pinned: iww.map_or(0.0, |w| w.pinned_fraction),
                p99_us: p99,
                imbalance: view.map(|v| v.imbalance as i64),
            });
        }
    }
    rows
}

/// How many findings the interval had (its counts by kind) and how many it lists with their
/// evidence: the first `--max-findings` (50 by default) in event order.
pub fn findings_counted(snap: &Snapshot) -> (u64, usize) {
    let listed = snap.findings.len();
    let all: u64 = snap.findings_by_kind.values().sum();
    (all.max(listed as u64), listed)
}

/// "N", or "N, the first M listed" when the interval had more findings than it lists.
pub fn findings_text(snap: &Snapshot) -> String {
    match findings_counted(snap) {
        (all, listed) if all > listed as u64 => format!("{all}, the first {listed} listed"),
        (all, _) => all.to_string(),
    }
}

/// Whether the snapshot carries the balancer model's view (its rules, findings, domains).
pub fn has_model(snap: &Snapshot) -> bool {
    !snap.model_rules.is_empty()
}

/// The balancer model's findings; `None` when the snapshot carries no model view.
pub fn findings(snap: &Snapshot) -> Option<Vec<FindingRow>> {
    if !has_model(snap) {
        return None;
    }
    Some(
        snap.findings
            .iter()
            .map(|f| FindingRow {
                kind: f.kind.name().to_string(),
                place: match (&f.level, &f.span) {
                    (Some(l), Some(s)) => format!("{l} {s}"),
                    _ => format!("cpus {:?}", f.cpus),
                },
                summary: f.text.clone(),
                evidence: f
                    .evidence
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .chain((!f.pids.is_empty()).then(|| format!("tasks: {:?}", f.pids)))
                    .collect(),
                span_ns: (finding_start(f).min(f.t_ns), f.t_ns),
                cpus: f.cpus.clone(),
                pids: f.pids.clone(),
            })
            .collect(),
    )
}

/// When what a finding describes began: the idle stretch's start (`since_ns`), a round
/// trip's first move (`first_move_ns`), else the finding's own time.
fn finding_start(f: &crate::model::Finding) -> u64 {
    ["since_ns", "first_move_ns"]
        .iter()
        .find_map(|k| f.evidence.get(*k).and_then(|v| v.as_u64()))
        .or_else(|| {
            // An uneven spread says how long it held.
            let ms = f.evidence.get("held_ms")?.as_u64()?;
            Some(f.t_ns.saturating_sub(ms.saturating_mul(1_000_000)))
        })
        .unwrap_or(f.t_ns)
}

/// The analyzer's measured signals ([`Snapshot::signals`]) as finding rows, worst first,
/// each with the per-CPU state of its span as evidence.
pub fn measured_signals(topo: &Topology, snap: &Snapshot) -> Vec<FindingRow> {
    let mut v = Vec::new();
    for w in &snap.signals {
        let mut evidence = vec![
            format!(
                "{} {}: a CPU was idle while a movable task waited on another CPU of the span \
                 for {:.1}% of the interval ({:.1} ms); pinned waiting {:.1}%",
                w.level,
                w.span,
                w.movable_fraction * 100.0,
                w.movable_ns as f64 / 1e6,
                w.pinned_fraction * 100.0
            ),
            "per-CPU state at the end of the interval:".to_string(),
        ];
        for c in snap.cpus.iter().filter(|c| w.span.contains(c.cpu as usize)) {
            evidence.push(format!(
                "  cpu {:>3}  {:<7} nr_running {:>3}  waiting {:>3}",
                c.cpu,
                match c.idle {
                    Some(true) => "idle",
                    Some(false) => "running",
                    None => "unknown",
                },
                c.nr_running.map_or("-".to_string(), |n| n.to_string()),
                c.waiting
            ));
        }
        if let Some(l) = topo.levels.iter().find(|l| l.key == w.level) {
            evidence.push(format!(
                "level {} ({}), kernel name {}",
                l.key, w.span, l.name
            ));
        }
        evidence.push(format!("group classes and imbalance: {MODEL_NA}"));
        v.push(FindingRow {
            kind: "idle while others wait".into(),
            place: format!("{} {}", w.level, w.span),
            summary: format!("{:.1}% of the interval", w.movable_fraction * 100.0),
            evidence,
            span_ns: (snap.t_start_ns, snap.t_end_ns),
            cpus: w.span.iter().map(|c| c as u32).collect(),
            pids: Vec::new(),
        });
    }
    v
}

/// The headline idle-while-others-wait figure: the widest level's worst domain, as
/// (level key, span, movable fraction).
pub fn headline_idle(topo: &Topology, snap: &Snapshot) -> Option<(String, CpuSet, f64)> {
    let top = topo.levels.last()?;
    snap.idle_while_waiting
        .iter()
        .filter(|w| w.level == top.key)
        .max_by(|a, b| a.movable_fraction.total_cmp(&b.movable_fraction))
        .map(|w| (w.level.clone(), w.span, w.movable_fraction))
}
