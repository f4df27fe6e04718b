//! Tests of validation mode: reason pairing, the model against hand-made kernel decisions,
//! ordering across ring buffers, and a lab recording.

use super::*;
use crate::event::{BalanceOrigin, MigrateContext, Pid, Reason, ReasonSource};
use crate::model::ModelRules;
use crate::topology::Topology;

fn balance(
    ts: u64,
    dst: u32,
    weight: u32,
    idle: CpuIdleType,
    verdict: Option<MigrationType>,
) -> Event {
    Event {
        ts_ns: ts,
        cpu: dst,
        kind: EventKind::Balance(Box::new(Balance {
            level: 0,
            sd_weight: weight,
            idle,
            migration_type: verdict.unwrap_or(MigrationType::Load),
            imbalance: u64::from(verdict.is_some()),
            balanced: verdict.is_none(),
            redo: false,
            dst_cpu: dst,
            src_cpu: 0,
            pid: None,
            origin: None,
            search_ns: None,
        })),
    }
}

fn detach(ts: u64, pid: Pid, idle: CpuIdleType) -> Event {
    Event {
        ts_ns: ts,
        cpu: 0,
        kind: EventKind::Balance(Box::new(Balance {
            level: 1,
            sd_weight: 4,
            idle,
            migration_type: MigrationType::Load,
            imbalance: 1,
            balanced: false,
            redo: false,
            dst_cpu: 0,
            src_cpu: 1,
            pid: Some(pid),
            origin: None,
            search_ns: None,
        })),
    }
}

fn migrate(ts: u64, pid: Pid, reason: Reason) -> Event {
    Event {
        ts_ns: ts,
        cpu: 0,
        kind: EventKind::Migrate(Box::new(crate::event::MigrateInfo {
            pid,
            src_cpu: 1,
            dst_cpu: 0,
            reason,
            source: ReasonSource::Stack,
            stack_id: None,
            ctx: MigrateContext::default(),
        })),
    }
}

fn nr(ts: u64, cpu: u32, n: u32) -> Event {
    Event {
        ts_ns: ts,
        cpu,
        kind: EventKind::NrRunning {
            rq_cpu: cpu as u16,
            nr_running: n,
            util_est: crate::event::OptU32::NONE,
            cfs_h_nr_running: crate::event::OptU32::NONE,
        },
    }
}

fn switch(ts: u64, cpu: u32, next: Pid) -> Event {
    Event {
        ts_ns: ts,
        cpu,
        kind: EventKind::Switch {
            prev_pid: 1,
            prev_state: 0,
            next_pid: next,
        },
    }
}

fn config() -> ModelConfig {
    ModelConfig {
        rules: ModelRules::V6_6Plus,
        ..ModelConfig::default()
    }
}

#[test]
fn pairs_by_pid_and_time() {
    let mut p = ReasonPairing::default();
    for e in [
        detach(100, 1, CpuIdleType::NewlyIdle),
        migrate(200, 1, Reason::NewidleBalance),
        detach(300, 2, CpuIdleType::NotIdle),
        migrate(400, 2, Reason::NewidleBalance),
        detach(500, 3, CpuIdleType::Idle),
        migrate(600 + MATCH_WINDOW_NS, 3, Reason::PeriodicBalance),
        migrate(700 + MATCH_WINDOW_NS, 4, Reason::NohzIdleBalance),
        migrate(800 + MATCH_WINDOW_NS, 5, Reason::Wakeup),
    ] {
        p.push(&e);
    }
    let r = p.agreement;
    assert_eq!(r.balancer_migrations, 4);
    assert_eq!(r.matched, 2);
    assert_eq!(r.matched_detach, 2);
    assert_eq!(r.agreeing, 1);
    assert_eq!(r.share(), Some(0.5));
    assert_eq!(r.pairs["newidle_balance/newidle_balance"], 1);
    assert_eq!(r.pairs["newidle_balance/periodic_or_nohz"], 1);
}

/// A migration of `pid` from `src` to `dst` made on `cpu`.
fn moved(ts: u64, cpu: u32, pid: Pid, src: u32, dst: u32, reason: Reason) -> Event {
    let mut e = migrate(ts, pid, reason);
    e.cpu = cpu;
    if let EventKind::Migrate(m) = &mut e.kind {
        (m.src_cpu, m.dst_cpu) = (src, dst);
    }
    e
}

