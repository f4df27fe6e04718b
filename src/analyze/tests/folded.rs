//! Folded mode: latency from `Fold` events equals what the per-event analysis gives for the
//! same samples, switches and wakeups add nothing to it, and idle-while-others-wait counts
//! the waiters `nr_running` implies.

use super::*;
use crate::analyze::hist::LatHist;
use crate::event::{Fold, FoldedHist};
use std::collections::BTreeMap;

fn fold(ts: u64, by_cpu: Vec<(u32, FoldedHist)>, by_tgid: Vec<(Pid, FoldedHist)>) -> Event {
    let (by_cpu, by_tgid) = (by_cpu.into_iter().collect(), by_tgid.into_iter().collect());
    ev(ts, 0, EventKind::Fold(Box::new(Fold { by_cpu, by_tgid })))
}

/// The empty `Fold` a folded source starts with.
fn fold_start(ts: u64) -> Event {
    fold(ts, Vec::new(), Vec::new())
}

/// Processes (tgid, leader's comm) and their threads.
const PROCS: [(Pid, &str, &[Pid]); 3] = [
    (100, "web", &[100, 101, 102]),
    (200, "db", &[200, 201]),
    (300, "cron", &[300]),
];

fn tgid_of(pid: Pid) -> Pid {
    PROCS.iter().find(|p| p.2.contains(&pid)).unwrap().0
}

fn identities() -> Vec<Event> {
    let mut evs = Vec::new();
    for (tgid, comm, threads) in PROCS {
        for &pid in threads {
            let name = if pid == tgid { comm } else { "worker" };
            evs.push(task(0, pid, tgid, name));
        }
    }
    evs
}

/// `(cpu, pid, ns)`: which task waited how long before it ran on which CPU, over all 8 CPUs
/// of [`topo3`].
fn samples() -> Vec<(u32, Pid, u64)> {
    let pids = [100, 101, 102, 200, 201, 300];
    (0..60u64)
        .map(|i| {
            let cpu = (i * 5 % 8) as u32;
            let pid = pids[(i * 7 % 6) as usize];
            (cpu, pid, 700 + i * i * 1_337 % 3_000_000)
        })
        .collect()
}

/// The per-event stream of `samples()`: each task wakes on its idle CPU, runs, sleeps.
fn per_event_stream() -> Vec<Event> {
    let mut evs = identities();
    evs.extend((0..8).map(|c| switch(0, c, 0, 1, 0)));
    for (i, (cpu, pid, ns)) in samples().into_iter().enumerate() {
        let t = 1_000 + i as u64 * 10_000_000;
        evs.push(wakeup(t, pid, cpu));
        evs.push(switch(t + ns, cpu, 0, 1, pid));
        evs.push(switch(t + ns + 1, cpu, pid, 1, 0));
    }
    evs
}

/// The folded stream of `samples()`: the same identities, then one `Fold` with them all.
fn folded_stream() -> Vec<Event> {
    let mut by_cpu: BTreeMap<u32, LatHist> = BTreeMap::new();
    let mut by_tgid: BTreeMap<Pid, LatHist> = BTreeMap::new();
    for (cpu, pid, ns) in samples() {
        by_cpu.entry(cpu).or_default().record(ns);
        by_tgid.entry(tgid_of(pid)).or_default().record(ns);
    }
    let mut evs = vec![fold_start(0)];
    evs.extend(identities());
    evs.push(fold(
        1_000_000_000,
        by_cpu.iter().map(|(c, h)| (*c, h.to_folded())).collect(),
        by_tgid.iter().map(|(g, h)| (*g, h.to_folded())).collect(),
    ));
    evs
}

fn snapshot_with(filter: Filter, evs: &[Event]) -> Snapshot {
    let mut a = analyzer_with(topo3(), LONG, filter);
    let mut s = run(&mut a, evs);
    assert_eq!(s.len(), 1);
    s.remove(0)
}

#[test]
fn folded_latency_equals_per_event_latency() {
    let want = one(topo3(), &per_event_stream());
    let got = one(topo3(), &folded_stream());
    assert_eq!(want.runqlat_us.count, samples().len() as u64);
    assert_eq!(got.runqlat_us, want.runqlat_us);
    assert_eq!(got.runqlat_by_cpu, want.runqlat_by_cpu);
    assert_eq!(got.runqlat_by_domain, want.runqlat_by_domain);
    assert_eq!(got.runqlat_by_process, want.runqlat_by_process);
    let names: Vec<_> = got
        .runqlat_by_process
        .iter()
        .map(|p| (p.tgid, p.comm.as_deref()))
        .collect();
    assert_eq!(
        names,
        vec![
            (Some(100), Some("web")),
            (Some(200), Some("db")),
            (Some(300), Some("cron"))
        ]
    );
}

/// A folded histogram of one sample of `ns`.
fn h(ns: u64) -> FoldedHist {
    let mut l = LatHist::default();
    l.record(ns);
    l.to_folded()
}

