//! `lbscope serve` scraped by a real Prometheus (the Debian package, on loopback, scraping
//! every second) while a known workload runs: what Prometheus stored must be what perf and
//! libbpf-tools runqlat counted for the same workload over the same window.

use crate::common::{
    ensure_tracefs, example, free_port, get, lbscope, live_guard, require_tool, Tracer, Workload,
};
use std::process::Command;
use std::time::{Duration, Instant};

/// The body of Prometheus's answer to the instant query `promql`.
fn query_body(port: u16, promql: &str) -> Option<String> {
    let q: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    get(port, &format!("/api/v1/query?query={q}"))
}

/// A PromQL instant query's single value.
fn query(port: u16, promql: &str) -> Option<f64> {
    let body = query_body(port, promql)?;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
}

/// Polls until `f` gives the same value twice, `gap` apart (the last interval closed and
/// was scraped), or `timeout` passes.
fn settled(timeout: Duration, gap: Duration, f: impl Fn() -> Option<f64>) -> Option<f64> {
    let end = Instant::now() + timeout;
    let mut last = None;
    while Instant::now() < end {
        std::thread::sleep(gap);
        let v = f();
        if v.is_some() && v == last {
            return v;
        }
        last = v;
    }
    last
}

#[test]
fn prometheus_stores_what_perf_and_runqlat_count() {
    let Some(_g) = live_guard() else { return };
    ensure_tracefs();
    let prometheus = require_tool("prometheus", "prometheus");
    let perf_bin = require_tool("perf", "linux-perf");
    let runqlat = require_tool("runqlat", "libbpf-tools");
    let dir = std::env::temp_dir().join(format!("lbscope-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (lbs_port, prom_port) = (free_port(), free_port());
    let comm = format!("lbsserve{}", std::process::id() % 100_000);

    // Message threads waking workers that think: migrations of every kind and latencies from
    // microseconds up, all in threads named `comm`.
    let mut wl_cmd = example("wakeup_storm");
    wl_cmd.args(["--comm", &comm, "--workers", "6", "--think-us", "500"]);
    // A 1 ms pause between rounds lets CPUs go idle, so wakeups and newly idle
    // balancing move tasks: 230-338 migrations in 3 s here, against 16-118 with none.
    wl_cmd.args(["--duration-ms", "3000", "--interval-us", "1000"]);
    let mut wl = Workload::start(wl_cmd);
    let pid = wl.pid.to_string();

    let mut serve = lbscope();
    serve.args(["serve", "--listen", &format!("127.0.0.1:{lbs_port}")]);
    serve.args(["--comm", &comm, "-i", "1", "--process-latency", &comm]);
    let serve = Tracer::start("lbscope serve", serve, Some("serving"), Duration::ZERO);
    assert!(
        get(lbs_port, "/metrics").is_some_and(|m| m.contains("lbscope_build_info")),
        "serve answers /metrics"
    );
    assert!(
        get(lbs_port, "/nothing").is_some(),
        "serve answers other paths (404)"
    );
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: lbscope\n    static_configs:\n      \
             - targets: ['127.0.0.1:{lbs_port}']\n"
        ),
    )
    .unwrap();
    let mut prom = Command::new(&prometheus);
    prom.arg(format!("--config.file={}", config.display()));
    prom.arg(format!(
        "--storage.tsdb.path={}",
        dir.join("tsdb").display()
    ));
    prom.arg(format!("--web.listen-address=127.0.0.1:{prom_port}"));
    let prom = Tracer::start(
        "prometheus",
        prom,
        Some("Server is ready to receive web requests"),
        Duration::ZERO,
    );
    // Prometheus has scraped serve at least once.
    assert!(
        settled(Duration::from_secs(20), Duration::from_millis(500), || {
            query(prom_port, "up{job=\"lbscope\"}").filter(|v| *v == 1.0)
        })
        .is_some(),
        "Prometheus scrapes serve"
    );

    let stat_out = dir.join("perf-stat.txt");
    let mut perf = Command::new(&perf_bin);
    perf.args(["stat", "-x,", "-o"]).arg(&stat_out);
    perf.args(["-a", "-e", "sched:sched_migrate_task"]);
    perf.args(["--filter", &format!("comm == \"{comm}\"")]);
    let perf = Tracer::start("perf", perf, None, Duration::from_secs(1));
    let mut rq = Command::new("stdbuf");
    rq.args(["-oL", &runqlat, "-p", &pid]);
    let rq = Tracer::start("runqlat", rq, Some("Tracing"), Duration::from_millis(200));

    wl.go_and_wait(Duration::from_secs(60));
    // serve goes on counting: the references stop only once the workload has exited, so
    // that its threads' last moves are in both windows.
    wl.finish();
    std::thread::sleep(Duration::from_millis(300));
    let (_, _, _) = perf.interrupt();
    let (_, rq_out, _) = rq.interrupt();

    // Every interval holding the workload closed and was scraped.
    let migrations = settled(Duration::from_secs(30), Duration::from_millis(1500), || {
        query(prom_port, "sum(lbscope_migrations_total)")
    })
    .expect("Prometheus has the migration counter");
    // Moves the kernel ran no BPF program for (see live::migrations_match_perf).
    let unseen = settled(Duration::from_secs(30), Duration::from_millis(1500), || {
        query(prom_port, "sum(lbscope_unseen_migrations_total)")
    })
    .expect("Prometheus has the unseen migration counter");
    let samples = settled(Duration::from_secs(30), Duration::from_millis(1500), || {
        query(prom_port, "sum(lbscope_runqlat_seconds_count)")
    })
    .expect("Prometheus has the latency histogram");
    let process_samples = settled(Duration::from_secs(30), Duration::from_millis(1500), || {
        query(
            prom_port,
            &format!("sum(lbscope_process_runqlat_seconds_count{{comm=\"{comm}\"}})"),
        )
    })
    .expect("Prometheus has the allow-listed process's histogram");
    // Every query of the Grafana dashboard in examples/ answers with data.
    let dash = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/grafana-lbscope.json"
    ))
    .unwrap();
    let dash: serde_json::Value = serde_json::from_str(&dash).expect("the dashboard is JSON");
    let mut queries = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            let expr = expr
                .replace("$__rate_interval", "10s")
                .replace("$instance", ".*");
            let body = query_body(prom_port, &expr).unwrap();
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["status"], "success", "{expr}: {body}");
            assert!(
                !v["data"]["result"].as_array().unwrap().is_empty(),
                "{} ({expr}) has data",
                panel["title"]
            );
            queries += 1;
        }
    }
    assert!(queries >= 10, "{queries} dashboard queries");
    // serve's own CPU as Prometheus stored it, against the kernel's run time of every thread
    // of the process read from outside just after: at most that, and most of it (the last
    // interval or two are not in the stored value yet).
    let own = query(prom_port, "lbscope_self_cpu_seconds_total").expect("the self CPU counter");
    let task_dir = format!("/proc/{}/task", serve.pid());
    let outside = lbscope::selfcost::process_run_ns(std::path::Path::new(&task_dir))
        .expect("serve's run time in /proc") as f64
        / 1e9;
    assert!(
        own > 0.0 && own <= outside + 0.01 && own >= outside * 0.5,
        "serve's self CPU {own} s in Prometheus, {outside} s in {task_dir}/*/schedstat"
    );
    let (ok, _, err) = serve.interrupt();
    let _ = prom.interrupt();
    assert!(ok, "serve exits 0 on SIGINT: {err}");

    let text = std::fs::read_to_string(&stat_out).expect("perf stat wrote its output");
    let perf_n: u64 = text
        .lines()
        .find(|l| l.contains("sched:sched_migrate_task"))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in perf stat output: {text}"));
    let rq_n: u64 = crate::live::runqlat_hist(&rq_out).values().sum();
    eprintln!(
        "perf {perf_n}, Prometheus migrations {migrations} (unseen {unseen}); runqlat {rq_n}, Prometheus samples {samples}"
    );
    assert!(perf_n > 20, "the workload migrated (perf counted {perf_n})");
    // Between the recorded moves and those plus the unseen ones: see
    // live::migrations_match_perf for the moves perf cannot see either.
    assert!(
        migrations as u64 <= perf_n && perf_n <= (migrations + unseen) as u64,
        "the migration counter's increase over the window is perf's count, give or take the \
         unseen moves: perf {perf_n}, recorded {migrations}, unseen {unseen}"
    );
    assert!(rq_n > 1000, "runqlat saw the workload: {rq_out}");
    // runqlat counts the process, serve the threads named `comm`: the workload names all of
    // its threads so, the gated main thread included.
    assert_eq!(
        samples as u64, rq_n,
        "the histogram's sample count is runqlat's"
    );
    assert_eq!(
        process_samples as u64, rq_n,
        "the allow-listed process's histogram count is runqlat's"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_refuses_a_bad_listen_address_and_a_port_in_use() {
    let o = lbscope()
        .args(["serve", "--listen", "nowhere"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--listen nowhere") && err.lines().count() == 1,
        "{err}"
    );
    let Some(_g) = live_guard() else { return };
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let o = lbscope()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot listen there"), "{err}");
}