/// A recording's reader puts an RT call's record at the call's return, after the moves it
/// made; validation puts it back at its stamp (the call's entry) and pairs them.
#[test]
fn an_rt_call_delivered_after_its_moves_still_pairs_with_them() {
    use crate::event::RtFunc;
    let topo = Topology::synthetic_flat(4);
    let events = vec![
        moved(1_100, 1, 10, 1, 2, Reason::RtPushPull),
        moved(1_300, 1, 11, 1, 3, Reason::RtPushPull),
        Event::rt_call_at(1_000, 1, RtFunc::Push, 1, 500),
    ];
    let v = validate(&topo, config(), &events);
    assert_eq!(v.reasons.matched_rt, 2);
    assert_eq!(v.reasons.agreeing, 2);
    assert_eq!(v.late, 0, "within the window: put in place, not late");
}

#[test]
fn migrations_inside_rt_push_and_pull_calls_pair_as_rt_push_pull() {
    use crate::event::RtFunc;
    let topo = Topology::synthetic_flat(4);
    let events = vec![
        // A push from CPU 1's run queue, run on CPU 1: its move agrees, a wakeup's move
        // into CPU 1 meanwhile (made on CPU 1 too) is not the push's.
        Event::rt_call_at(1_000, 1, RtFunc::Push, 1, 500),
        moved(1_100, 1, 10, 1, 2, Reason::RtPushPull),
        moved(1_200, 1, 11, 3, 1, Reason::Wakeup),
        // A pull into CPU 0 whose move the stack table calls a wakeup: a disagreement.
        Event::rt_call_at(2_000, 0, RtFunc::Pull, 0, 500),
        moved(2_100, 0, 12, 3, 0, Reason::Wakeup),
        // The irq work on CPU 2 pushing its own run queue's task.
        Event::rt_call_at(3_000, 2, RtFunc::PushIrqWork, 2, 500),
        moved(3_200, 2, 13, 2, 0, Reason::RtPushPull),
        // After the call returned: not paired.
        moved(3_600, 2, 14, 2, 0, Reason::RtPushPull),
    ];
    let v = validate(&topo, config(), &events);
    let r = &v.reasons;
    assert_eq!(r.matched_rt, 3);
    assert_eq!(r.matched, 3);
    assert_eq!(r.agreeing, 2);
    assert_eq!(r.balancer_migrations, 0);
    assert_eq!(r.by_reason["rt_push_pull"].pairs, 3);
    assert_eq!(r.by_reason["rt_push_pull"].agreement, Some(2.0 / 3.0));
    assert_eq!(r.pairs["rt_push_pull/rt_push_pull"], 2);
    assert_eq!(r.pairs["wakeup/rt_push_pull"], 1);
    // The only hook reason: the constant answer scores every pair.
    assert_eq!(r.constant_answer.as_deref(), Some("rt_push_pull"));
    assert_eq!(r.constant_agreement, Some(1.0));
    let mut text = Vec::new();
    crate::output::validation_text::validation(&v, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(
            "reasons: 0 of 0 balancer migrations paired with the kernel's pass (0 by \
             detach_task, 0 by the active-balance stopper, 0 by the search into their CPU), \
             and 3 migrations made inside the RT class's push or pull calls (the hooks' reason \
             rt_push_pull); the stack reason is the balancer hooks' reason in 66.7%"
        ),
        "{text}"
    );
}

/// A record of the pass with its origin (what the origin hooks add), on `cpu`.
fn with_origin(mut e: Event, cpu: u32, origin: BalanceOrigin) -> Event {
    e.cpu = cpu;
    if let EventKind::Balance(b) = &mut e.kind {
        b.origin = Some(origin);
    }
    e
}

#[test]
fn the_hooks_tell_every_balancer_reason_apart() {
    use BalanceOrigin::*;
    let mut p = ReasonPairing::default();
    let mut stopper = detach(1_100, 0, CpuIdleType::Idle);
    if let EventKind::Balance(b) = &mut stopper.kind {
        (b.pid, b.src_cpu, b.dst_cpu) = (None, 1, 0);
    }
    for e in [
        // The idle load balancer (CPU 3) balancing CPU 0: nohz; the stack agrees.
        with_origin(detach(100, 1, CpuIdleType::Idle), 3, NohzIdle),
        migrate(200, 1, Reason::NohzIdleBalance),
        // Its own domains in the same loop are nohz too, though it acts for no other CPU.
        with_origin(detach(300, 2, CpuIdleType::Idle), 0, NohzIdle),
        migrate(400, 2, Reason::NohzIdleBalance),
        // A CPU's own tick pass: periodic; a stack saying nohz is caught.
        with_origin(detach(500, 3, CpuIdleType::NotIdle), 0, Own),
        migrate(600, 3, Reason::NohzIdleBalance),
        with_origin(detach(700, 4, CpuIdleType::Idle), 0, Own),
        migrate(800, 4, Reason::PeriodicBalance),
        // Newly idle wins over the origin.
        with_origin(detach(900, 5, CpuIdleType::NewlyIdle), 0, Own),
        migrate(1_000, 5, Reason::NewidleBalance),
        // The stopper's entry on CPU 1 pairs the push 1 -> 0 with no detach record.
        with_origin(stopper, 1, Stopper),
        migrate(1_100 + STOPPER_WINDOW_NS - 200, 6, Reason::ActiveBalance),
    ] {
        p.push(&e);
    }
    let mut r = p.agreement;
    r.finish();
    assert_eq!((r.matched, r.matched_detach, r.matched_stopper), (6, 5, 1));
    assert_eq!(r.agreeing, 5);
    assert_eq!(r.pairs["nohz_idle_balance/periodic_balance"], 1);
    let n = |k: &str| (r.by_reason[k].pairs, r.by_reason[k].agreeing);
    assert_eq!(n("nohz_idle_balance"), (2, 2));
    assert_eq!(n("periodic_balance"), (2, 1));
    assert_eq!(n("newidle_balance"), (1, 1));
    assert_eq!(n("active_balance"), (1, 1));
    assert_eq!(r.by_reason["periodic_balance"].agreement, Some(0.5));
    // The commonest hook reason (ties go to the first name) and its share.
    assert_eq!(r.constant_answer.as_deref(), Some("nohz_idle_balance"));
    assert_eq!(r.constant_agreement, Some(2.0 / 6.0));
}

