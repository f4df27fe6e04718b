//! The balancer arithmetic against outcomes worked out by hand from fair.c; each test names
//! the kernel function whose rule it checks.

use crate::cpuset::CpuSet;
use crate::model::domains::DomainTable;
use crate::model::stats::{
    adjust_numa_imbalance, decide, group_stats, pick_busiest, CpuSample, DomainParams, GroupType,
    MigrationType, ModelRules,
};
use crate::topology::{LevelKind, Topology};

pub(super) fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

pub(super) fn busy(nr: u32, util: u64) -> CpuSample {
    CpuSample {
        not_cfs: 0,
        nr_running: nr,
        load_avg: util * u64::from(nr.max(1)),
        runnable_avg: util * u64::from(nr.max(1)),
        util_avg: util,
        util_est: 0,
        capacity: 1024,
        idle: false,
    }
}

pub(super) fn idle() -> CpuSample {
    CpuSample::default()
}

pub(super) fn params(pct: u64) -> DomainParams {
    DomainParams {
        imbalance_pct: pct,
        share_llc: true,
        numa: false,
        prefer_sibling: false,
        smt_groups: false,
        imb_numa_nr: 0,
        rules: ModelRules::V6_6Plus,
    }
}

fn topo16() -> Topology {
    Topology::synthetic(
        &[
            (LevelKind::Smt, "SMT", 2),
            (LevelKind::Llc, "MC", 8),
            (LevelKind::Numa, "NUMA", 16),
        ],
        16,
    )
}

#[test]
fn rules_follow_the_kernel_release() {
    assert_eq!(ModelRules::from_release("6.1.0-18-amd64"), ModelRules::V6_1);
    assert_eq!(ModelRules::from_release("5.15.0"), ModelRules::V6_1);
    assert_eq!(ModelRules::from_release("6.5.13"), ModelRules::V6_1);
    assert_eq!(ModelRules::from_release("6.6.1"), ModelRules::V6_6Plus);
    assert_eq!(ModelRules::from_release("6.18.0-rc1"), ModelRules::V6_6Plus);
    assert_eq!(ModelRules::from_release(""), ModelRules::V6_6Plus);
}

#[test]
fn sd_init_parameters() {
    // sd_init: imbalance_pct 110 at SMT (SD_SHARE_CPUCAPACITY), 117 elsewhere. imb_numa_nr
    // (build_sched_domains, on the hierarchy before degenerate domains go): the first level
    // above the LLC is PKG, the node (8 CPUs here): `nr_llcs = sd->span_weight /
    // child->span_weight` = 1, so `imb = sd->span_weight >> 3` = 1; NUMA scales it by
    // max(1, 16 / first SD_NUMA span 16) = 1.
    let t = DomainTable::new(&topo16(), ModelRules::V6_6Plus);
    let pct: Vec<(String, u64, u64)> = t
        .doms
        .iter()
        .map(|d| (d.key.clone(), d.params.imbalance_pct, d.params.imb_numa_nr))
        .collect();
    assert_eq!(pct[0], ("smt".into(), 110, 0));
    assert_eq!(pct[8], ("llc".into(), 117, 0));
    assert_eq!(pct[10], ("numa".into(), 117, 1));
    assert!(t.doms[10].params.numa && !t.doms[10].params.share_llc);
    assert!(
        t.doms[10].params.prefer_sibling,
        "child MC carries SD_PREFER_SIBLING"
    );
    assert!(t.doms[8].params.smt_groups && !t.doms[0].params.prefer_sibling);
    // Each NUMA group (a node of 8 CPUs) holds 4 SMT cores.
    assert_eq!(t.doms[10].cores, vec![4, 4]);
}

