//! Live tests against the real kernel, each checked against a tool nobody here wrote:
//! `perf record` for migration counts, a `bpftrace` kstack script for migration reasons,
//! libbpf-tools `runqlat` for run-queue latency, and a pinned workload for
//! idle-while-others-wait.

use crate::common::*;
use lbscope::event::Reason;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::process::Command;
use std::time::Duration;

fn unique_comm(prefix: &str) -> String {
    format!("{prefix}{}", std::process::id() % 100_000)
}

/// The last JSON interval lbscope printed (the partial one flushed at SIGINT).
fn last_json(out: &str) -> Value {
    let line = out
        .lines()
        .rfind(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line in lbscope output:\n{out}"));
    serde_json::from_str(line).expect("valid JSON")
}

fn report_cmd(extra: &[&str]) -> Command {
    let mut c = lbscope();
    c.args(["report", "--json"]).args(extra);
    c
}

fn count_of(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_u64().unwrap_or(0)
}

/// `perf script` lines of sched_migrate_task: (pid, orig, dest).
fn perf_migrations(data: &str) -> Vec<(u32, u32, u32)> {
    let out = Command::new(require_tool("perf", "linux-perf"))
        .args(["script", "-i", data, "-F", "trace"])
        .output()
        .expect("perf script runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| {
            let field = |k: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .and_then(|v| v.parse::<u32>().ok())
            };
            Some((field("pid=")?, field("orig_cpu=")?, field("dest_cpu=")?))
        })
        .collect()
}

/// bpftrace output of `@m[pid, kstack] = count()`: (pid, frames, count).
fn bpftrace_stacks(out: &str) -> Vec<(u32, Vec<String>, u64)> {
    let mut v = Vec::new();
    let mut cur: Option<(u32, Vec<String>)> = None;
    for line in out.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("@m[") {
            let pid = rest.trim_end_matches(',').trim().parse().unwrap_or(0);
            cur = Some((pid, Vec::new()));
        } else if let Some(rest) = t.strip_prefix("]: ") {
            if let Some((pid, frames)) = cur.take() {
                v.push((pid, frames, rest.trim().parse().unwrap_or(0)));
            }
        } else if let Some((_, frames)) = cur.as_mut() {
            if !t.is_empty() {
                let f = t.split('+').next().unwrap_or(t).to_string();
                frames.push(f);
            }
        }
    }
    v
}

#[test]
fn migrations_match_perf_and_bpftrace_reasons() {
    let Some(_g) = live_guard() else { return };
    ensure_tracefs();
    let comm = unique_comm("lbsmig");
    let mut wl_cmd = example("pingpong");
    wl_cmd.args([
        "--comm",
        &comm,
        "--pairs",
        "3",
        "--rounds",
        "20000",
        "--spinners",
        "1",
    ]);
    wl_cmd.args(["--duration-ms", "3000"]);
    let mut wl = Workload::start(wl_cmd);

    let dir = tempdir();
    let data = format!("{dir}/perf.data");
    let mut perf = Command::new(require_tool("perf", "linux-perf"));
    perf.args([
        "record",
        "-q",
        "-e",
        "sched:sched_migrate_task",
        "-a",
        "-o",
        &data,
    ]);
    let perf = Tracer::start("perf", perf, None, Duration::from_secs(2));
    let mut bt = Command::new(require_tool("bpftrace", "bpftrace"));
    bt.args([
        "-e",
        "tracepoint:sched:sched_migrate_task /args.orig_cpu != args.dest_cpu/ { @m[args.pid, kstack] = count(); }",
    ]);
    let bt = Tracer::start(
        "bpftrace",
        bt,
        Some("Attaching"),
        Duration::from_millis(500),
    );
    let lbs = Tracer::start(
        "lbscope",
        report_cmd(&["-i", "3600", "--comm", &comm]),
        Some("tracing"),
        Duration::ZERO,
    );

    wl.go_and_wait(Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    let (ok, out, err) = lbs.interrupt();
    assert!(ok, "lbscope exits 0 on SIGINT: {err}");
    let (_, bt_out, _) = bt.interrupt();
    let _ = perf.interrupt();
    let tids: HashSet<u32> = wl.tids.iter().copied().collect();
    wl.finish();

    let perf_n = perf_migrations(&data)
        .into_iter()
        .filter(|(pid, o, d)| tids.contains(pid) && o != d)
        .count() as u64;
    let snap = last_json(&out);
    let total = count_of(&snap, &["migrations", "total"]);
    let forks = count_of(&snap, &["migrations", "by_reason", "fork"]);
    assert_eq!(
        count_of(&snap, &["migrations", "context_classified"]),
        0,
        "every migration had its stack"
    );
    assert!(perf_n > 20, "the workload migrated (perf saw {perf_n})");
    assert_eq!(
        total - forks,
        perf_n,
        "lbscope and perf count the workload's migrations alike"
    );

    // Reasons: bpftrace's kstacks classified by the same table.
    let mut expected: BTreeMap<&str, u64> = BTreeMap::new();
    for (pid, frames, n) in bpftrace_stacks(&bt_out) {
        if !tids.contains(&pid) {
            continue;
        }
        let r = lbscope::reason::classify_frames(&frames).nominal();
        *expected.entry(r.name()).or_default() += n;
    }
    for r in Reason::ALL {
        if r == Reason::Fork {
            continue;
        }
        let ours = count_of(&snap, &["migrations", "by_reason", r.name()]);
        let theirs = expected.get(r.name()).copied().unwrap_or(0);
        assert_eq!(
            ours,
            theirs,
            "reason {}: lbscope vs bpftrace kstack",
            r.name()
        );
    }
    eprintln!("perf {perf_n} migrations; reasons {expected:?}");
}

/// runqlat's histogram: slot lower bound -> count.
fn runqlat_hist(out: &str) -> BTreeMap<u64, u64> {
    let mut h = BTreeMap::new();
    for l in out.lines() {
        let Some((range, rest)) = l.split_once(':') else {
            continue;
        };
        let Some((lo, _)) = range.split_once("->") else {
            continue;
        };
        let (Ok(lo), Some(n)) = (
            lo.trim().parse::<u64>(),
            rest.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok()),
        ) else {
            continue;
        };
        *h.entry(lo).or_default() += n;
    }
    h
}

