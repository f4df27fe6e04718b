//! Every output, byte for byte: each command's output on every fixture (the golden recording,
//! the lab recordings, the demo) and on a synthetic run, as SHA-256 digests committed in
//! `tests/outputs/digests.txt`. A change to any byte of any output fails here, naming the
//! outputs that changed; a change meant to alter outputs re-blesses the file with
//! `LBSCOPE_BLESS=1 cargo test --release --test integration outputs` and says why in its
//! commit.

use crate::common::lbscope;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn digests_file() -> PathBuf {
    root().join("tests/outputs/digests.txt")
}

/// SHA-256 of `bytes`, by coreutils' sha256sum (on every Debian machine).
fn sha256(bytes: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils) runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("write to sha256sum");
    let out = child.wait_with_output().expect("sha256sum output");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .expect("a digest")
        .to_string()
}

/// Runs lbscope with `args`; the digest of its stdout (or of the file `out` it wrote) and the
/// byte count.
fn output(args: &[&str], out: Option<&Path>) -> (String, usize) {
    // From the repository's root with relative paths: outputs that name their files (diff)
    // are then the same in any clone.
    let o = lbscope()
        .current_dir(root())
        .args(args)
        .output()
        .expect("lbscope runs");
    assert!(
        o.status.success(),
        "lbscope {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let bytes = match out {
        Some(p) => std::fs::read(p).expect("the output file"),
        None => o.stdout,
    };
    (sha256(&bytes), bytes.len())
}

/// Every (name, digest, bytes) this build produces.
fn produce() -> BTreeMap<String, (String, usize)> {
    let lab = [
        "6.1-4node-group-imbalance",
        "6.1-4node-numa-spread",
        "6.1-4node-wakeup-storm",
        "6.12-2s-smt-numa-wakeup-storm",
        "6.1-4node-overload",
        "6.12-2s-smt-numa-overload",
        "6.12-4node-active",
        "6.1-2s-smt-numa-active",
        "6.12-2s-smt-numa-mixed",
    ];
    let mut files: Vec<(String, PathBuf)> = vec![
        (
            "golden".into(),
            PathBuf::from("tests/fixtures/recordings/golden-v1.lbs"),
        ),
        ("demo".into(), PathBuf::from("examples/demo.lbs")),
    ];
    for l in lab {
        files.push((
            l.into(),
            PathBuf::from(format!("tests/fixtures/lab/{l}.lbs")),
        ));
    }
    let tmp = std::env::temp_dir().join(format!("lbscope-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let mut got = BTreeMap::new();
    for (name, path) in &files {
        let f = path.to_str().expect("utf-8 path");
        let mut put = |kind: &str, v: (String, usize)| {
            got.insert(format!("{name}.{kind}"), v);
        };
        put("report-json", output(&["report", f, "--json"], None));
        put("report-text", output(&["report", f], None));
        put("export-jsonl", output(&["export", f, "--jsonl", "-"], None));
        let pf = tmp.join(format!("{name}.pftrace"));
        let pfs = pf.to_str().expect("utf-8 path");
        put(
            "export-perfetto",
            output(&["export", f, "--perfetto", pfs], Some(&pf)),
        );
        if lab.contains(&name.as_str()) {
            let i = ["-i", "100000"];
            let args = |extra: &[&'static str]| {
                let mut a = vec!["report", f];
                a.extend_from_slice(&i);
                a.extend_from_slice(extra);
                a
            };
            put(
                "validate-json",
                output(&args(&["--json", "--validate"]), None),
            );
            put("validate-text", output(&args(&["--validate"]), None));
        }
    }
    let lab_file = |n: &str| PathBuf::from(format!("tests/fixtures/lab/{n}.lbs"));
    let a = lab_file("6.1-4node-wakeup-storm");
    let b = lab_file("6.12-2s-smt-numa-wakeup-storm");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    got.insert("diff.text".into(), output(&["diff", a, b], None));
    got.insert("diff.json".into(), output(&["diff", a, b, "--json"], None));
    got.insert(
        "diff.markdown".into(),
        output(&["diff", a, b, "--format", "markdown"], None),
    );
    // Two runs a side (different scenarios: the figures only have to be stable).
    let a2 = lab_file("6.1-4node-overload");
    let b2 = lab_file("6.12-2s-smt-numa-overload");
    let (a2, b2) = (a2.to_str().unwrap(), b2.to_str().unwrap());
    for (name, extra) in [
        ("diff-runs.text", &[][..]),
        ("diff-runs.json", &["--json"][..]),
        ("diff-runs.markdown", &["--format", "markdown"][..]),
    ] {
        let mut args = vec!["diff", a, a2];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", b, b2]);
        got.insert(name.into(), output(&args, None));
    }
    let synthetic = [
        "report",
        "--synthetic",
        "64",
        "--synthetic-events",
        "300000",
        "--json",
    ];
    got.insert("synthetic.report-json".into(), output(&synthetic, None));
    let _ = std::fs::remove_dir_all(&tmp);
    got
}

fn parse(text: &str) -> BTreeMap<String, (String, usize)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((
                f.next()?.to_string(),
                (f.next()?.to_string(), f.next()?.parse().ok()?),
            ))
        })
        .collect()
}

#[test]
fn every_output_is_byte_identical_to_the_committed_digests() {
    let got = produce();
    if std::env::var("LBSCOPE_BLESS").is_ok_and(|v| v == "1") {
        let mut text =
            String::from("# name sha256 bytes: every output of tests/integration/outputs.rs\n");
        for (k, (d, n)) in &got {
            text.push_str(&format!("{k} {d} {n}\n"));
        }
        std::fs::write(digests_file(), text).expect("write the digests");
        return;
    }
    let want = parse(&std::fs::read_to_string(digests_file()).expect("tests/outputs/digests.txt"));
    let mut changed = Vec::new();
    for (k, v) in &got {
        match want.get(k) {
            Some(w) if w == v => {}
            Some(w) => changed.push(format!("{k}: {} bytes, was {} bytes", v.1, w.1)),
            None => changed.push(format!("{k}: not in the committed digests")),
        }
    }
    for k in want.keys().filter(|k| !got.contains_key(*k)) {
        changed.push(format!("{k}: no longer produced"));
    }
    assert!(
        changed.is_empty(),
        "outputs differ from tests/outputs/digests.txt:\n  {}",
        changed.join("\n  ")
    );
}