#[test]
fn a_stopper_entry_is_not_a_search() {
    let topo = Topology::synthetic_flat(2);
    let mut e = with_origin(detach(100, 1, CpuIdleType::Idle), 1, BalanceOrigin::Stopper);
    if let EventKind::Balance(b) = &mut e.kind {
        b.pid = None;
    }
    let v = validate(&topo, config(), &[e]);
    assert_eq!(v.stopper_entries, 1);
    assert_eq!(v.total.decisions, 0);
}

#[test]
fn without_detach_task_the_search_into_the_destination_pairs() {
    let mut p = ReasonPairing::default();
    let search = |ts: u64, dst: u32, idle: CpuIdleType, balanced: bool| {
        let mut e = balance(ts, dst, 4, idle, (!balanced).then_some(MigrationType::Task));
        if let EventKind::Balance(b) = &mut e.kind {
            b.balanced = balanced;
        }
        e
    };
    let to = |ts: u64, pid: Pid, dst: u32, reason: Reason| {
        let mut e = migrate(ts, pid, reason);
        if let EventKind::Migrate(m) = &mut e.kind {
            m.dst_cpu = dst;
        }
        e
    };
    for e in [
        // A newidle pass of CPU 2 found an imbalance, then pulled two tasks.
        search(1_000, 2, CpuIdleType::NewlyIdle, false),
        to(5_000, 7, 2, Reason::NewidleBalance),
        to(6_000, 8, 2, Reason::NewidleBalance),
        // A balanced search pairs with nothing; a periodic pull long after a search neither.
        search(10_000, 3, CpuIdleType::Idle, true),
        to(11_000, 9, 3, Reason::PeriodicBalance),
        search(20_000, 1, CpuIdleType::NotIdle, false),
        to(
            20_000 + SEARCH_WINDOW_NS + 1,
            10,
            1,
            Reason::PeriodicBalance,
        ),
        // A stack that says newidle where the kernel ran a busy CPU's pass: disagreement.
        search(30_000_000, 0, CpuIdleType::NotIdle, false),
        to(30_001_000, 11, 0, Reason::NewidleBalance),
    ] {
        p.push(&e);
    }
    let r = p.agreement;
    assert_eq!(r.balancer_migrations, 5);
    assert_eq!((r.matched, r.matched_search, r.matched_detach), (3, 3, 0));
    assert_eq!(r.agreeing, 2);
}

#[test]
fn without_origins_only_newly_idle_is_told_apart() {
    let h = |idle| hook_reason(idle, None);
    assert!(h(CpuIdleType::Idle).agrees(Reason::PeriodicBalance));
    assert!(h(CpuIdleType::NotIdle).agrees(Reason::NohzIdleBalance));
    assert!(!h(CpuIdleType::NewlyIdle).agrees(Reason::PeriodicBalance));
    assert!(!h(CpuIdleType::Idle).agrees(Reason::NewidleBalance));
    // Active balance needs the stopper's origin: without it a stack saying so is not confirmed.
    assert!(!h(CpuIdleType::Idle).agrees(Reason::ActiveBalance));
    let v = validate(&Topology::synthetic_flat(2), config(), &[]);
    assert_eq!(v.reason_agreement, None);
    assert_eq!(v.balanced_agreement, None);
}

