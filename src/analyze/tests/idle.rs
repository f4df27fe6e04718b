//! Idle-while-others-wait: movable and pinned waiters, no idle CPU, levels, and how the
//! accumulated time splits at interval boundaries.

use super::*;

/// CPU 0 runs task 10, CPU 1 idles; task 20 waits on CPU 0 from t=100 until it runs at 600.
fn two_cpus_one_waiter(extra: &[Event]) -> Vec<Event> {
    let mut evs = vec![switch(0, 0, 0, 1, 10), switch(0, 1, 0, 1, 0)];
    evs.extend_from_slice(extra);
    evs.push(wakeup(100, 20, 0));
    evs.push(switch(600, 0, 10, 1, 20));
    evs.push(clock(1_000));
    evs
}

#[test]
fn movable_waiter() {
    let s = one(Topology::synthetic_flat(2), &two_cpus_one_waiter(&[]));
    assert_eq!(iww(&s, "llc", "0-1"), (500, 0));
    let d = &s.idle_while_waiting[0];
    assert_eq!(s.len_ns(), 1_000);
    assert_eq!(d.movable_fraction, 0.5);
    assert_eq!(d.pinned_fraction, 0.0);
}

#[test]
fn pinned_waiter() {
    let s = one(
        Topology::synthetic_flat(2),
        &two_cpus_one_waiter(&[affinity(0, 20, "0")]),
    );
    assert_eq!(iww(&s, "llc", "0-1"), (0, 500));
}

#[test]
fn affinity_allowing_the_idle_cpu_is_movable() {
    let s = one(
        Topology::synthetic_flat(4),
        &two_cpus_one_waiter(&[affinity(0, 20, "0-1")]),
    );
    assert_eq!(iww(&s, "llc", "0-3"), (500, 0));
}

#[test]
fn affinity_change_while_waiting() {
    // Pinned to CPU 0 from t=300: movable 100-300, pinned 300-600.
    let evs = [
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 0, 1, 0),
        wakeup(100, 20, 0),
        affinity(300, 20, "0"),
        switch(600, 0, 10, 1, 20),
    ];
    let s = one(Topology::synthetic_flat(2), &evs);
    assert_eq!(iww(&s, "llc", "0-1"), (200, 300));
}

#[test]
fn no_idle_cpu() {
    let evs = [
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 0, 1, 11),
        wakeup(100, 20, 0),
        switch(600, 0, 10, 1, 20),
        clock(1_000),
    ];
    let s = one(Topology::synthetic_flat(2), &evs);
    assert_eq!(iww(&s, "llc", "0-1"), (0, 0));
}

#[test]
fn unknown_cpu_is_not_idle() {
    // CPU 1 never switched: its state is unknown, so nothing is idle.
    let evs = [switch(0, 0, 0, 1, 10), wakeup(100, 20, 0), clock(1_000)];
    let s = one(Topology::synthetic_flat(2), &evs);
    assert_eq!(iww(&s, "llc", "0-1"), (0, 0));
}

#[test]
fn waiting_on_the_idle_cpu_itself_does_not_count() {
    // The only idle CPU is the one the waiter is queued on: it is about to run there.
    let evs = [
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 0, 1, 0),
        wakeup(100, 20, 1),
        switch(600, 1, 0, 1, 20),
    ];
    let s = one(Topology::synthetic_flat(2), &evs);
    assert_eq!(iww(&s, "llc", "0-1"), (0, 0));
}

/// Idle is the kernel's `idle_cpu()`: a CPU running its idle task with a task queued on it (a
/// wakeup not yet switched in, or a stopped vCPU's) is about to run that task and cannot take
/// another CPU's waiter. CPU 0 runs 10 with 20 waiting from 100; CPU 1 idles with 30 woken
/// onto it at 200, switched in only at 800: movable 100-200 only.
#[test]
fn an_idle_cpu_with_its_own_waiter_takes_no_other() {
    let evs = [
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 0, 1, 0),
        wakeup(100, 20, 0),
        wakeup(200, 30, 1),
        switch(800, 1, 0, 1, 30),
        switch(900, 0, 10, 1, 20),
        clock(1_000),
    ];
    let s = one(Topology::synthetic_flat(2), &evs);
    assert_eq!(iww(&s, "llc", "0-1"), (100, 0));
}

