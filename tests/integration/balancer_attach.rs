//! `--balancer-attach` on this kernel, judged against what `doctor` finds here: a kind the
//! kernel refuses fails the run in one line naming the refusal (exit 1), one it takes runs
//! and says so; `auto` runs either way, with the balancer hooks of the first kind that loads
//! or from the tracepoints alone with the refusals shown. On lockdown hosts both kinds are
//! refused; the topology lab's guests take both (tests/lab/run --balancer-attach kprobe).

use crate::common::{lbscope, live_guard};
use serde_json::Value;

fn run(args: &[&str]) -> (i32, String, String) {
    let o = lbscope().args(args).output().expect("lbscope runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Doctor's detail for `item`.
fn detail<'a>(checks: &'a [Value], item: &str) -> &'a str {
    checks
        .iter()
        .find(|c| c["item"] == item)
        .and_then(|c| c["detail"].as_str())
        .unwrap_or_else(|| panic!("no '{item}' in doctor: {checks:?}"))
}

/// Whether doctor found a hook of `kind` (`fentry` or `kprobe`) that loads, and the refusal
/// it shows for that kind otherwise (the first hook's that the kernel has).
fn kind_state(checks: &[Value], kind: &str) -> (bool, Option<String>) {
    let hooks: Vec<&Value> = checks
        .iter()
        .filter(|c| {
            c["item"]
                .as_str()
                .is_some_and(|i| i.starts_with(&format!("hook {kind}/")))
        })
        .collect();
    assert!(
        !hooks.is_empty(),
        "doctor lists the {kind} hooks: {checks:?}"
    );
    let loads = hooks.iter().any(|c| c["detail"] == "loads");
    let refused = hooks
        .iter()
        .find(|c| c["status"] == "warn")
        .and_then(|c| c["detail"].as_str())
        .map(str::to_string);
    (loads, refused)
}

#[test]
fn balancer_attach_follows_what_the_kernel_allows() {
    let Some(_g) = live_guard() else { return };
    let (code, out, err) = run(&["doctor", "--json"]);
    assert_eq!(code, 0, "doctor passes here: {out} {err}");
    let checks: Vec<Value> = serde_json::from_str(out.trim()).unwrap();
    let (fentry_loads, fentry_refused) = kind_state(&checks, "fentry");
    let (kprobe_loads, kprobe_refused) = kind_state(&checks, "kprobe");
    let mode = detail(&checks, "mode");
    for (kind, loads, refused) in [
        ("fentry", fentry_loads, &fentry_refused),
        ("kprobe", kprobe_loads, &kprobe_refused),
    ] {
        let (code, out, err) = run(&["report", "-c", "1", "--json", "--balancer-attach", kind]);
        if loads {
            assert_eq!(code, 0, "{kind} loads here, so the run runs: {err}");
            assert!(
                err.contains(&format!("balancer hooks by {kind} on ")),
                "{kind}: {err}"
            );
            assert!(out.lines().any(|l| l.starts_with('{')), "a snapshot: {out}");
            continue;
        }
        // Refused: one line, exit 1, naming the kind and what the kernel said (as doctor does).
        let why = refused.as_deref().unwrap_or_else(|| {
            panic!("doctor shows neither a {kind} hook that loads nor a refusal: {checks:?}")
        });
        assert_eq!(code, 1, "--balancer-attach {kind} refused: exit 1: {err}");
        assert!(!err.contains("panicked"), "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "one line: {err}");
        assert!(
            lines[0].contains(&format!(
                "--balancer-attach {kind}: the kernel refused the balancer hooks ({kind}: {why}"
            )),
            "the refusal doctor shows, in: {err}"
        );
        assert!(out.is_empty(), "no snapshot from a refused run: {out}");
    }
    // auto: always runs; its line says which kind it took, or both refusals.
    let (code, out, err) = run(&["report", "-c", "1", "--json"]);
    assert_eq!(code, 0, "auto runs: {err}");
    assert!(out.lines().any(|l| l.starts_with('{')), "a snapshot: {out}");
    if fentry_loads || kprobe_loads {
        let kind = if fentry_loads { "fentry" } else { "kprobe" };
        assert!(
            err.contains(&format!("balancer hooks by {kind} on ")),
            "{err}"
        );
        assert!(mode.contains(&format!("by {kind}")), "doctor mode: {mode}");
    } else {
        let want = format!(
            "no balancer hooks (fentry: {}; kprobe: {}): tracepoints only",
            fentry_refused.unwrap(),
            kprobe_refused.unwrap()
        );
        assert!(err.contains(&want), "'{want}' in: {err}");
        assert!(
            mode.starts_with("tracepoints only (fentry: "),
            "doctor mode: {mode}"
        );
        assert!(
            detail(&checks, "balancer hooks").starts_with("none (--balancer-attach auto: "),
            "{checks:?}"
        );
        // Without the kernel's decisions, --validate says so instead of running.
        let (code, _, err) = run(&["report", "-c", "1", "--validate"]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("from fentry or kprobes on the balancer"),
            "{err}"
        );
    }
}

#[test]
fn balancer_attach_rejects_an_unknown_kind() {
    let (code, _, err) = run(&["report", "-c", "1", "--balancer-attach", "kretprobe"]);
    assert_eq!(code, 2, "a usage error: {err}");
    assert!(err.contains("invalid value 'kretprobe'"), "{err}");
    for v in ["auto", "fentry", "kprobe"] {
        assert!(err.contains(v), "the possible values listed: {err}");
    }
}
