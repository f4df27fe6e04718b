//! Intervals, finish, filters, lost events, disorder and memory.

use super::*;
use crate::analyze::MAX_EMPTY_INTERVALS;

#[test]
fn first_interval_starts_at_first_event_and_empty_ones_are_emitted() {
    let mut a = analyzer(Topology::synthetic_flat(2), 1_000);
    let s = feed(
        &mut a,
        &[
            clock(5_000),
            migrate(5_100, 1, 0, 1, Reason::Wakeup),
            clock(8_000),
        ],
    );
    let spans: Vec<(u64, u64)> = s.iter().map(|s| (s.t_start_ns, s.t_end_ns)).collect();
    assert_eq!(spans, vec![(5_000, 6_000), (6_000, 7_000), (7_000, 8_000)]);
    assert_eq!(s[0].migrations.total, 1);
    assert_eq!(s[0].events, 1, "Clock ticks are not counted as events");
    assert_eq!(s[1].migrations.total, 0);
    // The event at exactly 8000 opened the next interval.
    let last = a.finish().unwrap();
    assert_eq!(
        (last.t_start_ns, last.t_end_ns, last.partial),
        (8_000, 8_000, true)
    );
}

#[test]
fn finish_returns_the_partial_interval_once() {
    let mut a = analyzer(Topology::synthetic_flat(2), 1_000);
    assert!(a.finish().is_none(), "nothing seen");
    let s = feed(
        &mut a,
        &[
            migrate(0, 1, 0, 1, Reason::Wakeup),
            migrate(1_200, 1, 1, 0, Reason::Wakeup),
            migrate(1_700, 1, 0, 1, Reason::Wakeup),
        ],
    );
    assert_eq!(s.len(), 1);
    let p = a.finish().unwrap();
    assert_eq!((p.t_start_ns, p.t_end_ns, p.partial), (1_000, 1_700, true));
    assert_eq!(p.migrations.total, 2);
    assert!(a.finish().is_none());
    // Nothing since the last closed interval: None.
    let mut b = analyzer(Topology::synthetic_flat(2), 1_000);
    let mut out = Vec::new();
    b.push(&clock(0), &mut out);
    b.push(&clock(999), &mut out);
    assert!(out.is_empty());
    assert!(b.finish().is_some());
    assert!(b.finish().is_none());
}

#[test]
fn long_silence_is_collapsed() {
    let mut a = analyzer(Topology::synthetic_flat(2), 10);
    let far = 10 * (MAX_EMPTY_INTERVALS + 10) + 5;
    let s = feed(&mut a, &[clock(0), clock(far)]);
    assert_eq!(s.len(), 2);
    assert_eq!((s[0].t_start_ns, s[0].t_end_ns), (0, 10));
    assert_eq!(s[1].t_start_ns, 10);
    assert_eq!(s[1].t_end_ns, far - 5);
    // A timestamp near the end of time must not overflow or loop.
    let s = feed(&mut a, &[clock(u64::MAX - 3), clock(u64::MAX)]);
    assert!(s.len() <= 2);
    assert!(a.finish().is_some());
}

#[test]
fn out_of_order_timestamps_do_not_panic() {
    let mut a = analyzer(topo3(), LONG);
    let evs = [
        switch(5_000, 0, 0, 1, 10),
        switch(5_000, 1, 0, 1, 0),
        // Stamped before what was already seen: accounted at 5000.
        wakeup(3_000, 20, 0),
        // Runs before its (later-stamped) wakeup: latency saturates at 0.
        wakeup(7_000, 21, 2),
        switch(6_500, 2, 0, 1, 21),
        switch(4_000, 0, 10, 1, 20),
        migrate(10, 20, 0, 1, Reason::Wakeup),
        ev(1, 1, EventKind::Lost { count: 3 }),
        ev(
            0,
            9_999,
            EventKind::NrRunning {
                rq_cpu: 9_999,
                nr_running: 1,
                util_est: crate::event::OptU32::NONE,
                cfs_h_nr_running: crate::event::OptU32::NONE,
            },
        ),
        switch(0, 4_000_000, 0, 1, 5),
        wakeup(0, 6, 4_000_000),
        clock(2),
    ];
    let s = run(&mut a, &evs);
    assert_eq!(s.len(), 1);
    let s = &s[0];
    assert_eq!((s.t_start_ns, s.t_end_ns), (5_000, 7_000));
    assert_eq!(s.runqlat_us.count, 2);
    assert_eq!(s.runqlat_us.log2_buckets, vec![2]);
    assert_eq!(s.runqlat_us.max, 1.0);
    assert_eq!(s.lost_events, 3);
}

