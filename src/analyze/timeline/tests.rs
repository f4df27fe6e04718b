//! The timeline against event sequences whose states are known: each cell says what the
//! events put on the CPU, at the nanosecond.

use super::*;
use crate::analyze::tests::{analyzer, clock, migrate, switch, wakeup, LONG};
use crate::topology::Topology;

/// Feeds the analyzer and the timeline as the pipeline does (the event, then the state).
fn follow(tl: &mut Timeline, a: &mut Analyzer, events: &[Event]) {
    let mut out = Vec::new();
    for e in events {
        a.push(e, &mut out);
        tl.observe(e, a);
    }
}

/// CPU 0 runs 10; 11 and 12 wake onto it (2 waiting from 3 us); 10 is preempted by 11
/// (still 2 waiting: 10 and 12); 11 sleeps (1: 12); 12 is pulled to CPU 1 at 7 us by the
/// periodic balancer; 10 sleeps at 9 us and CPU 0 goes idle. CPU 1 idles from 1.5 us.
fn story() -> Vec<Event> {
    vec![
        switch(1_000, 0, 0, 0, 10),
        switch(1_500, 1, 0, 0, 20),
        switch(1_600, 1, 20, 1, 0),
        wakeup(2_000, 11, 0),
        wakeup(3_000, 12, 0),
        switch(5_000, 0, 10, 0, 11),
        switch(6_000, 0, 11, 1, 10),
        migrate(7_000, 12, 0, 1, Reason::PeriodicBalance),
        switch(7_500, 1, 0, 0, 12),
        switch(9_000, 0, 10, 1, 0),
        clock(20_000),
    ]
}

/// What a lane of `n` changes may reserve at most: the blocks they span and a spare.
fn lane_room(n: usize) -> usize {
    (n.div_ceil(blocks::BLOCK) + 2) * blocks::BLOCK * std::mem::size_of::<Change>()
}

/// A change is its 12 bytes of data, no padding: the lanes' bound is in changes, and their
/// memory follows this size.
#[test]
fn a_change_takes_twelve_bytes() {
    assert_eq!(std::mem::size_of::<Change>(), 12);
    let c = Change {
        t_ns: u64::MAX - 1,
        state: CpuState {
            known: true,
            running: false,
            waiting: 3,
        },
    };
    let t = c.t_ns;
    assert_eq!(t, u64::MAX - 1);
    assert_eq!({ c.state }.waiting, 3);
}

fn kind(tl: &Timeline, cpu: u32, a: u64, b: u64) -> CellKind {
    CellKind::of(&tl.cell(cpu, a, b))
}

#[test]
fn cells_say_what_the_events_put_on_the_cpu() {
    let mut a = analyzer(Topology::synthetic_flat(2), LONG);
    let mut tl = Timeline::new(2, WINDOW_NS);
    follow(&mut tl, &mut a, &story());
    // Before the first switch nothing is known.
    assert_eq!(kind(&tl, 0, 0, 1_000), CellKind::Unknown);
    assert_eq!(kind(&tl, 0, 1_000, 2_000), CellKind::Busy);
    // One waiting from 2 us, two from 3 us to 7 us (the preemption keeps two waiting).
    assert_eq!(kind(&tl, 0, 2_999, 3_000), CellKind::Waiting(1));
    assert_eq!(kind(&tl, 0, 3_000, 3_001), CellKind::Waiting(2));
    assert_eq!(kind(&tl, 0, 5_000, 6_000), CellKind::Waiting(2));
    assert_eq!(kind(&tl, 0, 6_000, 7_000), CellKind::Waiting(1));
    // A cell takes the most waiting at any instant of its span.
    assert_eq!(kind(&tl, 0, 0, 20_000), CellKind::Waiting(2));
    // 12 left for CPU 1: CPU 0 runs alone, then idles.
    assert_eq!(kind(&tl, 0, 7_000, 9_000), CellKind::Busy);
    assert_eq!(kind(&tl, 0, 8_000, 10_000), CellKind::Part);
    assert_eq!(kind(&tl, 0, 9_000, 20_000), CellKind::Idle);
    // CPU 1: idle, then 12 waits on it (idle with one waiting) and runs.
    assert_eq!(kind(&tl, 1, 2_000, 7_000), CellKind::Idle);
    assert_eq!(kind(&tl, 1, 7_000, 7_500), CellKind::Waiting(1));
    assert_eq!(kind(&tl, 1, 7_500, 20_000), CellKind::Busy);
    // After the newest event nothing is known.
    assert_eq!(kind(&tl, 1, 20_001, 30_000), CellKind::Unknown);
    let c = tl.cell(0, 8_000, 10_000);
    assert_eq!((c.known_ns, c.busy_ns), (2_000, 1_000));
    // The analyzer's own table agrees with the timeline's last state.
    assert_eq!(a.cpu_activity(1), (Some(false), 0));
    let s = tl.state_at(0, 3_500).unwrap();
    assert_eq!((s.running, s.waiting), (true, 2));
}

