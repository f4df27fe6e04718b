//! Live tests against the real kernel, each checked against a tool nobody here wrote:
//! `perf stat` for migration counts, a `bpftrace` kstack script for migration reasons (sorted
//! by the test's own table of kernel call paths),
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

/// `@n[pid]: count` entries of a bpftrace run's output: (pid, count).
fn bpftrace_counts(out: &str) -> Vec<(u32, u64)> {
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("@n["))
        .filter_map(|rest| {
            let (pid, n) = rest.split_once("]: ")?;
            Some((pid.trim().parse().ok()?, n.trim().parse().ok()?))
        })
        .collect()
}

/// `@m[pid, kstack]: count` entries of a bpftrace run's output: (pid, frames, count).
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

/// A gated `wakeup_storm` run traced by lbscope (`--comm`, with `env` set) and one reference
/// tool. Returns lbscope's final interval, the reference's stdout, and the workload's tids.
fn migration_run(
    comm: &str,
    reference: Command,
    ready: Option<&str>,
    settle: Duration,
    env: &[(&str, &str)],
) -> (Value, String, HashSet<u32>) {
    // Message threads waking workers that think: wakeup placements, periodic, nohz and
    // newidle balancing all move them on two CPUs.
    let mut wl_cmd = example("wakeup_storm");
    wl_cmd.args(["--comm", comm, "--workers", "6", "--think-us", "500"]);
    // A 1 ms pause between rounds lets CPUs go idle, so wakeups and newly idle
    // balancing move tasks: 230-338 migrations in 3 s here, against 16-118 with none.
    wl_cmd.args(["--duration-ms", "3000", "--interval-us", "1000"]);
    let mut wl = Workload::start(wl_cmd);
    let reference = Tracer::start("reference", reference, ready, settle);
    let mut lbs_cmd = report_cmd(&["-i", "3600", "--comm", comm]);
    lbs_cmd.envs(env.iter().copied());
    let lbs = Tracer::start("lbscope", lbs_cmd, Some("tracing"), Duration::ZERO);
    wl.go_and_wait(Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    let (ok, out, err) = lbs.interrupt();
    assert!(ok, "lbscope exits 0 on SIGINT: {err}");
    let (_, ref_out, _) = reference.interrupt();
    let tids: HashSet<u32> = wl.tids.iter().copied().collect();
    wl.finish();
    let snap = last_json(&out);
    assert_eq!(
        count_of(&snap, &["migrations", "context_classified"]),
        0,
        "every migration had its stack"
    );
    assert_eq!(
        count_of(&snap, &["migrations", "by_reason", "fork"]),
        0,
        "the gated workload created no thread while traced"
    );
    (snap, ref_out, tids)
}

/// perf's own count of the workload's `sched_migrate_task` hits, from a `perf stat`
/// output file (`-x,`).
fn perf_stat_count(path: &str) -> u64 {
    let text = std::fs::read_to_string(path).expect("perf stat wrote its output");
    text.lines()
        .find(|l| l.contains("sched:sched_migrate_task"))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in perf stat output: {text}"))
}

/// perf counts in the kernel (`perf stat`, the tracepoint filtered to the workload's comm),
/// so nothing can be dropped between the tracepoint and the count. `perf record` on this
/// kernel silently drops samples taken in softirq context (nohz and periodic balance
/// migrations: about 15% of this workload's, with no LOST record), so its sample count is
/// logged beside, not compared.
#[test]
fn migrations_match_perf() {
    let Some(_g) = live_guard() else { return };
    ensure_tracefs();
    // Once in about 110 runs here perf counted one move fewer than lbscope recorded (314
    // against 313, with perf's window around lbscope's); no cause was found, so such a run is
    // repeated once, and a second one fails.
    for attempt in 1..=2 {
        let (perf_n, total, unseen) = perf_and_lbscope_moves();
        assert!(perf_n > 20, "the workload migrated (perf counted {perf_n})");
        if total > perf_n && attempt == 1 {
            eprintln!("perf counted {perf_n}, fewer than lbscope's {total}: repeating the run");
            continue;
        }
        // Where the kernel runs no BPF program at a tracepoint hit, perf may still count the
        // move; lbscope infers it from where the task ran next (`migrations.unseen`). On this
        // machine BPF programs do not run while a thread of pid 1 (the VM's agent) is
        // current, interrupts on top of it included (bpftrace misses the same hits, and no
        // recursion miss is counted); perf and tracefs miss that thread's own task context
        // too, where a newly idle balance can pull a workload thread: such a move is unseen
        // by all three and inferred by lbscope alone. So perf's count lies between lbscope's
        // recorded moves and those plus the unseen ones (both ends reached in 40 runs here:
        // 31 with nothing unseen, all equal; 60 more runs all equal, 2 with one unseen).
        assert!(
            total <= perf_n,
            "lbscope records no migration perf does not count: lbscope {total}, perf {perf_n}"
        );
        assert!(
            perf_n <= total + unseen,
            "every migration perf counts beyond lbscope's records is one lbscope infers: \
             perf {perf_n}, lbscope {total} recorded and {unseen} unseen"
        );
        return;
    }
}

/// One gated run under `perf stat` and lbscope: perf's count of the workload's moves,
/// lbscope's recorded moves and its unseen ones.
fn perf_and_lbscope_moves() -> (u64, u64, u64) {
    let dir = tempdir();
    let stat_out = format!("{dir}/perf-stat.txt");
    let comm = unique_comm("lbsmig");
    let mut perf = Command::new(require_tool("perf", "linux-perf"));
    perf.args([
        "stat",
        "-x,",
        "-o",
        &stat_out,
        "-a",
        "-e",
        "sched:sched_migrate_task",
    ]);
    perf.args(["--filter", &format!("comm == \"{comm}\"")]);
    let (snap, _, _) = migration_run(&comm, perf, None, Duration::from_secs(1), &[]);
    let perf_n = perf_stat_count(&stat_out);
    eprintln!(
        "perf {perf_n}, lbscope {} (switch gaps {})",
        snap["migrations"], snap["switch_gaps"]
    );
    (
        perf_n,
        count_of(&snap, &["migrations", "total"]),
        count_of(&snap, &["migrations", "unseen"]),
    )
}

/// Runs apart from perf: a BPF program attached through a perf tracepoint event (as
/// bpftrace's `tracepoint:` probes are) filters that tracepoint's samples for every perf
/// user (perf_trace_run_bpf_submit), so perf would undercount beside it.
#[test]
fn migration_reasons_match_bpftrace_kstacks() {
    reasons_against_bpftrace(&[]);
}

/// The same with a stack map of one bucket: bpf_get_stackid refuses every stack but the
/// first with -EEXIST (a bucket holding another stack), as it does for good on a big map
/// whose buckets two of a run's stacks share; those moves send their frames inline and keep
/// their exact reason (without, they would be classified from their context).
#[test]
fn migration_reasons_hold_when_the_stack_map_refuses_stacks() {
    let distinct = reasons_against_bpftrace(&[("LBSCOPE_STACK_MAP_ENTRIES", "1")]);
    assert!(
        distinct >= 2,
        "the run needs two stacks or more to fill a one-bucket map: {distinct}"
    );
}

/// Migration reasons of a gated run against bpftrace's kernel stacks, with `env` set for
/// lbscope; returns how many distinct stacks bpftrace saw for the workload's moves other
/// than wakeups.
fn reasons_against_bpftrace(env: &[(&str, &str)]) -> usize {
    let Some(_g) = live_guard() else { return 0 };
    ensure_tracefs();
    let mut bt = Command::new(require_tool("bpftrace", "bpftrace"));
    bt.args([
        "-B",
        "none",
        "-e",
        "tracepoint:sched:sched_migrate_task /args->orig_cpu != args->dest_cpu/ { @m[args->pid, kstack] = count(); @n[args->pid] = count(); }",
    ]);
    let comm = unique_comm("lbsrsn");
    let (snap, bt_out, tids) = migration_run(
        &comm,
        bt,
        Some("Attaching"),
        Duration::from_millis(500),
        env,
    );
    // bpftrace's kstacks classified by this test's own table (stack_reason), not lbscope's.
    let mut expected: BTreeMap<&str, u64> = BTreeMap::new();
    let mut distinct = HashSet::new();
    for (pid, frames, n) in bpftrace_stacks(&bt_out) {
        if !tids.contains(&pid) {
            continue;
        }
        let reason = stack_reason(&frames);
        *expected.entry(reason).or_default() += n;
        // A waking task's move takes no stack in lbscope (its state names it).
        if reason != "wakeup" {
            distinct.insert(frames);
        }
    }
    let bt_total: u64 = expected.values().sum();
    // The same moves counted by task alone, without a stack in the key: when the two
    // totals differ, bpftrace lost stack-keyed updates, not lbscope.
    let plain: u64 = bpftrace_counts(&bt_out)
        .into_iter()
        .filter(|(pid, _)| tids.contains(pid))
        .map(|(_, n)| n)
        .sum();
    eprintln!(
        "bpftrace {bt_total} ({plain} counted by task alone) {expected:?}, lbscope {}",
        snap["migrations"]
    );
    assert!(
        bt_total > 20,
        "the workload migrated (bpftrace saw {bt_total})"
    );
    assert_eq!(
        count_of(&snap, &["migrations", "total"]),
        bt_total,
        "lbscope's moves against bpftrace's stack-keyed count ({plain} by task alone)"
    );
    let ours = |r: &str| count_of(&snap, &["migrations", "by_reason", r]);
    let theirs = |r: &str| expected.get(r).copied().unwrap_or(0);
    // A stack alone cannot tell exec, affinity and NUMA moves made by the stopper apart
    // (lbscope adds the task's context): those three are compared as one.
    let stopper_made = ["exec", "affinity", "numa_balancing"];
    for r in Reason::ALL.iter().map(|r| r.name()) {
        if !stopper_made.contains(&r) {
            assert_eq!(ours(r), theirs(r), "reason {r}: lbscope vs bpftrace kstack");
        }
    }
    let o: u64 = stopper_made.iter().map(|r| ours(r)).sum();
    let t: u64 = [STOPPER_MOVE, "affinity", "numa_balancing"]
        .iter()
        .map(|r| theirs(r))
        .sum();
    assert_eq!(
        o, t,
        "exec, affinity and NUMA moves: lbscope vs bpftrace kstack"
    );
    distinct.len()
}

/// Stacks whose move the per-CPU stopper made for a caller it does not show (exec, an
/// affinity change or a NUMA move): `migration_cpu_stop`.
const STOPPER_MOVE: &str = "stopper_move";

/// This test's own reading of a `sched_migrate_task` kernel stack (innermost first), written
/// from kernel/sched/core.c and fair.c of 6.1 to 6.18, independent of lbscope's table: the
/// frames from `set_task_cpu` outward, up to an interrupt's entry stub (frames past it belong
/// to whatever the interrupt landed in), decide; the balancer's callers are looked for from
/// the most specific (the stopper's active balance, newidle, the nohz loop) to the balancer
/// itself (periodic).
fn stack_reason(frames: &[String]) -> &'static str {
    let from = frames
        .iter()
        .position(|f| f.starts_with("set_task_cpu"))
        .unwrap_or(0);
    let mut deciding = &frames[from..];
    if let Some(end) = deciding.iter().position(|f| f.starts_with("asm_")) {
        deciding = &deciding[..end];
    }
    // bpftrace prints `name+offset`; compilers add `.isra.0`, `.constprop.0`, `.cold`.
    let base = |f: &String| f.split(['+', '.']).next().unwrap_or_default().to_string();
    let names: Vec<String> = deciding.iter().map(base).collect();
    let has = |fns: &[&str]| names.iter().any(|n| fns.contains(&n.as_str()));
    if has(&["active_load_balance_cpu_stop"]) {
        "active_balance"
    } else if has(&["sched_balance_newidle", "newidle_balance"]) {
        "newidle_balance"
    } else if has(&["_nohz_idle_balance", "nohz_idle_balance"]) {
        "nohz_idle_balance"
    } else if has(&[
        "sched_balance_rq",
        "load_balance",
        "sched_balance_domains",
        "rebalance_domains",
    ]) {
        "periodic_balance"
    } else if has(&["migrate_swap_stop"]) {
        "numa_balancing"
    } else if has(&["push_rt_task", "pull_rt_task", "rto_push_irq_work_func"]) {
        "rt_push_pull"
    } else if has(&["push_dl_task", "pull_dl_task"]) {
        "dl_push_pull"
    } else if has(&["try_to_wake_up"]) {
        "wakeup"
    } else if has(&["migration_cpu_stop"]) {
        STOPPER_MOVE
    } else if has(&[
        "__set_cpus_allowed_ptr",
        "__set_cpus_allowed_ptr_locked",
        "affine_move_task",
    ]) {
        "affinity"
    } else {
        "unknown"
    }
}

