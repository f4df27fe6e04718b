//! Findings from event sequences built in code, fed through the analyzer that owns the model:
//! one positive and one negative case per kind, the cap, and a balanced run raising nothing.

use crate::analyze::tests::{
    affinity, analyzer, clock, ev, migrate, nr, one, run, switch, task, topo3, wakeup, LONG,
};
use crate::analyze::{Analyzer, AnalyzerConfig, Snapshot};
use crate::event::{Event, EventKind, Reason};
use crate::model::{Finding, FindingKind, FindingLog, ModelConfig};
use crate::topology::{LevelKind, Topology};

const MS: u64 = 1_000_000;

fn count(s: &Snapshot, k: FindingKind) -> u64 {
    s.findings_by_kind[k.name()]
}

fn flat2() -> Topology {
    Topology::synthetic_flat(2)
}

/// CPU 0 runs task 10, CPU 1 is idle, task 11 wakes onto CPU 0 at 1 us.
fn one_waits_next_to_idle() -> Vec<Event> {
    vec![
        switch(0, 0, 0, 0, 10),
        nr(0, 0, 1),
        switch(0, 1, 0, 1, 0),
        nr(0, 1, 0),
        wakeup(1_000, 11, 0),
        nr(1_000, 0, 2),
    ]
}

#[test]
fn missed_pull_when_idle_outlasts_the_balance_interval() {
    // The MC domain of 2 CPUs: max_interval 4 ms, cache_nice_tries 1 -> 8 ms, plus 10 ms
    // for the nohz kick -> 18 ms.
    let mut evs = one_waits_next_to_idle();
    evs.push(clock(17 * MS));
    assert_eq!(count(&one(flat2(), &evs), FindingKind::MissedPull), 0);
    evs.push(clock(19 * MS));
    let s = one(flat2(), &evs);
    assert_eq!(count(&s, FindingKind::MissedPull), 1, "{:?}", s.findings);
    let f = s
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::MissedPull)
        .unwrap();
    assert_eq!(f.pids, vec![11]);
    assert_eq!(f.cpus, vec![0, 1]);
    assert_eq!(f.level.as_deref(), Some("llc"));
    assert_eq!(f.evidence["limit_ns"], 18 * MS);
    // Reported once per stretch, however long it lasts.
    let mut evs = one_waits_next_to_idle();
    evs.extend([clock(19 * MS), clock(22 * MS), clock(40 * MS)]);
    assert_eq!(count(&one(flat2(), &evs), FindingKind::MissedPull), 1);
}

#[test]
fn no_missed_pull_before_the_interval_or_for_pinned_waiters() {
    let mut evs = one_waits_next_to_idle();
    evs.push(clock(MS));
    assert_eq!(count(&one(flat2(), &evs), FindingKind::MissedPull), 0);
    // Task 11 may only run on CPU 0: the idle CPU could not have pulled it.
    let mut evs = vec![affinity(0, 11, "0")];
    evs.extend(one_waits_next_to_idle());
    evs.push(clock(10 * MS));
    let s = one(flat2(), &evs);
    assert_eq!(count(&s, FindingKind::MissedPull), 0);
    assert_eq!(
        count(&s, FindingKind::BusyWakeup),
        0,
        "CPU 1 is not allowed either"
    );
}

#[test]
fn busy_wakeup_needs_an_idle_allowed_cpu_in_the_llc() {
    let s = one(flat2(), &one_waits_next_to_idle());
    assert_eq!(count(&s, FindingKind::BusyWakeup), 1);
    let f = &s.findings[0];
    assert_eq!((f.pids.clone(), f.cpus.clone()), (vec![11], vec![0, 1]));
    assert_eq!(f.evidence["target_current_pid"], 10);
    // Both CPUs busy: nowhere better to go.
    let evs = vec![
        switch(0, 0, 0, 0, 10),
        switch(0, 1, 0, 0, 12),
        wakeup(1_000, 11, 0),
    ];
    assert_eq!(count(&one(flat2(), &evs), FindingKind::BusyWakeup), 0);
    // The idle CPU is in another LLC (topo3: LLCs 0-3 and 4-7): not the wakeup's scope.
    let mut evs: Vec<Event> = (0..4).map(|c| switch(0, c, 0, 0, 100 + c)).collect();
    evs.push(switch(0, 4, 1, 1, 0));
    evs.push(wakeup(1_000, 11, 0));
    assert_eq!(count(&one(topo3(), &evs), FindingKind::BusyWakeup), 0);
}

