//! The balancer's counters as diff rows: rates per row from known counts per interval, rows
//! only where some run counted, the call counters only when every run recorded the calls
//! (a warning otherwise), and the same rows with several runs a side.

use super::bootstrap::SplitMix64;
use super::tests::{row, run, Iv};
use super::*;
use crate::analyze::counters::{BalancerCounters, CounterRow, Counts, Imbalance};
use std::collections::BTreeMap;

const SEC: u64 = 1_000_000_000;

/// The counts of one interval, drawn around `scale`.
fn counters(calls: bool, scale: u64, rng: &mut SplitMix64) -> BalancerCounters {
    let mut r = |lo: u64, span: usize| lo * scale + rng.below(span) as u64;
    let llc_idle = CounterRow {
        level: "llc".into(),
        idle: "idle".into(),
        counts: Counts {
            lb_count: r(40, 10),
            lb_balanced: r(30, 8),
            lb_failed: r(2, 3),
            lb_gained: r(5, 4),
        },
        searches: r(45, 10),
        imbalance: Imbalance {
            load: r(900, 300),
            util: 0,
            task: r(3, 3),
            misfit: 0,
        },
        ..Default::default()
    };
    let smt_newly = CounterRow {
        level: "smt".into(),
        idle: "newly_idle".into(),
        counts: Counts {
            lb_count: r(70, 20),
            lb_balanced: r(60, 10),
            lb_failed: 0,
            lb_gained: r(8, 5),
        },
        searches: r(70, 20),
        ..Default::default()
    };
    let gained = BTreeMap::from([
        (
            "newidle_balance".to_string(),
            BTreeMap::from([("smt".to_string(), r(8, 5))]),
        ),
        (
            "periodic_balance".to_string(),
            BTreeMap::from([("llc".to_string(), r(4, 3))]),
        ),
        // Not the balancer's: no row.
        (
            "wakeup".to_string(),
            BTreeMap::from([("llc".to_string(), r(50, 3))]),
        ),
    ]);
    BalancerCounters {
        calls_recorded: calls,
        rows: vec![llc_idle, smt_newly],
        alb_pushed: BTreeMap::from([("llc".to_string(), r(1, 2))]),
        stopper_runs: r(1, 2),
        gained_by_migrations: gained,
    }
}

/// `n` full 1 s intervals and a final partial 0.5 s one, counters drawn from `seed`.
fn ivs(n: usize, calls: bool, scale: u64, seed: u64) -> Vec<Iv> {
    let mut rng = SplitMix64::new(seed);
    (0..=n)
        .map(|i| Iv {
            len_ns: if i == n { SEC / 2 } else { SEC },
            partial: i == n,
            log2: vec![5, 10, 3],
            max_us: 9.0,
            balancer: counters(calls, scale, &mut rng),
            ..Default::default()
        })
        .collect()
}

/// Every count of a run summed by (section, metric), from the intervals' counters directly
/// (the balancer's reasons only among the migrations).
fn totals(ivs: &[Iv]) -> BTreeMap<(String, String), u64> {
    let mut t: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut add = |s: &str, m: String, v: u64| *t.entry((s.to_string(), m)).or_default() += v;
    for iv in ivs {
        let b = &iv.balancer;
        for r in &b.rows {
            let c = &r.counts;
            let p = format!("{} {}", r.level, r.idle);
            for (name, v) in [
                ("lb_count", c.lb_count),
                ("lb_balanced", c.lb_balanced),
                ("lb_failed", c.lb_failed),
                ("lb_gained", c.lb_gained),
                ("searches", r.searches),
            ] {
                add(section::BALANCER_CALLS, format!("{p} {name}"), v);
            }
            let i = &r.imbalance;
            for (name, v) in [
                ("load", i.load),
                ("util", i.util),
                ("task", i.task),
                ("misfit", i.misfit),
            ] {
                add(section::BALANCER_IMBALANCE, format!("{p} {name}"), v);
            }
        }
        for (l, n) in &b.alb_pushed {
            add(section::BALANCER_ACTIVE, format!("{l} alb_pushed"), *n);
        }
        add(
            section::BALANCER_ACTIVE,
            "stopper_runs".into(),
            b.stopper_runs,
        );
        for (reason, by_level) in &b.gained_by_migrations {
            if reason == "wakeup" {
                continue;
            }
            for (l, n) in by_level {
                add(section::BALANCER_GAINED, format!("{reason} {l}"), *n);
            }
        }
    }
    t
}

