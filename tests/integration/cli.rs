//! Command-line behaviour: help, bad input, and the refusals that must name their fix.

use crate::common::*;

fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = lbscope();
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("lbscope runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn assert_one_line_error(code: i32, want_code: i32, err: &str, needle: &str) {
    assert_eq!(code, want_code, "exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "no panic: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].contains(needle), "'{needle}' in: {err}");
}

#[test]
fn help_teaches() {
    let (code, out, _) = run(&["--help"], &[]);
    assert_eq!(code, 0);
    assert!(out.contains("report") && out.contains("doctor") && out.contains("Examples"));
    let (code, out, _) = run(&["report", "--help"], &[]);
    assert_eq!(code, 0);
    for flag in [
        "--interval",
        "--count",
        "--json",
        "--pid",
        "--comm",
        "--cpus",
    ] {
        assert!(out.contains(flag), "{flag} in report --help");
    }
}

#[test]
fn bad_flags_are_usage_errors() {
    let (code, _, err) = run(&["report", "-i", "0"], &[]);
    assert_one_line_error(code, 2, &err, "interval");
    let (code, _, err) = run(&["report", "--cpus", "5-2"], &[]);
    assert_one_line_error(code, 2, &err, "--cpus");
    let (code, _, err) = run(&["report", "--cpus", "4095"], &[]);
    assert_one_line_error(code, 2, &err, "--cpus");
    let (code, _, err) = run(&["report", "--ringbuf-mb", "3"], &[]);
    assert_one_line_error(code, 2, &err, "power of two");
}

/// `--fold on` refuses what folding cannot honour, before touching the kernel.
#[cfg(feature = "bpf")]
#[test]
fn fold_on_refuses_what_it_cannot_honour() {
    for (args, needle) in [
        (&["report", "--fold", "on", "--comm", "x"][..], "by process"),
        (
            &["report", "--fold", "on", "-o", "/tmp/never.lbs"][..],
            "recording",
        ),
        (&["top", "--fold", "on", "--cpus", "0"][..], "--cpus"),
    ] {
        let (code, _, err) = run(args, &[]);
        assert_one_line_error(code, 2, &err, needle);
        assert!(err.contains("--fold on"), "{err}");
    }
    assert!(!std::path::Path::new("/tmp/never.lbs").exists());
}

#[test]
fn unknown_pid_says_so() {
    let (code, _, err) = run(&["report", "-p", "999999999"], &[]);
    assert_one_line_error(code, 2, &err, "no process with PID 999999999");
}