#[test]
fn harmful_migration_widening_the_group_gap() {
    // One task on each CPU; the balancer detaches CPU 0's task (its nr_running drops first)
    // and moves it to CPU 1: 1/1 -> 0/2.
    let base = vec![
        switch(0, 0, 0, 0, 10),
        switch(0, 1, 0, 0, 11),
        nr(0, 0, 1),
        nr(0, 1, 1),
    ];
    let mut evs = base.clone();
    evs.push(nr(1_000, 0, 0));
    evs.push(migrate(1_000, 12, 0, 1, Reason::PeriodicBalance));
    let s = one(flat2(), &evs);
    assert_eq!(count(&s, FindingKind::HarmfulMigration), 1);
    let f = &s.findings[0];
    assert_eq!(f.evidence["imbalance_before"], 0);
    assert!(f.evidence["imbalance_after"].as_u64().unwrap() > 0);
    // 2/0 -> 1/1 narrows it; a wakeup move is not the balancer's.
    let evs = vec![
        switch(0, 0, 0, 0, 10),
        nr(0, 0, 2),
        switch(0, 1, 0, 1, 0),
        nr(0, 1, 0),
        nr(1_000, 0, 1),
        migrate(1_000, 12, 0, 1, Reason::NewidleBalance),
    ];
    assert_eq!(count(&one(flat2(), &evs), FindingKind::HarmfulMigration), 0);
    // A batch: 4/0, detach two, attach later. The second move is judged against 3/1
    // (the first is pending at CPU 1): 3/1 -> 2/2 narrows it too.
    let evs = vec![
        switch(0, 0, 0, 0, 10),
        nr(0, 0, 4),
        switch(0, 1, 0, 1, 0),
        nr(0, 1, 0),
        nr(1_000, 0, 3),
        migrate(1_000, 12, 0, 1, Reason::NewidleBalance),
        nr(1_001, 0, 2),
        migrate(1_001, 13, 0, 1, Reason::NewidleBalance),
        nr(1_002, 1, 1),
        nr(1_003, 1, 2),
    ];
    assert_eq!(count(&one(flat2(), &evs), FindingKind::HarmfulMigration), 0);
    let mut evs = base;
    evs.push(migrate(1_000, 12, 0, 1, Reason::Wakeup));
    assert_eq!(count(&one(flat2(), &evs), FindingKind::HarmfulMigration), 0);
    // A batch taking both tasks of 2/0: the second move goes from 1/1 (one pending) to 0/2.
    let evs = vec![
        switch(0, 0, 0, 0, 10),
        nr(0, 0, 2),
        switch(0, 1, 0, 1, 0),
        nr(0, 1, 0),
        nr(1_000, 0, 1),
        migrate(1_000, 12, 0, 1, Reason::NewidleBalance),
        nr(1_001, 0, 0),
        migrate(1_001, 13, 0, 1, Reason::NewidleBalance),
    ];
    let s = one(flat2(), &evs);
    assert_eq!(count(&s, FindingKind::HarmfulMigration), 1);
    assert_eq!(s.findings[0].pids, vec![13]);
}

fn pelt(ts: u64, cpu: u32, load: u64) -> Event {
    ev(
        ts,
        cpu,
        EventKind::Pelt(Box::new(crate::event::PeltInfo {
            rq_cpu: cpu,
            load_avg: load,
            runnable_avg: load,
            util_avg: load.min(1024),
            util_est: None,
            at_search: None,
        })),
    )
}

#[test]
fn harmful_migration_judges_load_when_pelt_is_known() {
    // Tasks 2/3 -> 1/4 widens the task gap, but CPU 0 carries load 2048 against 300: moving
    // a task of ~1024 narrows the load gap (migrate_load's aim), so it is not harmful.
    let mut evs = vec![
        switch(0, 0, 0, 0, 10),
        switch(0, 1, 0, 0, 11),
        nr(0, 1, 3),
        pelt(0, 0, 2048),
        pelt(0, 1, 300),
        nr(1_000, 0, 1),
    ];
    evs.push(migrate(1_000, 12, 0, 1, Reason::PeriodicBalance));
    assert_eq!(count(&one(flat2(), &evs), FindingKind::HarmfulMigration), 0);
    // With the loads the other way round, both gaps widen.
    evs[3] = pelt(0, 0, 300);
    evs[4] = pelt(0, 1, 2048);
    let s = one(flat2(), &evs);
    assert_eq!(count(&s, FindingKind::HarmfulMigration), 1);
    let e = &s.findings[0].evidence;
    assert!(e["load_gap_after"].as_u64() > e["load_gap_before"].as_u64());
}