#[test]
fn exit_drops_task_state() {
    let mut a = analyzer(topo3(), 1_000);
    let mut evs = Vec::new();
    for i in 0..1_000u32 {
        let pid = 100 + i;
        let t = i as u64 * 10;
        evs.push(task(t, pid, pid, "short"));
        evs.push(affinity(t, pid, "0-1"));
        evs.push(wakeup_new(t, 0, pid, pid, 1));
        evs.push(switch(t + 1, 1, 0, 1, pid));
        evs.push(exit(t + 2, pid, pid));
        evs.push(switch(t + 3, 1, pid, 64, 0));
    }
    let s = run(&mut a, &evs);
    assert_eq!(a.tracked_tasks(), 0);
    let forks: u64 = s.iter().map(|s| s.migrations.by_reason["fork"]).sum();
    assert_eq!(forks, 1_000);
    // Every task seen keeps its one entry (the model knows where it ran) until its exit;
    // its wait ends when it runs.
    let mut a = analyzer(topo3(), 1_000);
    feed(
        &mut a,
        &[wakeup(0, 7, 0), task(0, 8, 8, "x"), wakeup(0, 8, 0)],
    );
    assert_eq!((a.tracked_tasks(), a.open_task_waits()), (2, 2));
    feed(&mut a, &[switch(1, 0, 0, 1, 7), switch(2, 0, 7, 1, 8)]);
    assert_eq!((a.tracked_tasks(), a.open_task_waits()), (2, 0));
    feed(&mut a, &[exit(3, 8, 8), exit(4, 7, 7)]);
    assert_eq!(a.tracked_tasks(), 0);
}

/// Two processes: 10 ("web", threads 10 and 11) and 20 ("db"); samples on CPUs 0, 1 and 4,
/// migrations from each.
fn mixed() -> Vec<Event> {
    vec![
        task(0, 10, 10, "web"),
        task(0, 11, 10, "web-worker"),
        task(0, 20, 20, "db"),
        wakeup(0, 10, 0),
        switch(1_000, 0, 0, 1, 10),
        wakeup(0, 11, 1),
        switch(2_000, 1, 0, 1, 11),
        wakeup(0, 20, 4),
        switch(4_000, 4, 0, 1, 20),
        migrate(5_000, 11, 1, 0, Reason::Wakeup),
        migrate(5_000, 20, 4, 5, Reason::Wakeup),
        migrate(5_000, 99, 6, 7, Reason::Wakeup),
    ]
}

#[test]
fn filter_by_tgid_takes_every_thread() {
    let f = Filter {
        tgid: Some(10),
        ..Filter::default()
    };
    let mut a = analyzer_with(topo3(), LONG, f);
    let s = &run(&mut a, &mixed())[0];
    assert_eq!(s.runqlat_us.count, 2);
    assert_eq!(s.migrations.total, 1);
    assert_eq!(s.runqlat_by_process.len(), 1);
    assert_eq!(s.runqlat_by_process[0].comm.as_deref(), Some("web"));
    assert_eq!(
        s.cpus.len(),
        8,
        "--cpus is the only filter of the CPU table"
    );
}

#[test]
fn filter_by_comm_is_exact() {
    let f = Filter {
        comm: Some("web".to_string()),
        ..Filter::default()
    };
    let mut a = analyzer_with(topo3(), LONG, f);
    let s = &run(&mut a, &mixed())[0];
    assert_eq!(s.runqlat_us.count, 1);
    assert_eq!(s.runqlat_us.max, 1.0);
    assert_eq!(s.migrations.total, 0);
}

