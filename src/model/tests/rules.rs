//! Rules that differ between releases or hang on details of the kernel's data structures
//! (the order of a domain's groups, unsigned arithmetic), each worked from the kernel source
//! of the release named: 6.1 for `ModelRules::V6_1`, 6.12 for `ModelRules::V6_6Plus`.

use super::stats::{busy, cpus, idle, params};
use crate::cpuset::CpuSet;
use crate::model::domains::DomainTable;
use crate::model::stats::{
    group_stats, pick_busiest, CpuSample, GroupType, MigrationType, ModelRules,
};
use crate::topology::{LevelKind, Topology};

/// update_sd_pick_busiest on equal candidates of the same type, per release (avg_load is
/// only computed for overloaded groups, so two fully_busy groups always tie at 0).
#[test]
fn update_sd_pick_busiest_ties_by_release() {
    let mut p = params(117);
    let full = group_stats(
        &cpus("0-1"),
        &[busy(1, 1000), busy(1, 1000)],
        1,
        &p,
        false,
        false,
    );
    assert_eq!((full.group_type, full.avg_load), (GroupType::FullyBusy, 0));
    let mut s = busy(1, 500);
    s.capacity = 800;
    let misfit = group_stats(&cpus("0"), &[s], 1, &p, false, true);
    assert_eq!(misfit.group_type, GroupType::MisfitTask);

    // 6.6+ (6.12 fair.c):
    //   case group_misfit_task:
    //       return sgs->group_misfit_task_load > busiest->group_misfit_task_load;
    //   case group_fully_busy:
    //       if (sgs->avg_load < busiest->avg_load) return false;
    //       if (sgs->avg_load == busiest->avg_load) {
    //           if (sds->busiest->flags & SD_SHARE_CPUCAPACITY) return false;
    //       }
    //       break;          -> return true
    // A fully_busy tie goes to the later group unless the pick is an SMT core; a misfit tie
    // keeps the first.
    assert!(pick_busiest(&full, Some(&full.clone()), &p));
    p.smt_groups = true;
    assert!(!pick_busiest(&full, Some(&full.clone()), &p));
    p.smt_groups = false;
    assert!(!pick_busiest(&misfit, Some(&misfit.clone()), &p));

    // 6.1 fair.c:
    //   case group_misfit_task:
    //       if (sgs->group_misfit_task_load < busiest->group_misfit_task_load)
    //           return false;
    //       break;          -> return true
    //   case group_fully_busy:
    //       if (sgs->avg_load <= busiest->avg_load) return false;
    // A fully_busy tie keeps the first group found (SMT or not); a misfit tie goes to the
    // later group.
    p.rules = ModelRules::V6_1;
    assert!(!pick_busiest(&full, Some(&full.clone()), &p));
    p.smt_groups = true;
    assert!(!pick_busiest(&full, Some(&full.clone()), &p));
    assert!(pick_busiest(&misfit, Some(&misfit.clone()), &p));
    let mut less = misfit.clone();
    less.misfit_task_load -= 1;
    assert!(!pick_busiest(&less, Some(&misfit), &p));
}