#[test]
fn migrations_are_marked_with_their_reason_on_both_rows() {
    let mut a = analyzer(Topology::synthetic_flat(2), LONG);
    let mut tl = Timeline::new(2, WINDOW_NS);
    follow(&mut tl, &mut a, &story());
    let m: Vec<&Mark> = tl.marks(0, u64::MAX).collect();
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].t_ns, 7_000);
    assert!(m[0].on(0) && m[0].on(1) && m[0].names(12));
    assert!(matches!(
        m[0].kind,
        MarkKind::Migrate {
            reason: Reason::PeriodicBalance,
            src: 0,
            dst: 1,
            ..
        }
    ));
    assert_eq!(tl.marks(7_001, u64::MAX).count(), 0);
    assert_eq!(tl.idle_stretches(1, 0, 20_000), vec![(1_600, 7_500)]);
    assert_eq!(tl.idle_stretches(0, 0, 20_000), vec![(9_000, 20_000)]);
}

#[test]
fn the_window_bounds_memory_not_the_run() {
    let topo = Topology::synthetic_flat(2);
    let mut a = analyzer(topo, LONG);
    let mut tl = Timeline::new(2, 1_000_000);
    let mut sizes = Vec::new();
    // 100 ms of a task switching in and out every 1 us on both CPUs, 1 ms window.
    for round in 0..10u64 {
        let mut evs = Vec::new();
        for i in 0..10_000u64 {
            let t = round * 10_000_000 + i * 1_000;
            for cpu in 0..2 {
                let (p, n) = if i % 2 == 0 {
                    (0, 10 + cpu)
                } else {
                    (10 + cpu, 0)
                };
                evs.push(switch(t, cpu, p, 1, n));
            }
        }
        follow(&mut tl, &mut a, &evs);
        sizes.push(tl.len());
    }
    // 1 ms holds 1000 changes per CPU (+1 kept at the window's start), whatever the length.
    assert!(sizes.iter().all(|&n| n <= 2 * 1_002), "{sizes:?}");
    assert_eq!(sizes[9], sizes[1], "{sizes:?}");
    let from = tl.kept_from().unwrap();
    assert!(tl.now_ns() - from <= 1_001_000, "{from}");
    // Room too follows what the window holds (its blocks and a spare), not the budget.
    let room = 2 * lane_room(1_002);
    assert!(
        tl.reserved_bytes() <= room,
        "{} bytes reserved for {} changes",
        tl.reserved_bytes(),
        tl.len()
    );
}

#[test]
fn a_storm_is_capped_by_the_budget() {
    let mut a = analyzer(Topology::synthetic_flat(1), LONG);
    let mut tl = Timeline::new(LANE_BUDGET / MIN_LANE * 4, WINDOW_NS);
    let evs: Vec<Event> = (0..3 * MIN_LANE as u64)
        .map(|i| switch(i * 10, 0, (i % 2) as u32 * 5, 1, ((i + 1) % 2) as u32 * 5))
        .collect();
    follow(&mut tl, &mut a, &evs);
    assert_eq!(tl.len(), MIN_LANE);
    // Full, the lane holds the blocks its bound takes and a spare, whatever the storm's length.
    assert!(
        tl.reserved_bytes() <= lane_room(MIN_LANE),
        "{}",
        tl.reserved_bytes()
    );
}

#[test]
fn a_lane_and_the_marks_at_a_bound_not_a_power_of_two_reserve_about_that_bound() {
    // 3 CPUs: a third of the budget each. Migrations back and forth between CPUs 0 and 1,
    // one change a side and one mark each, well past both bounds.
    let mut a = analyzer(Topology::synthetic_flat(3), LONG);
    let mut tl = Timeline::new(3, u64::MAX);
    let lane = LANE_BUDGET / 3;
    let n = (lane.max(MARK_BUDGET) + lane / 2) as u64;
    let mut evs = vec![switch(1, 0, 0, 0, 10), switch(1, 1, 0, 0, 20)];
    for i in 0..n {
        let (src, dst) = if i % 2 == 0 { (0, 1) } else { (1, 0) };
        evs.push(wakeup(10 + i * 100, 30, src));
        evs.push(migrate(60 + i * 100, 30, src, dst, Reason::PeriodicBalance));
    }
    follow(&mut tl, &mut a, &evs);
    assert!(tl.marks_capped());
    // Lanes: the blocks of their bound and a spare; marks: their bound exactly (not the next
    // power of two). CPU 2 never changed: its lane holds nothing.
    let bound = 2 * lane_room(lane) + MARK_BUDGET * std::mem::size_of::<Mark>();
    assert!(tl.len() <= 2 * lane + MARK_BUDGET, "{}", tl.len());
    assert!(
        tl.reserved_bytes() <= bound,
        "{} > {bound}",
        tl.reserved_bytes()
    );
    assert!(tl.reserved_bytes() >= MARK_BUDGET * std::mem::size_of::<Mark>());
}