#[test]
fn runqlat_matches_libbpf_tools() {
    let Some(_g) = live_guard() else { return };
    let comm = unique_comm("lbslat");
    let mut wl_cmd = example("pingpong");
    wl_cmd.args([
        "--comm",
        &comm,
        "--pairs",
        "2",
        "--rounds",
        "20000",
        "--spinners",
        "1",
    ]);
    wl_cmd.args(["--duration-ms", "3000"]);
    let mut wl = Workload::start(wl_cmd);
    let pid = wl.pid.to_string();

    let mut rq = Command::new(require_tool("runqlat", "libbpf-tools"));
    rq.args(["-p", &pid]);
    let rq = Tracer::start("runqlat", rq, Some("Tracing"), Duration::from_millis(200));
    let lbs = Tracer::start(
        "lbscope",
        report_cmd(&["-i", "3600", "-p", &pid]),
        Some("tracing"),
        Duration::ZERO,
    );
    wl.go_and_wait(Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    let (ok, out, err) = lbs.interrupt();
    assert!(ok, "lbscope exits 0: {err}");
    let (_, rq_out, _) = rq.interrupt();
    wl.finish();

    let theirs = runqlat_hist(&rq_out);
    let their_total: u64 = theirs.values().sum();
    let snap = last_json(&out);
    let ours: Vec<u64> = snap["runqlat_us"]["log2_buckets"]
        .as_array()
        .expect("log2_buckets")
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let our_total = count_of(&snap, &["runqlat_us", "count"]);
    assert_eq!(
        our_total,
        ours.iter().sum::<u64>(),
        "count is the buckets' sum"
    );
    assert!(their_total > 1000, "runqlat saw the workload: {rq_out}");
    let diff = our_total.abs_diff(their_total) as f64 / their_total as f64;
    assert!(
        diff <= 0.01,
        "sample counts within 1%: lbscope {our_total}, runqlat {their_total}"
    );
    let slots = ours.len().max(theirs.len() + 1);
    for slot in 0..slots {
        let lo = if slot == 0 { 0 } else { 1u64 << slot };
        let a = ours.get(slot).copied().unwrap_or(0);
        let b = theirs.get(&lo).copied().unwrap_or(0);
        let d = a.abs_diff(b) as f64 / their_total as f64;
        assert!(
            d <= 0.02,
            "slot {lo}: lbscope {a}, runqlat {b} (differ by {:.1}% of the total)",
            d * 100.0
        );
    }
    eprintln!("runqlat total {their_total}, lbscope {our_total}");
}

/// The `llc` domain's idle-while-waiting entry of each interval fully inside the workload.
fn iww_fractions(out: &str) -> Vec<(f64, f64)> {
    let snaps: Vec<Value> = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Drop the first (attach, gate) and the last two (workload end, partial interval).
    let inner = snaps.len().saturating_sub(2);
    snaps
        .iter()
        .take(inner)
        .skip(1)
        .filter_map(|s| {
            s["idle_while_waiting"].as_array()?.iter().find_map(|d| {
                Some((
                    d["movable_fraction"].as_f64()?,
                    d["pinned_fraction"].as_f64()?,
                ))
            })
        })
        .collect()
}

fn spin_run(pin: Option<&str>) -> Vec<(f64, f64)> {
    let comm = unique_comm("lbsspin");
    let mut wl_cmd = example("spin");
    wl_cmd.args(["--comm", &comm, "--threads", "3", "--duration-ms", "4500"]);
    if let Some(p) = pin {
        wl_cmd.args(["--pin", p]);
    }
    let mut wl = Workload::start(wl_cmd);
    let lbs = Tracer::start(
        "lbscope",
        report_cmd(&["-i", "1"]),
        Some("tracing"),
        Duration::ZERO,
    );
    wl.go_and_wait(Duration::from_secs(30));
    let (ok, out, err) = lbs.interrupt();
    assert!(ok, "lbscope exits 0: {err}");
    wl.finish();
    iww_fractions(&out)
}

#[test]
fn idle_while_waiting_pinned_vs_movable() {
    let Some(_g) = live_guard() else { return };
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpus = lbscope::cpuset::CpuSet::parse_list(&online).unwrap();
    assert!(cpus.len() >= 2, "needs 2 CPUs");

    let pinned = spin_run(Some("0"));
    assert!(pinned.len() >= 2, "at least two full intervals: {pinned:?}");
    for (movable, pinned_f) in &pinned {
        assert!(
            *movable < 0.05,
            "pinned waiters are not movable: {pinned:?}"
        );
        assert!(
            *pinned_f > 0.9,
            "CPU 1 idles while pinned tasks wait: {pinned:?}"
        );
    }

    let free = spin_run(None);
    assert!(free.len() >= 2, "at least two full intervals: {free:?}");
    for (movable, _) in &free {
        assert!(*movable < 0.1, "unpinned spinners are spread: {free:?}");
    }
}

fn tempdir() -> String {
    let d = std::env::temp_dir().join(format!("lbscope-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.to_string_lossy().into_owned()
}
