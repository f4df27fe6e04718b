//! The flight recorder live: `serve --ring` dumps on each trigger kind (a finding rate, a
//! run-queue latency figure, SIGUSR1, POST /dump), each dump reads back as a recording that
//! holds the seconds before its trigger and what fired it; the caps hold and never remove a
//! dump already written; bad input is one line (a port in use: `serve.rs`); stalled and concurrent scrapers are served;
//! `record --ring` writes the ring at its trigger and stops.

use crate::common::{example, free_port, get, lbscope, live_guard, Tracer, Workload};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lbscope-flight-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The dumps in `dir` that `slug` fired (alone or with others: `-busy_wakeup+p99.lbs`).
fn dumps(dir: &Path, slug: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| {
        let n = p.file_name().unwrap().to_str().unwrap();
        // lbscope-<stamp>-<slug>[+<slug>...][-N].lbs
        let Some(rest) = n
            .strip_prefix("lbscope-")
            .and_then(|r| r.strip_suffix(".lbs"))
        else {
            return false;
        };
        let fired = rest.split('-').nth(1).unwrap_or("");
        fired.split('+').any(|s| s == slug)
    });
    v.sort();
    v
}

/// Waits until `dir` holds a dump named for `slug`.
fn wait_dump(dir: &Path, slug: &str, timeout: Duration) -> PathBuf {
    let end = Instant::now() + timeout;
    loop {
        if let Some(p) = dumps(dir, slug).into_iter().next() {
            return p;
        }
        assert!(
            Instant::now() < end,
            "no {slug} dump in {} within {timeout:?}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `report FILE --json -i 0.5` of a dump: it must read cleanly.
fn report(p: &Path) -> Vec<serde_json::Value> {
    let o = lbscope()
        .args(["report"])
        .arg(p)
        .args(["--json", "-i", "0.5", "--max-findings", "1000000"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        p.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Event time a report covers, seconds.
fn span_s(snaps: &[serde_json::Value]) -> f64 {
    let t0 = snaps[0]["t_start_ns"].as_u64().unwrap();
    let t1 = snaps.last().unwrap()["t_end_ns"].as_u64().unwrap();
    (t1 - t0) as f64 / 1e9
}

fn found(snaps: &[serde_json::Value], kind: &str) -> u64 {
    snaps
        .iter()
        .map(|s| s["findings_by_kind"][kind].as_u64().unwrap_or(0))
        .sum()
}

/// A metric's value in serve's exposition (0 when absent).
fn metric(port: u16, line_start: &str) -> f64 {
    get(port, "/metrics")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

fn post(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "POST {path} HTTP/1.0\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut all = String::new();
    let _ = s.read_to_string(&mut all);
    all
}

/// `lbscope serve --listen 127.0.0.1:PORT ARGS...`, once it says it serves, after `settle`.
fn start_serve(port: u16, args: &[&str], settle: Duration) -> Tracer {
    let mut cmd = lbscope();
    cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}")]);
    cmd.args(args);
    Tracer::start("lbscope serve", cmd, Some("serving"), settle)
}

/// A gated wakeup storm of `ms` milliseconds, run to its end: eight workers and two message
/// threads on two CPUs, tens of KiB of events a second whatever else the machine does.
fn storm(ms: u64) {
    let mut wl = example("wakeup_storm");
    wl.args(["--duration-ms", &ms.to_string()]);
    let mut wl = Workload::start(wl);
    wl.go_and_wait(Duration::from_secs(30));
    wl.finish();
}

#[test]
fn serve_dumps_on_every_trigger_the_seconds_before_it() {
    let Some(_g) = live_guard() else { return };
    let dir = scratch("serve");
    let port = free_port();
    let args = ["--ring", "2", "--dump-dir", dir.to_str().unwrap()];
    let triggers = ["--trigger", "busy_wakeup>=1/s", "--trigger", "p99>=1ms"];
    let serve = start_serve(
        port,
        &[&args[..], &triggers[..], &["--dump-on-post"]].concat(),
        Duration::from_millis(500),
    );
    // Wakeups land on busy CPUs (busy_wakeup), and the queues hold tasks for milliseconds
    // (p99).
    storm(3000);
    let busy = wait_dump(&dir, "busy_wakeup", Duration::from_secs(10));
    let p99 = wait_dump(&dir, "p99", Duration::from_secs(10));
    assert!(
        post(port, "/dump").starts_with("HTTP/1.0 202"),
        "POST /dump is taken"
    );
    let http = wait_dump(&dir, "http", Duration::from_secs(10));
    serve.signal("USR1");
    let signal = wait_dump(&dir, "signal", Duration::from_secs(10));
    // serve's counters say the same (they advance when an interval closes, and the machine's
    // other tasks may fire another dump meanwhile), then it stops cleanly.
    std::thread::sleep(Duration::from_millis(1500));
    let counted: Vec<u64> = ["busy_wakeup", "p99", "http", "signal"]
        .iter()
        .map(|slug| metric(port, &format!("lbscope_dumps_total{{trigger=\"{slug}\"}}")) as u64)
        .collect();
    assert_eq!(metric(port, "lbscope_dump_failures_total"), 0.0);
    let (ok, _, err) = serve.interrupt();
    assert!(ok, "serve exits 0: {err}");
    for (slug, n) in ["busy_wakeup", "p99", "http", "signal"].iter().zip(counted) {
        let files = dumps(&dir, slug);
        assert!(
            n >= 1 && n as usize <= files.len(),
            "{slug}: {n} counted, {files:?}"
        );
        for f in &files {
            assert!(
                err.contains(&format!("lbscope: dump {} (", f.display())),
                "serve logs each dump: {}: {err}",
                f.display()
            );
        }
    }

    for p in [&busy, &p99, &http, &signal] {
        let mode = std::os::unix::fs::PermissionsExt::mode(&p.metadata().unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600, "{}", p.display());
        let snaps = report(p);
        let s = span_s(&snaps);
        // The ring's 2 s (its first batch may reach a little further back), never the run.
        assert!((1.0..=3.5).contains(&s), "{}: spans {s:.2} s", p.display());
    }
    let snaps = report(&busy);
    assert!(
        found(&snaps, "busy_wakeup") >= 1,
        "the busy_wakeup dump's report holds busy wakeups: {}",
        busy.display()
    );
    let worst = report(&p99)
        .iter()
        .map(|s| s["runqlat_us"]["max"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(
        worst >= 1000.0,
        "the p99 dump holds a wait of 1 ms or more: {worst} us"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_caps_dumps_and_keeps_what_was_written() {
    let Some(_g) = live_guard() else { return };
    let dir = scratch("caps");
    std::fs::create_dir_all(&dir).unwrap();
    // A dump already there, filling the directory's 1 MiB cap to 8 KiB short.
    let old = dir.join("lbscope-20260101T000000Z-old.lbs");
    std::fs::write(&old, vec![0u8; (1 << 20) - (8 << 10)]).unwrap();
    let port = free_port();
    let caps = ["--dump-dir-max-mb", "1", "--max-dumps-per-hour", "2"];
    let serve = start_serve(
        port,
        &[
            &["--ring", "1", "--dump-dir", dir.to_str().unwrap()][..],
            &caps[..],
        ]
        .concat(),
        Duration::from_millis(300),
    );
    // Four signals a second apart while a wakeup storm runs (a second of it is tens of KiB):
    // the directory's cap refuses them, each counted (the hourly cap has its unit test).
    let mut wl = example("wakeup_storm");
    wl.args(["--duration-ms", "6000"]);
    let mut wl = Workload::start(wl);
    let storm = std::thread::spawn(move || {
        wl.go_and_wait(Duration::from_secs(60));
        wl.finish();
    });
    std::thread::sleep(Duration::from_millis(1500));
    for _ in 0..4 {
        serve.signal("USR1");
        std::thread::sleep(Duration::from_millis(1000));
    }
    storm.join().unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let written = metric(port, "lbscope_dumps_total{trigger=\"signal\"}") as u64;
    let by_dir = metric(port, "lbscope_dumps_skipped_total{reason=\"dir_cap\"}") as u64;
    let by_hour = metric(port, "lbscope_dumps_skipped_total{reason=\"hourly_cap\"}") as u64;
    let (ok, _, err) = serve.interrupt();
    assert!(ok, "serve exits 0: {err}");
    assert!(written <= 2, "{written} dumps kept, at most 2 an hour");
    assert_eq!(written as usize, dumps(&dir, "signal").len());
    assert_eq!(
        written + by_dir + by_hour,
        4,
        "each request kept or counted: {err}"
    );
    assert!(
        by_dir >= 1,
        "a second of a wakeup storm does not fit in 8 KiB: {err}"
    );
    let held: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        held <= 1 << 20,
        "the directory holds {held} bytes, over its cap"
    );
    assert!(old.exists(), "the dump already written stays");
    assert!(
        std::fs::read_dir(&dir).unwrap().flatten().all(|e| !e
            .file_name()
            .to_str()
            .unwrap()
            .ends_with(".partial")),
        "no partial dump is left"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_disk_is_counted_and_serving_goes_on() {
    let Some(_g) = live_guard() else { return };
    let dir = scratch("full");
    std::fs::create_dir_all(&dir).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs"])
        .arg(&dir)
        .status()
        .unwrap()
        .success();
    assert!(mounted, "a 16 KiB tmpfs mounts at {}", dir.display());
    let port = free_port();
    let serve = start_serve(
        port,
        &[
            "-i",
            "0.5",
            "--ring",
            "2",
            "--dump-dir",
            dir.to_str().unwrap(),
        ],
        Duration::from_millis(300),
    );
    // Two seconds of a wakeup storm are far more than 16 KiB.
    storm(2000);
    serve.signal("USR1");
    let end = Instant::now() + Duration::from_secs(10);
    while metric(port, "lbscope_dump_failures_total") < 1.0 {
        assert!(Instant::now() < end, "the failed dump is counted");
        std::thread::sleep(Duration::from_millis(200));
    }
    let before = metric(port, "lbscope_intervals_total");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        metric(port, "lbscope_intervals_total") > before,
        "serving goes on"
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let (ok, _, err) = serve.interrupt();
    let _ = std::process::Command::new("umount").arg(&dir).status();
    assert!(ok, "serve exits 0: {err}");
    assert!(left.is_empty(), "no partial dump is left: {left:?}");
    assert!(
        err.contains("failed") && err.contains("No space left on device"),
        "the failure is logged: {err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_refuses_bad_input_in_one_line_and_serves_stalled_and_many_scrapers() {
    let Some(_g) = live_guard() else { return };
    let one_line = |args: &[&str], code: i32, needle: &str| {
        let o = lbscope().arg("serve").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    let dir = scratch("bad");
    let ds = dir.to_str().unwrap();
    one_line(
        &[
            "--ring",
            "5",
            "--dump-dir",
            ds,
            "--trigger",
            "missed_pull>5",
        ],
        2,
        "--trigger",
    );
    one_line(&["--ring", "5"], 2, "--dump-dir");
    let file = std::env::temp_dir().join(format!("lbscope-flight-file-{}", std::process::id()));
    std::fs::write(&file, b"x").unwrap();
    let under = format!("{}/dumps", file.display());
    one_line(
        &["--ring", "5", "--dump-dir", &under],
        2,
        "cannot create it",
    );
    let _ = std::fs::remove_file(&file);

    let port = free_port();
    let serve = start_serve(port, &["-i", "0.5"], Duration::from_millis(1200));
    // Two stalled scrapers: one connected and silent, one stopped in the middle of its
    // request line; and a POST without --dump-on-post.
    let silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut half = TcpStream::connect(("127.0.0.1", port)).unwrap();
    half.write_all(b"GET /met").unwrap();
    assert!(
        post(port, "/dump").starts_with("HTTP/1.0 405"),
        "POST needs --dump-on-post"
    );
    let t0 = Instant::now();
    let scrapers: Vec<_> = (0..32)
        .map(|_| std::thread::spawn(move || get(port, "/metrics")))
        .collect();
    for s in scrapers {
        let body = s.join().unwrap().expect("every scraper is answered");
        assert!(body.contains("lbscope_intervals_total") && body.ends_with("# EOF\n"));
    }
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "32 scrapes beside two stalled ones took {:?}",
        t0.elapsed()
    );
    // The pipeline went on: intervals keep closing.
    let before = metric(port, "lbscope_intervals_total");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        metric(port, "lbscope_intervals_total") > before,
        "intervals still close"
    );
    drop((silent, half));
    let (ok, _, err) = serve.interrupt();
    assert!(ok, "serve exits 0 with stalled clients gone: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn record_ring_writes_the_last_seconds_at_its_trigger_and_stops() {
    let Some(_g) = live_guard() else { return };
    let dir = scratch("record");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("catch.lbs");
    let mut rec = lbscope();
    rec.args(["record", "--ring", "1.5", "--trigger", "p99>=12ms", "-o"])
        .arg(&out);
    let rec = Tracer::start(
        "lbscope record --ring",
        rec,
        Some("keeping"),
        Duration::from_millis(1800),
    );
    if out.exists() {
        let (_, _, err) = rec.interrupt();
        panic!("nothing is written before the trigger: {err}");
    }
    // Sixteen spinners on two CPUs: each waits seven others' time slices (a tick each at
    // HZ=250: about 28 ms), and record stops by itself. The threshold stays well above what
    // the machine's own tasks wait: a slow host's background p99 reached 5 ms.
    let mut wl = example("spin");
    wl.args(["--threads", "16", "--duration-ms", "3000"]);
    let mut wl = Workload::start(wl);
    wl.go_and_wait(Duration::from_secs(30));
    wl.finish();
    let (ok, _, err) = rec.wait_exit(Duration::from_secs(20), "its p99 trigger");
    assert!(ok, "record --ring exits 0 at its trigger: {err}");
    assert!(err.contains("on runqlat p99"), "{err}");
    let snaps = report(&out);
    let s = span_s(&snaps);
    assert!(
        (0.5..=2.5).contains(&s),
        "the last 1.5 s, spanning {s:.2} s"
    );
    let worst = snaps
        .iter()
        .map(|s| s["runqlat_us"]["max"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(worst >= 12000.0, "the wait that fired it: {worst} us");
    let _ = std::fs::remove_dir_all(&dir);
}