#[test]
fn group_classify_has_spare_and_fully_busy() {
    let p = params(117);
    // group_has_capacity: nr < weight -> has capacity -> group_has_spare.
    let g = group_stats(&cpus("0-1"), &[busy(1, 1000), idle()], 1, &p, false, false);
    assert_eq!(
        (g.group_type, g.idle_cpus, g.nr_running),
        (GroupType::HasSpare, 1, 1)
    );
    // nr == weight, cap·100 (204800) <= util·pct (2000·117 = 234000): no capacity ->
    // group_fully_busy (not overloaded: group_is_overloaded needs nr > weight).
    let g = group_stats(
        &cpus("0-1"),
        &[busy(1, 1000), busy(1, 1000)],
        1,
        &p,
        false,
        false,
    );
    assert_eq!(g.group_type, GroupType::FullyBusy);
    assert_eq!(
        g.avg_load, 0,
        "avg_load is only computed for overloaded groups"
    );
    // nr == weight with low util and runnable: cap·100 > util·pct -> has capacity.
    let g = group_stats(
        &cpus("0-1"),
        &[busy(1, 300), busy(1, 300)],
        1,
        &p,
        false,
        false,
    );
    assert_eq!(g.group_type, GroupType::HasSpare);
}

#[test]
fn group_classify_overloaded_by_util_or_runnable() {
    let p = params(117);
    // group_is_overloaded: nr 3 > weight 2 and cap·100 (204800) < util·pct (2048·117).
    let s = [busy(2, 1024), busy(1, 1024)];
    let g = group_stats(&cpus("0-1"), &s, 1, &p, false, false);
    assert_eq!(g.group_type, GroupType::Overloaded);
    assert_eq!(g.avg_load, (2048 + 1024) * 1024 / 2048);
    // Low util but runnable 2500: cap·pct (239616) < runnable·100 (250000).
    let mut a = busy(2, 300);
    a.runnable_avg = 1500;
    let mut b = busy(1, 300);
    b.runnable_avg = 1000;
    let g = group_stats(&cpus("0-1"), &[a, b], 1, &p, false, false);
    assert_eq!(g.group_type, GroupType::Overloaded);
    // nr > weight with low util and runnable: not overloaded, and has capacity.
    let g = group_stats(
        &cpus("0-1"),
        &[busy(2, 200), busy(1, 200)],
        1,
        &p,
        false,
        false,
    );
    assert_eq!(g.group_type, GroupType::HasSpare);
}

#[test]
fn group_classify_misfit_task() {
    let p = params(117);
    // update_sg_lb_stats (no asym capacity): dst idle, one task on a CPU whose capacity is
    // reduced, cap·pct (800·117 = 93600) < orig·100 (102400): misfit with that CPU's load.
    let mut s = busy(1, 500);
    s.capacity = 800;
    let g = group_stats(&cpus("0"), &[s], 1, &p, false, true);
    assert_eq!(
        (g.group_type, g.misfit_task_load),
        (GroupType::MisfitTask, 500)
    );
    // Never for the local group, nor when the destination is busy.
    assert_eq!(
        group_stats(&cpus("0"), &[s], 1, &p, true, true).misfit_task_load,
        0
    );
    assert_eq!(
        group_stats(&cpus("0"), &[s], 1, &p, false, false).misfit_task_load,
        0
    );
    // A capacity reduced by less than imbalance_pct is not misfit (900·117 > 102400).
    s.capacity = 900;
    assert_eq!(
        group_stats(&cpus("0"), &[s], 1, &p, false, true).group_type,
        GroupType::HasSpare
    );
}

#[test]
fn group_classify_smt_balance_is_6_6_plus() {
    // smt_balance(): non-local SMT group with > 1 task while dst is idle (6.6+ only).
    let mut p = params(117);
    p.smt_groups = true;
    let s = [busy(1, 300), busy(1, 300)];
    assert_eq!(
        group_stats(&cpus("0-1"), &s, 1, &p, false, true).group_type,
        GroupType::SmtBalance
    );
    assert_eq!(
        group_stats(&cpus("0-1"), &s, 1, &p, true, true).group_type,
        GroupType::HasSpare
    );
    p.rules = ModelRules::V6_1;
    assert_eq!(
        group_stats(&cpus("0-1"), &s, 1, &p, false, true).group_type,
        GroupType::HasSpare
    );
}