/// The order update_sd_lb_stats visits groups in (6.1 and 6.12 alike):
///   struct sched_group *sg = env->sd->groups;
///   do { ... sg = sg->next; } while (sg != env->sd->groups);
/// and build_sched_groups(sd, cpu) / build_overlap_sched_groups(sd, cpu):
///   for_each_cpu_wrap(i, span, cpu) { ... if (!first) first = sg; ... last->next = sg; }
///   sd->groups = first;
/// so from the destination's own group around the span, wrapping.
#[test]
fn groups_are_visited_from_the_local_group_around_the_span() {
    let flat = DomainTable::new(&Topology::synthetic_flat(4), ModelRules::V6_6Plus);
    let d = &flat.doms[0];
    let order = |cpu: usize| -> Vec<usize> {
        let local = d.group_of(cpu).unwrap();
        d.visit_order(Some(cpu), local).collect()
    };
    assert_eq!(order(0), [0, 1, 2, 3]);
    assert_eq!(order(2), [2, 3, 0, 1]);
    assert_eq!(order(3), [3, 0, 1, 2]);

    // SMT siblings numbered n and n + 8 (the 2s-smt-numa fixture): the LLC 0-3,8-11 has the
    // cores {0,8} {1,9} {2,10} {3,11}. From CPU 9: 9 -> {1,9}, 10 -> {2,10}, 11 -> {3,11},
    // then 0 -> {0,8}.
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysfs/2s-smt-numa");
    let topo = Topology::from_root(&root).unwrap();
    let t = DomainTable::new(&topo, ModelRules::V6_6Plus);
    let llc = topo.level_by_key("llc").unwrap();
    let d = &t.doms[t.base[llc]];
    assert_eq!(d.span, cpus("0-3,8-11"));
    let local = d.group_of(9).unwrap();
    let got: Vec<CpuSet> = d.visit_order(Some(9), local).map(|g| d.groups[g]).collect();
    assert_eq!(got, [cpus("1,9"), cpus("2,10"), cpus("3,11"), cpus("0,8")]);
    // The NUMA level (SD_OVERLAP, a ring per CPU): from CPU 12, node 1 then node 0.
    let numa = topo.level_by_key("numa").unwrap();
    let d = &t.doms[t.base[numa]];
    let local = d.group_of(12).unwrap();
    let got: Vec<CpuSet> = d
        .visit_order(Some(12), local)
        .map(|g| d.groups[g])
        .collect();
    assert_eq!(got, [cpus("4-7,12-15"), cpus("0-3,8-11")]);
}

/// Ties between equal busiest candidates go by that order. Four single-CPU groups of an LLC;
/// CPU 2 is newly idle, CPUs 0, 1 and 3 each run one task at util 1000: three fully_busy
/// groups (nr == weight, capacity·100 = 102400 <= util·pct = 117000). CPU 2 visits 2, 3, 0, 1.
#[test]
fn fully_busy_ties_follow_the_visiting_order() {
    let s = [busy(1, 1000), busy(1, 1000), idle(), busy(1, 1000)];
    let busiest = |rules| {
        let t = DomainTable::new(&Topology::synthetic_flat(4), rules);
        let (groups, d) = t.doms[0].decide(&s, Some(2), 2, true);
        assert_eq!(groups[3].group_type, GroupType::FullyBusy);
        d.busiest
    };
    // 6.1: `if (sgs->avg_load <= busiest->avg_load) return false;`: the first found, CPU 3.
    assert_eq!(busiest(ModelRules::V6_1), Some(3));
    // 6.12: equal avg_load and the pick is not SMT -> `break;` -> true: the last, CPU 1.
    assert_eq!(busiest(ModelRules::V6_6Plus), Some(1));
}

/// calculate_imbalance's load case (6.1 and 6.12 alike):
///   if (local->group_type < group_overloaded) {
///       local->avg_load = (local->group_load * SCHED_CAPACITY_SCALE) / local->group_capacity;
///       if (local->avg_load >= busiest->avg_load) { env->imbalance = 0; return; }
///       sds->avg_load = (sds->total_load * SCHED_CAPACITY_SCALE) / sds->total_capacity;
///       if (local->avg_load >= sds->avg_load) { env->imbalance = 0; return; }
///   }
///   env->migration_type = migrate_load;
///   env->imbalance = min((busiest->avg_load - sds->avg_load) * busiest->group_capacity,
///                        (sds->avg_load - local->avg_load) * local->group_capacity)
///                    / SCHED_CAPACITY_SCALE;
/// with unsigned long avg_load: nothing keeps busiest above the domain average, and then the
/// first term wraps to a huge value and min() takes the second.
#[test]
fn load_imbalance_wraps_when_busiest_is_below_the_domain_average() {
    // Three single-CPU groups of an LLC, dst CPU 0 busy. CPU 1 is the only overloaded group
    // (2 tasks, util 1024: capacity·100 = 102400 < util·pct = 119808), avg_load 1100. CPU 2
    // runs one heavy task (load 5000, util 1000: fully_busy), CPU 0 one light task.
    let fully_busy = |load| CpuSample {
        load_avg: load,
        ..busy(1, 1000)
    };
    let mut over = busy(2, 1024);
    over.load_avg = 1100;
    for rules in [ModelRules::V6_1, ModelRules::V6_6Plus] {
        let t = DomainTable::new(&Topology::synthetic_flat(3), rules);
        // Local fully_busy, avg_load 500 < busiest 1100; sds->avg_load =
        // (500 + 1100 + 5000)·1024 / 3072 = 2200 > 500: both guards pass.
        // imbalance = min((1100 - 2200) wrapped · 1024, (2200 - 500) · 1024) / 1024 = 1700.
        let s = [fully_busy(500), over, fully_busy(5000)];
        let (g, d) = t.doms[0].decide(&s, Some(0), 0, false);
        assert_eq!(
            [g[0].group_type, g[1].group_type, g[2].group_type],
            [
                GroupType::FullyBusy,
                GroupType::Overloaded,
                GroupType::FullyBusy
            ]
        );
        assert_eq!(
            (d.busiest, d.imbalance, d.migration_type),
            (Some(1), 1700, Some(MigrationType::Load)),
            "{rules:?}"
        );
        // Local overloaded too (2 tasks, load 600): find_busiest_group's guards pass
        // (600 < 1100, 600 < sds avg (600 + 1100 + 5000)·1024 / 3072 = 2233,
        // 100·1100 > 117·600), and calculate_imbalance takes (2233 - 600)·1024 / 1024.
        let mut local = busy(2, 1024);
        local.load_avg = 600;
        let s = [local, over, fully_busy(5000)];
        let (g, d) = t.doms[0].decide(&s, Some(0), 0, false);
        assert_eq!(g[0].group_type, GroupType::Overloaded);
        assert_eq!(
            (d.busiest, d.imbalance, d.migration_type),
            (Some(1), 1633, Some(MigrationType::Load)),
            "{rules:?}"
        );
    }
}