#[test]
fn per_level_domains() {
    // CPUs 0-3 busy, 5-7 busy, 4 idle; a task waits on CPU 0: only the NUMA domain sees it.
    let mut evs: Vec<Event> = (0..8u32)
        .map(|c| switch(0, c, 0, 1, if c == 4 { 0 } else { 100 + c }))
        .collect();
    evs.push(wakeup(1_000, 20, 0));
    evs.push(clock(3_000));
    let s = one(topo3(), &evs);
    assert_eq!(iww(&s, "numa", "0-7"), (2_000, 0));
    assert_eq!(iww(&s, "llc", "0-3"), (0, 0));
    assert_eq!(iww(&s, "llc", "4-7"), (0, 0));
    assert_eq!(iww(&s, "smt", "0-1"), (0, 0));
    assert_eq!(iww(&s, "smt", "4-5"), (0, 0));
    assert_eq!(s.idle_while_waiting.len(), 4 + 2 + 1);
    // The waiter moves next to the idle CPU: now the SMT and LLC domains see it too.
    let mut evs2 = evs.clone();
    evs2.pop();
    evs2.push(migrate(2_000, 20, 0, 5, Reason::PeriodicBalance));
    evs2.push(clock(3_000));
    let s = one(topo3(), &evs2);
    assert_eq!(iww(&s, "numa", "0-7"), (2_000, 0));
    assert_eq!(iww(&s, "llc", "4-7"), (1_000, 0));
    assert_eq!(iww(&s, "smt", "4-5"), (1_000, 0));
    assert_eq!(iww(&s, "llc", "0-3"), (0, 0));
}

#[test]
fn pinned_then_movable_across_waiters() {
    // Two waiters on CPU 0: one pinned there, one free. Movable while the free one waits,
    // pinned after it runs elsewhere.
    let evs = [
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 0, 1, 0),
        affinity(0, 21, "0"),
        wakeup(100, 21, 0),
        wakeup(200, 22, 0),
        migrate(500, 22, 0, 1, Reason::NewidleBalance),
        switch(500, 1, 0, 1, 22),
        switch(700, 1, 22, 1, 0),
        clock(1_000),
    ];
    let s = one(Topology::synthetic_flat(2), &evs);
    // pinned 100-200, movable 200-500, busy CPU 1 500-700, pinned 700-1000.
    assert_eq!(iww(&s, "llc", "0-1"), (300, 400));
}

#[test]
fn split_at_interval_boundaries() {
    let evs = [
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 0, 1, 0),
        wakeup(500, 20, 0),
        switch(2_500, 0, 10, 1, 20),
        clock(3_200),
    ];
    let mut a = analyzer(Topology::synthetic_flat(2), 1_000);
    let s = run(&mut a, &evs);
    let spans: Vec<(u64, u64, bool)> = s
        .iter()
        .map(|s| (s.t_start_ns, s.t_end_ns, s.partial))
        .collect();
    assert_eq!(
        spans,
        vec![
            (0, 1_000, false),
            (1_000, 2_000, false),
            (2_000, 3_000, false),
            (3_000, 3_200, true)
        ]
    );
    let movable: Vec<u64> = s.iter().map(|s| iww(s, "llc", "0-1").0).collect();
    assert_eq!(movable, vec![500, 1_000, 500, 0]);
    assert_eq!(s[1].idle_while_waiting[0].movable_fraction, 1.0);
}

#[test]
fn filtered_waiters_do_not_count() {
    let filter = Filter {
        tgid: Some(999),
        ..Filter::default()
    };
    let mut a = analyzer_with(Topology::synthetic_flat(2), LONG, filter);
    let s = run(&mut a, &two_cpus_one_waiter(&[task(0, 20, 20, "x")]));
    assert_eq!(iww(&s[0], "llc", "0-1"), (0, 0));
    // The table still shows the waiter.
    let filter = Filter {
        tgid: Some(20),
        ..Filter::default()
    };
    let mut a = analyzer_with(Topology::synthetic_flat(2), LONG, filter);
    let s = run(&mut a, &two_cpus_one_waiter(&[task(0, 20, 20, "x")]));
    assert_eq!(iww(&s[0], "llc", "0-1"), (500, 0));
}

