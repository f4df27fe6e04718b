//! The balancer's own counters as rows of the diff: each interval's [`BalancerCounters`]
//! flattened into keyed additive counts, named in schedstat's vocabulary ("llc idle
//! lb_count", "numa busy load", "llc alb_pushed"), with the section each belongs to and the
//! order rows are shown in (levels bottom-up, then busy, idle, newly idle).
//!
//! Which counts a comparison may use: those of the balancer's calls (lb_count, lb_balanced,
//! lb_failed, lb_gained, the searches, the imbalance by migration type, the active
//! balances) only when every run compared recorded the calls (balancer hooks); tasks gained by
//! reason and level, counted from the migration tracepoint, always.

use super::section;
use crate::analyze::counters::BalancerCounters;
use crate::analyze::reason_names;
use crate::schedstat::IDLE_ORDER;

/// The call counters of a level and idle type, in row order.
pub(super) const CALL_COUNTERS: [&str; 5] = [
    "lb_count",
    "lb_balanced",
    "lb_failed",
    "lb_gained",
    "searches",
];
/// The imbalance's migration types, in row order.
pub(super) const MIGRATION_TYPES: [&str; 4] = ["load", "util", "task", "misfit"];

/// One balancer count of an interval.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum BalKey {
    /// [`CALL_COUNTERS`]`[counter]` of a level and idle type.
    Call {
        level: String,
        idle: String,
        counter: usize,
    },
    /// The imbalance of [`MIGRATION_TYPES`]`[kind]` of a level and idle type.
    Imbalance {
        level: String,
        idle: String,
        kind: usize,
    },
    /// Tasks the active-balance stopper pushed at a level.
    AlbPushed { level: String },
    /// Times the stopper ran.
    StopperRuns,
    /// Balancer migrations of a reason crossing a level (the migration tracepoint).
    Gained { reason: String, level: String },
}

/// Position of `key` in `order`, else after every known one.
fn rank(order: &[String], key: &str) -> usize {
    order.iter().position(|k| k == key).unwrap_or(order.len())
}

fn idle_rank(idle: &str) -> usize {
    IDLE_ORDER
        .iter()
        .position(|t| crate::analyze::counters::idle_name(*t) == idle)
        .unwrap_or(IDLE_ORDER.len())
}

impl BalKey {
    /// Whether the count comes from the balancer's recorded calls rather than migrations.
    pub fn needs_calls(&self) -> bool {
        !matches!(self, BalKey::Gained { .. })
    }

    /// The row's section.
    pub fn section(&self) -> &'static str {
        match self {
            BalKey::Call { .. } => section::BALANCER_CALLS,
            BalKey::Imbalance { .. } => section::BALANCER_IMBALANCE,
            BalKey::AlbPushed { .. } | BalKey::StopperRuns => section::BALANCER_ACTIVE,
            BalKey::Gained { .. } => section::BALANCER_GAINED,
        }
    }

    /// The row's metric.
    pub fn metric(&self) -> String {
        match self {
            BalKey::Call {
                level,
                idle,
                counter,
            } => format!("{level} {idle} {}", CALL_COUNTERS[*counter]),
            BalKey::Imbalance { level, idle, kind } => {
                format!("{level} {idle} {}", MIGRATION_TYPES[*kind])
            }
            BalKey::AlbPushed { level } => format!("{level} alb_pushed"),
            BalKey::StopperRuns => "stopper_runs".to_string(),
            BalKey::Gained { reason, level } => format!("{reason} {level}"),
        }
    }

    /// Sort key of the row: section, then levels as `levels` orders them (unknown ones after,
    /// by name), idle types busy, idle, newly idle, then the counter.
    pub fn order(&self, levels: &[String]) -> (u8, usize, String, usize, String, usize) {
        let reasons: Vec<String> = reason_names().map(str::to_string).collect();
        match self {
            BalKey::Call {
                level,
                idle,
                counter,
            } => (
                0,
                rank(levels, level),
                level.clone(),
                idle_rank(idle),
                String::new(),
                *counter,
            ),
            BalKey::Imbalance { level, idle, kind } => (
                1,
                rank(levels, level),
                level.clone(),
                idle_rank(idle),
                String::new(),
                *kind,
            ),
            BalKey::AlbPushed { level } => {
                (2, rank(levels, level), level.clone(), 0, String::new(), 0)
            }
            BalKey::StopperRuns => (2, usize::MAX, String::new(), 0, String::new(), 0),
            BalKey::Gained { reason, level } => (
                3,
                rank(&reasons, reason),
                reason.clone(),
                rank(levels, level),
                level.clone(),
                0,
            ),
        }
    }
}

/// Every count of one interval's counters, zeros included.
pub(super) fn entries(b: &BalancerCounters) -> Vec<(BalKey, u64)> {
    let mut out = Vec::new();
    for r in &b.rows {
        let c = &r.counts;
        let calls = [
            c.lb_count,
            c.lb_balanced,
            c.lb_failed,
            c.lb_gained,
            r.searches,
        ];
        for (counter, v) in calls.into_iter().enumerate() {
            let key = BalKey::Call {
                level: r.level.clone(),
                idle: r.idle.clone(),
                counter,
            };
            out.push((key, v));
        }
        let i = &r.imbalance;
        for (kind, v) in [i.load, i.util, i.task, i.misfit].into_iter().enumerate() {
            let key = BalKey::Imbalance {
                level: r.level.clone(),
                idle: r.idle.clone(),
                kind,
            };
            out.push((key, v));
        }
    }
    for (level, n) in &b.alb_pushed {
        out.push((
            BalKey::AlbPushed {
                level: level.clone(),
            },
            *n,
        ));
    }
    out.push((BalKey::StopperRuns, b.stopper_runs));
    for (reason, by_level) in &b.gained_by_migrations {
        for (level, n) in by_level {
            let key = BalKey::Gained {
                reason: reason.clone(),
                level: level.clone(),
            };
            out.push((key, *n));
        }
    }
    out
}