/// sched_init_numa (6.1 and 6.12 alike) gives the NUMA levels their flags, but not NODE:
///   tl[i++] = (struct sched_domain_topology_level){ .mask = sd_numa_mask, .numa_level = 0,
///                                                   SD_INIT_NAME(NODE) };
///   for (j = 1; j < nr_levels; i++, j++)
///       tl[i] = ... { .sd_flags = cpu_numa_flags, .flags = SDTL_OVERLAP, ... SD_INIT_NAME(NUMA) };
/// so sd_init keeps SD_PREFER_SIBLING on NODE (`} else if (sd->flags & SD_NUMA) { ...
/// sd->flags &= ~SD_PREFER_SIBLING;` does not apply) and calculate_imbalance's
/// `if (env->sd->flags & SD_NUMA) env->imbalance = adjust_numa_imbalance(...)` skips it.
/// imb_numa_nr: the first level above the LLC is NODE here (NUMA inside the package, no PKG):
/// `nr_llcs = sd->span_weight / child->span_weight` = 8 / 4 = 2 -> imb 2; NUMA: 2 ·
/// max(1, 16 / 16).
#[test]
fn node_is_not_an_sd_numa_level() {
    let topo = Topology::synthetic(
        &[
            (LevelKind::Llc, "MC", 4),
            (LevelKind::Numa, "NODE", 8),
            (LevelKind::Numa, "NUMA", 16),
        ],
        16,
    );
    for rules in [ModelRules::V6_1, ModelRules::V6_6Plus] {
        let t = DomainTable::new(&topo, rules);
        let (node, numa) = (&t.doms[t.base[1]].params, &t.doms[t.base[2]].params);
        assert!(!node.numa && node.prefer_sibling && !node.share_llc);
        assert_eq!(node.imb_numa_nr, 2);
        // NUMA's child is NODE, which keeps SD_PREFER_SIBLING.
        assert!(numa.numa && numa.prefer_sibling);
        assert_eq!(numa.imb_numa_nr, 2);

        // NODE 0-7, groups LLC 0-3 (two tasks) and 4-7 (idle, dst CPU 4 idle). Both has_spare;
        // prefer_sibling and nr 2 > 0 + 1 (6.1) / sibling_imbalance 2 - 0 = 2 > 1 (6.12, equal
        // core counts) force it; calculate_imbalance: prefer_sibling -> 2 tasks, no
        // adjust_numa_imbalance at a level without SD_NUMA, >>= 1 -> 1 task. (With SD_NUMA,
        // adjust_numa_imbalance(2, 0 + 1, 2) would have made it 0.)
        let mut s = vec![busy(1, 300), busy(1, 300)];
        s.extend(vec![idle(); 14]);
        let d = &t.doms[t.base[1]];
        let (_, dec) = d.decide(&s, Some(4), 1, true);
        assert_eq!(
            (dec.busiest, dec.imbalance, dec.migration_type),
            (Some(0), 1, Some(MigrationType::Task)),
            "{rules:?}"
        );
    }
}

