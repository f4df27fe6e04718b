//! Findings: placements the model judges wrong, with the numbers behind each, and the
//! per-interval log that keeps them bounded.
//!
//! Invariants: [`FindingLog`] counts every finding by kind, but keeps the details of at most
//! `max` per interval (the first ones: event order is deterministic, so a replay keeps the
//! same ones); taking the log empties it.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The kinds of findings; the JSON names are a stable contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A CPU stayed idle longer than its domain's balance interval while a task allowed on it
    /// waited on another CPU of the domain.
    MissedPull,
    /// A wakeup queued a task on a busy CPU while an idle CPU it was allowed on existed in the
    /// target's LLC (or cluster).
    BusyWakeup,
    /// A balancer move left the src and dst groups more imbalanced than before, or sent a task
    /// to another NUMA node while its own node had an idle CPU for it.
    HarmfulMigration,
    /// A task moved A -> B -> A within the ping-pong window.
    PingPong,
    /// A domain migrated tasks faster than the churn threshold while its imbalance did not fall.
    Churn,
    /// One process's threads sat unevenly over NUMA nodes (or LLCs) while capacity was free.
    UnevenSpread,
}

impl FindingKind {
    /// Every kind, in report order.
    pub const ALL: [FindingKind; 6] = [
        FindingKind::MissedPull,
        FindingKind::BusyWakeup,
        FindingKind::HarmfulMigration,
        FindingKind::PingPong,
        FindingKind::Churn,
        FindingKind::UnevenSpread,
    ];

    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::MissedPull => "missed_pull",
            FindingKind::BusyWakeup => "busy_wakeup",
            FindingKind::HarmfulMigration => "harmful_migration",
            FindingKind::PingPong => "ping_pong",
            FindingKind::Churn => "churn",
            FindingKind::UnevenSpread => "uneven_spread",
        }
    }

    /// Whether the kind says the load is unevenly spread (as opposed to a single wakeup or
    /// task history): a balanced machine should raise none of these.
    pub fn is_imbalance(self) -> bool {
        matches!(
            self,
            FindingKind::MissedPull
                | FindingKind::HarmfulMigration
                | FindingKind::Churn
                | FindingKind::UnevenSpread
        )
    }
}

/// One wrong placement, with where, when, who and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What was found.
    pub kind: FindingKind,
    /// When (event time, CLOCK_MONOTONIC ns): the end of the idle stretch, the wakeup, the
    /// move, the interval end for churn, the sample that found uneven_spread held long
    /// enough (or the interval end).
    pub t_ns: u64,
    /// The level key of the domain concerned ("llc", "numa", ...), if one is.
    pub level: Option<String>,
    /// That domain's span.
    pub span: Option<CpuSet>,
    /// The CPUs involved (the idle and the busy ones, src and dst, ...).
    pub cpus: Vec<u32>,
    /// The tasks involved (empty when the finding is about CPUs only).
    pub pids: Vec<u32>,
    /// The numbers behind it; the fields depend on the kind (see the README).
    pub evidence: BTreeMap<String, serde_json::Value>,
    /// One sentence saying what happened.
    pub text: String,
}

/// A finding's evidence from `(field, value)` pairs.
pub fn evidence<'a>(
    pairs: impl IntoIterator<Item = (&'a str, serde_json::Value)>,
) -> BTreeMap<String, serde_json::Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The findings of the open interval.
#[derive(Clone, Debug)]
pub struct FindingLog {
    max: usize,
    kept: Vec<Finding>,
    counts: BTreeMap<FindingKind, u64>,
}

impl FindingLog {
    /// A log keeping the details of at most `max` findings per interval.
    pub fn new(max: usize) -> FindingLog {
        FindingLog {
            max,
            kept: Vec::new(),
            counts: BTreeMap::new(),
        }
    }

    /// When there is no room left for details: counts a finding of `kind` and returns true,
    /// so that the caller skips building its evidence and sentence.
    pub fn counted_only(&mut self, kind: FindingKind) -> bool {
        if self.kept.len() < self.max {
            return false;
        }
        *self.counts.entry(kind).or_insert(0) += 1;
        true
    }

    /// Counts `f`, and keeps it if there is room.
    pub fn add(&mut self, f: Finding) {
        *self.counts.entry(f.kind).or_insert(0) += 1;
        if self.kept.len() < self.max {
            self.kept.push(f);
        }
    }

    /// The kept findings and the counts of every kind (all kinds present), then empties the
    /// log.
    pub fn take(&mut self) -> (Vec<Finding>, BTreeMap<String, u64>) {
        let counts = std::mem::take(&mut self.counts);
        let by_kind = FindingKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), counts.get(k).copied().unwrap_or(0)))
            .collect();
        (std::mem::take(&mut self.kept), by_kind)
    }
}