/// Four single-CPU groups in one MC domain: CPU 0 runs three tasks, CPUs 1-3 are idle.
fn three_on_cpu0(t: u64) -> Vec<Event> {
    let mut v = vec![switch(t, 0, 10), nr(t, 0, 3)];
    for c in 1..4 {
        v.push(switch(t, c, 0));
        v.push(nr(t, c, 0));
    }
    v
}

/// The kernel found an imbalance of the task type from idle `dst` in the 4-CPU domain, in a
/// search `ns` long.
fn timed_search(ts: u64, dst: u32, ns: u32) -> Event {
    let mut e = balance(ts, dst, 4, CpuIdleType::Idle, Some(MigrationType::Task));
    if let EventKind::Balance(b) = &mut e.kind {
        b.search_ns = Some(ns);
    }
    e
}

/// A search whose record carries its length is judged from the state at its entry when the
/// model answers alike at its exit, and set apart as raced when the answer changed meanwhile.
#[test]
fn searches_that_raced_the_state_they_read_are_not_judged() {
    let topo = Topology::synthetic_flat(4);
    let mut evs = three_on_cpu0(1_000);
    // Nothing changes within [2000, 2500]: judged (and agreeing: 3 tasks on CPU 0).
    evs.push(timed_search(2_000, 1, 500));
    // CPU 0 drops to one task inside [3000, 3500]: the model's answer flips, not judged.
    evs.push(timed_search(3_000, 2, 500));
    evs.push(nr(3_200, 0, 1));
    // After the change, a search judged as usual (the model says balanced: disagreement).
    evs.push(timed_search(4_000, 3, 100));
    let v = validate(&topo, config(), &evs);
    assert_eq!(v.total.decisions, 2, "{v:?}");
    assert_eq!(v.total.balanced_agree, 1);
    assert_eq!(v.raced.values().sum::<u64>(), 1);
}

/// A search in which a CPU it reads changes and changes back (its vCPU stopped for
/// milliseconds while it searched): the state at both ends is the same, but the kernel may
/// have read the other one, so the search raced; one whose CPUs changed without changing the
/// answer is judged.
#[test]
fn a_search_across_a_change_and_back_raced() {
    let topo = Topology::synthetic_flat(4);
    let mut evs = three_on_cpu0(1_000);
    // CPU 0 drops to one task and is back at three within [2000, 6000].
    evs.push(timed_search(2_000, 1, 4_000));
    evs.push(nr(3_000, 0, 1));
    evs.push(nr(5_000, 0, 3));
    // CPU 0 goes from three tasks to four within [7000, 8000]: still imbalanced, judged.
    evs.push(timed_search(7_000, 2, 1_000));
    evs.push(nr(7_500, 0, 4));
    let v = validate(&topo, config(), &evs);
    assert_eq!(v.raced.values().sum::<u64>(), 1, "{v:?}");
    assert_eq!(v.total.decisions, 1);
    assert_eq!(v.total.balanced_agree, 1);
}

/// A search that read a CPU which made records until just before it, then none for 5 ms, and
/// came back with its run queue changed, is set apart as stalled (the kernel may have read the
/// change long before its record); one whose CPUs came back sooner is judged.
#[test]
fn searches_across_a_stopped_cpu_are_not_judged() {
    const MS: u64 = 1_000_000;
    let topo = Topology::synthetic_flat(4);
    let mut evs = three_on_cpu0(MS);
    // The kernel found it balanced (CPU 0 already down to one task for it); the model,
    // holding three there, would not.
    evs.push(balance(MS + 500, 1, 4, CpuIdleType::Idle, None));
    evs.push(nr(MS + 500 + 6 * MS, 0, 1));
    // CPU 0 running and back within a millisecond: judged (and agreeing, one task there).
    evs.push(switch(20 * MS, 0, 10));
    evs.push(balance(20 * MS + 100, 2, 4, CpuIdleType::Idle, None));
    evs.push(switch(20 * MS + 600, 0, 10));
    let v = validate(&topo, config(), &evs);
    assert_eq!(v.stalled.values().sum::<u64>(), 1, "{v:?}");
    assert_eq!(v.total.decisions, 1);
    assert_eq!(v.total.balanced_agree, 1);
    assert!(v.disagreements.is_empty());
}