/// idle_cpu() (6.1 and 6.12 core.c alike), which update_sg_lb_stats asks of every CPU with
/// nothing queued (`if (!nr_running && idle_cpu(i)) sgs->idle_cpus++`):
///   if (rq->curr != rq->idle) return 0;
///   if (rq->nr_running) return 0;
///   if (rq->ttwu_pending) return 0;
///   return 1;
/// ttwu_pending is set by __ttwu_queue_wakelist, which try_to_wake_up takes when
/// ttwu_queue_cond() holds: the target does not share the waker's LLC, or it is another CPU
/// and runs nothing (`if (!cpu_rq(cpu)->nr_running) return true;`); sched_ttwu_pending
/// clears it on the target after enqueueing the list. So between a remote waker's
/// sched_waking and the target's sched_wakeup the target counts as busy.
///
/// The 4node lab guest (MC of 4, NUMA of 16; imb_numa_nr 1), dst CPU 12 idle pulling at NUMA.
/// Node 2 runs 3 tasks on CPUs 8-9 (2 idle); node 0 runs 1 task on CPU 0, which wakes tasks
/// last on CPUs 1 and 2. With those two wakeups on their way, node 0 has 1 idle CPU against
/// node 2's 2, and update_sd_pick_busiest (has_spare: fewer idle CPUs wins) picks node 0:
/// prefer_sibling needs 1 > 0 + 1 (6.1) / sibling_imbalance 1 - 0 = 1 > 1 (6.12), no; then
/// local idle 4 <= 1 + 1, no; `busiest->sum_h_nr_running == 1` -> out_balanced. Counting
/// CPUs 1 and 2 as idle instead, node 2 is busiest and prefer_sibling forces 3 - 0 = 3
/// tasks, adjust_numa_imbalance(3, 0 + 1, 1) keeps 3 (> NUMA_IMBALANCE_MIN), >>= 1 -> 1.
#[test]
fn a_remote_wakeup_on_its_way_makes_its_target_busy() {
    use crate::analyze::tests::{ev, migrate, nr, switch, wakeup};
    use crate::event::{CpuIdleType, EventKind, Reason};
    use crate::model::{Model, ModelConfig};
    let topo = Topology::synthetic(
        &[(LevelKind::Llc, "MC", 4), (LevelKind::Numa, "NUMA", 16)],
        16,
    );
    let waking = |ts: u64, cpu: u32, pid: u32, prev_cpu: u32| {
        ev(ts, cpu, EventKind::Waking { pid, prev_cpu })
    };
    for rules in [ModelRules::V6_1, ModelRules::V6_6Plus] {
        let config = ModelConfig {
            rules,
            ..ModelConfig::default()
        };
        let mut m = Model::new(&topo, config);
        for c in 0..16 {
            m.push(&switch(1, c, 0, 0, 0));
        }
        let mut evs = vec![
            switch(2, 0, 0, 0, 100),
            nr(2, 0, 1),
            switch(2, 8, 0, 0, 101),
            nr(2, 8, 2),
            switch(2, 9, 0, 0, 102),
            nr(2, 9, 1),
        ];
        evs.extend([waking(10, 0, 200, 1), waking(11, 0, 201, 2)]);
        for e in &evs {
            m.push(e);
        }
        let pull = |m: &Model| {
            let p = m.decide_at(12, 16, CpuIdleType::Idle).unwrap();
            let idle: Vec<u64> = p.groups.iter().map(|g| g.idle_cpus).collect();
            (idle, p.decision.busiest, p.decision.imbalance)
        };
        assert_eq!(pull(&m), (vec![1, 4, 2, 4], Some(0), 0), "{rules:?}");

        // The wakeups arrive: CPUs 1 and 2 queue their tasks; node 0 has 3 tasks and 1 idle
        // CPU, the busiest again, and prefer_sibling forces 3 - 0 -> 1 task.
        for e in [
            nr(20, 1, 1),
            wakeup(21, 200, 1),
            nr(22, 2, 1),
            wakeup(23, 201, 2),
        ] {
            m.push(&e);
        }
        assert_eq!(pull(&m), (vec![1, 4, 2, 4], Some(0), 1), "{rules:?}");

        // The same state with nothing on its way: node 2 is busiest, 3 - 0 -> 1 task.
        for e in [
            nr(30, 1, 0),
            switch(30, 1, 0, 1, 0),
            nr(30, 2, 0),
            switch(30, 2, 0, 1, 0),
        ] {
            m.push(&e);
        }
        assert_eq!(pull(&m), (vec![3, 4, 2, 4], Some(2), 1), "{rules:?}");

        // A wakeup onto the waker's own CPU is activated in place (ttwu_queue_cond:
        // `if (cpu == smp_processor_id()) return false;`): no flag. One moved by its placement
        // (sched_migrate_task in the waker) flags its new target instead.
        m.push(&waking(40, 1, 202, 1));
        assert_eq!(pull(&m).0, vec![3, 4, 2, 4], "{rules:?}");
        m.push(&migrate(41, 202, 1, 5, Reason::Wakeup));
        assert_eq!(pull(&m).0, vec![3, 3, 2, 4], "{rules:?}");
        m.push(&wakeup(42, 202, 5));
        assert_eq!(pull(&m).0, vec![3, 4, 2, 4], "{rules:?}");
    }
}

