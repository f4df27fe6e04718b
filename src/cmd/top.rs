//! `lbscope top`: the live source wired to the TUI (`crate::tui`), the app a sink of the
//! pipeline; `--demo` replays the recording shipped in `examples/` instead.

use super::{replay, settings, CmdError};
use crate::cli::TopArgs;
use crate::pipeline::Source;
use crate::record::Reader;

/// The recording `lbscope top --demo` replays: 18 s of a 4-node, 16-CPU lab guest (kernel
/// 6.1, balancer hooks recorded) going from quiet to a group-imbalance job beside CPU hogs, a
/// quiet second, then an overloaded node herded and spread again (`tests/lab/run --kernel 6.1
/// --topology 4node --scenario demo`); the findings fire in both phases.
const DEMO: &[u8] = include_bytes!("../../examples/demo.lbs");

/// What to do when the live source cannot start.
const DEMO_HINT: &str = "`lbscope top --demo` shows the TUI over a recording without root";

/// Runs `lbscope top`.
pub fn run(args: &TopArgs) -> Result<(), CmdError> {
    let interval_ns = settings::interval_ns(args.interval)?;
    if args.demo {
        let open = || Reader::from_bytes(DEMO.to_vec()).map(Source::reader);
        return replay::replay(
            &open,
            "demo (examples/demo.lbs)",
            interval_ns,
            1.0,
            (&args.filter, &args.model),
        );
    }
    run_live(args, interval_ns)
}

#[cfg(feature = "bpf")]
fn run_live(args: &TopArgs, interval_ns: u64) -> Result<(), CmdError> {
    use super::stop_on_signals;
    use crate::analyze::{Analyzer, AnalyzerConfig};
    use crate::tui::app::{App, SourceInfo};
    use crate::tui::run::{self, LiveFeed};
    let cpus = crate::source::live::possible_cpus();
    let rate = settings::fold_turns_on_rate(args.fold.when, &args.filter, cpus)
        .then(|| switches_per_s(RATE_WINDOW, RATE_SLICE))
        .flatten();
    let cfg = settings::live_config(
        &args.collect,
        false,
        Some((args.fold.when, &args.filter, rate)),
        Some(interval_ns),
    )?;
    let folded = cfg.fold;
    let topo = crate::topology::Topology::detect()?;
    let filter = settings::filter(&args.filter, &topo, true)?;
    let stop = stop_on_signals()?;
    let src = Source::live(cfg, topo.clone())
        .map_err(|e| CmdError::Failed(format!("{e} ({DEMO_HINT})")))?;
    let mut app = App::new(
        topo.clone(),
        interval_ns,
        SourceInfo::Live {
            probe_mode: src.probes.mode(),
            folded,
        },
        src.header.clock_base_ns,
    );
    app.comm = filter.comm.clone();
    app.timeline = Some(crate::analyze::timeline::Timeline::new(
        topo.nr_cpus,
        crate::analyze::timeline::WINDOW_NS,
    ));
    // Measured only where the rate decides: folded, it was the reason.
    if let (true, Some(r)) = (folded, rate) {
        app.status = Some(format!(
            "folded: {r} switches/s as top started; --fold off streams every event"
        ));
    }
    if src.probes.kallsyms == Some(false) {
        app.status = Some(
            "/proc/kallsyms gave no addresses: migration reasons fall back to context rules".into(),
        );
    }
    let analyzer = Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns,
            filter,
            model: args.model.config(&src.header.kernel_release),
        },
    );
    let mut guard = crate::tui::term::enter().map_err(|e| CmdError::Failed(e.to_string()))?;
    let mut feed = LiveFeed::new(src, analyzer);
    let r = run::run(&mut guard, &mut app, &mut feed, &stop);
    drop(guard);
    Ok(r?)
}

/// How long `top --fold auto` counts the machine's context switches before it loads, in
/// slices of [`RATE_SLICE`]: a load that pauses between runs (hackbench in a loop forking its
/// next 400 processes) still shows its rate in one of them.
#[cfg(feature = "bpf")]
const RATE_WINDOW: std::time::Duration = std::time::Duration::from_millis(500);

#[cfg(feature = "bpf")]
const RATE_SLICE: std::time::Duration = std::time::Duration::from_millis(100);

/// The whole machine's context switches a second (`ctxt` in /proc/stat) in the busiest
/// `slice` of `window`; `None` where /proc/stat cannot be read.
#[cfg(feature = "bpf")]
fn switches_per_s(window: std::time::Duration, slice: std::time::Duration) -> Option<u64> {
    let ctxt = || -> Option<u64> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let line = stat.lines().find(|l| l.starts_with("ctxt "))?;
        line[5..].trim().parse().ok()
    };
    let start = std::time::Instant::now();
    let (mut a, mut t) = (ctxt()?, start);
    let mut busiest = 0u64;
    while start.elapsed() < window {
        std::thread::sleep(slice);
        let (b, u) = (ctxt()?, std::time::Instant::now());
        let secs = u.duration_since(t).as_secs_f64().max(1e-3);
        busiest = busiest.max((b.saturating_sub(a) as f64 / secs) as u64);
        (a, t) = (b, u);
    }
    Some(busiest)
}

/// Without BPF support there is no live source.
#[cfg(not(feature = "bpf"))]
fn run_live(args: &TopArgs, _interval_ns: u64) -> Result<(), CmdError> {
    let _ = (settings::filter, &args.filter);
    Err(CmdError::Failed(format!(
        "{} ({DEMO_HINT})",
        crate::source::SourceError::NoBpf
    )))
}
