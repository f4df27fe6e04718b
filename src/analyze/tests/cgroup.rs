//! The cgroup part of the analyzer: the `--cgroup` filter over every figure the task filter
//! narrows, and the per-cgroup latency and migration tables.

use super::*;

fn cgroup(ts: u64, pid: Pid, id: u64, path: Option<&str>) -> Event {
    ev(
        ts,
        0,
        EventKind::Cgroup(Box::new(crate::event::CgroupInfo {
            pid,
            id,
            path: path.map(str::to_string),
        })),
    )
}

/// Tasks 10 and 11 in /a/s (id 5), 20 in /ab (id 6), 30 in an unnamed cgroup (id 7): each
/// waits and runs once (latencies 1, 2, 3, 4 us), then migrates (10 twice, the others once).
fn four_tasks() -> Vec<Event> {
    vec![
        task(0, 10, 10, "a"),
        cgroup(0, 10, 5, Some("/a/s")),
        task(0, 11, 10, "a"),
        cgroup(0, 11, 5, Some("/a/s")),
        task(0, 20, 20, "b"),
        cgroup(0, 20, 6, Some("/ab")),
        task(0, 30, 30, "c"),
        cgroup(0, 30, 7, None),
        wakeup(0, 10, 0),
        wakeup(0, 11, 1),
        wakeup(0, 20, 2),
        wakeup(0, 30, 3),
        switch(1_000, 0, 0, 1, 10),
        switch(2_000, 1, 0, 1, 11),
        switch(3_000, 2, 0, 1, 20),
        switch(4_000, 3, 0, 1, 30),
        migrate(5_000, 10, 0, 4, Reason::Wakeup),
        migrate(5_100, 10, 4, 0, Reason::NewidleBalance),
        migrate(5_200, 11, 1, 5, Reason::Wakeup),
        migrate(5_300, 20, 2, 6, Reason::Wakeup),
        migrate(5_400, 30, 3, 7, Reason::Wakeup),
    ]
}

#[test]
fn per_cgroup_tables_count_each_cgroup_s_tasks() {
    let s = one(topo3(), &four_tasks());
    let lat: Vec<(&str, u64)> = s
        .runqlat_by_cgroup
        .iter()
        .map(|c| (c.path.as_str(), c.latency.count))
        .collect();
    assert_eq!(
        lat,
        vec![("/a/s", 2), ("/ab", 1)],
        "the unnamed cgroup is left out"
    );
    assert_eq!(s.runqlat_by_cgroup[0].latency.max, 2.0);
    assert_eq!(s.runqlat_by_cgroup[1].latency.max, 3.0);
    let moves: Vec<(&str, u64)> = s
        .migrations_by_cgroup
        .iter()
        .map(|c| (c.path.as_str(), c.total))
        .collect();
    assert_eq!(moves, vec![("/a/s", 3), ("/ab", 1)]);
    let a = &s.migrations_by_cgroup[0].by_reason;
    assert_eq!((a["wakeup"], a["newidle_balance"], a.len()), (2, 1, 2));
    assert_eq!(s.migrations.total, 5, "the global figures are untouched");
}

#[test]
fn a_fork_counts_in_its_process_s_cgroup() {
    let evs = [
        task(0, 10, 10, "a"),
        cgroup(0, 10, 5, Some("/a")),
        wakeup_new(10, 0, 12, 10, 3),
    ];
    let s = one(topo3(), &evs);
    assert_eq!(s.migrations_by_cgroup.len(), 1);
    assert_eq!(s.migrations_by_cgroup[0].path, "/a");
    assert_eq!(s.migrations_by_cgroup[0].by_reason["fork"], 1);
}

#[test]
fn the_cgroup_filter_takes_the_cgroup_and_below_never_a_sibling_prefix() {
    let run_with = |path: &str| {
        let f = Filter {
            cgroup: Some(path.to_string()),
            ..Filter::default()
        };
        let mut a = analyzer_with(topo3(), LONG, f);
        run(&mut a, &four_tasks()).remove(0)
    };
    let s = run_with("/a");
    assert_eq!(s.runqlat_us.count, 2, "/a/s is below /a; /ab is not");
    assert_eq!(s.runqlat_us.max, 2.0);
    assert_eq!(s.migrations.total, 3);
    assert_eq!(s.runqlat_by_process.len(), 1);
    assert_eq!(s.runqlat_by_process[0].tgid, Some(10));
    let paths: Vec<&str> = s
        .runqlat_by_cgroup
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(paths, vec!["/a/s"]);
    let s = run_with("/ab");
    assert_eq!((s.runqlat_us.count, s.migrations.total), (1, 1));
    let s = run_with("/a/s/deeper");
    assert_eq!((s.runqlat_us.count, s.migrations.total), (0, 0));
    assert!(s.migrations_by_cgroup.is_empty());
}

#[test]
fn cgroups_seen_most_tasks_first() {
    let mut a = analyzer(topo3(), LONG);
    run(&mut a, &four_tasks());
    assert_eq!(
        a.cgroups_seen(),
        vec![("/a/s".to_string(), 2), ("/ab".to_string(), 1)]
    );
}

#[test]
fn a_cgroup_named_later_is_known_by_its_id_and_an_exited_task_keeps_its_cgroup() {
    let f = Filter {
        cgroup: Some("/a".to_string()),
        ..Filter::default()
    };
    let mut a = analyzer_with(topo3(), LONG, f);
    let evs = [
        cgroup(0, 10, 5, None),
        cgroup(0, 11, 5, Some("/a")),
        // Exited, then moved while it still runs out its exit.
        exit(10, 10, 10),
        migrate(20, 10, 0, 1, Reason::Wakeup),
    ];
    let s = run(&mut a, &evs).remove(0);
    assert_eq!(s.migrations.total, 1);
    assert_eq!(s.migrations_by_cgroup[0].path, "/a");
    assert_eq!(s.migrations_by_cgroup[0].total, 1);
}
