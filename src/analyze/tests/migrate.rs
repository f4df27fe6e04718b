//! Migrations: reasons, levels crossed, forks, context classification, unknown stacks, and
//! the wait location they move.

use super::*;

#[test]
fn each_reason_counted() {
    let mut evs = Vec::new();
    for (i, r) in Reason::ALL.iter().enumerate() {
        if *r == Reason::Fork {
            continue;
        }
        // i + 1 migrations of this reason.
        for k in 0..=i as u64 {
            evs.push(migrate(i as u64 * 100 + k, 50, 0, 1, *r));
        }
    }
    evs.push(wakeup_new(5_000, 0, 60, 60, 1));
    let s = one(topo3(), &evs);
    let m = &s.migrations;
    assert_eq!(m.by_reason.len(), Reason::ALL.len());
    for (i, r) in Reason::ALL.iter().enumerate() {
        let want = if *r == Reason::Fork { 1 } else { i as u64 + 1 };
        assert_eq!(m.by_reason[r.name()], want, "{}", r.name());
    }
    let all: u64 = m.by_reason.values().sum();
    assert_eq!(m.total, all);
    assert_eq!(m.by_level["smt"], all);
    assert_eq!(m.by_level["llc"], 0);
    assert_eq!(m.context_classified, 0);
}

#[test]
fn each_level_and_matrix() {
    let s = one(
        topo3(),
        &[
            migrate(0, 5, 0, 1, Reason::Wakeup),
            migrate(1, 5, 1, 3, Reason::Wakeup),
            migrate(2, 5, 3, 6, Reason::PeriodicBalance),
            migrate(3, 5, 6, 7, Reason::NewidleBalance),
            migrate(4, 5, 7, 4, Reason::NewidleBalance),
            // CPU 12 is not in the topology.
            migrate(5, 5, 4, 12, Reason::Hotplug),
        ],
    );
    let m = &s.migrations;
    assert_eq!(m.total, 6);
    let levels: Vec<(&str, u64)> = m.by_level.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        levels,
        vec![("llc", 2), ("numa", 1), ("smt", 2), ("unknown", 1)]
    );
    assert_eq!(m.matrix["wakeup"]["smt"], 1);
    assert_eq!(m.matrix["wakeup"]["llc"], 1);
    assert_eq!(m.matrix["periodic_balance"]["numa"], 1);
    assert_eq!(m.matrix["newidle_balance"]["smt"], 1);
    assert_eq!(m.matrix["newidle_balance"]["llc"], 1);
    assert_eq!(m.matrix["hotplug"]["unknown"], 1);
    assert_eq!(m.matrix.len(), 4, "non-zero rows only");
    assert!(
        !m.matrix["wakeup"].contains_key("numa"),
        "non-zero cells only"
    );
}

#[test]
fn level_keys_without_unknown_when_none() {
    let s = one(topo3(), &[migrate(0, 5, 0, 1, Reason::Wakeup)]);
    let keys: Vec<&str> = s.migrations.by_level.keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, vec!["llc", "numa", "smt"]);
}

#[test]
fn fork_from_wakeup_new() {
    let s = one(
        topo3(),
        &[
            // Child placed on the parent's CPU: no migration.
            wakeup_new(0, 2, 30, 30, 2),
            // Child placed across NUMA.
            wakeup_new(10, 2, 31, 30, 6),
            // Child placed on the SMT sibling.
            wakeup_new(20, 2, 32, 30, 3),
        ],
    );
    let m = &s.migrations;
    assert_eq!(m.total, 2);
    assert_eq!(m.by_reason["fork"], 2);
    assert_eq!(m.matrix["fork"]["numa"], 1);
    assert_eq!(m.matrix["fork"]["smt"], 1);
    // The children wait where they were placed.
    let waiting: Vec<(u32, u32)> = s
        .cpus
        .iter()
        .filter(|c| c.waiting > 0)
        .map(|c| (c.cpu, c.waiting))
        .collect();
    assert_eq!(waiting, vec![(2, 1), (3, 1), (6, 1)]);
}