/// A process whose leader exits before the `Fold`s that carry its last samples: the next two
/// `Fold`s after the exit are named as the live process was (and `-p NAME` keeps them); a
/// third, which cannot carry its samples, is not.
#[test]
fn folds_after_the_leaders_exit_keep_its_name() {
    let mut evs = vec![
        fold_start(0),
        task(10, 50, 50, "mixed"),
        task(20, 51, 50, "worker"),
    ];
    evs.push(exit(30, 51, 50));
    evs.push(exit(40, 50, 50));
    // The third a second and a half after the exit: past the task filter's grace too.
    for (i, t) in [100_000_000u64, 200_000_000, 1_500_000_000]
        .into_iter()
        .enumerate()
    {
        evs.push(fold(
            t,
            vec![(0, h(1_000 + i as u64))],
            vec![(50, h(1_000 + i as u64))],
        ));
    }
    let s = snapshot_with(Filter::default(), &evs);
    assert_eq!(process_rows(&s), vec![(Some(50), Some("mixed"), 3)]);
    let by_name = Filter {
        comm: Some("mixed".into()),
        ..Filter::default()
    };
    let s = snapshot_with(by_name, &evs);
    assert_eq!(s.runqlat_by_process.len(), 1);
    assert_eq!(
        s.runqlat_by_process[0].latency.count, 2,
        "the two Folds after the exit pass the name filter, the third does not"
    );
}

/// A `Fold` that carries no process (with `-p`, or where no process ran in its flush period)
/// does not use up an exited leader's two.
#[test]
fn folds_without_processes_leave_an_exited_leader_named() {
    let mut evs = vec![fold_start(0), task(10, 50, 50, "mixed")];
    evs.push(exit(40, 50, 50));
    for t in (1..=4).map(|i| i * 100_000_000u64) {
        evs.push(fold(t, vec![(0, h(900))], vec![]));
    }
    evs.push(fold(500_000_000, vec![(0, h(1_000))], vec![(50, h(1_000))]));
    for t in (6..=9).map(|i| i * 100_000_000u64) {
        evs.push(fold(t, vec![(0, h(900))], vec![]));
    }
    evs.push(fold(
        1_000_000_000,
        vec![(0, h(1_100))],
        vec![(50, h(1_100))],
    ));
    evs.push(fold(
        1_500_000_000,
        vec![(0, h(1_200))],
        vec![(50, h(1_200))],
    ));
    let by_name = Filter {
        comm: Some("mixed".into()),
        ..Filter::default()
    };
    let s = snapshot_with(by_name, &evs);
    assert_eq!(
        process_rows(&s),
        vec![(Some(50), Some("mixed"), 2)],
        "the two Folds with processes after the exit pass the name filter, the third does not"
    );
    assert_eq!(s.runqlat_us.count, 11, "every per-CPU sample counts");
}

#[test]
fn folded_filters() {
    // -p: one process; the per-CPU histograms are the kernel's (already narrowed there).
    let p = Filter {
        tgid: Some(200),
        ..Filter::default()
    };
    let s = snapshot_with(p, &folded_stream());
    let procs: Vec<_> = s.runqlat_by_process.iter().map(|p| p.tgid).collect();
    assert_eq!(procs, vec![Some(200)]);
    assert_eq!(s.runqlat_us.count, samples().len() as u64);
    // --cpus: the same CPU and domain figures as the per-event analysis.
    let cpus = Filter {
        cpus: Some(CpuSet::parse_list("0-3").unwrap()),
        ..Filter::default()
    };
    let want = snapshot_with(cpus.clone(), &per_event_stream());
    let got = snapshot_with(cpus, &folded_stream());
    assert!(got.runqlat_by_cpu.iter().all(|c| c.cpu < 4));
    assert!(got.runqlat_us.count < samples().len() as u64);
    assert_eq!(got.runqlat_us, want.runqlat_us);
    assert_eq!(got.runqlat_by_cpu, want.runqlat_by_cpu);
    assert_eq!(got.runqlat_by_domain, want.runqlat_by_domain);
}

#[test]
fn switches_and_wakeups_make_no_sample_nor_task_state() {
    let mut evs = vec![fold_start(0)];
    evs.extend((0..2).map(|c| switch(0, c, 0, 1, 0)));
    let mut t = 1_000;
    for pid in 1_000..3_000 {
        let cpu = pid % 2;
        evs.push(wakeup(t, pid, cpu));
        evs.push(switch(t + 500, cpu, 0, 1, pid));
        // Woken while it runs, and another task woken behind it.
        evs.push(wakeup(t + 600, pid, cpu));
        evs.push(wakeup(t + 700, pid + 10_000, cpu));
        evs.push(switch(t + 900, cpu, pid, 1, 0));
        t += 1_000;
    }
    let mut one_sample = LatHist::default();
    one_sample.record(42_000);
    evs.push(fold(t, vec![(1, one_sample.to_folded())], Vec::new()));
    let mut a = analyzer(Topology::synthetic_flat(2), LONG);
    let s = run(&mut a, &evs);
    assert_eq!(s[0].runqlat_us.count, 1);
    assert_eq!(s[0].runqlat_us.max, 42.0);
    assert_eq!(a.open_task_waits(), 0);
    assert!(a.is_folded());
}

