//! [`Ring`]: the last N seconds of events in memory, as the batches the source delivered.
//!
//! Invariants: the batches span at most `limits.span_ns` of event time from the oldest
//! batch's last event to the newest event, and their estimated memory stays at most
//! `limits.max_bytes` (a single batch larger than that is kept alone). What falls out of the
//! ring still counts for the [`Ring::prologue`]: the latest kernel stack of each id, each live
//! task's name, cgroup and affinity, and each CPU's nr_running, PELT averages and capacity, so
//! that a dump read on its own names its tasks and classifies its migrations like the
//! recording it was cut from.

use crate::event::{Event, EventKind, Pid};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// How much a ring keeps: whichever limit is reached first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingLimits {
    /// Event time, ns.
    pub span_ns: u64,
    /// Estimated memory of the kept events, bytes.
    pub max_bytes: u64,
}

/// A batch kept in the ring, shared with dumps in progress.
type Batch = Arc<[Event]>;

/// The last seconds of events, and the state that fell out of it.
#[derive(Debug)]
pub struct Ring {
    limits: RingLimits,
    batches: VecDeque<(Batch, u64)>,
    bytes: u64,
    events: u64,
    state: State,
}

/// The latest state-setting events of what fell out of the ring.
#[derive(Debug, Default)]
struct State {
    /// An empty `Fold` was the source's first event (a folded source).
    folded: Option<Event>,
    stacks: BTreeMap<u32, Event>,
    tasks: BTreeMap<Pid, Event>,
    cgroups: BTreeMap<Pid, Event>,
    affinity: BTreeMap<Pid, Event>,
    capacity: BTreeMap<u32, Event>,
    nr_running: BTreeMap<u32, Event>,
    pelt: BTreeMap<u32, Event>,
    /// The last PELT sums a search sent, apart from the samples (`PeltInfo::at_search`).
    pelt_at_search: BTreeMap<u32, Event>,
}

impl State {
    fn fold(&mut self, e: &Event) {
        let keep = e.clone();
        match &e.kind {
            EventKind::Fold(f) if self.folded.is_none() && f.by_cpu.is_empty() => {
                self.folded = Some(keep);
            }
            EventKind::Stack(s) => {
                self.stacks.insert(s.id, keep);
            }
            EventKind::Task(t) => {
                self.tasks.insert(t.pid, keep);
            }
            EventKind::Cgroup(c) => {
                self.cgroups.insert(c.pid, keep);
            }
            EventKind::Affinity { pid, .. } => {
                self.affinity.insert(*pid, keep);
            }
            EventKind::Exit { pid, .. } => {
                self.tasks.remove(pid);
                self.cgroups.remove(pid);
                self.affinity.remove(pid);
            }
            EventKind::Capacity { rq_cpu, .. } => {
                self.capacity.insert(*rq_cpu, keep);
            }
            EventKind::NrRunning { rq_cpu, .. } => {
                self.nr_running.insert(u32::from(*rq_cpu), keep);
            }
            EventKind::Pelt(p) if p.at_search.is_some() => {
                self.pelt_at_search.insert(p.rq_cpu, keep);
            }
            EventKind::Pelt(p) => {
                self.pelt.insert(p.rq_cpu, keep);
            }
            _ => {}
        }
    }
}

/// What one event costs in memory, estimated: the event and what its kind holds on the heap.
fn event_bytes(e: &Event) -> u64 {
    use crate::event::{CgroupInfo, MigrateInfo, NumaInfo, PeltInfo, StackInfo, TaskInfo};
    let size = |n: usize| n as u64;
    let heap = match &e.kind {
        EventKind::Stack(s) => {
            size(std::mem::size_of::<StackInfo>())
                + s.frames.iter().map(|f| f.len() as u64 + 24).sum::<u64>()
        }
        EventKind::Task(t) => size(std::mem::size_of::<TaskInfo>() + t.comm.len()),
        EventKind::Cgroup(c) => {
            size(std::mem::size_of::<CgroupInfo>() + c.path.as_ref().map_or(0, |p| p.len()))
        }
        EventKind::Migrate(_) => size(std::mem::size_of::<MigrateInfo>()),
        EventKind::Pelt(_) => size(std::mem::size_of::<PeltInfo>()),
        EventKind::Numa(_) => size(std::mem::size_of::<NumaInfo>()),
        EventKind::Affinity { .. } => std::mem::size_of::<crate::cpuset::CpuSet>() as u64,
        EventKind::Balance(_) => std::mem::size_of::<crate::event::Balance>() as u64,
        EventKind::Fold(f) => 64 * (f.by_cpu.len() + f.by_tgid.len()) as u64,
        _ => 0,
    };
    std::mem::size_of::<Event>() as u64 + heap
}

impl Ring {
    /// An empty ring.
    pub fn new(limits: RingLimits) -> Ring {
        Ring {
            limits,
            batches: VecDeque::new(),
            bytes: 0,
            events: 0,
            state: State::default(),
        }
    }

