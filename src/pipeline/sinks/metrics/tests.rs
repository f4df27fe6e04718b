//! The metrics sink's tests: an interval in the exposition, and the bound on cgroup labels.

use super::*;
use crate::pipeline::Sink;

#[test]
fn an_interval_becomes_counters_histograms_and_gauges_in_the_exposition() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lab/6.1-4node-overload.lbs");
    let (_, snaps, _) = crate::cmd::replay::analyze_recording(
        crate::pipeline::Source::file(&path).unwrap(),
        1_000_000_000,
        &Default::default(),
        &Default::default(),
    )
    .unwrap();
    let mut m = Metrics::new("6.1.0", "tracepoints with balancer hooks", "v6_1");
    let x = m.exposition();
    assert!(x.text().contains("lbscope_build_info{"), "{}", x.text());
    for s in &snaps {
        m.snapshot(s).unwrap();
    }
    let text = x.text();
    assert!(text.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");
    // Every migration of the run, summed from the counters.
    let total: u64 = snaps.iter().map(|s| s.migrations.total).sum();
    let counted: f64 = text
        .lines()
        .filter(|l| l.starts_with("lbscope_migrations_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(counted as u64, total);
    // The histogram's count and its +Inf bucket equal the run's samples.
    let samples: u64 = snaps.iter().map(|s| s.runqlat_us.count).sum();
    let value = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{prefix} in {text}"))
    };
    assert_eq!(value("lbscope_runqlat_seconds_count ") as u64, samples);
    assert_eq!(
        value("lbscope_runqlat_seconds_bucket{le=\"+Inf\"}") as u64,
        samples
    );
    assert_eq!(
        value("lbscope_intervals_total ") as usize,
        snaps.len(),
        "one per interval"
    );
    // One busiest-group type per domain holds 1.
    assert!(text.contains("lbscope_model_busiest_group_type{level=\"numa\""));
    assert!(text.contains("lbscope_idle_while_others_wait_seconds_total{"));
    assert!(text.contains("# TYPE lbscope_runqlat_seconds histogram"));
    // The process's own CPU: this test process analysed the recording above, so it ran.
    let own = value("lbscope_self_cpu_seconds_total ");
    assert!(own > 0.0 && own < 3600.0, "{own}");
    assert!(
        text.contains("# TYPE lbscope_self_cpu_seconds counter"),
        "{text}"
    );
}

/// The self CPU counter follows the process's run time up, never down (a thread that ended
/// leaves the sum), in seconds.
#[test]
fn self_cpu_only_grows() {
    let mut m = Metrics::new("6.1.0", "tracepoints", "v6_1");
    m.self_cpu_to(Some(2_500_000_000));
    m.self_cpu_to(Some(1_000_000_000));
    m.self_cpu_to(None);
    m.self_cpu_to(Some(3_000_000_000));
    assert!(
        (m.self_cpu.get() - 3.0).abs() < 1e-9,
        "{}",
        m.self_cpu.get()
    );
}

#[test]
fn cgroup_labels_are_bounded_over_the_run() {
    use crate::analyze::{CgroupLatency, CgroupMigrations};
    let mut m = Metrics::new("6.1.0", "tracepoints", "v6_1");
    let x = m.exposition();
    let (_, snaps, _) = crate::cmd::replay::analyze_recording(
        crate::pipeline::Source::file(
            &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/recordings/golden-v1.lbs"),
        )
        .unwrap(),
        1_000_000_000,
        &Default::default(),
        &Default::default(),
    )
    .unwrap();
    let mut s = snaps[0].clone();
    // Three intervals of 20 cgroups each, 60 distinct paths: 50 named, 10 as "other".
    for round in 0..3u64 {
        s.runqlat_by_cgroup = (0..20)
            .map(|i| CgroupLatency {
                path: format!("/c{}", round * 20 + i),
                latency: crate::analyze::LatencySummary {
                    count: 2,
                    log2_buckets: vec![0, 2],
                    ..Default::default()
                },
            })
            .collect();
        s.migrations_by_cgroup = (0..20)
            .map(|i| CgroupMigrations {
                path: format!("/c{}", round * 20 + i),
                total: 3,
                by_reason: Default::default(),
            })
            .collect();
        m.snapshot(&s).unwrap();
    }
    let text = x.text();
    let labels = |prefix: &str| {
        let mut v: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.split("cgroup=\"").nth(1)?.split('"').next())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let moves = labels("lbscope_cgroup_migrations_total{");
    assert_eq!(moves.len(), MAX_CGROUP_LABELS + 1, "{moves:?}");
    assert!(moves.contains(&OTHER_CGROUP) && moves.contains(&"/c49"));
    assert!(!moves.contains(&"/c50"));
    assert_eq!(labels("lbscope_cgroup_runqlat_seconds_count{"), moves);
    let value = |l: &str| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap();
    let other = text
        .lines()
        .find(|l| l.starts_with("lbscope_cgroup_migrations_total{cgroup=\"other\"}"))
        .map(value);
    assert_eq!(other, Some(30.0), "10 cgroups x 3 moves folded into other");
    let total: f64 = text
        .lines()
        .filter(|l| l.starts_with("lbscope_cgroup_migrations_total{"))
        .map(value)
        .sum();
    assert_eq!(total, 180.0, "nothing lost to the bound");
}