#[test]
fn harmful_migration_to_another_node_while_home_had_room() {
    // topo3: nodes 0-3 and 4-7. CPU 1 (node 0) and CPU 4 (node 1) idle; the move 0 -> 4
    // narrows the node gap (5/3 -> 4/4) but left CPU 1 idle on the task's own node.
    let mut evs = vec![];
    for (c, n) in [(0, 2), (2, 1), (3, 1), (5, 1), (6, 1), (7, 1)] {
        evs.push(switch(0, c, 0, 0, 100 + c));
        evs.push(nr(0, c, n));
    }
    evs.push(switch(0, 1, 1, 1, 0));
    evs.push(switch(0, 4, 1, 1, 0));
    evs.push(migrate(1_000, 30, 0, 4, Reason::NohzIdleBalance));
    let s = one(topo3(), &evs);
    assert_eq!(
        count(&s, FindingKind::HarmfulMigration),
        1,
        "{:?}",
        s.findings
    );
    let f = s
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::HarmfulMigration)
        .unwrap();
    assert_eq!(f.level.as_deref(), Some("numa"));
    assert_eq!(f.evidence["src_node_idle_cpus"], serde_json::json!([1]));
}

#[test]
fn ping_pong_within_the_window_only() {
    let evs = vec![
        migrate(0, 20, 0, 1, Reason::PeriodicBalance),
        migrate(5 * MS, 20, 1, 0, Reason::Wakeup),
    ];
    let s = one(flat2(), &evs);
    assert_eq!(count(&s, FindingKind::PingPong), 1);
    assert_eq!(
        s.findings
            .iter()
            .find(|f| f.kind == FindingKind::PingPong)
            .unwrap()
            .pids,
        vec![20]
    );
    let evs = vec![
        migrate(0, 20, 0, 1, Reason::PeriodicBalance),
        migrate(20 * MS, 20, 1, 0, Reason::Wakeup),
    ];
    assert_eq!(count(&one(flat2(), &evs), FindingKind::PingPong), 0);
    // A -> B then B -> C is no round trip.
    let evs = vec![
        migrate(0, 20, 0, 1, Reason::Wakeup),
        migrate(MS, 20, 1, 2, Reason::Wakeup),
    ];
    assert_eq!(count(&one(topo3(), &evs), FindingKind::PingPong), 0);
}

fn churn_run(moves: u64) -> Vec<Snapshot> {
    let mut a = analyzer(flat2(), 1_000 * MS);
    let mut evs = vec![switch(0, 0, 0, 0, 10), switch(0, 1, 0, 0, 11)];
    for i in 0..moves {
        let (s, d) = if i % 2 == 0 { (0, 1) } else { (1, 0) };
        evs.push(migrate(
            1 + i * (900 * MS / moves.max(1)),
            1000 + i as u32,
            s,
            d,
            Reason::Wakeup,
        ));
    }
    evs.push(clock(1_000 * MS));
    run(&mut a, &evs)
}

#[test]
fn churn_above_the_rate_while_imbalance_stays() {
    let s = churn_run(300);
    assert_eq!(count(&s[0], FindingKind::Churn), 1);
    let f = s[0]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::Churn)
        .unwrap();
    assert_eq!(f.evidence["migrations"], 300);
    assert_eq!(count(&churn_run(100)[0], FindingKind::Churn), 0);
}

#[test]
fn uneven_spread_over_nodes_with_room() {
    // Process 100: five threads on node 0 (CPUs 0-3), one on node 1 where CPU 7 idles.
    let mut evs = vec![switch(0, 7, 0, 1, 0)];
    for (i, cpu) in [0u32, 1, 2, 3, 0, 4].iter().enumerate() {
        let pid = 100 + i as u32;
        evs.push(task(0, pid, 100, "job"));
        evs.push(switch(10 + i as u64, *cpu, 0, 0, pid));
    }
    let s = one(topo3(), &evs);
    assert_eq!(count(&s, FindingKind::UnevenSpread), 1, "{:?}", s.findings);
    let f = s
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::UnevenSpread)
        .unwrap();
    assert_eq!(f.evidence["threads"], serde_json::json!([5, 1]));
    assert_eq!(f.pids, vec![100]);
    // Without a CPU known to idle on node 1 there is no free capacity to point at.
    assert_eq!(
        count(&one(topo3(), &evs[1..]), FindingKind::UnevenSpread),
        0
    );
    // Three and three: even.
    let mut evs = vec![];
    for (i, cpu) in [0u32, 1, 2, 4, 5, 6].iter().enumerate() {
        let pid = 100 + i as u32;
        evs.push(task(0, pid, 100, "job"));
        evs.push(switch(10 + i as u64, *cpu, 0, 0, pid));
    }
    assert_eq!(count(&one(topo3(), &evs), FindingKind::UnevenSpread), 0);
}