    /// Keeps `batch` and lets go of what the limits no longer allow.
    pub fn push(&mut self, batch: &[Event]) {
        if batch.is_empty() {
            return;
        }
        let bytes: u64 = batch.iter().map(event_bytes).sum();
        self.batches.push_back((batch.into(), bytes));
        self.bytes += bytes;
        self.events += batch.len() as u64;
        let newest = batch.iter().map(|e| e.ts_ns).max().unwrap_or(0);
        while self.batches.len() > 1 {
            let (front, front_bytes) = &self.batches[0];
            let front_end = front.iter().map(|e| e.ts_ns).max().unwrap_or(0);
            let too_old = newest.saturating_sub(front_end) > self.limits.span_ns;
            if !too_old && self.bytes <= self.limits.max_bytes {
                break;
            }
            self.bytes -= front_bytes;
            self.events -= front.len() as u64;
            let (front, _) = self.batches.pop_front().expect("more than one batch");
            for e in front.iter() {
                self.state.fold(e);
            }
        }
    }

    /// Estimated memory of the kept events, bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Events kept.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Event time from the first kept event to the last, ns.
    pub fn span_ns(&self) -> u64 {
        let first = self.batches.front().and_then(|(b, _)| b.first());
        let last = self.batches.back().and_then(|(b, _)| b.last());
        match (first, last) {
            (Some(a), Some(b)) => b.ts_ns.saturating_sub(a.ts_ns),
            _ => 0,
        }
    }

    /// The state that fell out of the ring as events stamped at the first kept event's time
    /// (an empty `Fold` first for a folded source), to be written before [`Ring::batches`].
    pub fn prologue(&self) -> Vec<Event> {
        let Some(t0) = self.batches.front().and_then(|(b, _)| b.first()) else {
            return Vec::new();
        };
        let s = &self.state;
        s.folded
            .iter()
            .chain(s.stacks.values())
            .chain(s.tasks.values())
            .chain(s.cgroups.values())
            .chain(s.affinity.values())
            .chain(s.capacity.values())
            .chain(s.nr_running.values())
            .chain(s.pelt.values())
            .chain(s.pelt_at_search.values())
            .map(|e| Event {
                ts_ns: t0.ts_ns,
                ..e.clone()
            })
            .collect()
    }

    /// The kept batches, oldest first (shared, not copied).
    pub fn batches(&self) -> Vec<Arc<[Event]>> {
        self.batches.iter().map(|(b, _)| b.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ts_ns: u64, kind: EventKind) -> Event {
        Event {
            ts_ns,
            cpu: 0,
            kind,
        }
    }

    fn switch(ts_ns: u64) -> Event {
        at(
            ts_ns,
            EventKind::Switch {
                prev_pid: 1,
                prev_state: 0,
                next_pid: 2,
            },
        )
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn keeps_the_last_seconds_of_event_time() {
        let mut r = Ring::new(RingLimits {
            span_ns: 2 * S,
            max_bytes: u64::MAX,
        });
        for i in 0..10 {
            r.push(&[switch(i * S), switch(i * S + S / 2)]);
        }
        // Batches ending at 9.5 s: the ones ending 7.5 s and later stay (2 s span).
        let kept: Vec<u64> = r.batches().iter().map(|b| b[0].ts_ns / S).collect();
        assert_eq!(kept, vec![7, 8, 9]);
        assert_eq!(r.events(), 6);
        assert_eq!(r.span_ns(), 2 * S + S / 2);
    }

    #[test]
    fn memory_limit_wins_when_reached_first() {
        let one = event_bytes(&switch(0));
        let mut r = Ring::new(RingLimits {
            span_ns: 100 * S,
            max_bytes: 5 * one,
        });
        for i in 0..10 {
            r.push(&[switch(i), switch(i)]);
        }
        assert_eq!(r.events(), 4, "two batches of two fit in five events' room");
        assert!(r.bytes() <= 5 * one);
        // A batch over the limit on its own is kept alone.
        let big: Vec<Event> = (0..9).map(switch).collect();
        r.push(&big);
        assert_eq!(r.events(), 9);
    }

    #[test]
    fn the_prologue_restores_what_fell_out() {
        let mut r = Ring::new(RingLimits {
            span_ns: S,
            max_bytes: u64::MAX,
        });
        let task = |pid: u32, comm: &str| {
            at(
                0,
                EventKind::Task(Box::new(crate::event::TaskInfo {
                    pid,
                    tgid: pid,
                    comm: comm.into(),
                    exec: false,
                })),
            )
        };
        r.push(&[
            task(10, "old"),
            task(11, "gone"),
            at(
                0,
                EventKind::NrRunning {
                    rq_cpu: 1,
                    nr_running: 3,
                    util_est: crate::event::OptU32::NONE,
                    cfs_h_nr_running: crate::event::OptU32::NONE,
                },
            ),
            at(
                0,
                EventKind::Stack(Box::new(crate::event::StackInfo {
                    id: 7,
                    reason: crate::event::Reason::NewidleBalance,
                    frames: vec!["set_task_cpu".into()],
                })),
            ),
        ]);
        r.push(&[
            at(S / 2, EventKind::Exit { pid: 11, tgid: 11 }),
            task(10, "renamed"),
        ]);
        r.push(&[switch(3 * S)]);
        let p = r.prologue();
        assert!(
            p.iter().all(|e| e.ts_ns == 3 * S),
            "stamped at the ring's start"
        );
        let names: Vec<String> = p
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Task(t) => Some(t.comm.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            names,
            vec!["renamed"],
            "the latest name; the exited task dropped"
        );
        assert!(p
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Stack(s) if s.id == 7)));
        assert!(p.iter().any(|e| matches!(
            e.kind,
            EventKind::NrRunning {
                rq_cpu: 1,
                nr_running: 3,
                util_est: crate::event::OptU32::NONE,
                cfs_h_nr_running: crate::event::OptU32::NONE,
            }
        )));
    }
}