/// util_est as `NrRunning` carries it decides a NUMA group overloaded (the 4-node
/// group-imbalance lab runs): node 12-15 runs 6 tasks on 4 CPUs whose sampled PELT says
/// util_avg 737 and runnable_avg 338 each, as right after the job's threads leave its barrier
/// together. group_is_overloaded (fair.c, 6.1 and 6.12 alike): 6 > 4, then
/// `capacity * 100 < util * imbalance_pct`: 4096·100 = 409,600 against 2,948·117 = 344,916,
/// no; `capacity * imbalance_pct < runnable * 100`: 479,232 against 135,200, no; so has_spare,
/// and with prefer_sibling the pull is by task count. The enqueues added each task's estimate
/// to the root cfs_rq's util_est before nr_running changed: 950 per CPU makes group_util 3,800
/// (cpu_util_cfs takes max(util_avg, util_est)), 444,600 > 409,600: overloaded, and a has_spare
/// local group facing an overloaded busiest one outside an LLC pulls by utilization
/// (calculate_imbalance: migrate_util, imbalance = max(local capacity, local util) - local
/// util).
#[test]
fn util_est_carried_by_nr_running_makes_a_node_overloaded() {
    use crate::analyze::tests::{ev, nr, switch};
    use crate::event::{CpuIdleType, EventKind, MigrationType};
    use crate::model::{Model, ModelConfig};
    let topo = Topology::synthetic(
        &[(LevelKind::Llc, "MC", 4), (LevelKind::Numa, "NUMA", 16)],
        16,
    );
    let pelt = |cpu: u32, util: u64, runnable: u64| {
        ev(
            3,
            cpu,
            EventKind::Pelt(Box::new(crate::event::PeltInfo {
                rq_cpu: cpu,
                load_avg: 20,
                runnable_avg: runnable,
                util_avg: util,
                util_est: None,
                at_search: None,
            })),
        )
    };
    for rules in [ModelRules::V6_1, ModelRules::V6_6Plus] {
        let config = ModelConfig {
            rules,
            ..ModelConfig::default()
        };
        let mut m = Model::new(&topo, config);
        for c in 0..16 {
            m.push(&switch(1, c, 0, 0, 0));
            m.push(&pelt(c, 100, 100));
        }
        // Node 0-3: a task per CPU; node 8-11: CPU 9 busy, CPU 8 pulls; node 12-15: 2+2+1+1.
        let queued = [
            (0, 1),
            (1, 1),
            (2, 1),
            (3, 1),
            (9, 1),
            (12, 2),
            (13, 2),
            (14, 1),
            (15, 1),
        ];
        for (i, &(c, n)) in queued.iter().enumerate() {
            m.push(&switch(2, c, 0, 0, 100 + i as u32));
            m.push(&nr(2, c, n));
        }
        for c in 0..4 {
            m.push(&pelt(c, 500, 500));
        }
        m.push(&pelt(9, 400, 400));
        for c in 12..16 {
            m.push(&pelt(c, 737, 338));
        }
        let pull = |m: &Model| {
            let p = m.decide_at(8, 16, CpuIdleType::Idle).unwrap();
            let b = p.decision.busiest.expect("a busiest group");
            (
                p.groups[b].cpus.to_string(),
                p.groups[b].group_type.name(),
                p.groups[b].util,
                p.decision.migration_type,
            )
        };
        assert_eq!(
            pull(&m),
            ("12-15".into(), "has_spare", 2948, Some(MigrationType::Task)),
            "{rules:?}"
        );
        for (c, n) in [(12, 2), (13, 2), (14, 1), (15, 1)] {
            m.push(&ev(
                4,
                c,
                EventKind::NrRunning {
                    rq_cpu: c as u16,
                    nr_running: n,
                    util_est: crate::event::OptU32::some(950),
                    cfs_h_nr_running: crate::event::OptU32::some(n),
                },
            ));
        }
        let (cpus, group_type, util, migration_type) = pull(&m);
        assert_eq!(
            (cpus.as_str(), group_type, util, migration_type),
            ("12-15", "overloaded", 3800, Some(MigrationType::Util)),
            "{rules:?}"
        );
        let p = m.decide_at(8, 16, CpuIdleType::Idle).unwrap();
        let local = &p.groups[p.local];
        assert_eq!(
            p.decision.imbalance,
            local.capacity.max(local.util) - local.util,
            "{rules:?}"
        );
        // An NrRunning without util_est (older recordings, folded mode) keeps the last figure.
        m.push(&nr(5, 12, 2));
        assert_eq!(pull(&m).3, Some(MigrationType::Util), "{rules:?}");
    }
}

