//! Diff tests from snapshots built in code (and one from analyzer runs over synthetic events).

use super::bootstrap::SplitMix64;
use super::*;
use crate::analyze::{
    Analyzer, AnalyzerConfig, IdleWhileWaiting, LatencySummary, MigrationStats, Snapshot,
};
use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind};
use crate::topology::Topology;
use std::collections::BTreeMap;

const SEC: u64 = 1_000_000_000;

/// One interval to build a snapshot from.
#[derive(Clone, Debug)]
pub(super) struct Iv {
    pub(super) len_ns: u64,
    pub(super) partial: bool,
    pub(super) log2: Vec<u64>,
    pub(super) max_us: f64,
    pub(super) reasons: Vec<(&'static str, u64)>,
    pub(super) levels: Vec<(&'static str, u64)>,
    /// (level, span, movable_ns, pinned_ns)
    pub(super) idle: Vec<(&'static str, &'static str, u64, u64)>,
    pub(super) lost: u64,
    /// (finding kind, count)
    pub(super) findings: Vec<(&'static str, u64)>,
    /// The balancer's counters of the interval; its `gained_by_migrations` is the
    /// snapshot's migration matrix (every reason, as the analyzer counts them).
    pub(super) balancer: crate::analyze::counters::BalancerCounters,
}

impl Default for Iv {
    fn default() -> Self {
        Iv {
            len_ns: SEC,
            partial: false,
            log2: vec![],
            max_us: 0.0,
            reasons: vec![],
            levels: vec![],
            idle: vec![
                ("smt", "0-1", 0, 0),
                ("smt", "2-3", 0, 0),
                ("llc", "0-3", 0, 0),
            ],
            lost: 0,
            findings: vec![],
            balancer: Default::default(),
        }
    }
}

fn snaps(ivs: &[Iv]) -> Vec<Snapshot> {
    let mut t = 1_000;
    ivs.iter()
        .map(|iv| {
            let t0 = t;
            t += iv.len_ns;
            let mut by_reason: BTreeMap<String, u64> = crate::analyze::reason_names()
                .map(|r| (r.to_string(), 0))
                .collect();
            for (r, c) in &iv.reasons {
                *by_reason.entry(r.to_string()).or_default() += c;
            }
            let by_level: BTreeMap<String, u64> = ["smt", "llc"]
                .iter()
                .map(|l| (l.to_string(), 0))
                .chain(iv.levels.iter().map(|(l, c)| (l.to_string(), *c)))
                .collect();
            Snapshot {
                t_start_ns: t0,
                t_end_ns: t,
                partial: iv.partial,
                events: 0,
                migrations: MigrationStats {
                    total: iv.reasons.iter().map(|r| r.1).sum(),
                    by_reason,
                    by_level,
                    // Where the analyzer counts the balancer's migrations by reason and level.
                    matrix: iv.balancer.gained_by_migrations.clone(),
                    ..Default::default()
                },
                runqlat_us: LatencySummary {
                    count: iv.log2.iter().sum(),
                    log2_buckets: iv.log2.clone(),
                    max: iv.max_us,
                    ..Default::default()
                },
                runqlat_by_cpu: vec![],
                runqlat_by_domain: vec![],
                runqlat_by_process: vec![],
                runqlat_by_cgroup: vec![],
                migrations_by_cgroup: vec![],
                balancer_counters: crate::analyze::counters::BalancerCounters {
                    gained_by_migrations: BTreeMap::new(),
                    ..iv.balancer.clone()
                },
                balancer_counters_run: None,
                idle_while_waiting: iv
                    .idle
                    .iter()
                    .map(|(level, span, m, p)| IdleWhileWaiting {
                        level: level.to_string(),
                        span: CpuSet::parse_list(span).unwrap(),
                        movable_ns: *m,
                        pinned_ns: *p,
                        movable_fraction: 0.0,
                        pinned_fraction: 0.0,
                    })
                    .collect(),
                lost_events: iv.lost,
                lost_by_cpu: BTreeMap::new(),
                switch_gaps: 0,
                cpus: vec![],
                model_rules: String::new(),
                domains: vec![],
                findings: vec![],
                findings_by_kind: iv
                    .findings
                    .iter()
                    .map(|(k, n)| (k.to_string(), *n))
                    .collect(),
                migrations_by_task: vec![],
                signals: vec![],
            }
        })
        .collect()
}

pub(super) fn meta() -> RunMeta {
    RunMeta {
        kernel_release: "6.12.0".into(),
        hostname: "box".into(),
        topology_summary: "4 CPUs: smt llc".into(),
        nr_cpus: 4,
    }
}

pub(super) fn run(label: &str, ivs: &[Iv]) -> RunSummary {
    RunSummary::from_snapshots(&snaps(ivs), label, meta())
}

pub(super) fn row<'a>(d: &'a Diff, section: &str, metric: &str) -> &'a DiffRow {
    d.rows
        .iter()
        .find(|r| r.section == section && r.metric == metric)
        .unwrap_or_else(|| panic!("no row {section} {metric} in {:#?}", d.rows))
}

/// `n` varied intervals plus a final partial one, drawn from `seed`.
fn varied(n: usize, seed: u64) -> Vec<Iv> {
    let mut rng = SplitMix64::new(seed);
    let mut ivs: Vec<Iv> = (0..n)
        .map(|_| {
            let mut r = |lo: u64, span: usize| lo + rng.below(span) as u64;
            Iv {
                log2: vec![
                    r(10, 20),
                    r(50, 40),
                    r(200, 100),
                    r(80, 50),
                    r(5, 10),
                    r(0, 3),
                ],
                max_us: 40.0 + r(0, 20) as f64,
                reasons: vec![("wakeup", r(1000, 500)), ("newidle_balance", r(100, 80))],
                levels: vec![("smt", r(600, 300)), ("llc", r(400, 200))],
                idle: vec![
                    ("smt", "0-1", r(1_000_000, 500_000), r(0, 1000)),
                    ("smt", "2-3", r(2_000_000, 500_000), 0),
                    ("llc", "0-3", r(5_000_000, 2_000_000), r(10_000, 5000)),
                ],
                ..Default::default()
            }
        })
        .collect();
    ivs.push(Iv {
        len_ns: SEC / 3,
        partial: true,
        log2: vec![1, 5, 20, 10, 1],
        max_us: 30.0,
        reasons: vec![("wakeup", 400)],
        levels: vec![("smt", 400)],
        ..Default::default()
    });
    ivs
}

#[test]
fn identical_runs_show_no_change() {
    let a = run("a", &varied(12, 1));
    let d = diff(&a, &a);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.baseline, "a");
    assert!(d.rows.len() > 15);
    for r in &d.rows {
        assert_eq!(r.baseline, r.new, "{r:?}");
        assert!(matches!(r.change_pct, Some(c) if c == 0.0) || r.baseline == 0.0);
        assert!(!r.significant, "{r:?}");
        if r.section != section::RUN {
            let (lo, hi) = (r.ci_low.unwrap(), r.ci_high.unwrap());
            assert!(lo <= 0.0 && hi >= 0.0, "{r:?}");
        }
    }
    assert_eq!(d.histograms.baseline, d.histograms.new);
    // Deterministic: the same inputs give the same intervals.
    assert_eq!(diff(&a, &a), d);
    // Different labels and a copy change nothing else.
    let b = RunSummary {
        label: "b".into(),
        ..a.clone()
    };
    let d2 = diff(&a, &b);
    assert_eq!(d2.rows, d.rows);
    assert_eq!(d2.new, "b");
}