#[test]
fn the_model_answers_the_kernels_question() {
    let topo = Topology::synthetic_flat(4);
    let mut evs = three_on_cpu0(1_000);
    // Idle CPU 1 pulling: local has_spare, busiest CPU 0 with 3 tasks (has_spare too, no PELT
    // load): calculate_imbalance, has_spare local, single-CPU busiest group ->
    // sibling_imbalance = 3 - 0, halved -> 1 task (migrate_task).
    evs.push(balance(
        2_000,
        1,
        4,
        CpuIdleType::Idle,
        Some(MigrationType::Task),
    ));
    // The same pass, the kernel said migrate_load: balanced agrees, type does not.
    evs.push(balance(
        2_100,
        2,
        4,
        CpuIdleType::Idle,
        Some(MigrationType::Load),
    ));
    // Busy CPU 0 itself pulling (not idle): nothing is busier than the local group.
    evs.push(balance(2_200, 0, 4, CpuIdleType::NotIdle, None));
    // The kernel found CPU 3's domain balanced, the model does not.
    evs.push(balance(2_300, 3, 4, CpuIdleType::Idle, None));
    // No domain of weight 3 exists.
    evs.push(balance(2_400, 3, 3, CpuIdleType::Idle, None));
    let v = validate(&topo, config(), &evs);
    assert_eq!(v.unmapped, 1);
    assert_eq!(v.total.decisions, 4);
    assert_eq!(v.total.balanced_agree, 3);
    assert_eq!(v.total.kernel_balanced, 2);
    assert_eq!(v.total.model_balanced, 1);
    assert_eq!(v.total.both_unbalanced, 2);
    assert_eq!(v.total.type_agree, 1);
    assert_eq!(v.balanced_agreement, Some(0.75));
    assert_eq!(v.migration_type_agreement, Some(0.5));
    assert_eq!(v.migration_types["task/task"], 1);
    assert_eq!(v.migration_types["load/task"], 1);
    assert_eq!(v.per_level["llc"].decisions, 4);
    assert_eq!(v.balance_events, 5);
    // The one disagreement, with the model's groups as evidence.
    assert_eq!(v.disagreements_by_kind.len(), 1);
    assert_eq!(v.disagreements_by_kind["llc/idle/balanced"], 1);
    let d = &v.disagreements[0];
    assert_eq!(
        (d.dst_cpu, d.kernel_balanced, d.model_imbalance),
        (3, true, 1)
    );
    assert_eq!(d.groups.len(), 4);
    assert_eq!(d.local_group, 3);
    assert_eq!(d.busiest_group, Some(0));
    assert_eq!(d.groups[0].nr_running, 3);
}

#[test]
fn searches_retried_without_pinned_cpus_are_not_judged() {
    let topo = Topology::synthetic_flat(4);
    let mut evs = three_on_cpu0(1_000);
    // CPU 0's tasks were all pinned: the kernel searched again without CPU 0 and found the
    // domain balanced; the model sees CPU 0 and would say otherwise.
    let mut redo = balance(2_000, 1, 4, CpuIdleType::Idle, None);
    if let EventKind::Balance(b) = &mut redo.kind {
        b.redo = true;
    }
    evs.push(redo);
    let v = validate(&topo, config(), &evs);
    assert_eq!((v.redo, v.total.decisions), (1, 0));
    assert_eq!(v.balanced_agreement, None);
}

#[test]
fn decisions_are_judged_in_time_order_across_batches() {
    // The balancer's ring buffer delivers its record after the tracepoints' events that
    // follow it: the state at 2_000 (3 tasks on CPU 0) is what the model must judge, not the
    // state after the pull (2 tasks on CPU 0, 1 on CPU 1).
    let topo = Topology::synthetic_flat(4);
    let mut v = Validator::new(&topo, config());
    v.push(&three_on_cpu0(1_000));
    v.push(&[nr(3_000, 0, 2), nr(3_000, 1, 1), switch(3_000, 1, 11)]);
    v.push(&[balance(
        2_000,
        1,
        4,
        CpuIdleType::Idle,
        Some(MigrationType::Task),
    )]);
    let out = v.finish();
    assert_eq!(out.late, 0);
    assert_eq!(out.balanced_agreement, Some(1.0));
    assert_eq!(out.migration_type_agreement, Some(1.0));
}

#[test]
fn a_balancer_record_three_seconds_late_is_judged_at_its_own_time() {
    // A lab guest's recorder delivered the balancer's records 3.2 s after the tracepoints'
    // events of the same instant: within the reorder window, the search is judged against
    // the state at its time (3 tasks on CPU 0), not the state 3 s on (the pull done).
    let topo = Topology::synthetic_flat(4);
    let mut v = Validator::new(&topo, config());
    let t = 1_000_000_000;
    v.push(&three_on_cpu0(t));
    v.push(&[
        nr(t + 10_000, 0, 2),
        nr(t + 10_000, 1, 1),
        switch(t + 10_000, 1, 11),
    ]);
    v.push(&[switch(t + 3_200_000_000, 2, 0)]);
    v.push(&[balance(
        t + 5_000,
        1,
        4,
        CpuIdleType::Idle,
        Some(MigrationType::Task),
    )]);
    let out = v.finish();
    assert_eq!(out.late, 0);
    assert_eq!(out.balanced_agreement, Some(1.0));
}

