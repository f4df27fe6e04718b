//! Live scenarios for the balancer model: each workload is recorded on this machine, the
//! recording reported as JSON, and the findings checked against what the scenario is built
//! for. Findings are about the whole machine, so the checks look at the workload's own tasks.

use crate::common::{cpus_to_myself, example, lbscope, live_guard, Tracer, Workload};
use std::time::Duration;

/// Records while `wl` runs, then returns every JSON snapshot of `report FILE --json`.
fn record_scenario(name: &str, wl: std::process::Command) -> (Vec<serde_json::Value>, Vec<u32>) {
    let file = format!(
        "{}/lbscope-model-{name}-{}.lbs",
        std::env::temp_dir().display(),
        std::process::id()
    );
    let mut cmd = lbscope();
    cmd.args(["record", "-o", &file]);
    let t = Tracer::start(
        "lbscope record",
        cmd,
        Some("recording"),
        Duration::from_millis(300),
    );
    let mut w = Workload::start(wl);
    w.go_and_wait(Duration::from_secs(30));
    let tids = w.tids.clone();
    let (ok, _, err) = t.interrupt();
    w.finish();
    assert!(ok, "record exits 0: {err}");
    let o = lbscope()
        // Every finding with its details: other tasks on the machine may raise many.
        .args([
            "report",
            &file,
            "--json",
            "-i",
            "0.5",
            "--max-findings",
            "1000000",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_file(&file);
    let snaps: Vec<serde_json::Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!snaps.is_empty());
    (snaps, tids)
}

/// Findings of `kind` over every snapshot.
fn findings<'a>(snaps: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    snaps
        .iter()
        .flat_map(|s| s["findings"].as_array().unwrap())
        .filter(|f| f["kind"] == kind)
        .collect()
}

fn count(snaps: &[serde_json::Value], kind: &str) -> u64 {
    snaps
        .iter()
        .map(|s| s["findings_by_kind"][kind].as_u64().unwrap())
        .sum()
}

fn involves(f: &serde_json::Value, tids: &[u32]) -> bool {
    f["pids"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| tids.contains(&(p.as_u64().unwrap() as u32)))
}

#[test]
fn pinned_spinners_overload_a_cpu_but_are_no_missed_pull() {
    let Some(_g) = live_guard() else { return };
    let mut wl = example("spin");
    wl.args(["--threads", "2", "--pin", "0", "--duration-ms", "1500"]);
    let (snaps, tids) = record_scenario("pinned", wl);
    // The model sees CPU 0 overloaded (two spinners on one CPU) in some interval.
    let overloaded = snaps
        .iter()
        .flat_map(|s| s["domains"].as_array().unwrap())
        .any(|d| {
            d["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["cpus"] == "0" && g["group_type"] == "overloaded")
        });
    assert!(overloaded, "CPU 0 classified overloaded");
    // Their affinity keeps them off CPU 1: the idle CPU could not have pulled them.
    let workers = &tids[1..];
    let bad: Vec<_> = findings(&snaps, "missed_pull")
        .into_iter()
        .filter(|f| involves(f, workers))
        .collect();
    assert!(
        bad.is_empty(),
        "pinned waiters are not missed pulls: {bad:?}"
    );
}

#[test]
fn balanced_spinners_raise_no_imbalance_findings() {
    let Some(_g) = live_guard() else { return };
    let mut wl = example("spin");
    wl.args(["--threads", "2", "--duration-ms", "1500"]);
    let (snaps, tids) = record_scenario("balanced", wl);
    let mine = |kind| -> Vec<&serde_json::Value> {
        findings(&snaps, kind)
            .into_iter()
            .filter(|f| involves(f, &tids))
            .collect()
    };
    let bad = mine("harmful_migration");
    assert!(
        bad.is_empty(),
        "harmful_migration on a balanced run: {bad:?}"
    );
    // The kernel itself now and then leaves one spinner waiting a little past the limit
    // while the other CPU idles (seen: 19 ms against 18 ms, about one run in eight, before
    // and after any change to the model): a real missed pull, which the model must report.
    // A balanced run holds at most one such stretch, and a short one; a model that took
    // the balanced spinners for stuck ones would report them again and again.
    let stuck = mine("missed_pull");
    let short = |f: &&serde_json::Value| f["evidence"]["idle_ns"].as_u64().unwrap() < 50_000_000;
    assert!(
        stuck.len() <= 1 && stuck.iter().all(short),
        "missed_pull on a balanced run: {stuck:?}"
    );
    assert_eq!(count(&snaps, "churn"), 0);
    assert_eq!(count(&snaps, "uneven_spread"), 0);
    for s in &snaps {
        assert_eq!(s["domains"].as_array().unwrap().len(), 1, "one MC domain");
        assert!(s["model_rules"].as_str().unwrap().starts_with('v'));
    }
}

#[test]
fn wakeup_storm_raises_busy_wakeups() {
    let Some(_g) = live_guard() else { return };
    // Eight workers and two message threads on two CPUs: wakeups land on busy CPUs.
    let mut wl = example("wakeup_storm");
    wl.args(["--duration-ms", "1500"]);
    let (snaps, tids) = record_scenario("storm", wl);
    let mine: Vec<_> = findings(&snaps, "busy_wakeup")
        .into_iter()
        .filter(|f| involves(f, &tids))
        .collect();
    assert!(!mine.is_empty(), "busy_wakeup of the storm's threads");
    let f = mine[0];
    assert_eq!(f["level"], "llc");
    assert!(f["evidence"]["idle_cpus"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    assert!(f["text"].as_str().unwrap().contains("woke onto CPU"));
    assert!(count(&snaps, "busy_wakeup") >= mine.len() as u64);
}

#[test]
fn bulk_synchronous_spin_reports_its_steps() {
    // The lab's group-imbalance job: every worker does 2 ms of CPU per step, then waits at
    // the barrier; all agree on the number of steps. Its steps count CPU time: no live
    // test's load may share the CPUs meanwhile.
    let _cpus = cpus_to_myself();
    let o = example("spin")
        .args(["--threads", "2", "--step-ms", "2", "--duration-ms", "300"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let done = out.lines().find(|l| l.starts_with("done ")).unwrap();
    let field = |k: &str| {
        done.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap_or_else(|| panic!("{k} in {done}"))
            .to_string()
    };
    let steps: u64 = field("steps=").parse().unwrap();
    assert!(steps >= 10, "{done}");
    let waits: Vec<f64> = field("barrier_wait_ms=")
        .split(',')
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(waits.len(), 2, "{done}");
    assert!(waits.iter().all(|w| *w >= 0.0 && *w < 300.0), "{done}");
    // A step is CPU time: two threads sharing one CPU need twice the wall time per step.
    let pinned = example("spin")
        .args(["--threads", "2", "--step-ms", "2", "--duration-ms", "300"])
        .args(["--pin", "0"])
        .output()
        .unwrap();
    let pinned = String::from_utf8(pinned.stdout).unwrap();
    let pinned_steps: u64 = pinned
        .split_whitespace()
        .find_map(|w| w.strip_prefix("steps="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        pinned_steps * 3 < steps * 2,
        "shared CPU: {pinned_steps} steps vs {steps} with a CPU each"
    );
    // Its own CPU work and the NUMA buffer do not mix.
    let bad = example("spin")
        .args(["--step-ms", "5", "--touch-mb", "1"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