fn secs(ivs: &[Iv]) -> f64 {
    ivs.iter().map(|i| i.len_ns).sum::<u64>() as f64 / 1e9
}

fn balancer_rows(d: &Diff) -> Vec<&DiffRow> {
    d.rows
        .iter()
        .filter(|r| r.section.starts_with("balancer_per_s."))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn call_counters_are_rates_of_every_nonzero_count() {
    let (ia, ib) = (ivs(8, true, 1, 1), ivs(8, true, 2, 2));
    let d = diff(&run("a", &ia), &run("b", &ib));
    let (ta, tb) = (totals(&ia), totals(&ib));
    let expected: Vec<&(String, String)> =
        ta.keys().filter(|k| ta[*k] != 0 || tb[*k] != 0).collect();
    let got = balancer_rows(&d);
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for r in &got {
        let k = (r.section.clone(), r.metric.clone());
        assert!(close(r.baseline, ta[&k] as f64 / secs(&ia)), "{r:?}");
        assert!(close(r.new, tb[&k] as f64 / secs(&ib)), "{r:?}");
        assert!(r.ci_low.is_some() && r.ci_high.is_some(), "{r:?}");
    }
    // Counts zero in both runs have no row (lb_failed of smt newly_idle, util, misfit).
    for missing in [
        "smt newly_idle lb_failed",
        "llc idle util",
        "llc idle misfit",
    ] {
        assert!(!got.iter().any(|r| r.metric == missing), "{missing}");
    }
    // The new run counts about twice as much: every large count's change is significant.
    let lb = row(&d, section::BALANCER_CALLS, "llc idle lb_count");
    assert!(lb.significant && lb.new > 1.8 * lb.baseline, "{lb:?}");
    let load = row(&d, section::BALANCER_IMBALANCE, "llc idle load");
    assert!(load.significant, "{load:?}");
    // The warnings are those of the comparison without counters.
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn rows_come_in_level_idle_then_counter_order_after_the_idle_sections() {
    let ia = ivs(4, true, 1, 3);
    let d = diff(&run("a", &ia), &run("b", &ia));
    let names: Vec<(&str, &str)> = d
        .rows
        .iter()
        .map(|r| (r.section.as_str(), r.metric.as_str()))
        .collect();
    let at = |s: &str, m: &str| names.iter().position(|x| *x == (s, m)).unwrap();
    // Levels bottom-up (smt before llc), counters in schedstat's order.
    assert!(
        at(section::BALANCER_CALLS, "smt newly_idle lb_count")
            < at(section::BALANCER_CALLS, "llc idle lb_count")
    );
    assert!(
        at(section::BALANCER_CALLS, "llc idle lb_count")
            < at(section::BALANCER_CALLS, "llc idle lb_balanced")
    );
    let pinned_last = names
        .iter()
        .rposition(|x| x.0 == section::IDLE_PINNED)
        .unwrap();
    let first = names
        .iter()
        .position(|x| x.0.starts_with("balancer_per_s."))
        .unwrap();
    let findings = names.iter().position(|x| x.0 == section::FINDINGS).unwrap();
    assert!(pinned_last < first && first < findings);
    // The same runs: no change anywhere, nothing significant.
    for r in balancer_rows(&d) {
        assert_eq!(r.baseline, r.new);
        assert!(!r.significant);
    }
}

#[test]
fn no_counters_no_rows() {
    let plain = |seed| {
        let mut v = ivs(4, false, 1, seed);
        v.iter_mut().for_each(|i| i.balancer = Default::default());
        v
    };
    let d = diff(&run("a", &plain(4)), &run("b", &plain(5)));
    assert!(balancer_rows(&d).is_empty());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn without_calls_only_migration_rows_and_no_warning() {
    let (ia, ib) = (ivs(5, false, 1, 6), ivs(5, false, 1, 7));
    let d = diff(&run("a", &ia), &run("b", &ib));
    let rows = balancer_rows(&d);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r.section == section::BALANCER_GAINED));
    let ta = totals(&ia);
    let r = row(&d, section::BALANCER_GAINED, "newidle_balance smt");
    let k = (section::BALANCER_GAINED.to_string(), r.metric.clone());
    assert!(close(r.baseline, ta[&k] as f64 / secs(&ia)));
    assert!(!rows.iter().any(|r| r.metric.starts_with("wakeup")));
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn calls_on_one_side_only_warn_and_leave_the_call_counters_out() {
    let (ia, ib) = (ivs(5, true, 1, 8), ivs(5, false, 1, 9));
    let d = diff(&run("a", &ia), &run("b", &ib));
    assert!(balancer_rows(&d)
        .iter()
        .all(|r| r.section == section::BALANCER_GAINED));
    assert!(!balancer_rows(&d).is_empty());
    let w: Vec<&String> = d
        .warnings
        .iter()
        .filter(|w| w.contains("left out"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", d.warnings);
    assert!(
        w[0].contains("the baseline run recorded them") && w[0].contains("the new run did not"),
        "{}",
        w[0]
    );
    // Several runs a side, one new run without calls.
    let a = vec![run("a1", &ia), run("a2", &ivs(5, true, 1, 10))];
    let b = vec![run("b1", &ivs(5, true, 1, 11)), run("b2", &ib)];
    let d = diff_runs(&a, &b);
    let w: Vec<&String> = d
        .warnings
        .iter()
        .filter(|w| w.contains("left out"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", d.warnings);
    assert!(
        w[0].contains("every baseline run did") && w[0].contains("some new runs did"),
        "{}",
        w[0]
    );
    assert!(balancer_rows(&d)
        .iter()
        .all(|r| r.section == section::BALANCER_GAINED));
}

#[test]
fn several_runs_a_side_carry_the_rows() {
    let a_ivs = [
        ivs(5, true, 1, 12),
        ivs(5, true, 1, 13),
        ivs(5, true, 1, 14),
    ];
    let b_ivs = [
        ivs(5, true, 3, 15),
        ivs(5, true, 3, 16),
        ivs(5, true, 3, 17),
    ];
    let a: Vec<RunSummary> = a_ivs.iter().map(|v| run("a", v)).collect();
    let b: Vec<RunSummary> = b_ivs.iter().map(|v| run("b", v)).collect();
    let d = diff_runs(&a, &b);
    assert_eq!(d.sides.method, Method::WelchOverRuns);
    let rows = balancer_rows(&d);
    assert!(rows.iter().any(|r| r.section == section::BALANCER_CALLS));
    assert!(rows.iter().any(|r| r.section == section::BALANCER_ACTIVE));
    assert!(rows.iter().any(|r| r.section == section::BALANCER_GAINED));
    for r in rows {
        let k = (r.section.clone(), r.metric.clone());
        let rate = |v: &[Iv]| totals(v).get(&k).copied().unwrap_or(0) as f64 / secs(v);
        let runs = r.runs.as_ref().expect("each run's value");
        for (got, v) in runs.baseline.iter().zip(&a_ivs) {
            assert!(close(*got, rate(v)), "{r:?}");
        }
        for (got, v) in runs.new.iter().zip(&b_ivs) {
            assert!(close(*got, rate(v)), "{r:?}");
        }
        let mean = runs.baseline.iter().sum::<f64>() / 3.0;
        assert!(close(r.baseline, mean), "{r:?}");
        assert!(r.ci_low.is_some(), "{r:?}");
    }
    let lb = row(&d, section::BALANCER_CALLS, "smt newly_idle lb_count");
    assert!(lb.significant, "{lb:?}");
}

#[test]
fn summaries_without_counters_still_read() {
    let r = run("a", &ivs(3, true, 1, 18));
    let mut v = serde_json::to_value(&r).unwrap();
    for iv in v["intervals"].as_array_mut().unwrap() {
        iv.as_object_mut().unwrap().remove("balancer");
    }
    let back: RunSummary = serde_json::from_value(v).unwrap();
    assert!(back
        .intervals
        .iter()
        .all(|i| i.balancer == BalancerCounters::default()));
    assert!(!back.calls_recorded());
}

/// The balancer's calls through the analyzer: `per_interval[k]` calls in second `k`, each at
/// the LLC level (4 CPUs) of CPU 1, idle type idle, the first of each second failed, the
/// others balanced.
fn analyzed_calls(per_interval: &[u64]) -> RunSummary {
    use crate::analyze::{Analyzer, AnalyzerConfig};
    use crate::event::{BalanceCall, BalanceOrigin, CpuIdleType, Event, EventKind};
    use crate::topology::{LevelKind, Topology};
    let topo = Topology::synthetic(
        &[
            (LevelKind::Smt, "SMT", 2),
            (LevelKind::Llc, "MC", 4),
            (LevelKind::Numa, "NUMA", 8),
        ],
        8,
    );
    let mut a = Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns: SEC,
            ..Default::default()
        },
    );
    let mut out = Vec::new();
    for (k, n) in per_interval.iter().enumerate() {
        for j in 0..*n {
            let call = BalanceCall {
                level: 1,
                sd_weight: 4,
                idle: CpuIdleType::Idle,
                this_cpu: 1,
                moved: 0,
                failed: j == 0,
                origin: Some(BalanceOrigin::Own),
                len_ns: 1_000,
            };
            let ev = Event {
                ts_ns: SEC + k as u64 * SEC + 1_000 + j * 10_000,
                cpu: 1,
                kind: EventKind::BalanceCall(Box::new(call)),
            };
            a.push(&ev, &mut out);
        }
    }
    out.extend(a.finish());
    RunSummary::from_snapshots(&out, "analyzed", super::tests::meta())
}

#[test]
fn calls_through_the_analyzer_are_counted_per_second() {
    let (ca, cb) = ([5u64, 7, 6, 8, 5, 6], [12u64, 15, 11, 14, 13, 12]);
    let (a, b) = (analyzed_calls(&ca), analyzed_calls(&cb));
    assert!(a.calls_recorded() && b.calls_recorded());
    let d = diff(&a, &b);
    for (per_interval, side, run) in [(&ca, "baseline", &a), (&cb, "new", &b)] {
        let s = run.duration_ns() as f64 / 1e9;
        let total: u64 = per_interval.iter().sum();
        let failed = per_interval.len() as u64;
        let value = |m: &str| {
            let x = row(&d, section::BALANCER_CALLS, m);
            if side == "baseline" {
                x.baseline
            } else {
                x.new
            }
        };
        assert!(close(value("llc idle lb_count"), total as f64 / s));
        assert!(close(value("llc idle lb_failed"), failed as f64 / s));
        assert!(close(
            value("llc idle lb_balanced"),
            (total - failed) as f64 / s
        ));
    }
    // Nothing else was counted: no other balancer row.
    let metrics: Vec<&str> = balancer_rows(&d)
        .iter()
        .map(|r| r.metric.as_str())
        .collect();
    assert_eq!(
        metrics,
        [
            "llc idle lb_count",
            "llc idle lb_balanced",
            "llc idle lb_failed"
        ]
    );
    assert!(row(&d, section::BALANCER_CALLS, "llc idle lb_count").significant);
}
