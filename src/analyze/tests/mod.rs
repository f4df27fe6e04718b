//! Analyzer tests from event sequences built in code: pure, fast, no kernel. One file per
//! concern; this one holds the event builders they share.

mod cgroup;
mod counters;
mod folded;
mod idle;
mod latency;
mod migrate;
mod misc;
mod unseen;

use super::{Analyzer, AnalyzerConfig, Filter, Snapshot, TaskMigrations, WaitStatus};
use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind, MigrateContext, Pid, Reason, ReasonSource};
use crate::topology::{LevelKind, Topology};

/// Intervals long enough that nothing closes unless a test wants it to.
pub const LONG: u64 = 1 << 62;

pub fn ev(ts_ns: u64, cpu: u32, kind: EventKind) -> Event {
    Event { ts_ns, cpu, kind }
}

pub fn switch(ts: u64, cpu: u32, prev_pid: Pid, prev_state: u32, next_pid: Pid) -> Event {
    ev(
        ts,
        cpu,
        EventKind::Switch {
            prev_pid,
            prev_state,
            next_pid,
        },
    )
}

pub fn wakeup(ts: u64, pid: Pid, target_cpu: u32) -> Event {
    ev(ts, target_cpu, EventKind::Wakeup { pid, target_cpu })
}

pub fn wakeup_new(ts: u64, parent_cpu: u32, pid: Pid, tgid: Pid, target_cpu: u32) -> Event {
    ev(
        ts,
        parent_cpu,
        EventKind::WakeupNew {
            pid,
            tgid,
            target_cpu,
        },
    )
}

pub fn migrate(ts: u64, pid: Pid, src_cpu: u32, dst_cpu: u32, reason: Reason) -> Event {
    migrate_full(ts, pid, src_cpu, dst_cpu, reason, ReasonSource::Stack, None)
}

pub fn migrate_full(
    ts: u64,
    pid: Pid,
    src_cpu: u32,
    dst_cpu: u32,
    reason: Reason,
    source: ReasonSource,
    stack_id: Option<u32>,
) -> Event {
    ev(
        ts,
        dst_cpu,
        EventKind::Migrate(Box::new(crate::event::MigrateInfo {
            pid,
            src_cpu,
            dst_cpu,
            reason,
            source,
            stack_id,
            ctx: MigrateContext::default(),
        })),
    )
}

pub fn task(ts: u64, pid: Pid, tgid: Pid, comm: &str) -> Event {
    ev(
        ts,
        0,
        EventKind::Task(Box::new(crate::event::TaskInfo {
            pid,
            tgid,
            comm: comm.to_string(),
            exec: false,
        })),
    )
}

pub fn affinity(ts: u64, pid: Pid, list: &str) -> Event {
    ev(
        ts,
        0,
        EventKind::Affinity {
            pid,
            cpus: Box::new(CpuSet::parse_list(list).unwrap()),
        },
    )
}

/// A snapshot's per-process latency rows as (tgid, comm, sample count).
pub fn process_rows(s: &Snapshot) -> Vec<(Option<u32>, Option<&str>, u64)> {
    s.runqlat_by_process
        .iter()
        .map(|p| (p.tgid, p.comm.as_deref(), p.latency.count))
        .collect()
}

pub fn exit(ts: u64, pid: Pid, tgid: Pid) -> Event {
    ev(ts, 0, EventKind::Exit { pid, tgid })
}

/// `sched_update_nr_running_tp`: `rq_cpu`'s nr_running, seen on that CPU.
pub fn nr(ts: u64, rq_cpu: u32, nr_running: u32) -> Event {
    ev(
        ts,
        rq_cpu,
        EventKind::NrRunning {
            rq_cpu: rq_cpu as u16,
            nr_running,
            util_est: crate::event::OptU32::NONE,
            cfs_h_nr_running: crate::event::OptU32::NONE,
        },
    )
}

/// A `Pelt` of `rq_cpu` seen on CPU 0 at `ts`: `load` as its load and runnable sums, a full
/// util, util_est 0; sent by a search (two CFS tasks queued) when `at_search`.
pub fn pelt_full(ts: u64, rq_cpu: u32, load: u64, at_search: bool) -> Event {
    ev(
        ts,
        0,
        EventKind::Pelt(Box::new(crate::event::PeltInfo {
            rq_cpu,
            load_avg: load,
            runnable_avg: load,
            util_avg: 1024,
            util_est: Some(0),
            at_search: at_search.then_some(crate::event::SearchTasks {
                nr_running: 2,
                cfs_h_nr_running: 2,
                idle: false,
            }),
        })),
    )
}

pub fn clock(ts: u64) -> Event {
    ev(ts, 0, EventKind::Clock)
}

/// SMT pairs, LLCs of 4, one NUMA level over 8 CPUs.
pub fn topo3() -> Topology {
    Topology::synthetic(
        &[
            (LevelKind::Smt, "SMT", 2),
            (LevelKind::Llc, "MC", 4),
            (LevelKind::Numa, "NUMA", 8),
        ],
        8,
    )
}

pub fn analyzer(topo: Topology, interval_ns: u64) -> Analyzer {
    analyzer_with(topo, interval_ns, Filter::default())
}

pub fn analyzer_with(topo: Topology, interval_ns: u64, filter: Filter) -> Analyzer {
    Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns,
            filter,
            ..Default::default()
        },
    )
}

/// Pushes every event, returns the closed snapshots.
pub fn feed(a: &mut Analyzer, events: &[Event]) -> Vec<Snapshot> {
    let mut out = Vec::new();
    for e in events {
        a.push(e, &mut out);
    }
    out
}

/// Pushes every event, then returns every snapshot including the partial last one.
pub fn run(a: &mut Analyzer, events: &[Event]) -> Vec<Snapshot> {
    let mut out = feed(a, events);
    out.extend(a.finish());
    out
}

/// The one snapshot of a run that fits in one interval.
pub fn one(topo: Topology, events: &[Event]) -> Snapshot {
    let mut a = analyzer(topo, LONG);
    let mut s = run(&mut a, events);
    assert_eq!(s.len(), 1, "expected one snapshot");
    s.remove(0)
}

/// `(movable_ns, pinned_ns)` of the domain with this level key and span.
pub fn iww(s: &Snapshot, level: &str, span: &str) -> (u64, u64) {
    let d = s
        .idle_while_waiting
        .iter()
        .find(|d| d.level == level && d.span.to_string() == span)
        .unwrap_or_else(|| panic!("no domain {level} {span}"));
    (d.movable_ns, d.pinned_ns)
}