#[test]
fn update_sd_pick_busiest_ties() {
    let p = params(117);
    let spare1 = group_stats(&cpus("0-1"), &[busy(1, 100), idle()], 1, &p, false, false);
    // Samples are indexed by CPU: every group here reads CPUs 0-1 of its own sample list.
    let spare2 = group_stats(
        &cpus("0-1"),
        &[busy(1, 100), busy(1, 100)],
        1,
        &p,
        false,
        false,
    );
    let full = group_stats(
        &cpus("0-1"),
        &[busy(1, 1000), busy(1, 1000)],
        1,
        &p,
        false,
        false,
    );
    let empty = group_stats(&cpus("0-1"), &[idle(), idle()], 1, &p, false, false);
    // A group with no CFS task is never picked; the first candidate is.
    assert!(!pick_busiest(&empty, None, &p));
    assert!(pick_busiest(&spare1, None, &p));
    // Higher group_type wins.
    assert!(pick_busiest(&full, Some(&spare2), &p));
    assert!(!pick_busiest(&spare2, Some(&full), &p));
    // has_spare: fewer idle CPUs wins.
    assert!(pick_busiest(&spare2, Some(&spare1), &p));
    assert!(!pick_busiest(&spare1, Some(&spare2), &p));
    // fully_busy: the later group wins, unless the current pick is an SMT core.
    assert!(pick_busiest(&full, Some(&full.clone()), &p));
    let mut smt = p;
    smt.smt_groups = true;
    assert!(!pick_busiest(&full, Some(&full.clone()), &smt));
}

#[test]
fn calculate_imbalance_smt_balance_and_6_1_sibling() {
    // LLC of two SMT cores: core 0-1 idle (local), core 2-3 runs two tasks.
    // 6.6+: busiest is group_smt_balance; prefer_sibling and sibling_imbalance (equal cores:
    // 2 - 0 = 2 > 1) force the balance; calculate_imbalance: smt_balance -> migrate_task, 1.
    let mut p = params(117);
    p.smt_groups = true;
    p.prefer_sibling = true;
    let s = [idle(), idle(), busy(1, 300), busy(1, 300)];
    let g = |p: &DomainParams| {
        vec![
            group_stats(&cpus("0-1"), &s, 1, p, true, true),
            group_stats(&cpus("2-3"), &s, 1, p, false, true),
        ]
    };
    let d = decide(&g(&p), [0, 1], 0, &p, true);
    assert_eq!(
        (d.busiest, d.imbalance, d.migration_type),
        (Some(1), 1, Some(MigrationType::Task))
    );
    // 6.1: busiest has_spare; find_busiest_group forces since busiest.nr (2) > local.nr + 1;
    // calculate_imbalance: prefer_sibling -> nr difference 2, halved -> 1 task.
    p.rules = ModelRules::V6_1;
    let d = decide(&g(&p), [0, 1], 0, &p, true);
    assert_eq!(g(&p)[1].group_type, GroupType::HasSpare);
    assert_eq!(
        (d.imbalance, d.migration_type),
        (1, Some(MigrationType::Task))
    );
}

#[test]
fn calculate_imbalance_overloaded_across_numa_is_util() {
    // NUMA level (not SD_SHARE_LLC): busiest overloaded, local has_spare ->
    // migrate_util = local max(capacity, util) - util = 8192 - 1024.
    let topo = topo16();
    let t = DomainTable::new(&topo, ModelRules::V6_6Plus);
    let mut s = vec![busy(2, 1024); 8];
    s.push(busy(1, 1024));
    s.extend(vec![idle(); 7]);
    let v = t.doms[10].view(&s);
    assert_eq!(v.local_group, 1);
    assert_eq!(v.groups[0].group_type, GroupType::Overloaded);
    assert_eq!(v.groups[1].group_type, GroupType::HasSpare);
    assert_eq!(
        (v.busiest_group, v.imbalance, v.migration_type),
        (Some(0), 7168, Some(MigrationType::Util))
    );
}