#[test]
fn a_clip_keeps_its_span_and_starts_with_the_state_in_force() {
    let mut a = analyzer(Topology::synthetic_flat(2), LONG);
    let mut tl = Timeline::new(2, u64::MAX).clip(4_000, 8_000);
    follow(&mut tl, &mut a, &story());
    assert_eq!(kind(&tl, 0, 0, 4_000), CellKind::Unknown);
    assert_eq!(kind(&tl, 0, 4_000, 5_000), CellKind::Waiting(2));
    assert_eq!(tl.marks(0, u64::MAX).count(), 1);
    // The clip ends at 8 us: nothing after it is known.
    assert_eq!(tl.state_at(0, 7_900).map(|s| s.running), Some(true));
    assert_eq!(tl.state_at(0, 15_000), None);
    assert_eq!(kind(&tl, 0, 8_000, 20_000), CellKind::Unknown);
}

#[test]
fn a_late_event_s_mark_keeps_its_own_time_and_its_state_the_analyzer_s() {
    let mut a = analyzer(Topology::synthetic_flat(2), LONG);
    let mut tl = Timeline::new(2, WINDOW_NS);
    // CPU 1's buffer delivers its 5 us events after CPU 0's 9 us switch.
    let evs = vec![
        switch(1_000, 0, 0, 0, 10),
        switch(1_000, 1, 0, 0, 0),
        wakeup(2_000, 12, 0),
        switch(9_000, 0, 10, 1, 0),
        migrate(5_000, 12, 0, 1, Reason::NewidleBalance),
        switch(5_100, 1, 0, 0, 12),
        clock(20_000),
    ];
    follow(&mut tl, &mut a, &evs);
    let m: Vec<u64> = tl.marks(0, u64::MAX).map(|m| m.t_ns).collect();
    assert_eq!(m, vec![5_000]);
    // The state changed when the analyzer applied it: at 9 us.
    assert_eq!(kind(&tl, 1, 5_000, 9_000), CellKind::Idle);
    assert_eq!(kind(&tl, 1, 9_000, 20_000), CellKind::Busy);
}

/// The kinds the timeline skips change no CPU's state as the analyzer reports it: over a
/// synthetic stream (thousands of wakings, nr_running changes, PELT samples and clocks among
/// switches and wakeups), every CPU's activity is the same just before and just after each of
/// them; and a timeline that looks at every CPU after every event keeps the same changes.
#[test]
fn the_kinds_skipped_change_no_cpu_and_the_rest_update_what_changes() {
    use crate::source::synthetic::{topology, Generator, SyntheticConfig};
    let cfg = SyntheticConfig {
        cpus: 8,
        tasks: 40,
        rate: 2_000_000,
        events: Some(60_000),
        seed: 7,
        ..SyntheticConfig::default()
    };
    let evs = Generator::new(&cfg).batch(60_000);
    let mut a = analyzer(topology(cfg.cpus), LONG);
    let mut named = Timeline::new(cfg.cpus, u64::MAX);
    let mut every = Timeline::new(cfg.cpus, u64::MAX);
    let activity = |a: &Analyzer| -> Vec<(Option<bool>, u32)> {
        (0..cfg.cpus as u32).map(|c| a.cpu_activity(c)).collect()
    };
    let mut out = Vec::new();
    let mut skipped = 0;
    for e in &evs {
        let skip = a.changes_no_cpu(&e.kind);
        let before = skip.then(|| activity(&a));
        a.push(e, &mut out);
        if let Some(before) = before {
            assert_eq!(before, activity(&a), "{e:?} changed a CPU's state");
            skipped += 1;
        }
        named.observe(e, &a);
        every.observe_every_cpu(&a);
    }
    assert!(skipped > 5_000, "{skipped} events of the kinds skipped");
    assert!(named.len() > 10_000, "{} changes", named.len());
    for c in 0..cfg.cpus {
        assert_eq!(
            named.lanes[c].changes, every.lanes[c].changes,
            "CPU {c}: the same changes"
        );
    }
}

#[test]
fn marks_take_room_for_what_the_window_holds_not_the_budget() {
    // A migration back and forth every 10 us for 1 s, a 10 ms window: about 1000 marks held.
    let mut a = analyzer(Topology::synthetic_flat(2), LONG);
    let mut tl = Timeline::new(2, 10_000_000);
    let mut evs = vec![switch(1, 0, 0, 0, 10), switch(1, 1, 0, 0, 20)];
    for i in 0..100_000u64 {
        let (src, dst) = if i % 2 == 0 { (0, 1) } else { (1, 0) };
        evs.push(migrate(
            100 + i * 10_000,
            30,
            src,
            dst,
            Reason::PeriodicBalance,
        ));
    }
    follow(&mut tl, &mut a, &evs);
    let marks = tl.marks(0, u64::MAX).count();
    assert!((990..=1_010).contains(&marks), "{marks} marks held");
    assert!(!tl.marks_capped());
    let most = 2 * lane_room(2) + 2048 * std::mem::size_of::<Mark>();
    assert!(
        tl.reserved_bytes() <= most,
        "{} bytes reserved, {} at most expected",
        tl.reserved_bytes(),
        most
    );
}