/// Process 100 holds five threads on node 0 and one on node 1 (CPU 7 idle) from 10 ns;
/// at `even_at` ns two of them move to node 1 (3/3). Events tick every 10 ms to 300 ms.
fn spread_until(even_at: u64) -> Snapshot {
    let mut evs = vec![switch(0, 7, 0, 1, 0)];
    for (i, cpu) in [0u32, 1, 2, 3, 0, 4].iter().enumerate() {
        let pid = 100 + i as u32;
        evs.push(task(0, pid, 100, "job"));
        evs.push(switch(10 + i as u64, *cpu, 0, 0, pid));
    }
    for t in (10..=300).step_by(10) {
        let t = t * MS;
        if (t..t + 10 * MS).contains(&even_at) {
            evs.push(migrate(even_at, 103, 3, 5, Reason::PeriodicBalance));
            evs.push(switch(even_at + 1, 5, 0, 0, 103));
            evs.push(migrate(even_at + 2, 104, 0, 6, Reason::PeriodicBalance));
            evs.push(switch(even_at + 3, 6, 0, 0, 104));
        }
        evs.push(nr(t, 7, 0));
    }
    one(topo3(), &evs)
}

#[test]
fn uneven_spread_held_within_the_interval_is_reported_once() {
    // Uneven from the first sample (20 ms) to 200 ms, even at the close: reported at the
    // sample where it had held 100 ms, with the spread it held.
    let s = spread_until(200 * MS);
    assert_eq!(count(&s, FindingKind::UnevenSpread), 1, "{:?}", s.findings);
    let f = &s.findings[0];
    assert_eq!(f.evidence["threads"], serde_json::json!([5, 1]));
    assert_eq!(f.evidence["held_ms"], 100);
    assert_eq!(f.t_ns, 120 * MS);
    assert!(f.text.ends_with("for 100 ms"), "{}", f.text);
    // Evened after 70 ms: the balancer fixed it in time, and the close sees it even.
    assert_eq!(count(&spread_until(90 * MS), FindingKind::UnevenSpread), 0);
}

fn cgroup(pid: u32, id: u64) -> Event {
    ev(
        0,
        0,
        EventKind::Cgroup(Box::new(crate::event::CgroupInfo {
            pid,
            id,
            path: Some(if id == 1 { "/" } else { "/job" }.into()),
        })),
    )
}

/// Processes 100 (three threads) and 200 (two) of cgroup `id`, all on node 0; CPU 7 idles.
fn uneven_cgroup_events(id: u64) -> Vec<Event> {
    let mut evs = vec![switch(0, 7, 0, 1, 0)];
    for (i, (tgid, cpu)) in [(100, 0u32), (100, 1), (100, 2), (200, 3), (200, 0)]
        .iter()
        .enumerate()
    {
        let pid = 300 + i as u32;
        evs.push(task(0, pid, *tgid, "job"));
        evs.push(cgroup(pid, id));
        evs.push(switch(10 + i as u64, *cpu, 0, 0, pid));
    }
    evs
}

#[test]
fn uneven_spread_of_a_cgroup_of_several_processes() {
    // Processes 100 (three threads) and 200 (two) of cgroup /job, all on node 0 while CPU 7
    // idles: neither process alone has the threads to be judged, the cgroup has.
    let s = one(topo3(), &uneven_cgroup_events(7));
    assert_eq!(count(&s, FindingKind::UnevenSpread), 1, "{:?}", s.findings);
    let f = &s.findings[0];
    assert_eq!(f.evidence["cgroup"], 7);
    assert_eq!(f.evidence["cgroup_path"], "/job");
    assert_eq!(f.evidence["threads"], serde_json::json!([5, 0]));
    assert_eq!(f.pids, vec![100, 200]);
    assert!(
        f.text.starts_with("cgroup /job (2 processes) holds 5/0"),
        "{}",
        f.text
    );
    // One process alone in its cgroup is judged as a process, once.
    let cg = |pid| cgroup(pid, 7);
    let mut evs = vec![switch(0, 7, 0, 1, 0)];
    for (i, cpu) in [0u32, 1, 2, 3, 0].iter().enumerate() {
        let pid = 300 + i as u32;
        evs.push(task(0, pid, 100, "job"));
        evs.push(cg(pid));
        evs.push(switch(10 + i as u64, *cpu, 0, 0, pid));
    }
    let s = one(topo3(), &evs);
    assert_eq!(count(&s, FindingKind::UnevenSpread), 1, "{:?}", s.findings);
    assert_eq!(s.findings[0].evidence["tgid"], 100);
    // The root cgroup (id 1) holds whatever was never placed: not judged.
    let root: Vec<Event> = uneven_cgroup_events(crate::model::task::ROOT_CGROUP);
    assert_eq!(count(&one(topo3(), &root), FindingKind::UnevenSpread), 0);
}

