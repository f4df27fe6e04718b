//! `--cgroup` end to end: refusals and a cgroup no task was in (over the fixtures), and a
//! live run of a workload moved into a cgroup of its own, whose per-cgroup migration count
//! must equal `perf stat`'s count of its `sched_migrate_task` hits.

use crate::common::*;
use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;

const GOLDEN: &str = "tests/fixtures/recordings/golden-v1.lbs";
const LAB: &str = "tests/fixtures/lab/6.1-4node-overload.lbs";

fn lbs(args: &[&str]) -> Output {
    lbscope()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("lbscope runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn sum(snaps: &[Value], f: impl Fn(&Value) -> u64) -> u64 {
    snaps.iter().map(f).sum()
}

#[test]
fn a_cgroup_no_task_was_in_reports_nothing_and_names_the_cgroups_seen() {
    let o = lbs(&["report", LAB, "--json", "--cgroup", "/nonexistent"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let snaps = json_lines(&text(&o.stdout));
    assert!(!snaps.is_empty(), "the intervals are still printed");
    assert_eq!(
        sum(&snaps, |s| s["runqlat_us"]["count"].as_u64().unwrap()),
        0
    );
    assert_eq!(
        sum(&snaps, |s| s["migrations"]["total"].as_u64().unwrap()),
        0
    );
    let err = text(&o.stderr);
    let warning: Vec<&str> = err.lines().filter(|l| l.contains("--cgroup")).collect();
    assert_eq!(warning.len(), 1, "one line: {err}");
    assert!(
        warning[0].contains("no task of") && warning[0].contains("cgroups seen"),
        "{err}"
    );
    // The cgroups it names are the recording's (this one's tasks are all in the root).
    let all = lbs(&["report", LAB, "--json"]);
    let top = json_lines(&text(&all.stdout))
        .iter()
        .flat_map(|s| s["runqlat_by_cgroup"].as_array().unwrap().clone())
        .next()
        .expect("the lab recording names its cgroups")["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(warning[0].contains(&format!("{top} (")), "{err}");
    // The root takes everything.
    let o = lbs(&["report", LAB, "--json", "--cgroup", "/sys/fs/cgroup/"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout == all.stdout, "the root filters nothing");
}

#[test]
fn cgroup_refusals_name_the_flag() {
    for (args, why) in [
        (
            vec!["report", GOLDEN, "--cgroup", "system.slice"],
            "a cgroup v2 directory",
        ),
        (
            vec!["report", GOLDEN, "--cgroup", "/a/../b"],
            "a cgroup v2 directory",
        ),
        (
            vec!["record", "-o", "/tmp/x.lbs", "--cgroup", "/a"],
            "filter when reading it",
        ),
    ] {
        let o = lbs(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains("--cgroup") && err.contains(why),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

/// A cgroup made for one test, removed at the end (its tasks moved back to the root first).
struct TestCgroup {
    mount: String,
    name: String,
    pid: Option<u32>,
}

impl TestCgroup {
    fn dir(&self) -> String {
        format!("{}/{}", self.mount, self.name)
    }

    fn enter(&mut self, pid: u32) {
        std::fs::write(format!("{}/cgroup.procs", self.dir()), pid.to_string())
            .expect("write the workload's pid into cgroup.procs");
        self.pid = Some(pid);
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            let _ = std::fs::write(format!("{}/cgroup.procs", self.mount), pid.to_string());
        }
        let _ = std::fs::remove_dir(self.dir());
    }
}

/// The cgroup2 mount, mounting it at /sys/fs/cgroup when there is none.
fn cgroup2_mount() -> String {
    if let Some(m) = lbscope::source::cgroup2::cgroup2_mount() {
        return m.display().to_string();
    }
    let ok = Command::new("mount")
        .args(["-t", "cgroup2", "none", "/sys/fs/cgroup"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mount -t cgroup2 none /sys/fs/cgroup");
    "/sys/fs/cgroup".into()
}

#[cfg(feature = "bpf")]
#[test]
fn a_cgroup_s_migrations_match_perf_and_its_latency_is_its_own() {
    let Some(_g) = live_guard() else { return };
    ensure_tracefs();
    let mount = cgroup2_mount();
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("lbscope-cg-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.display().to_string();
    let comm = format!("lbscg{}", id % 100_000);
    let mut cg = TestCgroup {
        mount: mount.clone(),
        name: format!("lbscope-test-cg-{id}"),
        pid: None,
    };
    std::fs::create_dir_all(cg.dir()).expect("mkdir a cgroup");
    let path = format!("/{}", cg.name);

    let mut wl_cmd = example("wakeup_storm");
    wl_cmd.args(["--comm", &comm, "--workers", "6", "--think-us", "500"]);
    wl_cmd.args(["--duration-ms", "3000"]);
    let mut wl = Workload::start(wl_cmd);
    cg.enter(wl.pid);
    // Its threads, created before the move, followed it.
    for tid in &wl.tids {
        let c = std::fs::read_to_string(format!("/proc/{}/task/{tid}/cgroup", wl.pid))
            .unwrap_or_default();
        assert!(
            c.lines().any(|l| l == format!("0::{path}")),
            "thread {tid} is in {path}: {c}"
        );
    }

    let stat_out = format!("{dir}/perf-stat.txt");
    let mut perf = Command::new(require_tool("perf", "linux-perf"));
    perf.args(["stat", "-x,", "-o", &stat_out, "-a", "-e"]);
    perf.args(["sched:sched_migrate_task", "--filter"]);
    perf.arg(format!("comm == \"{comm}\""));
    let perf = Tracer::start("perf", perf, None, Duration::from_secs(1));
    let file = format!("{dir}/cg.lbs");
    let mut rec = lbscope();
    rec.args(["record", "-o", &file]);
    let rec = Tracer::start("lbscope record", rec, Some("recording"), Duration::ZERO);
    wl.go_and_wait(Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    let (ok, _, err) = rec.interrupt();
    assert!(ok, "lbscope record exits 0 on SIGINT: {err}");
    let _ = perf.interrupt();
    let (pid, tids) = (wl.pid, wl.tids.clone());
    drop(cg);
    wl.finish();

    let text_of = std::fs::read_to_string(&stat_out).expect("perf stat wrote its output");
    let perf_n: u64 = text_of
        .lines()
        .find(|l| l.contains("sched:sched_migrate_task"))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in perf stat output: {text_of}"));
    // With the mount prefix, as a user would paste it.
    let o = lbs(&[
        "report",
        &file,
        "--json",
        "-i",
        "3600",
        "--cgroup",
        &format!("{mount}{path}"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!text(&o.stderr).contains("--cgroup"), "{}", text(&o.stderr));
    let snaps = json_lines(&text(&o.stdout));
    let mut by_cgroup = 0;
    for s in &snaps {
        for c in s["migrations_by_cgroup"].as_array().unwrap() {
            assert_eq!(
                c["path"],
                path.as_str(),
                "only the cgroup's own tasks count"
            );
            by_cgroup += c["total"].as_u64().unwrap();
        }
        for c in s["runqlat_by_cgroup"].as_array().unwrap() {
            assert_eq!(c["path"], path.as_str(), "only the cgroup's own tasks wait");
        }
        for p in s["runqlat_by_process"].as_array().unwrap() {
            assert_eq!(p["tgid"].as_u64(), Some(u64::from(pid)), "{p}");
        }
    }
    let total = sum(&snaps, |s| s["migrations"]["total"].as_u64().unwrap());
    let samples = sum(&snaps, |s| s["runqlat_us"]["count"].as_u64().unwrap());
    eprintln!("perf {perf_n}, lbscope {by_cgroup} in {path} ({total} in all), {samples} samples of {} threads", tids.len());
    let _ = std::fs::remove_file(&file);
    // How often it migrates depends on what else the machine runs (15 to 80 on two shared
    // CPUs): a few moves are enough for the comparison to mean something.
    assert!(perf_n >= 5, "the workload migrated (perf counted {perf_n})");
    assert!(samples > 0, "the cgroup's tasks waited");
    assert_eq!(by_cgroup, total, "the filtered total is the cgroup's");
    // Moves the kernel ran no BPF program for: see live::migrations_match_perf.
    let unseen = sum(&snaps, |s| s["migrations"]["unseen"].as_u64().unwrap());
    assert!(
        total <= perf_n && perf_n <= total + unseen,
        "per-cgroup migrations vs perf stat: perf {perf_n}, lbscope {total} recorded and \
         {unseen} unseen"
    );
}