#[test]
fn levels_are_named_by_span_weight() {
    let topo = crate::analyze::tests::topo3();
    let mut evs = Vec::new();
    for c in 0..8 {
        evs.push(switch(10, c, 0));
        evs.push(nr(10, c, 0));
    }
    for w in [2, 4, 8] {
        evs.push(balance(100, 5, w, CpuIdleType::Idle, None));
    }
    let v = validate(&topo, config(), &evs);
    assert_eq!(v.unmapped, 0);
    let keys: Vec<&str> = v.per_level.keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert_eq!(
        v.balanced_agreement,
        Some(1.0),
        "an idle machine is balanced"
    );
}

/// Recordings made in the lab (tests/lab/run): 6.12 on 2 sockets with SMT and 2 NUMA nodes,
/// and 6.1 on 4 NUMA nodes of 4 CPUs, both under `wakeup-storm`. They carry the kernel's own
/// balancer decisions, so the model is checked against the kernel without booting anything.
mod lab_fixture {
    use super::*;
    use crate::record::Reader;
    use std::collections::BTreeSet;

    const SMT_NUMA_612: &[u8] =
        include_bytes!("../../tests/fixtures/lab/6.12-2s-smt-numa-wakeup-storm.lbs");
    const FOUR_NODE_61: &[u8] =
        include_bytes!("../../tests/fixtures/lab/6.1-4node-wakeup-storm.lbs");

    fn events(bytes: &[u8]) -> (crate::record::Header, Vec<Event>) {
        let mut r = Reader::from_bytes(bytes.to_vec()).expect("the lab fixture reads");
        let mut evs = Vec::new();
        while let Some(chunk) = r.next_chunk() {
            evs.extend(chunk);
        }
        (r.header().clone(), evs)
    }

    fn validated(bytes: &[u8]) -> (crate::record::Header, Validation) {
        let (h, evs) = events(bytes);
        let cfg = ModelConfig {
            rules: ModelRules::from_release(&h.kernel_release),
            ..ModelConfig::default()
        };
        let v = validate(&h.topology, cfg, &evs);
        (h, v)
    }

    #[test]
    fn has_domain_levels_and_balance_events() {
        let (h, evs) = events(SMT_NUMA_612);
        assert!(h.topology.levels.len() >= 3, "SMT, MC and NUMA");
        assert!(h.probes.iter().any(|(_, k)| k == "fentry"));
        let mut levels = BTreeSet::new();
        let mut not_balanced = 0;
        for e in &evs {
            if let EventKind::Balance(b) = &e.kind {
                levels.insert(b.level);
                not_balanced += u32::from(!b.balanced);
            }
        }
        assert!(
            levels.len() >= 3,
            "Balance events at every level: {levels:?}"
        );
        assert!(not_balanced > 0);
    }

    const OVERLOAD_61: &[u8] = include_bytes!("../../tests/fixtures/lab/6.1-4node-overload.lbs");
    const OVERLOAD_612: &[u8] =
        include_bytes!("../../tests/fixtures/lab/6.12-2s-smt-numa-overload.lbs");
    const ACTIVE_612: &[u8] = include_bytes!("../../tests/fixtures/lab/6.12-4node-active.lbs");

    /// The goals on one validation: kappa >= 0.8 at every level with 50 searches; recall and
    /// precision >= 0.9 where 20 kernel (model) imbalances stand behind them; the migration
    /// type >= 0.9 for each kernel type with 20 pairs; every hook reason with 20 pairs >= 0.99.
    fn goals(name: &str, v: &Validation) -> Vec<String> {
        let mut miss = Vec::new();
        let all = "all".to_string();
        for (k, l) in v.per_level.iter().chain([(&all, &v.total)]) {
            let s = &l.scores;
            if s.searches < 50 {
                continue;
            }
            let kappa = s.kappa.unwrap_or(0.0);
            if kappa < 0.8 {
                miss.push(format!("{name} {k}: kappa {kappa:.3} of {}", s.searches));
            }
            if s.kernel_imbalanced >= 20 && s.recall.unwrap_or(0.0) < 0.9 {
                miss.push(format!("{name} {k}: recall {:?}", s.recall));
            }
            if s.model_imbalanced >= 20 && s.precision.unwrap_or(0.0) < 0.9 {
                miss.push(format!("{name} {k}: precision {:?}", s.precision));
            }
        }
        for (t, c) in &v.total.types.by_type {
            if c.pairs >= 20 && c.agreement.unwrap_or(0.0) < 0.9 {
                miss.push(format!("{name}: type {t} {:?} of {}", c.agreement, c.pairs));
            }
        }
        for (r, c) in &v.reasons.by_reason {
            if c.pairs >= 20 && c.agreement.unwrap_or(0.0) < 0.99 {
                miss.push(format!(
                    "{name}: reason {r} {:?} of {}",
                    c.agreement, c.pairs
                ));
            }
        }
        miss
    }