#[test]
fn reconfigure_keeps_what_was_sent_once_and_counts_under_the_new_filter() {
    // The identities are sent once, before the switch: the new filter must still know them.
    let mut a = analyzer(topo3(), 1_000_000);
    let mut out = Vec::new();
    for e in &mixed()[..9] {
        a.push(e, &mut out);
    }
    a.push(&wakeup(4_500, 20, 4), &mut out);
    a.reconfigure(
        10_000,
        Filter {
            comm: Some("web".to_string()),
            ..Filter::default()
        },
    );
    assert_eq!(a.config().interval_ns, 10_000);
    for e in [
        wakeup(5_000, 10, 0),
        switch(6_000, 0, 10, 1, 10),
        wakeup(5_000, 11, 1),
        switch(6_000, 1, 11, 1, 11),
        switch(6_000, 4, 20, 1, 20),
        migrate(7_000, 10, 0, 1, Reason::Wakeup),
        migrate(7_000, 11, 1, 0, Reason::Wakeup),
        clock(20_000),
    ] {
        a.push(&e, &mut out);
    }
    let s = out.last().expect("an interval of the new length closed");
    assert_eq!(
        s.t_start_ns, 4_500,
        "the new interval starts at the latest event"
    );
    assert_eq!(s.len_ns(), 10_000);
    assert_eq!(
        s.runqlat_us.count, 1,
        "only `web` itself, known from before: {s:?}"
    );
    assert_eq!(s.migrations.total, 1);
}

#[test]
fn filter_by_cpus() {
    let f = Filter {
        cpus: Some(CpuSet::parse_list("4-5").unwrap()),
        ..Filter::default()
    };
    let mut a = analyzer_with(topo3(), LONG, f);
    let s = &run(&mut a, &mixed())[0];
    assert_eq!(s.runqlat_us.count, 1);
    assert_eq!(s.runqlat_us.max, 4.0);
    assert_eq!(s.migrations.total, 1);
    let cpus: Vec<u32> = s.cpus.iter().map(|c| c.cpu).collect();
    assert_eq!(cpus, vec![4, 5]);
    let spans: Vec<String> = s
        .idle_while_waiting
        .iter()
        .map(|d| format!("{}:{}", d.level, d.span))
        .collect();
    assert_eq!(spans, vec!["smt:4-5", "llc:4-7", "numa:0-7"]);
    let doms: Vec<String> = s
        .runqlat_by_domain
        .iter()
        .map(|d| d.span.to_string())
        .collect();
    assert_eq!(doms, vec!["4-5", "4-7", "0-7"]);
}

#[test]
fn filter_matching_rules() {
    let f = Filter {
        tgid: Some(10),
        ..Filter::default()
    };
    assert!(f.matches_task(11, Some(10), None, None));
    assert!(
        f.matches_task(10, None, None, None),
        "the leader's pid is the tgid"
    );
    assert!(!f.matches_task(11, None, None, None));
    assert!(!f.matches_task(12, Some(12), Some("x"), None));
    let f = Filter {
        comm: Some("a".into()),
        ..Filter::default()
    };
    assert!(f.matches_task(1, None, Some("a"), None));
    assert!(!f.matches_task(1, None, Some("ab"), None));
    assert!(!f.matches_task(1, None, None, None));
    assert!(Filter::default().matches_task(1, None, None, None));
}

#[test]
fn lost_events_by_cpu() {
    let mut a = analyzer(Topology::synthetic_flat(4), 1_000);
    let s = run(
        &mut a,
        &[
            ev(0, 2, EventKind::Lost { count: 5 }),
            ev(10, 3, EventKind::Lost { count: 1 }),
            ev(20, 2, EventKind::Lost { count: 2 }),
            clock(1_500),
        ],
    );
    assert_eq!(s[0].lost_events, 8);
    assert_eq!(
        s[0].lost_by_cpu
            .iter()
            .map(|(c, n)| (*c, *n))
            .collect::<Vec<_>>(),
        vec![(2, 7), (3, 1)]
    );
    assert_eq!(s[1].lost_events, 0);
    assert!(s[1].lost_by_cpu.is_empty());
    assert_eq!(a.lost_total(), 8);
}

