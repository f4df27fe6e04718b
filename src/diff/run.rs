//! [`RunSummary`]: one recording's analysis reduced to what a diff compares, interval by
//! interval (the bootstrap needs the intervals, not only their sum).
//!
//! Invariant: one [`IntervalFigures`] per snapshot, in snapshot order, the final partial one
//! included; nothing is computed here that depends on the other run.

use crate::analyze::counters::BalancerCounters;
use crate::analyze::Snapshot;
use crate::cpuset::CpuSet;
use crate::event::Reason;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a recording was made: compared between the two runs, each difference a warning.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// `uname -r` of the recorded machine.
    pub kernel_release: String,
    /// Its host name.
    pub hostname: String,
    /// CPU count and level keys, e.g. "16 CPUs: smt llc numa".
    pub topology_summary: String,
    /// Online CPUs.
    pub nr_cpus: usize,
}

/// Idle-while-others-wait time of one domain over one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainIdle {
    /// Level key ("smt", "llc", ...).
    pub level: String,
    /// The domain's span.
    pub span: CpuSet,
    /// Idle time while a task allowed on the idle CPU waited elsewhere in the span.
    pub movable_ns: u64,
    /// Idle time while only tasks pinned away from every idle CPU waited.
    pub pinned_ns: u64,
}

/// One interval's figures: additive counts only (plus the exact max), so that any multiset of
/// intervals sums to the figures of their union.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalFigures {
    /// Interval length.
    pub len_ns: u64,
    /// Cut short at the end of the recording: never resampled by the bootstrap.
    pub partial: bool,
    /// Run-queue latency samples.
    pub runqlat_count: u64,
    /// runqlat's log2 microsecond slots (trailing empty slots trimmed).
    pub runqlat_log2: Vec<u64>,
    /// Exact largest latency, us.
    pub runqlat_max_us: f64,
    /// All migrations.
    pub migrations_total: u64,
    /// Migrations by reason name (non-zero only).
    pub by_reason: BTreeMap<String, u64>,
    /// Migrations by level key crossed (non-zero only).
    pub by_level: BTreeMap<String, u64>,
    /// Idle-while-others-wait time of every domain, bottom-up as the analyzer lists them.
    pub idle: Vec<DomainIdle>,
    /// Events the ring buffer dropped.
    pub lost_events: u64,
    /// Findings by kind name (non-zero only).
    #[serde(default)]
    pub findings_by_kind: BTreeMap<String, u64>,
    /// The balancer's own counters over the interval (schedstat's vocabulary, per level and
    /// idle type; additive counts), as `report` gives them per interval; its
    /// `gained_by_migrations` from the interval's migrations (balancer reasons by level
    /// crossed, the report's filters applied as to every other row).
    #[serde(default)]
    pub balancer: BalancerCounters,
}

/// The balancer's migrations of a reason x level matrix (`{reason: {level: count}}`),
/// non-zero cells only.
fn balancer_matrix(
    matrix: &BTreeMap<String, BTreeMap<String, u64>>,
) -> BTreeMap<String, BTreeMap<String, u64>> {
    Reason::ALL
        .iter()
        .filter(|r| r.is_balancer())
        .filter_map(|r| {
            let levels: BTreeMap<String, u64> = matrix
                .get(r.name())?
                .iter()
                .filter(|(_, n)| **n != 0)
                .map(|(l, n)| (l.clone(), *n))
                .collect();
            (!levels.is_empty()).then(|| (r.name().to_string(), levels))
        })
        .collect()
}

impl IntervalFigures {
    /// The figures of one snapshot.
    pub fn from_snapshot(s: &Snapshot) -> IntervalFigures {
        let nonzero = |m: &BTreeMap<String, u64>| {
            m.iter()
                .filter(|(_, v)| **v != 0)
                .map(|(k, v)| (k.clone(), *v))
                .collect()
        };
        IntervalFigures {
            len_ns: s.len_ns(),
            partial: s.partial,
            runqlat_count: s.runqlat_us.count,
            runqlat_log2: s.runqlat_us.log2_buckets.clone(),
            runqlat_max_us: s.runqlat_us.max,
            migrations_total: s.migrations.total,
            by_reason: nonzero(&s.migrations.by_reason),
            by_level: nonzero(&s.migrations.by_level),
            idle: s
                .idle_while_waiting
                .iter()
                .map(|d| DomainIdle {
                    level: d.level.clone(),
                    span: d.span,
                    movable_ns: d.movable_ns,
                    pinned_ns: d.pinned_ns,
                })
                .collect(),
            lost_events: s.lost_events,
            findings_by_kind: nonzero(&s.findings_by_kind),
            balancer: BalancerCounters {
                gained_by_migrations: balancer_matrix(&s.migrations.matrix),
                ..s.balancer_counters.clone()
            },
        }
    }
}

/// What one recording's analysis yields, ready to be compared with [`super::diff`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// How the run is named in the comparison (usually the recording's path).
    pub label: String,
    /// Where it was recorded.
    pub meta: RunMeta,
    /// Every interval, in order, the final partial one included.
    pub intervals: Vec<IntervalFigures>,
    /// Level keys bottom-up, as the analyzer listed the domains (row order of the diff).
    pub level_order: Vec<String>,
}

impl RunSummary {
    /// Summarizes every snapshot of one analysis (the final partial one included).
    pub fn from_snapshots(snaps: &[Snapshot], label: &str, meta: RunMeta) -> RunSummary {
        let mut level_order: Vec<String> = Vec::new();
        for s in snaps {
            for d in &s.idle_while_waiting {
                if !level_order.contains(&d.level) {
                    level_order.push(d.level.clone());
                }
            }
        }
        RunSummary {
            label: label.to_string(),
            meta,
            intervals: snaps.iter().map(IntervalFigures::from_snapshot).collect(),
            level_order,
        }
    }

    /// Intervals that ran their full length: what the bootstrap resamples.
    pub fn full_intervals(&self) -> usize {
        self.intervals.iter().filter(|i| !i.partial).count()
    }

    /// Total length of the run (sum of interval lengths).
    pub fn duration_ns(&self) -> u64 {
        self.intervals.iter().map(|i| i.len_ns).sum()
    }

    /// Whether the balancer's calls were recorded in this run (its hooks on
    /// `sched_balance_rq`): its call counters (lb_count, lb_balanced, lb_failed, the
    /// imbalance) are known only then.
    pub fn calls_recorded(&self) -> bool {
        self.intervals.iter().any(|i| i.balancer.calls_recorded)
    }

    /// Events lost over the whole run.
    pub fn lost_events(&self) -> u64 {
        self.intervals.iter().map(|i| i.lost_events).sum()
    }

    /// The whole-run runqlat log2 histogram (trailing empty slots trimmed).
    pub fn runqlat_log2(&self) -> Vec<u64> {
        let mut h: Vec<u64> = Vec::new();
        for iv in &self.intervals {
            if h.len() < iv.runqlat_log2.len() {
                h.resize(iv.runqlat_log2.len(), 0);
            }
            for (a, b) in h.iter_mut().zip(&iv.runqlat_log2) {
                *a += b;
            }
        }
        let last = h.iter().rposition(|c| *c != 0).map_or(0, |i| i + 1);
        h.truncate(last);
        h
    }
}