/// runqlat's histogram: slot lower bound -> count.
pub fn runqlat_hist(out: &str) -> BTreeMap<u64, u64> {
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
    compare_with_runqlat(&["--fold", "off"]);
}

/// Folded in the kernel (`--fold on`), the histograms are still runqlat's, sample for sample.
#[test]
fn folded_runqlat_matches_libbpf_tools() {
    let Some(_g) = live_guard() else { return };
    compare_with_runqlat(&["--fold", "on"]);
}

/// Folded without `-p`, a process's histogram is the kernel's per-process one (each sample a
/// single bucket naming its fine bucket and its slot, split back in user space): still
/// runqlat's, sample for sample.
#[test]
fn folded_process_histogram_matches_libbpf_tools() {
    let Some(_g) = live_guard() else { return };
    compare_with_runqlat(&["--fold", "on", "--by-process"]);
}

/// The same among a crowd of 40 other processes waking every 5 ms: each flush reads and
/// deletes some 40 entries of the per-process map in batches of 32, which the kernel ends
/// short wherever a bucket would not fit. The process's histogram is still runqlat's, and the
/// report names the top 20 of more than 20 processes.
#[test]
fn folded_process_histogram_matches_libbpf_tools_among_a_crowd() {
    let Some(_g) = live_guard() else { return };
    compare_with_runqlat(&["--fold", "on", "--by-process", "--crowd"]);
}