#[test]
fn cpu_table_at_interval_end() {
    let s = one(
        Topology::synthetic_flat(3),
        &[
            switch(0, 0, 0, 1, 10),
            switch(0, 1, 10, 1, 0),
            ev(
                1,
                0,
                EventKind::NrRunning {
                    rq_cpu: 0,
                    nr_running: 2,
                    util_est: crate::event::OptU32::NONE,
                    cfs_h_nr_running: crate::event::OptU32::NONE,
                },
            ),
            ev(
                1,
                0,
                EventKind::Pelt(Box::new(crate::event::PeltInfo {
                    rq_cpu: 0,
                    load_avg: 1,
                    runnable_avg: 2,
                    util_avg: 300,
                    util_est: None,
                    at_search: None,
                })),
            ),
            ev(
                1,
                0,
                EventKind::Capacity {
                    rq_cpu: 0,
                    capacity: 1024,
                },
            ),
            wakeup(2, 20, 0),
        ],
    );
    let c0 = &s.cpus[0];
    assert_eq!(c0.idle, Some(false));
    assert_eq!(c0.current_pid, Some(10));
    assert_eq!(c0.nr_running, Some(2));
    assert_eq!(c0.util_avg, Some(300));
    assert_eq!(c0.capacity, Some(1024));
    assert_eq!(c0.waiting, 1);
    assert_eq!(s.cpus[1].idle, Some(true));
    assert_eq!(s.cpus[2].idle, None);
    assert_eq!(s.cpus[2].current_pid, None);
}

#[test]
fn replay_is_deterministic() {
    let evs = mixed();
    let a1 = run(&mut analyzer(topo3(), 700), &evs);
    let a2 = run(&mut analyzer(topo3(), 700), &evs);
    assert_eq!(a1, a2);
}

#[test]
fn a_reused_pid_starts_afresh() {
    // Thread 500 of "old" (pinned to CPU 1) is woken, then its exit is seen before it ran
    // (the run was lost). The kernel hands pid 500 to a thread of "new" (tgid 600), which
    // first runs much later without a wakeup of its own, then sleeps and is woken once.
    let evs = [
        switch(0, 0, 0, 1, 0),
        switch(0, 1, 0, 1, 0),
        task(10, 500, 500, "old"),
        affinity(10, 500, "1"),
        wakeup(100, 500, 1),
        exit(200, 500, 500),
        task(1_000_000, 500, 600, "new"),
        switch(5_000_000, 1, 0, 1, 500),
        switch(5_000_100, 1, 500, 1, 0),
        wakeup(6_000_000, 500, 1),
        switch(6_002_000, 1, 0, 1, 500),
    ];
    let s = one(topo3(), &evs);
    // One sample (2 us), not the 4.9 ms since the old thread's wakeup.
    assert_eq!(s.runqlat_us.count, 1);
    assert_eq!(s.runqlat_us.max, 2.0);
    let p = &s.runqlat_by_process;
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].tgid, p[0].comm.as_deref()), (Some(600), Some("new")));
    // The old thread waited pinned from its wakeup to its exit (100 ns in each domain
    // spanning CPUs 0 and 1), not a nanosecond longer; its pinning did not stick to the new
    // thread, whose 2 us wait on CPU 1 while CPU 0 idled counts as movable.
    let both: Vec<_> = s
        .idle_while_waiting
        .iter()
        .filter(|d| d.span.contains(0) && d.span.contains(1))
        .collect();
    assert!(!both.is_empty());
    for d in both {
        assert_eq!((d.pinned_ns, d.movable_ns), (100, 2_000), "{d:?}");
    }
}

#[test]
fn a_filtered_task_moved_after_its_exit_still_counts() {
    // An exiting thread can block after sched_process_exit and be moved by its wakeup: the
    // comm filter still knows it for a second.
    let f = Filter {
        comm: Some("web".to_string()),
        ..Filter::default()
    };
    let mut a = analyzer_with(topo3(), LONG, f);
    let evs = vec![
        task(0, 11, 10, "web"),
        exit(1_000, 11, 10),
        migrate(2_000, 11, 1, 0, Reason::Wakeup),
        migrate(2_000_000_000, 11, 0, 1, Reason::Wakeup),
    ];
    let s = &run(&mut a, &evs)[0];
    assert_eq!(
        s.migrations.total, 1,
        "the move 1 us after exit, not 2 s after"
    );
}