#[test]
fn same_cpu_ignored() {
    let s = one(topo3(), &[migrate(0, 5, 3, 3, Reason::Wakeup)]);
    assert_eq!(s.migrations.total, 0);
    assert!(s.migrations.matrix.is_empty());
}

#[test]
fn context_classified_and_unknown_stacks() {
    let frames: Vec<String> = (0..12).map(|i| format!("frame{i}")).collect();
    let stack = ev(
        0,
        0,
        EventKind::Stack(Box::new(crate::event::StackInfo {
            id: 42,
            reason: Reason::Unknown,
            frames,
        })),
    );
    let s = one(
        topo3(),
        &[
            stack,
            migrate_full(1, 5, 0, 1, Reason::Unknown, ReasonSource::Stack, Some(42)),
            migrate_full(2, 5, 1, 0, Reason::Unknown, ReasonSource::Stack, Some(42)),
            migrate_full(3, 5, 0, 1, Reason::Unknown, ReasonSource::Stack, Some(43)),
            // A classified stack is not an unknown stack.
            migrate_full(4, 5, 1, 0, Reason::Wakeup, ReasonSource::Stack, Some(44)),
            migrate_full(
                5,
                5,
                0,
                1,
                Reason::ActiveBalance,
                ReasonSource::Context,
                None,
            ),
            migrate_full(6, 5, 1, 0, Reason::Unknown, ReasonSource::Context, None),
        ],
    );
    let m = &s.migrations;
    assert_eq!(m.total, 6);
    assert_eq!(m.context_classified, 2);
    assert_eq!(m.by_reason["unknown"], 4);
    assert_eq!(m.unknown_stacks.len(), 2);
    assert_eq!(m.unknown_stacks[0].stack_id, 42);
    assert_eq!(m.unknown_stacks[0].count, 2);
    assert_eq!(m.unknown_stacks[0].frames.len(), 8);
    assert_eq!(m.unknown_stacks[0].frames[0], "frame0");
    assert_eq!(m.unknown_stacks[0].frames[7], "frame7");
    assert_eq!(m.unknown_stacks[1].stack_id, 43);
    assert!(m.unknown_stacks[1].frames.is_empty());
}

#[test]
fn migrate_moves_the_wait() {
    let mut a = analyzer(topo3(), LONG);
    feed(
        &mut a,
        &[
            switch(0, 0, 0, 1, 10),
            switch(0, 1, 0, 1, 11),
            wakeup(10, 20, 0),
            migrate(20, 20, 0, 5, Reason::ActiveBalance),
        ],
    );
    let s = a.finish().unwrap();
    let w: Vec<(u32, u32)> = s
        .cpus
        .iter()
        .map(|c| (c.cpu, c.waiting))
        .filter(|c| c.1 > 0)
        .collect();
    assert_eq!(w, vec![(5, 1)]);
    // A migrating sleeper (affinity change) does not start waiting.
    let mut a = analyzer(topo3(), LONG);
    let s = run(&mut a, &[migrate(0, 21, 0, 5, Reason::Affinity)]);
    assert!(s[0].cpus.iter().all(|c| c.waiting == 0));
    assert_eq!(a.open_task_waits(), 0);
}

#[test]
fn counters_reset_each_interval() {
    let mut a = analyzer(topo3(), 1_000);
    let s = run(
        &mut a,
        &[
            migrate(0, 5, 0, 1, Reason::Wakeup),
            migrate(1_500, 5, 0, 4, Reason::Wakeup),
        ],
    );
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].migrations.by_level["smt"], 1);
    assert_eq!(s[0].migrations.by_level["numa"], 0);
    assert_eq!(s[1].migrations.by_level["smt"], 0);
    assert_eq!(s[1].migrations.by_level["numa"], 1);
}