/// The CFS task count an `NrRunning` carries tells RT and DL tasks apart: update_sg_lb_stats
/// sums `rq->cfs.h_nr_running` (as each release counts it) into sum_h_nr_running, beside
/// `rq->nr_running` into sum_nr_running. CPU 1 runs 3 tasks, 2 of them SCHED_FIFO; without
/// the count only the stopper would be left out.
#[test]
fn cfs_count_carried_by_nr_running_leaves_rt_tasks_out_of_h_nr_running() {
    use crate::analyze::tests::{ev, nr, switch};
    use crate::event::{CpuIdleType, EventKind};
    use crate::model::{Model, ModelConfig};
    let topo = Topology::synthetic(&[(LevelKind::Llc, "MC", 4)], 4);
    let mut m = Model::new(&topo, ModelConfig::default());
    for c in 0..4 {
        m.push(&switch(1, c, 0, 0, 0));
    }
    m.push(&switch(2, 1, 0, 0, 100));
    m.push(&nr(2, 1, 3));
    let h = |m: &Model| {
        let p = m.decide_at(0, 4, CpuIdleType::Idle).unwrap();
        let g = p.groups.iter().find(|g| g.cpus.contains(1)).unwrap();
        (g.nr_running, g.h_nr_running)
    };
    assert_eq!(h(&m), (3, 3));
    let carried = |ts: u64, nr_running: u32, cfs: u32| {
        ev(
            ts,
            1,
            EventKind::NrRunning {
                rq_cpu: 1,
                nr_running,
                util_est: crate::event::OptU32::NONE,
                cfs_h_nr_running: crate::event::OptU32::some(cfs),
            },
        )
    };
    m.push(&carried(3, 3, 1));
    assert_eq!(h(&m), (3, 1));
    // An RT task leaves: 2 tasks, 1 of them CFS; then a CFS one is queued: 3, 2 of them CFS.
    m.push(&carried(4, 2, 1));
    assert_eq!(h(&m), (2, 1));
    m.push(&carried(5, 3, 2));
    assert_eq!(h(&m), (3, 2));
}