#[test]
fn details_are_capped_but_all_counted() {
    let mut a = Analyzer::new(
        flat2(),
        AnalyzerConfig {
            interval_ns: LONG,
            model: ModelConfig {
                max_findings: 2,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let mut evs = vec![switch(0, 0, 0, 0, 10), switch(0, 1, 0, 1, 0)];
    for i in 0..5 {
        evs.push(wakeup(10 + i, 200 + i as u32, 0));
    }
    let s = run(&mut a, &evs).remove(0);
    assert_eq!(count(&s, FindingKind::BusyWakeup), 5);
    assert_eq!(s.findings.len(), 2);
}

#[test]
fn balanced_spinners_raise_nothing() {
    // Two spinners, one per CPU, ticking for a second with full PELT figures.
    let mut evs = vec![
        switch(0, 0, 0, 0, 10),
        switch(0, 1, 0, 0, 11),
        nr(0, 0, 1),
        nr(0, 1, 1),
    ];
    for t in (4..1_000).step_by(4) {
        for c in 0..2 {
            evs.push(ev(
                t * MS,
                c,
                EventKind::Pelt(Box::new(crate::event::PeltInfo {
                    rq_cpu: c,
                    load_avg: 1024,
                    runnable_avg: 1024,
                    util_avg: 1000,
                    util_est: None,
                    at_search: None,
                })),
            ));
        }
    }
    let s = one(flat2(), &evs);
    assert!(
        s.findings_by_kind.values().all(|&n| n == 0),
        "{:?}",
        s.findings
    );
    assert_eq!(s.domains.len(), 1);
    assert_eq!(s.domains[0].imbalance, 0);
    assert_eq!(s.model_rules, "v6_6_plus");
}

/// Process 100 with `per_node[n]` threads on node `n` of a 4-node, 80-CPU machine.
fn spread(per_node: [u32; 4]) -> Snapshot {
    let topo = Topology::synthetic(
        &[(LevelKind::Llc, "MC", 20), (LevelKind::Numa, "NUMA", 80)],
        80,
    );
    // The last CPU of each node idles until a thread runs there.
    let mut evs: Vec<Event> = (0..4).map(|n| switch(0, n * 20 + 19, 0, 1, 0)).collect();
    let mut pid = 100;
    for (node, &n) in per_node.iter().enumerate() {
        for i in 0..n {
            evs.push(task(0, pid, 100, "job"));
            evs.push(switch(
                10 + u64::from(pid),
                node as u32 * 20 + i % 20,
                0,
                0,
                pid,
            ));
            pid += 1;
        }
    }
    one(topo, &evs)
}

#[test]
fn uneven_spread_30_7_5_34_but_not_19_19_19_19() {
    let s = spread([30, 7, 5, 34]);
    assert_eq!(count(&s, FindingKind::UnevenSpread), 1);
    let f = s
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::UnevenSpread)
        .unwrap();
    assert_eq!(f.evidence["threads"], serde_json::json!([30, 7, 5, 34]));
    assert_eq!(f.evidence["by"], "node");
    assert_eq!(
        count(&spread([19, 19, 19, 19]), FindingKind::UnevenSpread),
        0
    );
}

#[test]
fn a_full_log_still_counts_every_finding() {
    let mut log = FindingLog::new(1);
    assert!(!log.counted_only(FindingKind::PingPong), "room: build it");
    log.add(Finding {
        kind: FindingKind::PingPong,
        t_ns: 1,
        level: None,
        span: None,
        cpus: vec![],
        pids: vec![],
        evidence: Default::default(),
        text: String::new(),
    });
    assert!(log.counted_only(FindingKind::PingPong));
    assert!(log.counted_only(FindingKind::MissedPull));
    let (kept, counts) = log.take();
    assert_eq!(kept.len(), 1);
    assert_eq!((counts["ping_pong"], counts["missed_pull"]), (2, 1));
    assert!(
        !log.counted_only(FindingKind::PingPong),
        "a new interval has room"
    );
}