#[test]
fn not_root_says_run_as_root() {
    if !std::path::Path::new("/usr/bin/setpriv").exists() {
        panic!("setpriv (util-linux) is needed to drop privileges");
    }
    let o = std::process::Command::new("/usr/bin/setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_lbscope"))
        .args(["report", "-c", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() == Some(0) {
        panic!("unprivileged report must fail: {err}");
    }
    assert_one_line_error(o.status.code().unwrap_or(-1), 1, &err, "run as root");
}

#[test]
fn missing_btf_says_what_kernel_is_needed() {
    let Some(_g) = live_guard() else { return };
    let (code, _, err) = run(
        &["report", "-c", "1"],
        &[("LBSCOPE_BTF", "/nonexistent/vmlinux")],
    );
    assert_one_line_error(code, 1, &err, "CONFIG_DEBUG_INFO_BTF");
}

#[test]
fn missing_tracepoint_is_named() {
    let Some(_g) = live_guard() else { return };
    let (code, _, err) = run(
        &["report", "-c", "1"],
        &[("LBSCOPE_PRETEND_MISSING", "sched_migrate_task")],
    );
    assert_one_line_error(code, 1, &err, "sched_migrate_task");
    assert!(err.contains("doctor"), "points to doctor: {err}");
}

#[test]
fn doctor_reports_this_machine() {
    let Some(_g) = live_guard() else { return };
    let (code, out, err) = run(&["doctor", "--json"], &[]);
    assert_eq!(code, 0, "doctor passes here: {out} {err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let items: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["item"].as_str().unwrap())
        .collect();
    for want in [
        "kernel",
        "privileges",
        "btf",
        "lockdown",
        "tracepoint sched_migrate_task",
        "hook fentry/sched_balance_rq",
        "hook kprobe/sched_balance_rq",
        "balancer hooks",
        "topology",
        "mode",
    ] {
        assert!(items.contains(&want), "{want} in doctor: {items:?}");
    }
}

#[test]
fn completions_are_current() {
    use clap_complete::Shell;
    for (shell, file) in [
        (Shell::Bash, "lbscope.bash"),
        (Shell::Zsh, "_lbscope"),
        (Shell::Fish, "lbscope.fish"),
    ] {
        let want = lbscope::cli::completion_script(shell);
        let path = format!("{}/completions/{file}", env!("CARGO_MANIFEST_DIR"));
        let have = std::fs::read(&path).unwrap_or_default();
        assert!(
            have == want,
            "{path} is stale: regenerate with `lbscope completions {shell} > {path}`"
        );
    }
}

#[test]
fn man_page_is_current() {
    let want = lbscope::cli::man_page();
    let path = format!("{}/completions/lbscope.1", env!("CARGO_MANIFEST_DIR"));
    let have = std::fs::read(&path).unwrap_or_default();
    assert!(
        have == want,
        "{path} is stale: regenerate with `lbscope man > {path}`"
    );
    let text = String::from_utf8(want).unwrap();
    for sc in ["REPORT", "TOP", "REPLAY", "DIFF", "RECORD", "DOCTOR"] {
        assert!(
            text.contains(&format!("LBSCOPE {sc}")),
            "{sc} in the man page"
        );
    }
}

#[test]
fn every_subcommand_help_has_an_example() {
    for sc in [
        "report",
        "record",
        "top",
        "replay",
        "diff",
        "export",
        "doctor",
        "completions",
        "man",
    ] {
        let (code, out, err) = run(&[sc, "--help"], &[]);
        assert_eq!(code, 0, "{sc} --help: {err}");
        assert!(
            out.contains("Example") && out.contains("lbscope"),
            "an example in {sc} --help:\n{out}"
        );
    }
}

#[test]
fn version_summarises_the_kernel_without_root() {
    let o = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_lbscope"))
        .arg("--version")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(out.starts_with(&format!("lbscope {}", env!("CARGO_PKG_VERSION"))));
    assert!(out.contains(release.trim()), "kernel release in: {out}");
    assert!(out.contains("BTF:") && out.contains("fentry:"), "{out}");
    let (code, out, _) = run(&["-V"], &[]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), format!("lbscope {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn top_without_root_says_why_in_one_line() {
    let o = std::process::Command::new("/usr/bin/setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_lbscope"))
        .arg("top")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_one_line_error(o.status.code().unwrap_or(-1), 1, &err, "run as root");
    assert!(
        err.contains("lbscope top --demo"),
        "points to the demo: {err}"
    );
}

#[test]
fn tui_without_a_terminal_says_so() {
    let (code, _, err) = run(&["replay", "tests/fixtures/recordings/golden-v1.lbs"], &[]);
    assert_one_line_error(code, 1, &err, "needs a terminal");
    let (code, _, err) = run(&["top", "--demo"], &[]);
    assert_one_line_error(code, 1, &err, "needs a terminal");
    let (code, _, err) = run(&["replay", "/nonexistent.lbs"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/nonexistent.lbs"), "{err}");
}

const LAB_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/lab/6.12-2s-smt-numa-wakeup-storm.lbs"
);

#[test]
fn validate_sets_the_kernels_decisions_against_the_model() {
    let (code, out, err) = run(&["report", LAB_FIXTURE, "-i", "1000", "--validate"], &[]);
    assert_eq!(code, 0, "{err}");
    let v = &out[out.find("Validation:").expect("a validation section")..];
    for level in ["smt", "llc", "numa", "all"] {
        assert!(
            v.lines().any(|l| l.trim_start().starts_with(level)),
            "{level} row: {v}"
        );
    }
    let (code, out, err) = run(
        &["report", LAB_FIXTURE, "-i", "1000", "--validate", "--json"],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let v = &last["validation"];
    let decisions = v["total"]["decisions"].as_u64().unwrap();
    assert!(decisions > 100, "{v}");
    assert_eq!(v["unmapped"], 0);
    // The JSON agreement is the per-level counts' ratio.
    let agree = v["total"]["balanced_agree"].as_u64().unwrap();
    let share = v["balanced_agreement"].as_f64().unwrap();
    assert!((share - agree as f64 / decisions as f64).abs() < 1e-9);
    assert!(v["reasons"]["balancer_migrations"].as_u64().unwrap() > 0);
}

#[test]
fn validate_without_balancer_decisions_says_where_they_come_from() {
    let golden = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recordings/golden-v1.lbs"
    );
    let (code, out, err) = run(&["report", golden, "--validate", "-i", "100"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(!out.is_empty(), "the report itself still prints");
    assert!(
        err.contains("no balancer decisions") && err.contains("fentry"),
        "{err}"
    );
    let (code, _, err) = run(&["report", "--synthetic", "4", "--validate"], &[]);
    assert_eq!(code, 2, "{err}");
}

/// A lab recording made with the balancer's calls and the two /proc/schedstat reads (6.1,
/// schedstat version 15; tests/lab/run --ci).
const COUNTERS_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/lab/6.1-2s-smt-numa-active.lbs"
);

#[test]
fn report_prints_the_balancers_counters_beside_the_kernels() {
    let (code, out, err) = run(&["report", COUNTERS_FIXTURE, "-i", "100000"], &[]);
    assert_eq!(code, 0, "{err}");
    let c = &out[out
        .find("balancer counters over the run")
        .expect("a counters section")..];
    assert!(c.contains("/proc/schedstat v15"), "{c}");
    // Every level of the machine, and each row's lb_count: lbscope's and the kernel's.
    for level in ["smt", "llc", "numa"] {
        assert!(
            c.lines().any(|l| l.trim_start().starts_with(level)),
            "{level} row: {c}"
        );
    }
    let (code, out, err) = run(&["report", COUNTERS_FIXTURE, "-i", "100000", "--json"], &[]);
    assert_eq!(code, 0, "{err}");
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["partial"], true, "the run's last interval: {last}");
    let b = &last["balancer_counters_run"];
    assert_eq!(b["calls_recorded"], true, "{b}");
    assert_eq!(b["kernel"]["schedstat_version"], 15, "{b}");
    let rows = b["rows"].as_array().unwrap();
    let (mut calls, mut compared) = (0, 0);
    for r in rows {
        let (ours, kernel) = (&r["lbscope"], &r["kernel"]);
        if ours.is_null() || kernel.is_null() {
            continue;
        }
        compared += 1;
        for k in ["lb_count", "lb_balanced", "lb_failed", "lb_gained"] {
            let (o, n) = (ours[k].as_u64().unwrap(), kernel[k].as_u64().unwrap());
            let flight = ours["in_flight"][k].as_u64().unwrap();
            // The kernel's difference exceeds lbscope's count by at most what lbscope left
            // out as made during a read.
            assert!(
                o <= n && n <= o + flight,
                "{} {} {k}: {o} vs {n}: {r}",
                r["level"],
                r["idle"]
            );
        }
        let o = ours["lb_count"].as_u64().unwrap();
        assert!(
            ours["lb_balanced"].as_u64().unwrap() + ours["lb_failed"].as_u64().unwrap() <= o,
            "{r}"
        );
        calls += o;
    }
    assert!(
        compared >= 6 && calls > 100,
        "{compared} rows, {calls} calls: {b}"
    );
}