/// sgc->capacity as the kernel refreshes it (update_sd_lb_stats: `if (local_group) { if
/// (env->idle != CPU_NEWLY_IDLE || time_after_eq(jiffies, sg->sgc->next_update))
/// update_group_capacity(env->sd, env->dst_cpu); }`, the same in 6.1 and 6.12): a node's
/// capacity is what it summed when one of its CPUs last balanced the NUMA domain, not its
/// CPUs' capacities now. Node 0-3 loses capacity to RT pressure (cpu_capacity 1024 -> 400
/// on each CPU) after its last refresh; CPU 4 pulling at NUMA still divides node 0's load by
/// 4096, until a CPU of node 0 balances there (not newly idle, or newly idle once due).
#[test]
fn group_capacity_is_the_one_its_last_local_search_summed() {
    use crate::analyze::tests::{ev, nr, switch};
    use crate::event::{CpuIdleType, EventKind};
    use crate::model::{Model, ModelConfig};
    let topo = Topology::synthetic(
        &[(LevelKind::Llc, "MC", 4), (LevelKind::Numa, "NUMA", 8)],
        8,
    );
    let mut m = Model::new(&topo, ModelConfig::default());
    for c in 0..8 {
        m.push(&switch(1, c, 0, 0, 0));
        m.push(&ev(
            1,
            c,
            EventKind::Capacity {
                rq_cpu: c,
                capacity: 1024,
            },
        ));
    }
    let node0 = |m: &Model| {
        let p = m.decide_at(4, 8, CpuIdleType::Idle).unwrap();
        let g = p.groups.iter().find(|g| g.cpus.contains(0)).unwrap();
        g.capacity
    };
    // No search recorded: the sum of the CPUs' capacities now.
    assert_eq!(node0(&m), 4096);
    m.balance_search(2_000_000, 1, 8, CpuIdleType::NotIdle);
    for c in 0..4 {
        m.push(&ev(
            3_000_000,
            c,
            EventKind::Capacity {
                rq_cpu: c,
                capacity: 400,
            },
        ));
    }
    m.push(&nr(3_000_000, 0, 1));
    assert_eq!(node0(&m), 4096, "stale until node 0 balances again");
    // A newly idle search of node 0 within the 8 ms balance interval leaves it.
    m.balance_search(5_000_000, 2, 8, CpuIdleType::NewlyIdle);
    assert_eq!(node0(&m), 4096);
    // Once due (8 ms after the refresh), a newly idle search refreshes it: MC's groups are
    // single CPUs, so the sum is their capacities now.
    m.balance_search(10_000_000, 2, 8, CpuIdleType::NewlyIdle);
    assert_eq!(node0(&m), 1600);
    // A search at the MC level refreshes nothing at NUMA: node 0 keeps 1600 after CPU 0
    // regains its capacity, until a NUMA search by a CPU of node 0 (busy: at once).
    m.push(&ev(
        11_000_000,
        0,
        EventKind::Capacity {
            rq_cpu: 0,
            capacity: 1024,
        },
    ));
    m.balance_search(11_500_000, 0, 4, CpuIdleType::NotIdle);
    assert_eq!(node0(&m), 1600);
    m.balance_search(12_000_000, 3, 8, CpuIdleType::NotIdle);
    assert_eq!(node0(&m), 2224);
}

/// sched_reduced_capacity (6.1 and 6.12 fair.c alike) asks for one CFS task, not one task:
///   if (rq->cfs.h_nr_running != 1)
///       return false;
///   return check_cpu_capacity(rq, sd);
/// A CPU running one CFS task beside two SCHED_FIFO ones, its capacity eaten by them (718 of
/// 1024 under SMT's imbalance_pct 110), is a misfit group to an idle destination, and the
/// kernel moves the CFS task by load (calculate_imbalance: migrate_load, the misfit load).
/// A 6.12-rt lab guest did so 5 times in a run where the model, counting nr_running 3,
/// called the CPU has_spare.
#[test]
fn reduced_capacity_misfit_counts_cfs_tasks_only() {
    let p = params(110);
    // The lab's figures: load 1744, runnable 691, util 265 (not overloaded: 691·100 and
    // 265·110 stay under 718·110 and 718·100).
    let mut s = busy(3, 265);
    (s.not_cfs, s.capacity, s.load_avg, s.runnable_avg) = (2, 718, 1744, 691);
    let g = group_stats(&cpus("0"), &[s], 1, &p, false, true);
    assert_eq!(
        (g.group_type, g.misfit_task_load),
        (GroupType::MisfitTask, 1744)
    );
    // Two CFS tasks: the overloaded case takes care of it, no misfit.
    s.not_cfs = 1;
    let g = group_stats(&cpus("0"), &[s], 1, &p, false, true);
    assert_eq!(g.misfit_task_load, 0);
    // Not to a busy destination.
    s.not_cfs = 2;
    let g = group_stats(&cpus("0"), &[s], 1, &p, false, false);
    assert_eq!(g.misfit_task_load, 0);
}