#[test]
fn rows_cover_every_figure() {
    let a = run("a", &varied(5, 2));
    let d = diff(&a, &a);
    let keys: Vec<(String, String)> = d
        .rows
        .iter()
        .map(|r| (r.section.clone(), r.metric.clone()))
        .collect();
    let want = [
        (section::RUN, "duration_s"),
        (section::RUN, "intervals"),
        (section::RUNQLAT, "p50"),
        (section::RUNQLAT, "p90"),
        (section::RUNQLAT, "p99"),
        (section::RUNQLAT, "p99.9"),
        (section::RUNQLAT, "max"),
        (section::RUNQLAT, "samples"),
        (section::MIGRATIONS, "total"),
        (section::BY_REASON, "wakeup"),
        (section::BY_REASON, "newidle_balance"),
        (section::BY_LEVEL, "smt"),
        (section::BY_LEVEL, "llc"),
        (section::IDLE_MOVABLE, "smt 0-1"),
        (section::IDLE_MOVABLE, "smt 2-3"),
        (section::IDLE_MOVABLE, "llc 0-3"),
        (section::IDLE_PINNED, "smt 0-1"),
        (section::IDLE_PINNED, "smt 2-3"),
        (section::IDLE_PINNED, "llc 0-3"),
        (section::FINDINGS, "missed_pull"),
        (section::FINDINGS, "busy_wakeup"),
        (section::FINDINGS, "harmful_migration"),
        (section::FINDINGS, "ping_pong"),
        (section::FINDINGS, "churn"),
        (section::FINDINGS, "uneven_spread"),
        (section::LOST, "total"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(s, m)| (s.to_string(), m.to_string()))
        .collect();
    assert_eq!(keys, want);
    // Rates and percentages are whole-run sums over the whole length (partial included).
    let secs: f64 = a.intervals.iter().map(|i| i.len_ns as f64).sum::<f64>() / 1e9;
    let wakeups: u64 = a.intervals.iter().map(|i| i.by_reason["wakeup"]).sum();
    let r = row(&d, section::BY_REASON, "wakeup");
    assert!((r.baseline - wakeups as f64 / secs).abs() < 1e-5);
    assert_eq!(row(&d, section::RUN, "intervals").baseline, 6.0);
    assert!((row(&d, section::RUN, "duration_s").baseline - secs).abs() < 1e-6);
    let llc: u64 = a
        .intervals
        .iter()
        .flat_map(|i| &i.idle)
        .filter(|d| d.level == "llc")
        .map(|d| d.movable_ns)
        .sum();
    let r = row(&d, section::IDLE_MOVABLE, "llc 0-3");
    assert!((r.baseline - llc as f64 * 100.0 / (secs * 1e9)).abs() < 1e-5);
    let max = row(&d, section::RUNQLAT, "max").baseline;
    let want_max = a
        .intervals
        .iter()
        .map(|i| i.runqlat_max_us)
        .fold(0.0, f64::max);
    assert_eq!(max, want_max);
    let samples: u64 = a.intervals.iter().map(|i| i.runqlat_count).sum();
    assert_eq!(
        row(&d, section::RUNQLAT, "samples").baseline,
        samples as f64
    );
}

#[test]
fn doubled_latency_is_significant() {
    let base = varied(10, 3);
    let new: Vec<Iv> = base
        .iter()
        .map(|iv| {
            let mut log2 = vec![0];
            log2.extend(&iv.log2);
            Iv {
                log2,
                max_us: iv.max_us * 2.0,
                ..iv.clone()
            }
        })
        .collect();
    let d = diff(&run("base", &base), &run("new", &new));
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    for m in ["p50", "p90", "p99", "max"] {
        let r = row(&d, section::RUNQLAT, m);
        assert!(r.significant, "{r:?}");
        assert!(r.ci_low.unwrap() > 0.0, "{r:?}");
        let c = r.change_pct.unwrap();
        assert!((90.0..=110.0).contains(&c), "{r:?}");
    }
    // Everything else is identical.
    let r = row(&d, section::RUNQLAT, "samples");
    assert_eq!((r.change_pct, r.significant), (Some(0.0), false));
    assert!(d
        .rows
        .iter()
        .filter(|r| r.section != section::RUNQLAT)
        .all(|r| !r.significant && r.baseline == r.new));
    // The histograms side by side: the new one is the old one a slot later.
    assert_eq!(d.histograms.new[1..], d.histograms.baseline[..6]);
    assert_eq!(d.histograms.baseline.len(), d.histograms.new.len());
}

#[test]
fn clear_drop_in_migrations_is_significant() {
    let base = varied(10, 4);
    let new: Vec<Iv> = base
        .iter()
        .map(|iv| Iv {
            reasons: iv.reasons.iter().map(|(r, c)| (*r, c * 2 / 3)).collect(),
            ..iv.clone()
        })
        .collect();
    let d = diff(&run("base", &base), &run("new", &new));
    let r = row(&d, section::BY_REASON, "wakeup");
    assert!(r.significant && r.ci_high.unwrap() < 0.0, "{r:?}");
    assert!((r.change_pct.unwrap() + 33.3).abs() < 0.5, "{r:?}");
    assert!(row(&d, section::MIGRATIONS, "total").significant);
}

#[test]
fn noisy_small_change_is_not_significant() {
    let noisy = |seed: u64, scale: f64| {
        let mut rng = SplitMix64::new(seed);
        (0..10)
            .map(|_| Iv {
                reasons: vec![(
                    "wakeup",
                    ((500 + rng.below(1000) as u64) as f64 * scale) as u64,
                )],
                log2: vec![
                    0,
                    0,
                    0,
                    100 + rng.below(200) as u64,
                    50 + rng.below(200) as u64,
                ],
                max_us: 31.0,
                ..Default::default()
            })
            .collect::<Vec<_>>()
    };
    let d = diff(&run("a", &noisy(10, 1.0)), &run("b", &noisy(11, 1.03)));
    for r in &d.rows {
        assert!(!r.significant, "{r:?}");
    }
    let r = row(&d, section::BY_REASON, "wakeup");
    assert!(r.ci_low.unwrap() < 0.0 && r.ci_high.unwrap() > 0.0, "{r:?}");
    assert_ne!(r.baseline, r.new);
}

#[test]
fn trivially_small_change_is_not_significant() {
    // Every interval's wakeups up by exactly 0.5%: beyond the noise (there is none), but
    // below the 2% that matters.
    let base: Vec<Iv> = (0..8)
        .map(|_| Iv {
            reasons: vec![("wakeup", 1000)],
            ..Default::default()
        })
        .collect();
    let new: Vec<Iv> = base
        .iter()
        .map(|iv| Iv {
            reasons: vec![("wakeup", 1005)],
            ..iv.clone()
        })
        .collect();
    let d = diff(&run("a", &base), &run("b", &new));
    let r = row(&d, section::BY_REASON, "wakeup");
    assert_eq!((r.ci_low, r.ci_high), (Some(5.0), Some(5.0)));
    assert!(!r.significant);
}

#[test]
fn zero_baseline_has_no_change_pct() {
    let base = varied(6, 5);
    let new: Vec<Iv> = base
        .iter()
        .map(|iv| {
            let mut reasons = iv.reasons.clone();
            reasons.push(("numa_balancing", 7));
            Iv {
                reasons,
                lost: if iv.partial { 0 } else { 3 },
                ..iv.clone()
            }
        })
        .collect();
    let d = diff(&run("a", &base), &run("b", &new));
    let r = row(&d, section::BY_REASON, "numa_balancing");
    assert_eq!(r.baseline, 0.0);
    assert!(r.new > 0.0);
    assert_eq!(r.change_pct, None);
    assert!(r.significant, "{r:?}");
    let r = row(&d, section::LOST, "total");
    assert_eq!((r.baseline, r.new, r.change_pct), (0.0, 18.0, None));
    assert!(d
        .warnings
        .iter()
        .any(|w| w.contains("new run lost 18 events")));
    // Reasons zero in both runs have no row.
    assert!(!d.rows.iter().any(|r| r.metric == "hotplug"));
}

#[test]
fn machine_mismatch_warns_and_still_compares() {
    let a = run("a", &varied(5, 6));
    let mut b = run("b", &varied(5, 7));
    b.meta.kernel_release = "6.13.0-rc1".into();
    b.meta.nr_cpus = 8;
    b.meta.topology_summary = "8 CPUs: smt llc".into();
    let d = diff(&a, &b);
    let has = |s: &str| d.warnings.iter().any(|w| w.contains(s));
    assert!(has(
        "different kernel release: \"6.12.0\" (baseline) vs \"6.13.0-rc1\" (new)"
    ));
    assert!(has("different CPU count: \"4\" (baseline) vs \"8\" (new)"));
    assert!(has("different topology"));
    assert!(!has("host"));
    assert!(row(&d, section::RUNQLAT, "p50").ci_low.is_some());
}

#[test]
fn domains_of_one_run_are_warned_not_compared() {
    let a = run("a", &varied(4, 8));
    let other: Vec<Iv> = varied(4, 9)
        .into_iter()
        .map(|iv| Iv {
            idle: vec![
                ("smt", "0-1", 5, 0),
                ("smt", "2-3", 5, 0),
                ("llc", "0-7", 5, 0),
            ],
            ..iv
        })
        .collect();
    let mut b = run("b", &other);
    b.meta.hostname = "other".into();
    let d = diff(&a, &b);
    assert!(d
        .warnings
        .iter()
        .any(|w| w == "domains only in the baseline run, not compared: llc 0-3"));
    assert!(d
        .warnings
        .iter()
        .any(|w| w == "domains only in the new run, not compared: llc 0-7"));
    assert!(d.warnings.iter().any(|w| w.contains("different host")));
    let movable: Vec<&str> = d
        .rows
        .iter()
        .filter(|r| r.section == section::IDLE_MOVABLE)
        .map(|r| r.metric.as_str())
        .collect();
    assert_eq!(movable, ["smt 0-1", "smt 2-3"]);
}

#[test]
fn too_few_intervals_gives_no_noise_estimate() {
    let mut short = varied(2, 10);
    short.iter_mut().for_each(|iv| iv.log2[3] *= 2);
    let d = diff(&run("a", &varied(8, 11)), &run("b", &short));
    assert!(d
        .warnings
        .iter()
        .any(|w| w == &format!("the new run has 2 full intervals: {TOO_FEW_INTERVALS}")));
    assert!(d
        .warnings
        .iter()
        .any(|w| w.starts_with("runs differ in length")));
    for r in &d.rows {
        assert_eq!((r.ci_low, r.ci_high, r.significant), (None, None, false));
    }
    // An empty run still diffs.
    let d = diff(&run("a", &[]), &run("b", &[]));
    assert!(d.warnings.iter().any(|w| w.contains("no intervals")));
    assert!(d.rows.iter().all(|r| r.baseline == 0.0 && !r.significant));
    assert!(d.histograms.baseline.is_empty());
}

#[test]
fn json_round_trips() {
    let d = diff(&run("a", &varied(6, 12)), &run("b", &varied(6, 13)));
    let s = serde_json::to_string(&d).unwrap();
    let back: Diff = serde_json::from_str(&s).unwrap();
    assert_eq!(back, d);
    assert!(s.contains("\"change_pct\":"));
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    assert!(v["histograms"]["baseline"].is_array());
}

/// A recording's worth of wakeups on CPU 1 of a 2-CPU machine, each waiting `lat_ns`.
fn analyzed(lat_ns: u64, samples: u32) -> Vec<Snapshot> {
    let mut a = Analyzer::new(
        Topology::synthetic_flat(2),
        AnalyzerConfig {
            interval_ns: 500_000,
            ..Default::default()
        },
    );
    let ev = |ts_ns, cpu, kind| Event { ts_ns, cpu, kind };
    let mut out = Vec::new();
    let mut t = 1_000;
    a.push(
        &ev(
            t,
            1,
            EventKind::Switch {
                prev_pid: 0,
                prev_state: 0,
                next_pid: 0,
            },
        ),
        &mut out,
    );
    for i in 0..samples {
        let pid = 100 + i;
        t += 1_000;
        a.push(
            &ev(t, 1, EventKind::Wakeup { pid, target_cpu: 1 }),
            &mut out,
        );
        let sw = |prev_pid, next_pid| EventKind::Switch {
            prev_pid,
            prev_state: 1,
            next_pid,
        };
        // Latency varies a little so the intervals are not all alike.
        let lat = lat_ns + (i as u64 % 7) * lat_ns / 20;
        a.push(&ev(t + lat, 1, sw(0, pid)), &mut out);
        a.push(&ev(t + lat + 500, 1, sw(pid, 0)), &mut out);
        t += 50_000;
    }
    out.extend(a.finish());
    out
}

#[test]
fn from_analyzer_snapshots() {
    let sa = analyzed(6_000, 63);
    let sb = analyzed(40_000, 63);
    assert!(sa.last().unwrap().partial);
    let a = RunSummary::from_snapshots(&sa, "a", meta());
    let b = RunSummary::from_snapshots(&sb, "b", meta());
    assert_eq!(a.intervals.len(), sa.len());
    assert_eq!(a.full_intervals(), sa.len() - 1);
    assert_eq!(a.level_order, ["llc"]);
    let d = diff(&a, &b);
    let p50 = row(&d, section::RUNQLAT, "p50");
    assert!((4.0..8.0).contains(&p50.baseline), "{p50:?}");
    assert!((32.0..64.0).contains(&p50.new), "{p50:?}");
    assert!(p50.significant, "{p50:?}");
    assert_eq!(row(&d, section::RUNQLAT, "samples").baseline, 63.0);
    assert_eq!(d.histograms.baseline.iter().sum::<u64>(), 63);
    assert!(!diff(&a, &a).rows.iter().any(|r| r.significant));
}

#[test]
fn findings_per_second_by_kind() {
    // Ten 1 s intervals: 3 busy_wakeup each in the baseline, 30 in the new run.
    let iv = |n: u64| Iv {
        findings: vec![("busy_wakeup", n), ("missed_pull", 1)],
        ..Iv::default()
    };
    let base: Vec<Iv> = (0..10).map(|i| iv(3 + i % 2)).collect();
    let new: Vec<Iv> = (0..10).map(|i| iv(30 + i % 2)).collect();
    let d = diff(&run("base", &base), &run("new", &new));
    let r = row(&d, section::FINDINGS, "busy_wakeup");
    assert_eq!((r.baseline, r.new), (3.5, 30.5));
    assert!(r.significant, "{r:?}");
    let r = row(&d, section::FINDINGS, "missed_pull");
    assert_eq!((r.baseline, r.new, r.significant), (1.0, 1.0, false));
    assert_eq!(row(&d, section::FINDINGS, "churn").baseline, 0.0);
}