#[test]
fn adjust_numa_imbalance_allows_a_pair() {
    // adjust_numa_imbalance: while dst runs <= imb_numa_nr, imbalances <= 2 become 0.
    assert_eq!(adjust_numa_imbalance(2, 1, 2), 0);
    assert_eq!(adjust_numa_imbalance(3, 1, 2), 3);
    assert_eq!(adjust_numa_imbalance(2, 3, 2), 2);
    // Through the view: node 0 runs 2 tasks, node 1 none. sibling_imbalance 2 > 1 forces,
    // then the allowance zeroes it (a communicating pair stays local).
    let t = DomainTable::new(&topo16(), ModelRules::V6_6Plus);
    let mut s = vec![busy(1, 300), idle(), busy(1, 300)];
    s.extend(vec![idle(); 13]);
    let v = t.doms[10].view(&s);
    assert_eq!((v.busiest_group, v.imbalance), (Some(0), 0));
    // Four tasks: imbalance 4 survives the allowance and is halved: 2 tasks to move.
    let mut s = vec![
        busy(1, 300),
        idle(),
        busy(1, 300),
        idle(),
        busy(1, 300),
        idle(),
    ];
    s.extend([busy(1, 300)]);
    s.extend(vec![idle(); 9]);
    let v = t.doms[10].view(&s);
    assert_eq!(
        (v.imbalance, v.migration_type),
        (2, Some(MigrationType::Task))
    );
}

#[test]
fn calculate_imbalance_fully_busy_local_is_load() {
    // 4 single-CPU groups: CPU 0 overloaded (avg_load 3072), the others fully busy with load
    // 1024. sd avg = 6144·1024/4096 = 1536; migrate_load =
    // min((3072-1536)·1024, (1536-1024)·1024)/1024 = 512.
    let t = DomainTable::new(&Topology::synthetic_flat(4), ModelRules::V6_6Plus);
    let mut s = vec![busy(3, 1024)];
    s.extend(vec![busy(1, 1000); 3]);
    for c in &mut s[1..] {
        c.load_avg = 1024;
    }
    let v = t.doms[0].view(&s);
    assert_eq!(v.groups[0].group_type, GroupType::Overloaded);
    assert_eq!(v.groups[1].group_type, GroupType::FullyBusy);
    assert_eq!(
        (v.busiest_group, v.imbalance, v.migration_type),
        (Some(0), 512, Some(MigrationType::Load))
    );
}

#[test]
fn busy_destination_leaves_has_spare_balanced() {
    // find_busiest_group: busiest not overloaded and dst busy -> balanced.
    let t = DomainTable::new(&Topology::synthetic_flat(2), ModelRules::V6_6Plus);
    let v = t.doms[0].view(&[busy(1, 300), busy(1, 300)]);
    assert_eq!((v.imbalance, v.migration_type), (0, None));
    // Two spinners on two CPUs, one each: balanced, both has_spare or fully_busy.
    let v = t.doms[0].view(&[busy(1, 1024), busy(1, 1024)]);
    assert_eq!(v.imbalance, 0);
    // One CPU with two tasks, the other idle: the single-CPU groups (weight 1) take
    // sibling_imbalance = 2, halved -> 1 task (the idle CPU pulls one).
    let v = t.doms[0].view(&[busy(2, 1024), idle()]);
    assert_eq!(v.groups[0].group_type, GroupType::Overloaded);
    assert_eq!((v.local_group, v.busiest_group), (1, Some(0)));
    assert_eq!(
        (v.imbalance, v.migration_type),
        (1, Some(MigrationType::Task))
    );
}