/// How far one log2 slot of the two tools may differ, as a share of the samples. The counts
/// agree exactly; a slot moves because both tools' handlers run one after the other on the
/// same tracepoints, so each reads the clock a few hundred ns after the other at a wakeup or
/// a switch, and this workload's waits crowd the 16 us slot edge on the 2-vCPU VM: over 13
/// runs in the order below the worst slot differed by 0.1-2.2% of the total, and by 5.5-8.5%
/// with lbscope attached first. A slot's bucketing error moves a whole slot, far beyond this.
const SLOT_SKEW: f64 = 0.04;

/// lbscope's run-queue latency of one process, with `extra` report flags, against runqlat's.
/// `--by-process` in `extra` (not a report flag) reads the process's entry of
/// `runqlat_by_process` from a report of every process instead of a report of it alone;
/// `--crowd` (not a report flag either) runs 40 more processes beside it, each waking every
/// 5 ms.
fn compare_with_runqlat(extra: &[&str]) {
    let by_process = extra.contains(&"--by-process");
    let crowded = extra.contains(&"--crowd");
    let extra: Vec<&str> = extra
        .iter()
        .copied()
        .filter(|a| *a != "--by-process" && *a != "--crowd")
        .collect();
    // Killed when dropped, also when an assertion below fails.
    let crowd: Vec<Reaped> = (0..if crowded { 40 } else { 0 })
        .map(|_| {
            Reaped::spawn(
                example("mixed")
                    .args(["--comm", "lbscrowd", "--cpu-threads", "0"])
                    .args(["--io-threads", "1", "--sleep-us", "5000"])
                    .args(["--duration-ms", "60000"])
                    .stdout(std::process::Stdio::null()),
            )
        })
        .collect();
    let comm = unique_comm("lbslat");
    // Sleepers waking beside a CPU hog: latencies from microseconds to a tick, not piled on
    // one bucket edge.
    let mut wl_cmd = example("mixed");
    wl_cmd.args(["--comm", &comm, "--cpu-threads", "1", "--io-threads", "4"]);
    wl_cmd.args(["--sleep-us", "200", "--duration-ms", "3000"]);
    let mut wl = Workload::start(wl_cmd);
    let pid = wl.pid.to_string();

    // runqlat attaches first: programs on one tracepoint run in attach order, so the
    // reference's timestamps are not delayed by lbscope's handlers. (Each tool's handlers
    // delay the other's clock reads by a few hundred ns; the order decides which one.)
    // stdbuf: runqlat's "Tracing ..." line must not sit in a pipe buffer.
    let mut rq = Command::new("stdbuf");
    rq.args(["-oL", &require_tool("runqlat", "libbpf-tools"), "-p", &pid]);
    let rq = Tracer::start("runqlat", rq, Some("Tracing"), Duration::from_millis(200));
    let mut args = vec!["-i", "3600"];
    if !by_process {
        args.extend(["-p", pid.as_str()]);
    }
    args.extend_from_slice(&extra);
    let lbs = Tracer::start(
        "lbscope",
        report_cmd(&args),
        Some("tracing"),
        Duration::ZERO,
    );
    wl.go_and_wait(Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    let (ok, out, err) = lbs.interrupt();
    assert!(ok, "lbscope exits 0: {err}");
    let (_, rq_out, _) = rq.interrupt();
    wl.finish();
    drop(crowd);

    let theirs = runqlat_hist(&rq_out);
    let their_total: u64 = theirs.values().sum();
    let last = last_json(&out);
    if crowded {
        let listed = last["runqlat_by_process"].as_array().map_or(0, Vec::len);
        assert_eq!(listed, 20, "the crowd fills the top 20 processes: {last}");
    }
    let snap = match by_process {
        true => last["runqlat_by_process"]
            .as_array()
            .expect("runqlat_by_process")
            .iter()
            .find(|p| p["tgid"].as_u64().map(|t| t.to_string()).as_ref() == Some(&pid))
            .unwrap_or_else(|| panic!("process {pid} among the processes: {last}"))
            .clone(),
        false => last["runqlat_us"].clone(),
    };
    let ours: Vec<u64> = snap["log2_buckets"]
        .as_array()
        .expect("log2_buckets")
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let our_total = count_of(&snap, &["count"]);
    assert_eq!(
        our_total,
        ours.iter().sum::<u64>(),
        "count is the buckets' sum"
    );
    assert!(their_total > 1000, "runqlat saw the workload: {rq_out}");
    let diff = our_total.abs_diff(their_total) as f64 / their_total as f64;
    assert!(
        diff <= 0.01,
        "{extra:?}: sample counts within 1%: lbscope {our_total}, runqlat {their_total}"
    );
    let slots = ours.len().max(theirs.len() + 1);
    let mut worst = 0.0f64;
    for slot in 0..slots {
        let lo = if slot == 0 { 0 } else { 1u64 << slot };
        let a = ours.get(slot).copied().unwrap_or(0);
        let b = theirs.get(&lo).copied().unwrap_or(0);
        let d = a.abs_diff(b) as f64 / their_total as f64;
        worst = worst.max(d);
        assert!(
            d <= SLOT_SKEW,
            "{extra:?}: slot {lo}: lbscope {a}, runqlat {b} (differ by {:.1}% of the total)",
            d * 100.0
        );
    }
    eprintln!(
        "{extra:?}: runqlat total {their_total}, lbscope {our_total}; slots differ by at most {:.2}% of the total",
        worst * 100.0
    );
}

/// hackbench under `report` streaming (`--fold off`) and folded (`--fold on`): the folded run
/// receives a small fraction of the events for as many latency samples, and still names the
/// processes that waited.
#[test]
fn folding_streams_far_fewer_events() {
    let Some(_g) = live_guard() else { return };
    let hackbench = require_tool("hackbench", "rt-tests");
    let run = |mode: &str| -> Value {
        let lbs = Tracer::start(
            "lbscope",
            report_cmd(&["-i", "3600", "--fold", mode]),
            Some("tracing"),
            Duration::ZERO,
        );
        let st = Command::new(&hackbench)
            .args(["-g", "2", "-l", "500"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("hackbench runs");
        assert!(st.success());
        std::thread::sleep(Duration::from_millis(300));
        let (ok, out, err) = lbs.interrupt();
        assert!(ok, "lbscope --fold {mode} exits 0: {err}");
        last_json(&out)
    };
    let full = run("off");
    let folded = run("on");
    let events = |v: &Value| count_of(v, &["events"]);
    let samples = |v: &Value| count_of(v, &["runqlat_us", "count"]);
    eprintln!(
        "streaming: {} events, {} samples; folded: {} events, {} samples",
        events(&full),
        samples(&full),
        events(&folded),
        samples(&folded)
    );
    // hackbench -g 2 -l 500: 80 processes passing messages, most a wakeup and a switch.
    assert!(samples(&full) > 5_000 && samples(&folded) > 5_000);
    assert!(
        events(&full) > 2 * samples(&full),
        "streaming sends a wakeup and a switch per sample"
    );
    // Per latency sample: the two runs' hackbench need not wake as often (one run here had
    // 17,903 samples streaming and 34,829 folded).
    let per_sample = |v: &Value| events(v) as f64 / samples(v) as f64;
    assert!(
        per_sample(&folded) * 5.0 < per_sample(&full),
        "folded: {} events for {} samples vs {} for {} streaming",
        events(&folded),
        samples(&folded),
        events(&full),
        samples(&full)
    );
    let procs = folded["runqlat_by_process"].as_array().expect("by process");
    assert!(!procs.is_empty(), "processes named: {folded}");
    let listed: u64 = procs.iter().map(|p| p["count"].as_u64().unwrap()).sum();
    assert!(listed <= samples(&folded) && listed > 0);
    assert!(
        procs.iter().any(|p| p["comm"] == "hackbench"),
        "hackbench among the processes: {procs:?}"
    );
    assert_eq!(count_of(&folded, &["lost_events"]), 0);
    // Folded mode loads no PELT program: its switches read each CPU's root sums instead.
    let cpus = folded["cpus"].as_array().expect("cpus");
    assert!(
        !cpus.is_empty() && cpus.iter().all(|c| c["util_avg"].is_u64()),
        "every CPU has a PELT sample in folded mode: {cpus:?}"
    );
}

/// The intervals of a `report --json` output fully inside the workload: the first (attach,
/// gate) and the last two (workload end, partial interval) left out.
fn inner_snapshots(out: &str) -> Vec<Value> {
    let snaps = json_lines(out);
    let inner = snaps.len().saturating_sub(2);
    snaps.into_iter().take(inner).skip(1).collect()
}

/// The `llc` domain's idle-while-waiting entry of each interval fully inside the workload.
fn iww_fractions(out: &str) -> Vec<(f64, f64)> {
    inner_snapshots(out)
        .iter()
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

/// The least share of an interval CPU 1 is idle beside three spinners pinned to CPU 0. It is
/// not idle all of it: lbscope's drain, the test harness and kernel threads run there. Here
/// 32 intervals measured 0.89-0.99 (one CI run failed at 0.891 against 0.9); a wrong count
/// (no waiter seen, or waiters split the wrong way) gives about 0.
const CPU1_IDLE_SHARE: f64 = 0.8;

fn spin_run(pin: Option<&str>) -> Vec<(f64, f64)> {
    iww_fractions(&spin_report(pin, &[]))
}

/// `report -i 1` (with `extra` flags) over three spinners, pinned to `pin` or free.
fn spin_report(pin: Option<&str>, extra: &[&str]) -> String {
    let comm = unique_comm("lbsspin");
    let mut wl_cmd = example("spin");
    wl_cmd.args(["--comm", &comm, "--threads", "3", "--duration-ms", "4500"]);
    if let Some(p) = pin {
        wl_cmd.args(["--pin", p]);
    }
    let mut wl = Workload::start(wl_cmd);
    let mut args = vec!["-i", "1"];
    args.extend_from_slice(extra);
    let lbs = Tracer::start(
        "lbscope",
        report_cmd(&args),
        Some("tracing"),
        Duration::ZERO,
    );
    wl.go_and_wait(Duration::from_secs(30));
    let (ok, out, err) = lbs.interrupt();
    assert!(ok, "lbscope exits 0: {err}");
    wl.finish();
    out
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
            *pinned_f > CPU1_IDLE_SHARE,
            "CPU 1 idles while pinned tasks wait: {pinned:?}"
        );
    }

    let free = spin_run(None);
    assert!(free.len() >= 2, "at least two full intervals: {free:?}");
    for (movable, _) in &free {
        assert!(*movable < 0.1, "unpinned spinners are spread: {free:?}");
    }
}

/// Folded mode reads nr_running where the switch, wakeup and migration handlers run (no
/// program on the nr_running tracepoint): three spinners pinned to CPU 0 still make CPU 1
/// idle while tasks wait there (all counted movable: folded mode has no pinned split), and
/// CPU 0's run queue holds the three; free spinners spread and nothing waits beside an idle
/// CPU.
#[test]
fn folded_idle_while_waiting_counts_the_queue_without_the_nr_running_program() {
    let Some(_g) = live_guard() else { return };
    let pinned = spin_report(Some("0"), &["--fold", "on"]);
    let fr = iww_fractions(&pinned);
    assert!(fr.len() >= 2, "at least two full intervals: {fr:?}");
    for (movable, _) in &fr {
        assert!(
            *movable > CPU1_IDLE_SHARE,
            "CPU 1 idles while CPU 0's queue waits: {fr:?}"
        );
    }
    for s in inner_snapshots(&pinned) {
        let cpu0 = s["cpus"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["cpu"] == 0))
            .unwrap_or_else(|| panic!("cpu 0 in {s}"));
        let nr = cpu0["nr_running"].as_u64().unwrap_or(0);
        assert!(nr >= 3, "CPU 0 runs one spinner and queues two: {cpu0}");
    }
    let free = iww_fractions(&spin_report(None, &["--fold", "on"]));
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