    /// The model's goals on every fixture, each resting on real numbers; where the fixture
    /// was recorded with the balancer hooks' origins, every reason is told apart.
    #[test]
    fn the_model_meets_its_goals_against_the_kernel() {
        let mut miss = Vec::new();
        for (label, bytes, rules, levels, origins) in [
            (
                "6.12 2s-smt-numa wakeup-storm",
                SMT_NUMA_612,
                ModelRules::V6_6Plus,
                3,
                false,
            ),
            (
                "6.1 4node wakeup-storm",
                FOUR_NODE_61,
                ModelRules::V6_1,
                2,
                false,
            ),
            ("6.1 4node overload", OVERLOAD_61, ModelRules::V6_1, 2, true),
            (
                "6.12 2s-smt-numa overload",
                OVERLOAD_612,
                ModelRules::V6_6Plus,
                3,
                true,
            ),
            (
                "6.12 4node active",
                ACTIVE_612,
                ModelRules::V6_6Plus,
                2,
                true,
            ),
        ] {
            let (h, v) = validated(bytes);
            let name = format!("{label} ({})", h.kernel_release);
            assert_eq!(ModelRules::from_release(&h.kernel_release), rules, "{name}");
            assert_eq!(v.unmapped, 0, "{name}");
            assert_eq!(
                v.per_level.len(),
                levels,
                "{name}: {:?}",
                v.per_level.keys()
            );
            assert!(v.total.decisions > 1000, "{name}: {}", v.total.decisions);
            assert!(
                v.total.both_unbalanced > 50,
                "{name}: {}",
                v.total.both_unbalanced
            );
            assert!(v.reasons.matched > 50, "{name}: {:?}", v.reasons);
            let told = !v.reasons.by_reason.contains_key("periodic_or_nohz");
            assert_eq!(told, origins, "{name}: {:?}", v.reasons.by_reason);
            miss.extend(goals(&name, &v));
        }
        // NUMA precision under the 4node wakeup storm (77.2% of 57 before CPUs with a remote
        // wakeup on its way counted as busy, as idle_cpu() says) holds too now: no miss.
        assert!(miss.is_empty(), "{miss:#?}");
    }

    /// The balancer hooks tell all four balancer reasons apart in the active fixture, each
    /// with enough pairs to judge, and the stack table agrees with every one.
    #[test]
    fn the_active_fixture_has_every_balancer_reason() {
        let (_, v) = validated(ACTIVE_612);
        for r in ["active_balance", "nohz_idle_balance", "periodic_balance"] {
            let c = &v.reasons.by_reason[r];
            assert!(c.pairs >= 10, "{r}: {c:?}");
            assert_eq!(c.agreeing, c.pairs, "{r}: {c:?}");
        }
        assert!(v.reasons.by_reason["newidle_balance"].pairs > 0);
    }

    /// The overload fixtures exercise every migration type a symmetric machine has (misfit
    /// needs asymmetric capacities) and NUMA-level imbalances in numbers.
    #[test]
    fn the_overload_fixtures_exercise_load_util_and_task() {
        for bytes in [OVERLOAD_61, OVERLOAD_612] {
            let (h, v) = validated(bytes);
            for t in ["load", "util", "task"] {
                let n = v.total.types.by_type.get(t).map_or(0, |c| c.pairs);
                assert!(n >= 20, "{}: {t} {n}", h.kernel_release);
            }
            let numa = v.per_level["numa"].scores.kernel_imbalanced;
            assert!(numa >= 100, "{}: numa {numa}", h.kernel_release);
        }
    }
}

