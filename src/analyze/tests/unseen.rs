//! Moves no record said: a task seen on another CPU than its last with no migration between
//! (`migrations.unseen`), and switches whose previous task is not the one the CPU last
//! switched to (`switch_gaps`), as where the kernel ran no BPF program at the tracepoints.

use super::*;

#[test]
fn a_task_seen_elsewhere_without_a_migration_moved_unseen() {
    let evs = [
        // 7 runs on CPU 0 and sleeps.
        switch(1_000, 0, 0, 0, 7),
        switch(2_000, 0, 7, 1, 0),
        // Woken on CPU 2: no migration record says it left CPU 0.
        wakeup(3_000, 7, 2),
        switch(3_500, 2, 0, 0, 7),
        // A recorded move 2 -> 5, then it runs on CPU 5: nothing unseen.
        migrate(4_000, 7, 2, 5, Reason::PeriodicBalance),
        switch(4_500, 5, 0, 0, 7),
        // Switched out on CPU 6 (its switch-in there unrecorded): unseen again.
        switch(5_000, 6, 7, 1, 0),
    ];
    let s = one(topo3(), &evs);
    assert_eq!(s.migrations.total, 1, "the one recorded migration");
    assert_eq!(
        s.migrations.unseen, 2,
        "0 -> 2 at the wakeup, 5 -> 6 at the switch-out"
    );
    // CPU 6 last switched to 0 (unknown before), so its first switch is no gap; the
    // switch-out of 7 on CPU 6 follows no switch to 7 there: CPU 6 had not switched before.
    assert_eq!(s.switch_gaps, 0);
}

#[test]
fn a_migration_starting_where_the_task_was_not_reveals_an_unseen_one() {
    let evs = [
        switch(1_000, 1, 0, 0, 9),
        switch(2_000, 1, 9, 0, 0),
        // Recorded as leaving CPU 3, though last seen on CPU 1.
        migrate(3_000, 9, 3, 4, Reason::NewidleBalance),
    ];
    let s = one(topo3(), &evs);
    assert_eq!((s.migrations.total, s.migrations.unseen), (1, 1));
}

#[test]
fn a_switch_from_another_task_than_the_last_one_is_a_gap() {
    let evs = [
        switch(1_000, 0, 0, 0, 7),
        // 7 -> 8 went unrecorded.
        switch(2_000, 0, 8, 0, 0),
        switch(3_000, 0, 0, 0, 7),
        switch(4_000, 0, 7, 1, 0),
    ];
    let s = one(topo3(), &evs);
    assert_eq!(s.switch_gaps, 1);
    assert_eq!(s.migrations.unseen, 0, "nothing ran elsewhere");
}

#[test]
fn the_task_filter_applies_to_unseen_moves() {
    let filter = Filter {
        comm: Some("keep".into()),
        ..Default::default()
    };
    let mut a = analyzer_with(topo3(), LONG, filter);
    let evs = [
        task(500, 7, 7, "keep"),
        task(600, 8, 8, "other"),
        switch(1_000, 0, 0, 0, 7),
        switch(1_500, 1, 0, 0, 8),
        switch(2_000, 0, 7, 1, 0),
        switch(2_500, 1, 8, 1, 0),
        wakeup(3_000, 7, 2),
        wakeup(3_000, 8, 3),
    ];
    let s = run(&mut a, &evs).pop().unwrap();
    assert_eq!(s.migrations.unseen, 1, "only the matching task's move");
}