#[test]
fn many_cpus_stay_cheap() {
    // 256 CPUs, every other one idle, thousands of wakeups: must finish quickly and stay
    // consistent (a smoke test against quadratic recomputation).
    let topo = Topology::synthetic(
        &[
            (LevelKind::Smt, "SMT", 2),
            (LevelKind::Llc, "MC", 16),
            (LevelKind::Numa, "NUMA", 256),
        ],
        256,
    );
    let mut evs: Vec<Event> = (0..256u32)
        .map(|c| switch(0, c, 0, 1, if c % 2 == 0 { 0 } else { 1_000 + c }))
        .collect();
    let mut t = 10;
    for round in 0..40u32 {
        for c in (1..256u32).step_by(2) {
            let pid = 10_000 + round * 256 + c;
            evs.push(wakeup(t, pid, c));
            t += 1;
        }
        for c in (1..256u32).step_by(2) {
            let pid = 10_000 + round * 256 + c;
            evs.push(migrate(t, pid, c, c - 1, Reason::NewidleBalance));
            evs.push(switch(t, c - 1, 0, 1, pid));
            evs.push(switch(t + 1, c - 1, pid, 1, 0));
            t += 2;
        }
    }
    let mut a = analyzer(topo, LONG);
    let s = run(&mut a, &evs);
    assert_eq!(s[0].migrations.total, 40 * 128);
    assert!(s[0].idle_while_waiting.iter().all(|d| d.movable_ns > 0));
    assert_eq!(a.open_task_waits(), 0);
    // One entry per task seen (none exited): 128 running from the start, 40 x 128 moved.
    assert_eq!(a.tracked_tasks(), 128 + 40 * 128);
}

#[test]
fn wakeup_of_a_running_task_is_not_a_waiter() {
    // ttwu_runnable: 10 is woken on CPU 0 while still running there. runqlat still records
    // the enqueue time, but nothing waits while CPU 1 idles.
    let evs = [
        switch(0, 0, 0, 1, 10),
        switch(0, 1, 0, 1, 0),
        wakeup(100, 10, 0),
        switch(600, 0, 10, 1, 0),
        switch(700, 0, 0, 1, 10),
    ];
    let s = one(Topology::synthetic_flat(2), &evs);
    assert_eq!(iww(&s, "llc", "0-1"), (0, 0));
    assert!(s.cpus.iter().all(|c| c.waiting == 0));
    assert_eq!(s.runqlat_us.count, 1);
    assert_eq!(s.runqlat_us.max, 0.6);
}

/// The statuses `idle_waiting_status` reports, as `(level key, span, status)`.
fn statuses(a: &Analyzer) -> Vec<(String, String, WaitStatus)> {
    a.idle_waiting_status()
        .map(|(l, span, st)| {
            let key = a.topology().level_key(Some(l)).to_string();
            (key, span.to_string(), st)
        })
        .collect()
}

#[test]
fn status_query_follows_the_accounting() {
    let mut a = analyzer(topo3(), LONG);
    assert!(statuses(&a).iter().all(|s| s.2 == WaitStatus::None));
    assert_eq!(
        statuses(&a).len(),
        4 + 2 + 1,
        "every domain, in topology order"
    );
    // CPU 0 runs 10, CPU 1 idles, CPU 4 idles; task 20 waits on CPU 0.
    let mut evs: Vec<Event> = (0..8).map(|c| switch(0, c, 0, 1, 10 + c)).collect();
    evs.push(switch(1, 1, 11, 1, 0));
    evs.push(switch(1, 4, 14, 1, 0));
    feed(&mut a, &evs);
    assert!(statuses(&a).iter().all(|s| s.2 == WaitStatus::None));
    feed(&mut a, &[wakeup(100, 20, 0)]);
    let s = statuses(&a);
    let get = |key: &str, span: &str| s.iter().find(|d| d.0 == key && d.1 == span).unwrap().2;
    assert_eq!(get("smt", "0-1"), WaitStatus::Movable);
    assert_eq!(get("smt", "2-3"), WaitStatus::None);
    assert_eq!(get("llc", "0-3"), WaitStatus::Movable);
    assert_eq!(get("llc", "4-7"), WaitStatus::None);
    assert_eq!(get("numa", "0-7"), WaitStatus::Movable);
    // Pinned to CPU 0 (an idle CPU does not help it).
    feed(&mut a, &[affinity(200, 20, "0")]);
    for (_, span, st) in statuses(&a) {
        let want = if ["0-1", "0-3", "0-7"].contains(&span.as_str()) {
            WaitStatus::Pinned
        } else {
            WaitStatus::None
        };
        assert_eq!(st, want, "{span}");
    }
    // It runs: nobody waits.
    feed(&mut a, &[switch(300, 0, 10, 1, 20)]);
    assert!(statuses(&a).iter().all(|s| s.2 == WaitStatus::None));
}

