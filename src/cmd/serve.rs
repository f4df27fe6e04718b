//! `lbscope serve`: the live pipeline kept running in the foreground, its figures exposed as
//! OpenMetrics at `http://ADDR/metrics` (the metrics sink, `pipeline::sinks::Metrics`; the
//! HTTP server, `tiny_http`, on a thread of its own that only reads the latest text), with
//! the flight recorder (`pipeline::sinks::FlightRecorder`) when `--ring` asks for it.

use super::CmdError;

/// Runs `lbscope serve`.
#[cfg(feature = "bpf")]
pub fn run(args: &crate::cli::ServeArgs) -> Result<(), CmdError> {
    use super::{settings, stop_on_signals};
    use crate::analyze::{Analyzer, AnalyzerConfig};
    use crate::pipeline::sinks::{DumpRequests, FlightRecorder, Metrics, Warnings};
    use crate::pipeline::{Driver, Sink, Source};
    let interval_ns = settings::interval_ns(args.interval)?;
    let addr = settings::listen(&args.listen)?;
    let listed = settings::process_names(&args.process_latency)?;
    let ring = settings::flight(&args.flight)?;
    let dest = settings::dump_dir(args, ring.is_some())?;
    // Dumps are recordings: with a ring, everything a recording holds is traced.
    let cfg = settings::live_config(
        &args.collect,
        ring.is_some(),
        Some((args.fold.when, &args.filter, None)),
        Some(interval_ns),
    )?;
    let topo = crate::topology::Topology::detect()?;
    let filter = settings::filter(&args.filter, &topo, true)?;
    // The port first: a port in use fails before anything is traced.
    let server = tiny_http::Server::http(addr).map_err(|e| {
        CmdError::Failed(format!(
            "--listen {addr}: cannot listen there ({e}); pick another port or address"
        ))
    })?;
    let stop = stop_on_signals()?;
    let src = Source::live(cfg, topo.clone())?;
    let model = args.model.config(&src.header.kernel_release);
    let mut metrics = Metrics::new(
        &src.header.kernel_release,
        &src.probes.mode(),
        model.rules.name(),
    );
    metrics.list_processes(&listed);
    let requests = DumpRequests::default();
    let mut flight = match (ring, dest) {
        (Some((limits, triggers)), Some(dest)) => {
            requests.on_sigusr1()?;
            let names = args.flight.trigger.join(", ");
            eprintln!(
                "lbscope: keeping the last {} s in memory; dumps go to {} on {}SIGUSR1{}",
                args.flight.ring.unwrap_or_default(),
                args.dump_dir
                    .as_deref()
                    .unwrap_or(std::path::Path::new(""))
                    .display(),
                if names.is_empty() {
                    String::new()
                } else {
                    format!("{names}, ")
                },
                if args.dump_on_post {
                    " and POST /dump"
                } else {
                    ""
                }
            );
            let counters = metrics.register_dumps();
            Some(FlightRecorder::new(
                limits,
                triggers,
                src.header.clone(),
                dest,
                requests.clone(),
                counters,
                stop.clone(),
            )?)
        }
        _ => None,
    };
    let exposition = metrics.exposition();
    let post = args.dump_on_post.then(|| requests.clone());
    let http = std::thread::Builder::new()
        .name("lbscope-http".into())
        .spawn(move || serve_http(&server, &exposition, post.as_ref()))
        .map_err(|e| CmdError::Failed(format!("cannot start the HTTP thread: {e}")))?;
    eprintln!(
        "lbscope: serving http://{addr}/metrics ({} tracepoints, {}); SIGINT or SIGTERM to stop",
        src.probes.attached_tracepoints().len(),
        src.probes.tracing_mode()
    );
    let mut analyzer = Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns,
            filter,
            model,
        },
    );
    analyzer.list_processes(listed);
    let mut driver = Driver::new(analyzer);
    let mut warnings = Warnings;
    let mut sinks: Vec<&mut dyn Sink> = vec![&mut metrics, &mut warnings];
    if let Some(f) = flight.as_mut() {
        sinks.push(f);
    }
    driver.run(&src, &mut sinks, &stop)?;
    src.finish();
    // The HTTP thread blocks in accept: it ends with the process.
    drop(http);
    Ok(())
}

/// Answers every request: `GET /metrics` with the latest exposition, `POST /dump` with a
/// dump request when `post` is given (405 otherwise), anything else 404.
#[cfg(feature = "bpf")]
fn serve_http(
    server: &tiny_http::Server,
    exposition: &crate::pipeline::sinks::Exposition,
    post: Option<&crate::pipeline::sinks::DumpRequests>,
) {
    use crate::pipeline::sinks::METRICS_CONTENT_TYPE;
    for req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or("");
        let resp = match (req.method(), path) {
            (tiny_http::Method::Get, "/metrics") => {
                let text = exposition.text();
                let header = tiny_http::Header::from_bytes("Content-Type", METRICS_CONTENT_TYPE)
                    .expect("a valid header");
                tiny_http::Response::from_data(text.as_bytes().to_vec()).with_header(header)
            }
            (tiny_http::Method::Post, "/dump") => match post {
                Some(r) => {
                    r.request_http();
                    tiny_http::Response::from_string("lbscope: dump requested\n")
                        .with_status_code(202)
                }
                None => tiny_http::Response::from_string(
                    "lbscope: POST /dump needs serve --dump-on-post\n",
                )
                .with_status_code(405),
            },
            _ => tiny_http::Response::from_string("lbscope: GET /metrics\n").with_status_code(404),
        };
        // A scraper that went away is its own problem.
        let _ = req.respond(resp);
    }
}

/// Without BPF support there is no live source to serve.
#[cfg(not(feature = "bpf"))]
pub fn run(_args: &crate::cli::ServeArgs) -> Result<(), CmdError> {
    Err(crate::source::SourceError::NoBpf.into())
}