#[test]
fn sd_init_parameters_of_the_sysfs_fixtures() {
    // (fixture, [(key, imbalance_pct, imb_numa_nr, prefer_sibling, cores of the first
    // domain's groups)]): sd_init and the imb_numa_nr block of build_sched_domains, which runs
    // before degenerate levels are dropped: PKG spans the node (cpu_cpu_mask), so on these
    // machines, whose nodes hold one LLC each, imb = max(1, node CPUs >> 3) = 1, scaled above
    // by span / first SD_NUMA span (NODE has no SD_NUMA flag).
    type Want = (&'static str, u64, u64, bool, &'static [u64]);
    let cases: [(&str, &[Want]); 3] = [
        (
            // imb_numa_nr is computed before degenerate domains go: the first level above the
            // LLC is PKG (the node, 8 CPUs = 1 LLC): imb = 8 >> 3 = 1; numa scales it by
            // 16 / first SD_NUMA span (16) = 1.
            "2s-smt-numa",
            &[
                ("smt", 110, 0, false, &[1, 1]),
                ("llc", 117, 0, true, &[1, 1, 1, 1]),
                ("numa", 117, 1, true, &[4, 4]),
            ],
        ),
        (
            // The first level above the LLC is PKG (the node, 4 CPUs = 1 LLC): imb = max(1,
            // 4 >> 3) = 1; the first SD_NUMA level is numa (8 CPUs; NODE, degenerate here, is
            // not SD_NUMA): numa 1 · max(1, 8 / 8) = 1, numa2 1 · 16 / 8 = 2. numa2 loses
            // prefer_sibling (its child is an SD_NUMA domain).
            "4node-numa",
            &[
                ("llc", 117, 0, false, &[1, 1, 1, 1]),
                ("numa", 117, 1, true, &[4, 4]),
                ("numa2", 117, 2, false, &[8, 8]),
            ],
        ),
        (
            "kunpeng-cluster",
            &[
                ("cluster", 117, 0, false, &[1, 1, 1, 1]),
                ("llc", 117, 0, true, &[4, 4, 4, 4]),
            ],
        ),
    ];
    for (name, want) in cases {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs")
            .join(name);
        let topo = Topology::from_root(&root).unwrap();
        let t = DomainTable::new(&topo, ModelRules::V6_6Plus);
        type Owned = (String, u64, u64, bool, Vec<u64>);
        let got: Vec<Owned> = t
            .base
            .iter()
            .map(|&b| {
                let d = &t.doms[b];
                let p = &d.params;
                let (pct, imb, pref) = (p.imbalance_pct, p.imb_numa_nr, p.prefer_sibling);
                (d.key.clone(), pct, imb, pref, d.cores.clone())
            })
            .collect();
        let want: Vec<Owned> = want
            .iter()
            .map(|&(k, pct, imb, pref, cores)| (k.to_string(), pct, imb, pref, cores.to_vec()))
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

/// cpu_util_cfs (update_sg_lb_stats' group_util): max(util_avg, util_est) under UTIL_EST,
/// capped at the CPU's original capacity. Two tasks on CPU 0 whose util_avg is still low but
/// whose estimate says they fill it: group_is_overloaded needs util·pct > capacity·100.
#[test]
fn group_util_takes_util_est_when_higher() {
    let p = params(117);
    let mut low = busy(2, 400);
    low.runnable_avg = 400;
    let g = group_stats(&cpus("0"), &[low], 1, &p, false, false);
    assert_eq!(g.util, 400);
    // group_has_capacity: capacity·100 > util·pct still holds.
    assert_eq!(g.group_type, GroupType::HasSpare);
    let est = CpuSample {
        util_est: 2000,
        ..low
    };
    let g = group_stats(&cpus("0"), &[est], 1, &p, false, false);
    assert_eq!(g.util, 1024, "capped at the original capacity");
    assert_eq!(g.group_type, GroupType::Overloaded);
}