/// The PELT sums a search sent as it began (the balancer hooks, `PeltInfo::at_search`) decide
/// that search, not the last sample: 4 overloaded CPUs of one LLC, CPU 0 pulling; sampled,
/// CPU 1 is at 1,180 against the local 1,000 (118,000 > 117 · 1,000: imbalanced), while the
/// search read 1,160 (116,000: balanced, `100 * busiest->avg_load <= imbalance_pct *
/// local->avg_load`). A record newer than what a search sent wins over it, and
/// everything but a search's answer keeps reading the samples.
#[test]
fn a_search_reads_the_pelt_sums_it_sent() {
    use crate::analyze::tests::{ev, nr, switch};
    use crate::event::{CpuIdleType, EventKind, PeltInfo};
    use crate::model::{Model, ModelConfig};
    let topo = Topology::synthetic(&[(LevelKind::Llc, "MC", 4)], 4);
    let pelt = crate::analyze::tests::pelt_full;
    for rules in [ModelRules::V6_1, ModelRules::V6_6Plus] {
        let config = ModelConfig {
            rules,
            ..ModelConfig::default()
        };
        let mut m = Model::new(&topo, config);
        for c in 0..4 {
            m.push(&switch(1, c, 0, 0, 100 + c));
            m.push(&nr(2, c, 2));
            m.push(&pelt(3, c, if c == 1 { 1180 } else { 1000 }, false));
        }
        let balanced = |p: Option<crate::model::BalancePass>| p.unwrap().decision.imbalance == 0;
        let at =
            |m: &Model, since: u64| balanced(m.decide_at_search(since, 0, 4, CpuIdleType::NotIdle));
        assert!(
            !balanced(m.decide_at(0, 4, CpuIdleType::NotIdle)),
            "{rules:?}"
        );
        // With no search's sums yet, a search reads the samples.
        assert!(!at(&m, 10), "{rules:?}");
        m.push(&pelt(9, 1, 1160, true));
        assert!(at(&m, 10), "{rules:?}: the sums the search sent");
        assert!(
            !balanced(m.decide_at(0, 4, CpuIdleType::NotIdle)),
            "{rules:?}: the samples are untouched"
        );
        // A later search that sent nothing for CPU 1 reads what the last one sent...
        assert!(at(&m, 50), "{rules:?}");
        // ...unless CPU 1 was sampled after it: the newer record wins, whether it came
        // before the later search began or while it ran.
        m.push(&pelt(60, 1, 1180, false));
        assert!(!at(&m, 70), "{rules:?}: sampled before the search");
        assert!(!at(&m, 55), "{rules:?}: sampled while the search ran");
        // The task counts it sent likewise: 3 queued, one of them not CFS, where the last
        // record said 2; a newer record of the CPU's tasks wins.
        m.push(&ev(
            80,
            0,
            EventKind::Pelt(Box::new(PeltInfo {
                rq_cpu: 1,
                load_avg: 1180,
                runnable_avg: 1180,
                util_avg: 1024,
                util_est: Some(0),
                at_search: Some(crate::event::SearchTasks {
                    nr_running: 3,
                    cfs_h_nr_running: 2,
                    idle: false,
                }),
            })),
        ));
        let s = m.cpus[1].sample_at_search(90);
        assert_eq!(
            (s.nr_running, s.not_cfs, s.idle),
            (3, 1, false),
            "{rules:?}"
        );
        assert_eq!(
            m.cpus[1].sample().nr_running,
            2,
            "{rules:?}: the records' count"
        );
        m.push(&nr(100, 1, 0));
        m.push(&switch(101, 1, 101, 1, 0));
        let s = m.cpus[1].sample_at_search(95);
        assert_eq!(
            (s.nr_running, s.idle),
            (0, true),
            "{rules:?}: changed while it ran"
        );
        assert_eq!(m.cpus[1].sample_at_search(110).nr_running, 0, "{rules:?}");
        // A search's run queue is not read by a search that began before it was sent.
        assert_eq!(m.cpus[1].sample_at_search(70).nr_running, 0, "{rules:?}");
    }
}
