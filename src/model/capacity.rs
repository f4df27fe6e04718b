//! sched_group_capacity: the capacity the kernel divides a group's load by. It is not the sum
//! of the group's CPUs' capacities now, but that sum as of the last time a CPU of the group
//! balanced the domain with the group as its local one (update_sd_lb_stats calls
//! update_group_capacity for the local group only, and on a newly idle pass only once
//! `sgc->next_update` has passed). Under RT or IRQ pressure CPU capacities move by hundreds
//! within milliseconds, and a stale group capacity changes avg_load, group types and the
//! busiest group.
//!
//! The refreshes are known only where the balancer's own searches are recorded (`Balance`
//! events, from the balancer hooks); without them no group is known and every group's
//! capacity is its CPUs' current sum, as before.
//!
//! Invariants: a key is (level index, group span) and is present only once refreshed; values
//! are in the kernel's units (SCHED_CAPACITY_SCALE per full CPU).

use crate::cpuset::CpuSet;
use std::collections::HashMap;

/// One group's `sgc->capacity` and when the kernel next refreshes it on a newly idle pass.
#[derive(Clone, Copy, Debug)]
struct Sgc {
    capacity: u64,
    next_update_ns: u64,
}

/// The groups' capacities as last refreshed, keyed by level and span (the kernel shares one
/// sched_group_capacity between every CPU's copy of a group).
#[derive(Clone, Debug, Default)]
pub(super) struct GroupCapacities {
    map: HashMap<(usize, CpuSet), Sgc>,
}

impl GroupCapacities {
    /// Whether no group was refreshed yet.
    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The capacity of `group` at `level` as last refreshed, if it was.
    pub(super) fn of(&self, level: usize, group: &CpuSet) -> Option<u64> {
        self.map.get(&(level, *group)).map(|s| s.capacity)
    }

    /// Whether a newly idle pass at `t` refreshes `group` (`time_after_eq(jiffies,
    /// sg->sgc->next_update)`); a group never refreshed is.
    pub(super) fn due(&self, t: u64, level: usize, group: &CpuSet) -> bool {
        self.map
            .get(&(level, *group))
            .is_none_or(|s| t >= s.next_update_ns)
    }

    /// update_group_capacity at `t`: the group's new capacity, next due `interval_ns` later
    /// (`jiffies + sd->balance_interval`).
    pub(super) fn refresh(
        &mut self,
        t: u64,
        level: usize,
        group: CpuSet,
        capacity: u64,
        interval_ns: u64,
    ) {
        self.map.insert(
            (level, group),
            Sgc {
                capacity,
                next_update_ns: t.saturating_add(interval_ns),
            },
        );
    }
}
