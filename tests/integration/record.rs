//! Recordings end to end: live report teed to a file equals the report over that file,
//! kill -9 while recording, every kind of bad input, diff and export.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};
use std::time::Duration;

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("lbscope-rec-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).to_string_lossy().into_owned()
}

fn lbs(args: &[&str]) -> Output {
    lbscope().args(args).output().expect("lbscope runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn no_panic(o: &Output) {
    assert!(!text(&o.stderr).contains("panicked"), "{}", text(&o.stderr));
}

fn golden() -> String {
    format!(
        "{}/tests/fixtures/recordings/golden-v1.lbs",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Records a short mixed workload with `report -o`, returning (live stdout, file).
fn live_report_to_file(name: &str, json: bool) -> (String, String) {
    let file = tmp(name);
    let mut cmd = lbscope();
    cmd.args(["report", "-i", "0.5", "-o", &file]);
    if json {
        cmd.arg("--json");
    }
    let t = Tracer::start("lbscope", cmd, Some("tracing"), Duration::ZERO);
    let mut wl = example("mixed");
    wl.args([
        "--cpu-threads",
        "2",
        "--io-threads",
        "3",
        "--duration-ms",
        "1500",
    ]);
    assert!(wl.output().unwrap().status.success());
    let (ok, out, err) = t.interrupt();
    assert!(ok, "report -o exits 0: {err}");
    (out, file)
}

#[test]
fn report_of_a_recording_equals_the_live_report() {
    let Some(_g) = live_guard() else { return };
    for json in [true, false] {
        let (live, file) = live_report_to_file(&format!("rt-{json}.lbs"), json);
        assert!(live.lines().count() > 2, "live report printed intervals");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "recordings are private");
        let mut args = vec!["report", file.as_str(), "-i", "0.5"];
        if json {
            args.push("--json");
        }
        let o = lbs(&args);
        no_panic(&o);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(
            text(&o.stdout),
            live,
            "report FILE == live report (json={json})"
        );
        // A recording keeps what only a recording reads (wakings, for the Perfetto export).
        let o = lbs(&["export", file.as_str(), "--jsonl", "-"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            text(&o.stdout).contains(r#""type":"waking""#),
            "report -o records sched_waking"
        );
    }
}

#[test]
fn a_report_without_recording_leaves_out_what_only_a_recording_reads() {
    let Some(_g) = live_guard() else { return };
    let t = Tracer::start(
        "lbscope",
        {
            let mut c = lbscope();
            c.args(["report", "-i", "0.3"]);
            c
        },
        Some("tracing"),
        Duration::from_millis(500),
    );
    let (ok, _, err) = t.interrupt();
    assert!(ok, "{err}");
    let n = |e: &str| {
        e.split("tracing ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no tracepoint count in {e}"))
    };
    let file = tmp("no-waking.lbs");
    let t = Tracer::start(
        "lbscope",
        {
            let mut c = lbscope();
            c.args(["report", "-i", "0.3", "-o", &file]);
            c
        },
        Some("tracing"),
        Duration::from_millis(500),
    );
    let (ok, _, err_rec) = t.interrupt();
    assert!(ok, "{err_rec}");
    let _ = std::fs::remove_file(&file);
    assert_eq!(n(&err) + 1, n(&err_rec), "{err} / {err_rec}");
}

#[test]
fn kill_9_while_recording_leaves_a_readable_file() {
    let Some(_g) = live_guard() else { return };
    let file = tmp("killed.lbs");
    // Killed when dropped: a failed assertion must not leave it recording.
    let mut child = Reaped::spawn(lbscope().args(["record", "-q", "-o", &file]));
    let mut wl = example("mixed");
    wl.args([
        "--cpu-threads",
        "2",
        "--io-threads",
        "3",
        "--duration-ms",
        "3000",
    ]);
    assert!(wl.output().unwrap().status.success());
    let _ = Command::new("kill")
        .args(["-KILL", &child.0.id().to_string()])
        .status();
    let _ = child.0.wait();
    let o = lbs(&["report", &file, "--json", "-i", "1"]);
    no_panic(&o);
    let code = o.status.code().unwrap();
    assert!(
        code == 0 || code == 3,
        "readable (maybe incomplete): {code} {}",
        text(&o.stderr)
    );
    let events: u64 = text(&o.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["events"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert!(events > 10_000, "most of the run survived: {events} events");
}

#[test]
fn record_refuses_a_symlink_and_a_directory() {
    let target = tmp("target");
    std::fs::write(&target, b"keep").unwrap();
    let link = tmp("link.lbs");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for path in [link.as_str(), std::env::temp_dir().to_str().unwrap()] {
        let o = lbs(&["record", "-o", path, "--duration", "1"]);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
}

#[test]
fn golden_fixture_still_reads() {
    let o = lbs(&["report", &golden(), "--json", "-i", "1"]);
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).lines().count() >= 1);
}

#[test]
fn bad_recordings_say_what_is_wrong() {
    let good = std::fs::read(golden()).unwrap();
    let empty = tmp("empty.lbs");
    std::fs::write(&empty, b"").unwrap();
    let magic = tmp("magic.lbs");
    std::fs::write(&magic, b"not a recording at all, just text\n").unwrap();
    let newer = tmp("newer.lbs");
    let mut v = good.clone();
    v[8] = 99;
    std::fs::write(&newer, &v).unwrap();
    let missing = tmp("missing.lbs");
    let dir = std::env::temp_dir().to_string_lossy().into_owned();
    for (path, needle) in [
        (empty.as_str(), "empty"),
        (magic.as_str(), "not an lbscope recording"),
        (newer.as_str(), "newer"),
        (missing.as_str(), "No such file"),
        (dir.as_str(), "directory"),
    ] {
        let o = lbs(&["report", path]);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "{path}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(
            err.to_lowercase().contains(&needle.to_lowercase()),
            "{path}: '{needle}' in {err}"
        );
    }
}

#[test]
fn damaged_recordings_keep_what_is_readable() {
    let good = std::fs::read(golden()).unwrap();
    let full = lbs(&["report", &golden(), "--json", "-i", "1"]);
    let full_events: u64 = events_of(&full);
    // Truncated: the tail chunk goes, the rest stays.
    let trunc = tmp("trunc.lbs");
    std::fs::write(&trunc, &good[..good.len() - 7]).unwrap();
    // A flipped byte in the middle of the data.
    let flip = tmp("flip.lbs");
    let mut v = good.clone();
    let at = good.len() * 3 / 4;
    v[at] ^= 0x55;
    std::fs::write(&flip, &v).unwrap();
    for path in [trunc, flip] {
        let o = lbs(&["report", &path, "--json", "-i", "1"]);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(3), "incomplete: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains("damaged"), "{}", text(&o.stderr));
        let n = events_of(&o);
        assert!(
            n > 0 && n < full_events,
            "{path}: {n} of {full_events} events kept"
        );
    }
}

fn events_of(o: &Output) -> u64 {
    text(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["events"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn diff_of_a_file_with_itself_shows_no_change() {
    let o = lbs(&["diff", &golden(), &golden(), "--json", "-i", "0.1"]);
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let d: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).unwrap();
    let rows = d["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["significant"], false, "{r}");
        assert_eq!(r["baseline"], r["new"], "{r}");
    }
    let t = lbs(&["diff", &golden(), &golden()]);
    assert!(t.status.success());
    assert!(text(&t.stdout).contains("baseline"));
}

#[test]
fn diff_of_two_live_runs_and_exports() {
    let Some(_g) = live_guard() else { return };
    let (_, a) = live_report_to_file("a.lbs", true);
    let (_, b) = live_report_to_file("b.lbs", true);
    let o = lbs(&["diff", &a, &b, "-i", "0.25"]);
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // The table compares run-queue latency percentiles and migrations by reason.
    for row in ["run-queue latency", "p99", "migrations/s", "by reason"] {
        assert!(out.contains(row), "no {row:?} row in the diff:\n{out}");
    }

    let jsonl = tmp("a.jsonl");
    let o = lbs(&["export", &a, "--jsonl", &jsonl]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = std::fs::read_to_string(&jsonl).unwrap();
    assert!(lines.lines().count() > 1000);
    for l in lines.lines().take(100) {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["ts_ns"].is_u64() && v["kind"]["type"].is_string(), "{l}");
    }

    let trace = tmp("a.pftrace");
    let o = lbs(&["export", &a, "--perfetto", &trace]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let py = Command::new("python3")
        .arg(format!(
            "{}/tests/perfetto/check.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "Perfetto's own protos decode the export: {} {}",
        text(&py.stdout),
        text(&py.stderr)
    );
}

#[cfg(feature = "bpf")]
#[test]
fn a_task_s_cgroup_is_recorded_with_its_path() {
    let Some(_g) = live_guard() else { return };
    let mount = lbscope::source::live::cgroups::cgroup2_mount()
        .expect("a cgroup2 mount (unified hierarchy)");
    let mount = mount.display();
    let name = format!("lbscope-test-{}", std::process::id());
    let dir = format!("{mount}/{name}");
    std::fs::create_dir_all(&dir).unwrap();
    let file = tmp("cgroup.lbs");
    let mut cmd = lbscope();
    cmd.args(["record", "-o", &file]);
    let t = Tracer::start("lbscope record", cmd, Some("recording"), Duration::ZERO);
    let spin = example("spin");
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {dir}/cgroup.procs && exec {} --threads 2 --duration-ms 200",
            spin.get_program().to_string_lossy()
        ))
        .output()
        .unwrap();
    let (ok, _, err) = t.interrupt();
    let _ = std::fs::remove_dir(&dir);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(ok, "{err}");
    let pid: u32 = text(&o.stdout)
        .split_whitespace()
        .find_map(|w| w.strip_prefix("pid="))
        .and_then(|p| p.parse().ok())
        .expect("spin's ready line");
    let o = lbs(&["export", file.as_str(), "--jsonl", "-"]);
    let _ = std::fs::remove_file(&file);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // First seen as the shell (in the test's own cgroup), then at its exec in the new one.
    let want = format!(r#""type":"cgroup","pid":{pid},"#);
    let out = text(&o.stdout);
    let seen: Vec<&str> = out.lines().filter(|l| l.contains(&want)).collect();
    assert!(
        seen.last()
            .is_some_and(|l| l.contains(&format!(r#""path":"/{name}""#))),
        "{seen:?}"
    );
}
