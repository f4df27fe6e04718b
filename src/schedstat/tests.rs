//! Parser tests on /proc/schedstat as Debian's 6.1 (v15) and 6.12 (v16) kernels printed it
//! (8 CPUs, 2 sockets of 2 SMT cores: tests/fixtures/schedstat), and on v17's layout.

use super::*;

const V15_START: &str = include_str!("../../tests/fixtures/schedstat/v15-debian-6.1-start.txt");
const V15_END: &str = include_str!("../../tests/fixtures/schedstat/v15-debian-6.1-end.txt");
const V16_START: &str = include_str!("../../tests/fixtures/schedstat/v16-debian-6.12-start.txt");
const V16_END: &str = include_str!("../../tests/fixtures/schedstat/v16-debian-6.12-end.txt");

fn set(cpus: &[usize]) -> CpuSet {
    cpus.iter().copied().collect()
}

/// The machine's shape, whatever the counters: 8 CPUs with SMT, package and NUMA domains.
fn check_shape(s: &Schedstat) {
    assert_eq!(s.cpus.len(), 8);
    for c in &s.cpus {
        let spans: Vec<usize> = c.domains.iter().map(|d| d.span.len()).collect();
        assert_eq!(spans, [2, 4, 8], "cpu{}", c.cpu);
        for (i, d) in c.domains.iter().enumerate() {
            assert_eq!(d.index, i);
            assert!(
                d.span.contains(c.cpu as usize),
                "cpu{} outside its domain",
                c.cpu
            );
        }
    }
    assert_eq!(s.cpus[2].domains[0].span, set(&[2, 3]));
    assert_eq!(s.cpus[5].domains[1].span, set(&[4, 5, 6, 7]));
}

/// The kernel counts every call once as balanced, failed or moving tasks: no more balanced
/// plus failed than calls, in every domain and idle type.
fn check_calls(s: &[CpuStat]) -> u64 {
    let mut calls = 0;
    for c in s {
        for d in &c.domains {
            for k in &d.by_idle {
                assert!(k.lb_balanced + k.lb_failed <= k.lb_count, "{k:?}");
                calls += k.lb_count;
            }
        }
    }
    calls
}

#[test]
fn v15_as_6_1_prints_it() {
    let (a, b) = (parse(V15_START).unwrap(), parse(V15_END).unwrap());
    assert_eq!((a.version, b.version), (15, 15));
    check_shape(&a);
    check_shape(&b);
    // Schedstats were off before the first read: nothing counted.
    assert_eq!(check_calls(&a.cpus), 0);
    // cpu0 domain0 (mask 03): "16 16 0 0 0 0 0 16" first, the idle type CPU_IDLE (0) in
    // 6.1's numbering; then busy "0 ...", newly idle "1 1 0 0 0 0 0 1".
    let d = &b.cpus[0].domains[0];
    let idle = d.by_idle[idle_index(CpuIdleType::Idle)];
    assert_eq!(
        (idle.lb_count, idle.lb_balanced, idle.lb_nobusyg),
        (16, 16, 16)
    );
    assert_eq!(d.by_idle[idle_index(CpuIdleType::NotIdle)].lb_count, 0);
    assert_eq!(d.by_idle[idle_index(CpuIdleType::NewlyIdle)].lb_count, 1);
    assert_eq!(idle.lb_imbalance_load, None);
    let (delta, dropped) = delta(&a, &b);
    assert_eq!(dropped, 0);
    assert!(check_calls(&delta) > 0);
    assert_eq!(delta[0].domains[0].by_idle, d.by_idle);
}

#[test]
fn v16_as_6_12_prints_it() {
    let (a, b) = (parse(V16_START).unwrap(), parse(V16_END).unwrap());
    assert_eq!((a.version, b.version), (16, 16));
    check_shape(&a);
    check_shape(&b);
    assert_eq!(check_calls(&a.cpus), 0);
    // cpu0 domain0: busy "1 1 ... 1" first since 6.10, then idle "29 29 ... 29".
    let d = &b.cpus[0].domains[0];
    let busy = d.by_idle[idle_index(CpuIdleType::NotIdle)];
    let idle = d.by_idle[idle_index(CpuIdleType::Idle)];
    assert_eq!((busy.lb_count, busy.lb_balanced), (1, 1));
    assert_eq!(
        (idle.lb_count, idle.lb_balanced, idle.lb_nobusyg),
        (29, 29, 29)
    );
    // The domain's tail: alb_count alb_failed alb_pushed are zero, ttwu_wake_remote 1.
    assert_eq!((d.alb_count, d.alb_pushed), (0, 0));
    let (delta, dropped) = delta(&a, &b);
    assert_eq!(dropped, 0);
    assert!(check_calls(&delta) > 0);
}

/// v17 (the layout of Documentation/scheduler/sched-stats.rst and show_schedstat() since the
/// version was bumped: the domain's name, then 11 counters per idle type).
#[test]
fn v17_names_domains_and_splits_the_imbalance() {
    let busy = "10 4 3 100 0 7 0 5 0 1 2";
    let idle = "20 18 1 0 50 0 0 2 0 0 1";
    let newly = "30 25 4 0 0 9 64 3 0 2 3";
    let text = format!(
        "version 17\ntimestamp 1\ncpu0 0 0 0 0 0 0 1 1 1\n\
         domain0 SMT 03 {busy} {idle} {newly} 6 1 5 0 0 0 0 0 0 9 8 7\n\
         domain1 PKG 0f {busy} {idle} {newly} 0 0 0 0 0 0 0 0 0 0 0 0\n"
    );
    let s = parse(&text).unwrap();
    let d = &s.cpus[0].domains[0];
    assert_eq!(d.name.as_deref(), Some("SMT"));
    assert_eq!(d.span, set(&[0, 1]));
    let b = d.by_idle[idle_index(CpuIdleType::NotIdle)];
    assert_eq!(
        (b.lb_count, b.lb_balanced, b.lb_failed, b.lb_gained),
        (10, 4, 3, 5)
    );
    assert_eq!(
        (b.lb_imbalance_load, b.lb_imbalance_task, b.lb_imbalance),
        (Some(100), Some(7), 107)
    );
    let n = d.by_idle[idle_index(CpuIdleType::NewlyIdle)];
    assert_eq!((n.lb_imbalance_misfit, n.lb_nobusyg), (Some(64), 3));
    assert_eq!((d.alb_count, d.alb_failed, d.alb_pushed), (6, 1, 5));
    assert_eq!(s.cpus[0].domains[1].span, set(&[0, 1, 2, 3]));
}

#[test]
fn wrong_layouts_are_refused_with_the_line() {
    let e = parse("version 14\n").unwrap_err();
    assert!(e.contains("version 14"), "{e}");
    let short = V16_END.replacen("domain0 03 1 1", "domain0 03 1", 1);
    let e = parse(&short).unwrap_err();
    assert!(e.contains("line 4") && e.contains("35 counters"), "{e}");
    assert!(parse("cpu0 1 2\n").is_err());
    assert!(parse("version 15\ndomain0 03 1\n").is_err());
}

#[test]
fn a_counter_that_wrapped_between_reads_still_subtracts() {
    let a = IdleCounters {
        lb_count: u64::from(u32::MAX) - 1,
        ..IdleCounters::default()
    };
    let b = IdleCounters {
        lb_count: 3,
        ..IdleCounters::default()
    };
    assert_eq!(b.minus(&a).lb_count, 5);
}