/// The status of a span straight from the definition, for checking the counters the
/// accounting keeps: movable when some waiter could run on an idle CPU of the span other
/// than its own, pinned when waiters and other idle CPUs exist but no waiter may move.
/// `idle`: CPUs idle as `idle_cpu()` says (idle task, nothing queued).
fn status_by_definition(
    span: &CpuSet,
    idle: &CpuSet,
    waiters: &[(Pid, u32, Option<CpuSet>)],
) -> WaitStatus {
    let idle = idle.and(span);
    let mut pinned = false;
    for (_, cpu, allowed) in waiters.iter().filter(|w| span.contains(w.1 as usize)) {
        let mut others = idle;
        others.remove(*cpu as usize);
        if others.is_empty() {
            continue;
        }
        if allowed.is_none_or(|a| a.intersects(&others)) {
            return WaitStatus::Movable;
        }
        pinned = true;
    }
    if pinned {
        WaitStatus::Pinned
    } else {
        WaitStatus::None
    }
}

#[test]
fn domain_counters_agree_with_the_definition() {
    let topo = topo3();
    let mut acc = crate::analyze::idle::IdleAccounting::new(&topo, |_, _| 1_000);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut below = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let masks = [None, Some("0"), Some("1,5"), Some("2-3"), Some("0-7")]
        .map(|m| m.map(|m| CpuSet::parse_list(m).unwrap()));
    let mut idle = CpuSet::new();
    let mut waiters: Vec<(
        Pid,
        u32,
        Option<std::rc::Rc<CpuSet>>,
        crate::analyze::idle::WaitSlot,
    )> = Vec::new();
    // Anonymous waiters per CPU (folded mode), mixed with the tasks' to stress the counters.
    let mut anon = [0u32; 8];
    for step in 0..20_000u64 {
        match below(4) {
            3 => {
                let cpu = below(8) as u32;
                anon[cpu as usize] = below(3) as u32;
                acc.set_queued(cpu, anon[cpu as usize]);
            }
            0 => {
                let cpu = below(8) as u32;
                let on = below(2) == 0;
                acc.set_idle(cpu, on);
                if on {
                    idle.insert(cpu as usize);
                } else {
                    idle.remove(cpu as usize);
                }
            }
            1 if waiters.len() < 12 => {
                let (pid, cpu) = (step as Pid + 1, below(8) as u32);
                let allowed = masks[below(masks.len() as u64) as usize].map(std::rc::Rc::new);
                let counted = below(5) != 0;
                let slot = acc.add_waiter(pid, cpu, counted, allowed.as_ref());
                waiters.push((pid, cpu, allowed, slot));
            }
            _ if !waiters.is_empty() => {
                let (pid, _, _, slot) = waiters.swap_remove(below(waiters.len() as u64) as usize);
                acc.remove_waiter(pid, slot);
            }
            _ => {}
        }
        acc.settle(step);
        let mut counted: Vec<(Pid, u32, Option<CpuSet>)> = waiters
            .iter()
            .filter(|w| w.3.counted())
            .map(|w| (w.0, w.1, w.2.as_deref().copied()))
            .collect();
        counted.extend(
            (0..8u32)
                .filter(|&c| anon[c as usize] > 0)
                .map(|c| (0, c, None)),
        );
        // Idle as the kernel's idle_cpu(): running the idle task with no waiter of any kind.
        let mut idle_now = idle;
        for w in &waiters {
            idle_now.remove(w.1 as usize);
        }
        for (c, &n) in anon.iter().enumerate() {
            if n > 0 {
                idle_now.remove(c);
            }
        }
        for (_, span, status) in acc.statuses() {
            assert_eq!(
                status,
                status_by_definition(span, &idle_now, &counted),
                "step {step}, span {span}, idle {idle}"
            );
        }
    }
}