#[test]
fn most_migrated_tasks_per_interval_filtered_like_the_counts() {
    let f = Filter {
        cpus: Some(CpuSet::parse_list("0-1").unwrap()),
        ..Filter::default()
    };
    let mut a = analyzer_with(topo3(), 100, f);
    let snaps = run(
        &mut a,
        &[
            task(1, 7, 7, "hog"),
            migrate(10, 7, 0, 1, Reason::Wakeup),
            migrate(20, 7, 1, 0, Reason::Wakeup),
            migrate(30, 8, 0, 1, Reason::Wakeup),
            migrate(40, 9, 2, 3, Reason::Wakeup), // outside --cpus 0-1
            wakeup_new(50, 0, 10, 10, 1),         // a fork placement is not a move
            migrate(150, 7, 0, 1, Reason::Wakeup), // next interval
            clock(250),
        ],
    );
    let top = &snaps[0].migrations_by_task;
    assert_eq!(
        top,
        &vec![
            TaskMigrations {
                pid: 7,
                tgid: Some(7),
                comm: Some("hog".into()),
                count: 2
            },
            TaskMigrations {
                pid: 8,
                tgid: None,
                comm: None,
                count: 1
            },
        ]
    );
    assert_eq!(
        snaps[0].migrations.total, 4,
        "the fork placement counts as a migration"
    );
    assert_eq!(snaps[1].migrations_by_task[0].count, 1);
    assert!(snaps[2].migrations_by_task.is_empty());
}

#[test]
fn a_task_that_dies_in_the_interval_keeps_its_moves_and_its_entry_goes() {
    const DEAD: u32 = crate::event::TASK_DEAD;
    let mut a = analyzer(topo3(), 1_000);
    let snaps = run(
        &mut a,
        &[
            task(0, 7, 7, "short"),
            wakeup(1, 7, 0),
            switch(2, 0, 0, 1, 7),
            migrate(3, 7, 0, 1, Reason::NewidleBalance),
            exit(4, 7, 7),
            // The kernel names a task it sees again after its exit; it then dies.
            task(5, 7, 7, "short"),
            switch(6, 1, 0, 1, 7),
            migrate(7, 7, 1, 0, Reason::Wakeup),
            switch(8, 0, 7, DEAD, 0),
            clock(2_000),
        ],
    );
    assert_eq!(
        snaps[0].migrations_by_task,
        vec![TaskMigrations {
            pid: 7,
            tgid: Some(7),
            comm: Some("short".into()),
            count: 2
        }]
    );
    assert_eq!(
        a.tracked_tasks(),
        0,
        "its entry went at its last switch-out"
    );
}

#[test]
fn a_task_that_exits_in_the_interval_is_listed_by_its_name() {
    // As hackbench's processes do: moves, `sched_process_exit`, then the last switch-out
    // with no new name between (the exit empties its entry before the switch-out removes it).
    const DEAD: u32 = crate::event::TASK_DEAD;
    let mut a = analyzer(topo3(), 1_000);
    let snaps = run(
        &mut a,
        &[
            task(0, 7, 7, "hackbench"),
            task(0, 8, 7, "hackbench"),
            wakeup(1, 7, 0),
            switch(2, 0, 0, 1, 7),
            migrate(3, 7, 0, 1, Reason::Wakeup),
            migrate(4, 7, 1, 0, Reason::Wakeup),
            migrate(5, 8, 0, 1, Reason::Wakeup),
            exit(6, 7, 7),
            switch(7, 0, 7, DEAD, 0),
            exit(8, 8, 7),
            clock(2_000),
        ],
    );
    assert_eq!(
        snaps[0].migrations_by_task,
        vec![
            TaskMigrations {
                pid: 7,
                tgid: Some(7),
                comm: Some("hackbench".into()),
                count: 2
            },
            TaskMigrations {
                pid: 8,
                tgid: Some(7),
                comm: Some("hackbench".into()),
                count: 1
            }
        ]
    );
}
