//! Tests of the comparison with several runs a side: Welch's interval over runs holds its
//! error rate when both sides come from one distribution, finds a known shift, and the
//! warnings and per-run values say what the runs were.

use super::bootstrap::SplitMix64;
use super::stats::welch;
use super::tests::{meta, row, run, Iv};
use super::*;

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut SplitMix64) -> f64 {
    let u = |r: &mut SplitMix64| ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (u1, u2) = (u(rng), u(rng));
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// One run of three 1 s intervals whose wakeup migrations per interval are drawn from
/// N(`mu`, `sigma`); the run's rate is their mean.
fn noisy_run(label: &str, mu: f64, sigma: f64, rng: &mut SplitMix64) -> RunSummary {
    let ivs: Vec<Iv> = (0..3)
        .map(|_| {
            let n = (mu + sigma * normal(rng)).round().max(0.0) as u64;
            Iv {
                log2: vec![5, 20, 40, 10],
                max_us: 12.0,
                reasons: vec![("wakeup", n)],
                levels: vec![("smt", n)],
                ..Default::default()
            }
        })
        .collect();
    run(label, &ivs)
}

fn side(n: usize, mu: f64, sigma: f64, rng: &mut SplitMix64) -> Vec<RunSummary> {
    (0..n)
        .map(|i| noisy_run(&format!("r{i}"), mu, sigma, rng))
        .collect()
}

/// Fraction of `trials` comparisons whose wakeup row is beyond the noise.
fn flagged(trials: u64, n: (usize, usize), mu_b: f64, sigma: (f64, f64)) -> f64 {
    let mut hits = 0;
    for seed in 0..trials {
        let mut rng = SplitMix64::new(seed);
        let a = side(n.0, 1000.0, sigma.0, &mut rng);
        let b = side(n.1, mu_b, sigma.1, &mut rng);
        let d = diff_runs(&a, &b);
        assert_eq!(d.sides.method, Method::WelchOverRuns);
        if row(&d, section::BY_REASON, "wakeup").significant {
            hits += 1;
        }
    }
    let rate = hits as f64 / trials as f64;
    println!("{n:?} runs, new mean {mu_b}, sd {sigma:?}: {hits} of {trials} flagged ({rate})");
    rate
}

#[test]
fn same_distribution_is_flagged_at_most_at_the_stated_rate() {
    // 2000 comparisons: a 5% rate gives 100 +- 9.7 (binomial sd); 6.5% is 3 sd above.
    for (n, sigma) in [((5, 5), (100.0, 100.0)), ((3, 3), (100.0, 100.0))] {
        let rate = flagged(2000, n, 1000.0, sigma);
        assert!(rate <= 0.065, "{n:?}: {rate}");
        // Not so conservative that it would miss everything (the 2% floor of min_effect
        // removes a few of the 5%).
        assert!(rate >= 0.02, "{n:?}: {rate}");
    }
    // Unequal spreads and sizes: Welch's df keeps the rate.
    let rate = flagged(2000, (4, 7), 1000.0, (40.0, 200.0));
    assert!(rate <= 0.065, "{rate}");
}

#[test]
fn welch_alone_holds_its_rate_at_two_runs_a_side() {
    // The t quantile at 1-2 degrees of freedom (4.3 to 12.7) is what keeps two runs a side
    // honest; a normal quantile (1.96) would flag about 30% here.
    let mut rng = SplitMix64::new(7);
    let trials = 4000;
    let mut hits = 0;
    for _ in 0..trials {
        let a: Vec<f64> = (0..2).map(|_| normal(&mut rng)).collect();
        let b: Vec<f64> = (0..2).map(|_| normal(&mut rng)).collect();
        let w = welch(&a, &b, 0.95).unwrap();
        if w.ci.0 > 0.0 || w.ci.1 < 0.0 {
            hits += 1;
        }
    }
    let rate = hits as f64 / trials as f64;
    println!("Welch, 2 runs a side: {hits} of {trials} intervals exclude 0 ({rate})");
    // Welch is slightly conservative at df near 1: between 2% and 6.1% (5% + 3 sd).
    assert!((0.02..=0.061).contains(&rate), "{rate}");
}

#[test]
fn a_known_shift_is_found() {
    // Run means have sd 100 / sqrt(3) = 57.7; a shift of 200 is 3.5 of them. With 5 runs a
    // side Welch's test has power above 0.97 there.
    let rate = flagged(500, (5, 5), 1200.0, (100.0, 100.0));
    assert!(rate >= 0.95, "{rate}");
    // The same shift with 2 runs a side is found far less often: few runs, wide intervals.
    let two = flagged(500, (2, 2), 1200.0, (100.0, 100.0));
    assert!(two < rate, "{two} vs {rate}");
    // And the interval is around the shift.
    let mut rng = SplitMix64::new(99);
    let a = side(5, 1000.0, 100.0, &mut rng);
    let b = side(5, 1200.0, 100.0, &mut rng);
    let d = diff_runs(&a, &b);
    let r = row(&d, section::BY_REASON, "wakeup");
    let (lo, hi) = (r.ci_low.unwrap(), r.ci_high.unwrap());
    assert!(lo < 200.0 && 200.0 < hi, "[{lo}, {hi}]");
    assert!(r.significant && r.change_pct.unwrap() > 10.0);
}

#[test]
fn rows_hold_each_runs_value_and_the_means() {
    let mut rng = SplitMix64::new(3);
    let a = side(3, 1000.0, 100.0, &mut rng);
    let b = side(4, 1100.0, 100.0, &mut rng);
    let d = diff_runs(&a, &b);
    assert_eq!(d.sides.baseline.len(), 3);
    assert_eq!(d.sides.new[3].label, "r3");
    assert_eq!(d.sides.new[0].duration_s, 3.0);
    assert_eq!(d.baseline, "r0, r1, r2");
    for r in &d.rows {
        let x = r.runs.as_ref().expect("per-run values");
        assert_eq!((x.baseline.len(), x.new.len()), (3, 4));
        let m = x.new.iter().sum::<f64>() / 4.0;
        assert!((r.new - m).abs() < 1e-6, "{r:?}");
    }
    // Each run's value is that run's whole-run figure, as one run a side computes it.
    for (i, ra) in a.iter().enumerate() {
        let one = diff(ra, &b[0]);
        for (r, r1) in d.rows.iter().zip(&one.rows) {
            assert_eq!((&r.section, &r.metric), (&r1.section, &r1.metric));
            assert_eq!(r.runs.as_ref().unwrap().baseline[i], r1.baseline, "{r:?}");
        }
    }
    let w = row(&d, section::BY_REASON, "wakeup");
    let x = w.runs.as_ref().unwrap();
    assert!(x.df.unwrap() > 1.0 && x.df.unwrap() < 5.0 + 1e-9);
    assert!(x.baseline_sd > 0.0 && x.p_value.is_some());
    // The interval count has no interval; the run length has one (all runs 3 s: zero).
    assert!(row(&d, section::RUN, "intervals").ci_low.is_none());
    let len = row(&d, section::RUN, "duration_s");
    assert_eq!(
        (len.ci_low, len.ci_high, len.significant),
        (Some(0.0), Some(0.0), false)
    );
}

#[test]
fn identical_sides_show_no_change() {
    let mut rng = SplitMix64::new(5);
    let a = side(4, 1000.0, 100.0, &mut rng);
    let d = diff_runs(&a, &a);
    for r in &d.rows {
        assert_eq!(r.baseline, r.new);
        assert!(!r.significant, "{r:?}");
        if let Some(p) = r.runs.as_ref().unwrap().p_value {
            assert!(p > 0.999, "{r:?}");
        }
    }
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn one_run_a_side_is_the_plain_comparison() {
    let mut rng = SplitMix64::new(11);
    let (a, b) = (
        side(1, 1000.0, 100.0, &mut rng),
        side(1, 900.0, 100.0, &mut rng),
    );
    let d = diff_runs(&a, &b);
    assert_eq!(d, diff(&a[0], &b[0]));
    assert_eq!(d.sides.method, Method::IntervalBootstrap);
    assert!(d.rows.iter().all(|r| r.runs.is_none()));
    // The JSON of a one-run row has no per-run field.
    let s = serde_json::to_string(&d.rows[3]).unwrap();
    assert!(!s.contains("\"runs\""), "{s}");
}

#[test]
fn one_run_against_several_has_means_and_no_interval() {
    let mut rng = SplitMix64::new(13);
    let (a, b) = (
        side(1, 1000.0, 100.0, &mut rng),
        side(3, 2000.0, 100.0, &mut rng),
    );
    let d = diff_runs(&a, &b);
    assert_eq!(d.sides.method, Method::None);
    assert!(d
        .warnings
        .iter()
        .any(|w| w.starts_with("the baseline side has one run")));
    assert!(d.rows.iter().all(|r| r.ci_low.is_none() && !r.significant));
    assert!(row(&d, section::BY_REASON, "wakeup").change_pct.unwrap() > 50.0);
}

#[test]
fn runs_that_differ_within_a_side_are_warned() {
    let mut rng = SplitMix64::new(17);
    let mut a = side(3, 1000.0, 100.0, &mut rng);
    let b = side(2, 1000.0, 100.0, &mut rng);
    a[2].meta.kernel_release = "6.13.0".into();
    a[1].intervals.pop();
    let d = diff_runs(&a, &b);
    let w = d.warnings.join("\n");
    assert!(
        w.contains(
            "runs of the baseline side differ in kernel release: \"6.12.0\" (r0) vs \
             \"6.13.0\" (r2)"
        ),
        "{w}"
    );
    assert!(
        w.contains("runs of the baseline side differ in length (2.0 s to 3.0 s)"),
        "{w}"
    );
    assert!(!w.contains("new side differ"), "{w}");
    // Between the sides: the first runs' machines, and the mean lengths.
    let mut b2 = b.clone();
    b2[0].meta.topology_summary = "8 CPUs: smt llc numa".into();
    let d = diff_runs(&a, &b2);
    assert!(d
        .warnings
        .iter()
        .any(|w| w.starts_with("different topology")));
    assert!(d
        .warnings
        .iter()
        .any(|w| w.starts_with("runs of the new side differ in topology")));
    assert_eq!(meta().nr_cpus, 4);
}

#[test]
fn an_empty_side_is_warned_not_a_panic() {
    let mut rng = SplitMix64::new(19);
    let a = side(2, 1000.0, 100.0, &mut rng);
    let d = diff_runs(&a, &[]);
    assert!(d
        .warnings
        .iter()
        .any(|w| w.contains("the new side has no runs")));
    assert_eq!(d.sides.method, Method::None);
}

#[test]
fn multi_run_json_round_trips() {
    let mut rng = SplitMix64::new(23);
    let d = diff_runs(
        &side(2, 1000.0, 100.0, &mut rng),
        &side(3, 1000.0, 100.0, &mut rng),
    );
    let s = serde_json::to_string(&d).unwrap();
    let back: Diff = serde_json::from_str(&s).unwrap();
    assert_eq!(back, d);
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["sides"]["method"], "welch_over_runs");
    assert_eq!(v["sides"]["new"][2]["kernel_release"], "6.12.0");
    assert!(v["rows"][3]["runs"]["new"].as_array().unwrap().len() == 3);
}