/// A search that sent the PELT sums it was about to read (the balancer hooks) is answered
/// from them; the same search answered from the samples is scored apart
/// ([`Validation::sampled`]). Four overloaded CPUs, CPU 0 pulling: sampled, CPU 1 is at 1,180
/// against the local 1,000, over imbalance_pct 117; the search read 1,160, under it, and the
/// kernel found the domain balanced.
#[test]
fn searches_are_judged_on_the_pelt_sums_they_sent() {
    let topo = Topology::synthetic_flat(4);
    let pelt = crate::analyze::tests::pelt_full;
    let mut evs = Vec::new();
    for c in 0..4 {
        evs.push(switch(100, c, 100 + c));
        evs.push(nr(200, c, 2));
        evs.push(pelt(300, c, if c == 1 { 1180 } else { 1000 }, false));
    }
    let search = balance(10_000, 0, 4, CpuIdleType::NotIdle, None);
    let without = validate(
        &topo,
        config(),
        &[evs.clone(), vec![search.clone()]].concat(),
    );
    evs.push(pelt(9_999, 1, 1160, true));
    evs.push(search);
    let with = validate(&topo, config(), &evs);
    assert_eq!(without.pelt_at_search, 0);
    assert_eq!(
        (without.total.decisions, without.total.balanced_agree),
        (1, 0)
    );
    assert_eq!(without.sampled.total.balanced_agree, 0);
    assert_eq!(with.pelt_at_search, 1);
    assert_eq!((with.total.decisions, with.total.balanced_agree), (1, 1));
    assert_eq!(
        (
            with.sampled.total.decisions,
            with.sampled.total.balanced_agree
        ),
        (1, 0)
    );
    assert_eq!(with.sampled.per_level["llc"].decisions, 1);
    assert!(with.disagreements.is_empty());
}

/// A search that sent the run queues it read is judged even across a CPU that had stopped:
/// the stopped CPU's late record no longer matters. The same stopped CPU as
/// `searches_across_a_stopped_cpu_are_not_judged`, whose search sent CPU 0 down to one task
/// (and the idle CPUs as idle): judged, and agreeing with the kernel; the samples alone
/// still hold three tasks there and disagree.
#[test]
fn a_search_that_sent_its_run_queues_is_judged_across_a_stopped_cpu() {
    const MS: u64 = 1_000_000;
    let topo = Topology::synthetic_flat(4);
    let mut evs = three_on_cpu0(MS);
    for c in 0..4u32 {
        evs.push(Event {
            ts_ns: MS + 499,
            cpu: 1,
            kind: EventKind::Pelt(Box::new(crate::event::PeltInfo {
                rq_cpu: c,
                load_avg: 0,
                runnable_avg: 0,
                util_avg: 0,
                util_est: Some(0),
                at_search: Some(crate::event::SearchTasks {
                    nr_running: u32::from(c == 0),
                    cfs_h_nr_running: u32::from(c == 0),
                    idle: c != 0,
                }),
            })),
        });
    }
    evs.push(balance(MS + 500, 1, 4, CpuIdleType::Idle, None));
    evs.push(nr(MS + 500 + 6 * MS, 0, 1));
    let v = validate(&topo, config(), &evs);
    assert!(v.stalled.is_empty(), "{v:?}");
    assert_eq!(v.stalled_judged.values().sum::<u64>(), 1, "{v:?}");
    assert_eq!((v.total.decisions, v.total.balanced_agree), (1, 1));
    assert_eq!(
        (v.sampled.total.decisions, v.sampled.total.balanced_agree),
        (1, 0)
    );
    assert_eq!(v.pelt_at_search, 4);
}

/// A lab recording made with the search run queues (6.12 on 2s-smt-numa under hackbench,
/// fentry, 2026-11-29): the searches sent thousands of them, no search is set aside as
/// stalled (those are judged), and the model answers the kernel's question at least as
/// often from them as from the tracepoints' records alone, with kappa of at least 0.95 at
/// every level (0.995-1.000 the day it was recorded; from the records alone 0.969-0.984).
#[test]
fn a_lab_recording_with_search_run_queues_is_judged_from_them() {
    const HACKBENCH_612: &[u8] =
        include_bytes!("../../tests/fixtures/lab/6.12-2s-smt-numa-hackbench.lbs");
    let mut r = crate::record::Reader::from_bytes(HACKBENCH_612.to_vec()).expect("it reads");
    let mut evs = Vec::new();
    while let Some(chunk) = r.next_chunk() {
        evs.extend(chunk);
    }
    let h = r.header().clone();
    let cfg = ModelConfig {
        rules: ModelRules::from_release(&h.kernel_release),
        ..ModelConfig::default()
    };
    assert_eq!(cfg.rules, ModelRules::V6_6Plus);
    let v = validate(&h.topology, cfg, &evs);
    assert!(v.pelt_at_search > 1000, "{}", v.pelt_at_search);
    assert!(v.stalled.is_empty(), "{:?}", v.stalled);
    assert!(!v.stalled_judged.is_empty());
    assert_eq!(v.per_level.len(), 3);
    for (level, l) in &v.per_level {
        let s = &v.sampled.per_level[level];
        assert_eq!(l.decisions, s.decisions, "{level}");
        assert!(l.decisions >= 200, "{level}: {}", l.decisions);
        assert!(l.balanced_agree >= s.balanced_agree, "{level}");
        let kappa = l.scores.kappa.unwrap();
        assert!(kappa >= 0.95, "{level}: kappa {kappa}");
    }
}
