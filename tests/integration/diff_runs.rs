//! `lbscope diff` with several recordings a side, from files and from directories, in text,
//! JSON and Markdown, checked against one-run diffs of the same files; and its errors for bad
//! sides.

use crate::common::lbscope;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn lab(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/lab/{name}.lbs"))
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = lbscope().args(args).output().expect("lbscope runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A fresh directory under the target directory.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("diff-runs-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Baseline: 6.1 wakeup-storm and overload; new: the same scenarios on 6.12.
fn sides() -> ([PathBuf; 2], [PathBuf; 2]) {
    (
        [lab("6.1-4node-wakeup-storm"), lab("6.1-4node-overload")],
        [
            lab("6.12-2s-smt-numa-wakeup-storm"),
            lab("6.12-2s-smt-numa-overload"),
        ],
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json(args: &[&str]) -> Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

fn row<'a>(d: &'a Value, section: &str, metric: &str) -> &'a Value {
    d["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["section"] == section && r["metric"] == metric)
        .unwrap_or_else(|| panic!("row {section} {metric}"))
}

#[test]
fn diff_of_runs_from_files_and_directories() {
    let (a, b) = sides();
    let (da, db) = (scratch("a"), scratch("b"));
    let mut la = Vec::new();
    let mut lb = Vec::new();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        // Name order is run order: run-1 before run-2.
        let (xa, yb) = (
            da.join(format!("run-{}.lbs", i + 1)),
            db.join(format!("run-{}.lbs", i + 1)),
        );
        std::fs::copy(x, &xa).unwrap();
        std::fs::copy(y, &yb).unwrap();
        la.push(xa);
        lb.push(yb);
    }
    std::fs::write(da.join("notes.txt"), "not a recording").unwrap();
    let by_files = ["diff", s(&la[0]), s(&la[1]), "--", s(&lb[0]), s(&lb[1])];
    let (code, text, err) = run(&by_files);
    assert_eq!(code, 0, "{err}");
    let (code, by_dirs, err) = run(&["diff", s(&da), s(&db)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        text, by_dirs,
        "directories expand to their .lbs files in name order"
    );
    assert!(
        text.contains("baseline  2 runs: 6.1.0-56-amd64, 16 CPUs: llc numa"),
        "{text}"
    );
    assert!(text.contains("new       2 runs: 6.12.117+deb12-amd64, 8 CPUs: smt llc numa"));
    assert!(text.contains(&format!("            {} (", la[1].display())));
    assert!(text.contains("Welch's 95% interval"), "{text}");
    assert!(text.contains("each side's runs pooled"));
    assert!(
        text.lines().all(|l| l.chars().count() <= 80),
        "80 columns:\n{text}"
    );

    // JSON: every row's means are its runs' means, and each run's value is what the
    // one-run comparison of that recording gives.
    let mut args = by_files.to_vec();
    args.insert(1, "--json");
    let d = json(&args);
    assert_eq!(d["sides"]["method"], "welch_over_runs");
    assert_eq!(
        d["sides"]["baseline"][1]["kernel_release"],
        "6.1.0-56-amd64"
    );
    assert_eq!(
        d["sides"]["new"][0]["topology_summary"],
        "8 CPUs: smt llc numa"
    );
    let first = json(&["diff", "--json", s(&la[0]), s(&lb[0])]);
    let second = json(&["diff", "--json", s(&la[1]), s(&lb[1])]);
    let mut with_interval = 0;
    for r in d["rows"].as_array().unwrap() {
        let runs = &r["runs"];
        let (xa, xb) = (
            runs["baseline"].as_array().unwrap(),
            runs["new"].as_array().unwrap(),
        );
        assert_eq!((xa.len(), xb.len()), (2, 2));
        let mean = |v: &[Value]| v.iter().map(|x| x.as_f64().unwrap()).sum::<f64>() / 2.0;
        assert!(
            (r["baseline"].as_f64().unwrap() - mean(xa)).abs() < 1e-5,
            "{r}"
        );
        assert!((r["new"].as_f64().unwrap() - mean(xb)).abs() < 1e-5, "{r}");
        // Rows of domains in every run exist in the one-run diffs too.
        let (sec, met) = (
            r["section"].as_str().unwrap(),
            r["metric"].as_str().unwrap(),
        );
        if let Some(one) = first["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["section"] == sec && o["metric"] == met)
        {
            assert_eq!(one["baseline"], xa[0], "{sec} {met}");
            assert_eq!(one["new"], xb[0], "{sec} {met}");
        }
        if r["ci_low"].is_number() {
            with_interval += 1;
            let (lo, hi) = (
                r["ci_low"].as_f64().unwrap(),
                r["ci_high"].as_f64().unwrap(),
            );
            let delta = r["new"].as_f64().unwrap() - r["baseline"].as_f64().unwrap();
            assert!(lo <= delta + 1e-5 && delta <= hi + 1e-5, "{r}");
            let p = runs["p_value"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&p));
        }
    }
    assert!(with_interval > 10, "{with_interval} rows with an interval");
    let p50 = row(&d, "runqlat_us", "p50");
    assert_eq!(
        p50["runs"]["new"][1],
        row(&second, "runqlat_us", "p50")["new"]
    );
}

#[test]
fn diff_markdown_names_runs_kernels_and_topology() {
    let (a, b) = sides();
    let args = [
        "diff",
        "--format",
        "markdown",
        s(&a[0]),
        s(&a[1]),
        "--",
        s(&b[0]),
        s(&b[1]),
    ];
    let (code, md, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(
        lines[0],
        "#### lbscope diff: 6.1.0-56-amd64 vs 6.12.117+deb12-amd64"
    );
    assert!(md.contains("- **baseline**: 2 runs, 6.1.0-56-amd64, 16 CPUs: llc numa"));
    assert!(md.contains(&format!("  - `{}`", a[1].display())));
    assert!(md.contains("Welch's t"));
    // One table, every line of it with the same number of cells as its head.
    let table: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with('|'))
        .collect();
    let cells = |l: &str| l.matches('|').count() - l.matches("\\|").count();
    assert!(table.iter().all(|l| cells(l) == cells(table[0])), "{md}");
    assert_eq!(cells(table[0]), 8, "{}", table[0]);
    // A row per JSON row, plus the head, the rule and a heading row per section.
    let mut jargs = args.to_vec();
    jargs[1..3].copy_from_slice(&["--format", "json"]);
    let d = json(&jargs);
    let rows = d["rows"].as_array().unwrap();
    let mut sections: Vec<&str> = rows
        .iter()
        .map(|r| r["section"].as_str().unwrap())
        .collect();
    sections.dedup();
    assert_eq!(table.len(), rows.len() + 2 + sections.len());
    // The marked rows are the significant ones.
    let marked = table.iter().filter(|l| l.ends_with("| * |")).count();
    let significant = rows.iter().filter(|r| r["significant"] == true).count();
    assert_eq!(marked, significant);
    // One run a side: the same header, the bootstrap named, no ±sd or p columns.
    let (code, md, _) = run(&["diff", "--format", "markdown", s(&a[0]), s(&b[0])]);
    assert_eq!(code, 0);
    assert!(md.contains("- **baseline**: 1 run, 6.1.0-56-amd64, 16 CPUs: llc numa, 5.0 s"));
    assert!(md.contains("bootstrap resamples"));
    assert!(md.contains("| figure | baseline | new | change | 95% CI of new-base | |"));
}

#[test]
fn diff_sides_errors_are_usage_errors() {
    let (a, b) = sides();
    let empty = scratch("empty");
    let missing = empty.join("missing.lbs");
    for (args, code, needle) in [
        (
            vec!["diff", s(&a[0]), s(&a[1]), s(&b[0])],
            2,
            "3 recordings and no `--`",
        ),
        (vec!["diff", s(&a[0])], 2, "diff needs two sides, got one"),
        (
            vec!["diff", s(&empty), s(&b[0])],
            2,
            "no .lbs recordings in this directory",
        ),
        (
            vec!["diff", s(&a[0]), "--", s(&b[0]), "--json"],
            2,
            "--json: options after `--` are read as recordings",
        ),
        (vec!["diff", s(&a[0]), s(&missing)], 1, "missing.lbs"),
        (
            vec!["diff", s(&a[0]), s(&a[1]), "--", s(&missing)],
            1,
            "missing.lbs",
        ),
        (
            vec!["diff", "--json", "--format", "markdown", s(&a[0]), s(&b[0])],
            2,
            "cannot be used with",
        ),
        (
            vec!["diff", "--format", "csv", s(&a[0]), s(&b[0])],
            2,
            "markdown",
        ),
    ] {
        let (got, _, err) = run(&args);
        assert_eq!(got, code, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: '{needle}' in {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // One run against two: compared, with a warning and no interval.
    let (code, out, err) = run(&["diff", s(&a[0]), "--", s(&b[0]), s(&b[1])]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("warning: the baseline side has one run"),
        "{out}"
    );
    assert!(out.contains("no noise estimate"));
}
