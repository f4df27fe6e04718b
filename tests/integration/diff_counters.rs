//! The balancer's counters in `lbscope diff` against `lbscope report --json` on the lab
//! recordings and the demo (files only, no BPF): every counter row's rate times the run's
//! length is the sum of the report's per-interval `balancer_counters`, and every count the
//! report has is a row (the call counters only when both recordings recorded the calls).

use crate::common::lbscope;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

type Totals = BTreeMap<(String, String), u64>;

/// The reasons that are the balancer's (`report`'s `balancer_counters_run` counts these).
const BALANCER_REASONS: [&str; 4] = [
    "periodic_balance",
    "nohz_idle_balance",
    "newidle_balance",
    "active_balance",
];

fn file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn stdout(args: &[&str]) -> String {
    let o = lbscope().args(args).output().expect("lbscope runs");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The per-interval `balancer_counters` of `report --json` and the balancer's reasons of
/// its `migrations.matrix`, summed under the diff's (section, metric) names; and whether the
/// balancer's calls were recorded.
fn report_totals(path: &str) -> (Totals, bool) {
    let mut t = Totals::new();
    let mut calls = false;
    let mut add = |s: &str, m: String, v: u64| *t.entry((s.to_string(), m)).or_default() += v;
    for line in stdout(&["report", path, "--json"]).lines() {
        let snap: Value = serde_json::from_str(line).expect("a JSON line");
        // The balancer's migrations by reason and level crossed: the interval's matrix.
        let matrix = snap["migrations"]["matrix"].as_object();
        for (reason, levels) in matrix.into_iter().flatten() {
            if !BALANCER_REASONS.contains(&reason.as_str()) {
                continue;
            }
            for (l, n) in levels.as_object().into_iter().flatten() {
                add(
                    "balancer_per_s.gained_by_migrations",
                    format!("{reason} {l}"),
                    u(n),
                );
            }
        }
        let Some(b) = snap.get("balancer_counters") else {
            continue;
        };
        calls |= b["calls_recorded"].as_bool().unwrap_or(false);
        for r in b["rows"].as_array().into_iter().flatten() {
            let p = format!(
                "{} {}",
                r["level"].as_str().unwrap(),
                r["idle"].as_str().unwrap()
            );
            for c in [
                "lb_count",
                "lb_balanced",
                "lb_failed",
                "lb_gained",
                "searches",
            ] {
                add("balancer_per_s.calls", format!("{p} {c}"), u(&r[c]));
            }
            for k in ["load", "util", "task", "misfit"] {
                add(
                    "balancer_per_s.imbalance",
                    format!("{p} {k}"),
                    u(&r["imbalance"][k]),
                );
            }
        }
        for (l, n) in b["alb_pushed"].as_object().into_iter().flatten() {
            add("balancer_per_s.active", format!("{l} alb_pushed"), u(n));
        }
        add(
            "balancer_per_s.active",
            "stopper_runs".into(),
            u(&b["stopper_runs"]),
        );
    }
    t.retain(|_, v| *v != 0);
    (t, calls)
}

/// Diffs `a` against `b` and checks every balancer row against both reports; returns the
/// number of rows checked.
fn check(a: &str, b: &str) -> usize {
    let d: Value = serde_json::from_str(&stdout(&["diff", a, b, "--json"])).unwrap();
    let ((ta, ca), (tb, cb)) = (report_totals(a), report_totals(b));
    let with_calls = ca && cb;
    let len = |side: &str| d["sides"][side][0]["duration_s"].as_f64().unwrap();
    let rows: Vec<&Value> = d["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["section"]
                .as_str()
                .unwrap()
                .starts_with("balancer_per_s.")
        })
        .collect();
    let mut seen = Totals::new();
    for r in &rows {
        let key = (
            r["section"].as_str().unwrap().to_string(),
            r["metric"].as_str().unwrap().to_string(),
        );
        for (side, t) in [("baseline", &ta), ("new", &tb)] {
            let total = (r[side].as_f64().unwrap() * len(side)).round() as u64;
            assert_eq!(
                total,
                t.get(&key).copied().unwrap_or(0),
                "{a} vs {b}: {key:?} {side}"
            );
        }
        seen.insert(key, 1);
    }
    // Every count either report has is a row, the call counters only with calls on both.
    for key in ta.keys().chain(tb.keys()) {
        let from_calls = key.0 != "balancer_per_s.gained_by_migrations";
        assert_eq!(
            seen.contains_key(key),
            with_calls || !from_calls,
            "{a} vs {b}: {key:?}"
        );
    }
    let warned = d["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .contains("balancer call counters left out")
    });
    assert_eq!(warned, ca != cb, "{a} vs {b}: {:?}", d["warnings"]);
    rows.len()
}

#[test]
fn diff_counter_rows_sum_to_the_reports_counters() {
    let lab = |n: &str| file(&format!("tests/fixtures/lab/{n}.lbs"));
    let pairs = [
        (
            lab("6.1-4node-wakeup-storm"),
            lab("6.12-2s-smt-numa-wakeup-storm"),
        ),
        (lab("6.1-2s-smt-numa-active"), lab("6.12-4node-active")),
        (lab("6.1-4node-overload"), lab("6.12-2s-smt-numa-overload")),
        (file("examples/demo.lbs"), lab("6.12-2s-smt-numa-mixed")),
        // Both with the balancer's calls: every counter is a row.
        (lab("6.1-2s-smt-numa-active"), lab("6.12-2s-smt-numa-mixed")),
    ];
    let mut checked = 0;
    for (a, b) in &pairs {
        checked += check(a.to_str().unwrap(), b.to_str().unwrap());
    }
    assert!(checked > 0, "no balancer row in any diff");
}

#[test]
fn several_runs_a_side_give_each_runs_counters() {
    let lab = |n: &str| file(&format!("tests/fixtures/lab/{n}.lbs"));
    let (x, y) = (lab("6.1-2s-smt-numa-active"), lab("6.12-2s-smt-numa-mixed"));
    let (x, y) = (x.to_str().unwrap(), y.to_str().unwrap());
    let d: Value = serde_json::from_str(&stdout(&["diff", x, y, "--json", "--", y, x])).unwrap();
    let totals = [report_totals(x), report_totals(y)];
    assert!(
        totals[0].1 && totals[1].1,
        "both recorded the balancer's calls"
    );
    let len = |side: &str, i: usize| d["sides"][side][i]["duration_s"].as_f64().unwrap();
    let mut calls_rows = 0;
    for r in d["rows"].as_array().unwrap() {
        let section = r["section"].as_str().unwrap();
        if !section.starts_with("balancer_per_s.") {
            continue;
        }
        calls_rows += usize::from(section == "balancer_per_s.calls");
        let key = (
            section.to_string(),
            r["metric"].as_str().unwrap().to_string(),
        );
        // Baseline runs: x then y; new runs: y then x.
        for (side, order) in [("baseline", [0, 1]), ("new", [1, 0])] {
            let values = r["runs"][side].as_array().unwrap();
            for (i, t) in order.iter().enumerate() {
                let total = (values[i].as_f64().unwrap() * len(side, i)).round() as u64;
                let want = totals[*t].0.get(&key).copied().unwrap_or(0);
                assert_eq!(total, want, "{key:?} {side} run {i}");
            }
        }
    }
    assert!(calls_rows > 0, "the call counters are rows");
}
