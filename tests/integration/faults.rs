//! Faults a production run meets: a ring buffer too small for the load, a full disk, a
//! recording made under sudo, and a host that lets anyone load BPF.

use crate::common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Output};
use std::time::Duration;

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lbscope-faults-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn no_panic(o: &Output) {
    assert!(!text(&o.stderr).contains("panicked"), "{}", text(&o.stderr));
}

/// A busy wakeup load: 2 ping-pong pairs, about 10 us per round trip.
fn storm(rounds: u32) -> Output {
    let mut wl = example("pingpong");
    wl.args(["--pairs", "2", "--rounds", &rounds.to_string()]);
    let o = wl.output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    o
}

#[test]
fn a_tiny_ring_buffer_loses_events_and_every_output_says_so() {
    let Some(_g) = live_guard() else { return };
    let file = tmpdir("tiny").join("tiny.lbs");
    let mut cmd = lbscope();
    cmd.args(["report", "--json", "-i", "0.5", "--ringbuf-kb", "4", "-o"])
        .arg(&file);
    let t = Tracer::start("lbscope", cmd, Some("tracing"), Duration::ZERO);
    storm(150_000);
    let (ok, out, err) = t.interrupt();
    assert!(ok, "{err}");
    let live = json_lines(&out);
    let lost: u64 = live
        .iter()
        .map(|s| s["lost_events"].as_u64().unwrap())
        .sum();
    assert!(lost > 0, "a 4 KiB ring buffer keeps up with nothing: {out}");
    for s in &live {
        let by_cpu: u64 = s["lost_by_cpu"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(by_cpu, s["lost_events"].as_u64().unwrap(), "per CPU: {s}");
    }
    // The recording keeps the losses: its report counts the same, and its text marks them.
    let o = lbscope()
        .args(["report", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let replay: u64 = json_lines(&text(&o.stdout))
        .iter()
        .map(|s| s["lost_events"].as_u64().unwrap())
        .sum();
    assert_eq!(replay, lost);
    let o = lbscope().arg("report").arg(&file).output().unwrap();
    let t = text(&o.stdout);
    assert!(t.contains("LOST") && t.contains("INCOMPLETE"), "{t}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn a_full_disk_stops_the_recording_with_a_clear_error_and_keeps_what_was_flushed() {
    let Some(_g) = live_guard() else { return };
    let dir = tmpdir("full");
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=96k", "lbscope-full"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(st.success(), "mount a small tmpfs (needs root)");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(dir.clone());
    let file = dir.join("r.lbs");
    let mut cmd = lbscope();
    cmd.args(["record", "--duration", "30", "-o"]).arg(&file);
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // About 4 bytes per event: a few busy seconds fill 96 KiB.
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(25),
            "the recording never hit the full disk"
        );
        storm(50_000);
    }
    let o = child.wait_with_output().unwrap();
    no_panic(&o);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "a full disk is an error: {err}");
    assert!(err.contains("No space left on device"), "says why: {err}");
    assert!(
        err.contains(&file.display().to_string()),
        "names the file: {err}"
    );
    // Everything flushed before the disk filled is still there.
    let o = lbscope()
        .args(["report", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    no_panic(&o);
    let code = o.status.code().unwrap();
    assert!(
        code == 0 || code == 3,
        "complete or marked incomplete: {code}"
    );
    let events: u64 = json_lines(&text(&o.stdout))
        .iter()
        .map(|s| s["events"].as_u64().unwrap())
        .sum();
    assert!(events > 1000, "{events} events read back");
}

#[test]
fn a_recording_made_under_sudo_belongs_to_the_invoking_user() {
    let Some(_g) = live_guard() else { return };
    let file = tmpdir("sudo").join("mine.lbs");
    let o = lbscope()
        .args(["record", "--duration", "0.5", "--quiet", "-o"])
        .arg(&file)
        .env("SUDO_UID", "65534")
        .env("SUDO_GID", "65534")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let m = std::fs::metadata(&file).unwrap();
    assert_eq!((m.uid(), m.gid()), (65534, 65534));
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    let _ = std::fs::remove_file(&file);
}

#[test]
fn doctor_reports_whether_unprivileged_bpf_is_allowed() {
    let o = lbscope().args(["doctor", "--json"]).output().unwrap();
    no_panic(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("doctor --json");
    let s = v.to_string();
    let setting = std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled").unwrap();
    let want = if setting.trim() == "0" { "warn" } else { "ok" };
    assert!(s.contains("unprivileged_bpf") && s.contains(want), "{s}");
}

#[test]
fn exited_tasks_are_forgotten_so_memory_does_not_grow_with_forks() {
    let Some(_g) = live_guard() else { return };
    let hackbench = require_tool("hackbench", "rt-tests");
    let file = tmpdir("forks").join("forks.lbs");
    let mut cmd = lbscope();
    cmd.args(["record", "--quiet", "-o"]).arg(&file);
    let t = Tracer::start("lbscope", cmd, None, Duration::from_millis(800));
    for _ in 0..5 {
        let o = example("forker")
            .args(["--count", "300", "--parallel", "4", "--spin-us", "200"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        let o = example("forker")
            .args(["--count", "300", "--threads-mode", "--spin-us", "200"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        // 160 processes that exit while their peers still write to them.
        let o = Command::new(&hackbench)
            .args(["-g", "4", "-l", "100"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let (ok, _, err) = t.interrupt();
    assert!(ok, "{err}");
    // Replay through the analyzer: 4000 tasks came and went; what it still tracks is bounded
    // by the tasks alive, not by the tasks ever seen.
    let mut r = lbscope::record::Reader::open(&file).unwrap();
    let mut a = lbscope::analyze::Analyzer::new(
        r.header().topology.clone(),
        lbscope::analyze::AnalyzerConfig::default(),
    );
    let (mut snaps, mut exits) = (Vec::new(), 0);
    while let Some(evs) = r.next_chunk() {
        for e in &evs {
            exits += matches!(e.kind, lbscope::event::EventKind::Exit { .. }) as usize;
            a.push(e, &mut snaps);
        }
        snaps.clear();
    }
    assert!(exits >= 3000, "{exits} exits seen");
    // Threads still alive keep their state; of the ones gone, only those whose exit was in
    // flight when the recording stopped may remain.
    let gone: Vec<u32> = a
        .tracked_pids()
        .filter(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .collect();
    assert!(
        gone.len() <= 10,
        "{} of {} tracked tasks are gone: {gone:?}",
        gone.len(),
        a.tracked_tasks()
    );
    let _ = std::fs::remove_file(&file);
}