/// CPU 0 runs a task with `nr0` runnable, CPU 1 idles, from 0 to 100 ms.
fn busy_and_idle(nr0: u32, extra: &[Event]) -> Snapshot {
    let mut evs = vec![
        fold_start(0),
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 5, 1, 0),
        nr(0, 0, nr0),
        nr(0, 1, 0),
    ];
    evs.extend_from_slice(extra);
    evs.push(clock(100_000_000));
    one(Topology::synthetic_flat(2), &evs)
}

#[test]
fn waiters_from_nr_running() {
    let s = busy_and_idle(3, &[]);
    assert_eq!(iww(&s, "llc", "0-1"), (100_000_000, 0));
    let table: Vec<_> = s
        .cpus
        .iter()
        .map(|c| (c.cpu, c.idle, c.current_pid, c.waiting))
        .collect();
    // The running task is not known in folded mode; the idle one is.
    assert_eq!(
        table,
        vec![(0, Some(false), None, 2), (1, Some(true), Some(0), 0)]
    );
    // Only the running task: nobody waits.
    assert_eq!(iww(&busy_and_idle(1, &[]), "llc", "0-1"), (0, 0));
    // A task queued on the idle CPU itself is about to run there.
    let s = busy_and_idle(1, &[nr(10, 1, 1)]);
    assert_eq!(iww(&s, "llc", "0-1"), (0, 0));
    assert_eq!(s.cpus[1].waiting, 1);
}

#[test]
fn waiters_follow_nr_running_and_idle_transitions() {
    // Movable until CPU 1 runs a task at 40 ms, again once it idles at 70 ms, until CPU 0's
    // queue drains to its running task at 90 ms.
    let ms = 1_000_000;
    let s = busy_and_idle(
        3,
        &[
            nr(40 * ms, 1, 1),
            switch(40 * ms, 1, 0, 1, 7),
            nr(70 * ms, 1, 0),
            switch(70 * ms, 1, 7, 1, 0),
            nr(80 * ms, 0, 2),
            nr(90 * ms, 0, 1),
        ],
    );
    assert_eq!(iww(&s, "llc", "0-1"), (60 * ms, 0));
    // nr_running unknown: no waiter is assumed.
    let evs = [
        fold_start(0),
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 5, 1, 0),
        clock(1_000),
    ];
    assert_eq!(
        iww(&one(Topology::synthetic_flat(2), &evs), "llc", "0-1"),
        (0, 0)
    );
}

#[test]
fn anonymous_waiters_per_level() {
    // CPU 4 idles, the others run one task each, CPU 0 has one more queued: only the NUMA
    // domain sees it.
    let mut evs = vec![fold_start(0)];
    for c in 0..8u32 {
        let next = if c == 4 { 0 } else { 100 + c };
        evs.push(switch(0, c, 0, 1, next));
        evs.push(nr(0, c, u32::from(c != 4) + u32::from(c == 0)));
    }
    evs.push(clock(3_000));
    let s = one(topo3(), &evs);
    assert_eq!(iww(&s, "numa", "0-7"), (3_000, 0));
    assert_eq!(iww(&s, "llc", "0-3"), (0, 0));
    assert_eq!(iww(&s, "smt", "0-1"), (0, 0));
}

#[test]
fn inconsistent_histograms_are_dropped() {
    let mut h = LatHist::default();
    h.record(5_000);
    h.record(9_000);
    let good = h.to_folded();
    let mut bad = good.clone();
    bad.count += 1;
    let evs = [
        fold_start(0),
        fold(
            1_000,
            vec![(0, bad.clone()), (1, good.clone())],
            vec![(7, bad), (8, good)],
        ),
    ];
    let mut a = analyzer(Topology::synthetic_flat(2), LONG);
    let s = run(&mut a, &evs);
    assert_eq!(s[0].runqlat_us.count, 2);
    let cpus: Vec<u32> = s[0].runqlat_by_cpu.iter().map(|c| c.cpu).collect();
    assert_eq!(cpus, vec![1]);
    let procs: Vec<_> = s[0].runqlat_by_process.iter().map(|p| p.tgid).collect();
    assert_eq!(procs, vec![Some(8)]);
    assert_eq!(a.dropped_folds(), 2);
}

#[test]
fn turning_folded_ends_per_task_waits() {
    // Task 20 waits on CPU 0 from 100; the stream turns folded at 200: its wait ends there
    // and its run at 600 is no sample.
    let evs = [
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 0, 1, 0),
        wakeup(100, 20, 0),
        fold_start(200),
        switch(600, 0, 10, 1, 20),
        clock(1_000),
    ];
    let mut a = analyzer(Topology::synthetic_flat(2), LONG);
    let s = run(&mut a, &evs);
    assert_eq!(iww(&s[0], "llc", "0-1"), (100, 0));
    assert_eq!(s[0].runqlat_us.count, 0);
    assert_eq!(a.open_task_waits(), 0);
}
