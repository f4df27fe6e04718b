//! `lbscope top`, `lbscope replay` and `lbscope diff --tui`: the live source, a recording or
//! a comparison wired to the TUI (`crate::tui`).

use super::report::{build_filter, interval_ns, stop_on_signals};
use super::{pipeline, CmdError};
use crate::analyze::{Analyzer, AnalyzerConfig};
use crate::cli::{FilterArgs, ModelArgs, ReplayArgs, TopArgs};
use crate::diff::Diff;
use crate::record::{Damage, Header, Reader, RecordError};
use crate::source::file::FileSource;
use crate::topology::Topology;
use crate::tui::app::{App, SourceInfo};
use crate::tui::run::{self, Feed, ReplayFeed};
use crate::tui::tally::{Analysed, Tally};
use crate::tui::term;

/// The recording `lbscope top --demo` replays: a few seconds of a mixed workload.
const DEMO: &[u8] = include_bytes!("../../examples/demo.lbs");

/// Runs `lbscope top`.
pub fn run(args: &TopArgs) -> Result<(), CmdError> {
    let interval_ns = interval_ns(args.interval)?;
    if args.demo {
        let open = || Reader::from_bytes(DEMO.to_vec()).map(FileSource::start);
        return replay(
            &open,
            "demo (examples/demo.lbs)",
            interval_ns,
            1.0,
            (&args.filter, &args.model),
        );
    }
    run_live(args, interval_ns)
}

/// Runs `lbscope replay`.
pub fn run_replay(args: &ReplayArgs) -> Result<(), CmdError> {
    let interval_ns = interval_ns(args.interval)?;
    if !(args.speed.is_finite() && (0.01..=1000.0).contains(&args.speed)) {
        return Err(CmdError::Usage(format!(
            "--speed {}: a factor from 0.01 to 1000",
            args.speed
        )));
    }
    let path = args.file.clone();
    let open = || FileSource::open(&path);
    // The file name: the title line has no room for a long path.
    let name = args.file.file_name().map_or_else(
        || args.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    replay(
        &open,
        &name,
        interval_ns,
        args.speed,
        (&args.filter, &args.model),
    )
}

/// Every interval of a recording, the final partial one included, each with its most
/// migrated tasks: the one pipeline, with the tally beside the analyzer.
pub fn analyze_recording(
    src: FileSource,
    interval_ns: u64,
    filter: &FilterArgs,
    model: &ModelArgs,
) -> Result<(Header, Analysed, Damage), CmdError> {
    let model = model.config(&src.header.kernel_release);
    let topo = src.header.topology.clone();
    let filter = build_filter(filter, &topo, false)?;
    let tally = std::cell::RefCell::new(Tally::new(filter.clone()));
    let mut analyzer = Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns,
            filter,
            model,
        },
    );
    let mut out = Vec::new();
    pipeline::run(
        &src.rx,
        &mut analyzer,
        None,
        &std::sync::atomic::AtomicBool::new(false),
        pipeline::Hooks {
            request_stop: &mut || {},
            tee: &mut |evs| {
                let mut t = tally.borrow_mut();
                for ev in evs {
                    t.observe(ev);
                }
                Ok(())
            },
            sink: &mut |s| {
                let top = tally.borrow_mut().close(s);
                out.push((s.clone(), top));
                Ok(())
            },
            // A file source warns only of damage, which the damage report covers; stderr
            // would draw over the screen during a re-analysis.
            warn: &mut |_| {},
        },
    )?;
    let header = src.header.clone();
    Ok((header, out, src.damage()))
}

fn enter() -> Result<term::Guard, CmdError> {
    term::enter().map_err(|e| CmdError::Failed(e.to_string()))
}

type Opener<'a> = dyn Fn() -> Result<FileSource, RecordError> + 'a;

fn replay(
    open: &Opener<'_>,
    name: &str,
    interval_ns: u64,
    speed: f64,
    (filter, model): (&FilterArgs, &ModelArgs),
) -> Result<(), CmdError> {
    let (header, snaps, damage) = analyze_recording(open()?, interval_ns, filter, model)?;
    let mut info = crate::tui::recording_info(name, &header);
    if let (Some((a, _)), Some((b, _))) = (snaps.first(), snaps.last()) {
        info.span_ns = b.t_end_ns.saturating_sub(a.t_start_ns);
    }
    let mut app = App::new(
        header.topology.clone(),
        interval_ns,
        SourceInfo::Replay(info),
        header.clock_base_ns,
    );
    app.comm = filter.comm.clone();
    app.speed = speed;
    app.replace_history(snaps, None);
    if !damage.is_clean() {
        app.status = Some(format!(
            "damaged recording: {} chunk(s) skipped; figures cover the readable chunks",
            damage.skipped_chunks
        ));
    }
    let stop = stop_on_signals()?;
    let mut guard = enter()?;
    let base = filter.clone();
    let mut feed = ReplayFeed::new(|ns, comm| {
        let f = FilterArgs {
            comm,
            ..base.clone()
        };
        let src = open().map_err(|e| e.to_string())?;
        analyze_recording(src, ns, &f, model)
            .map(|(_, s, _)| s)
            .map_err(|e| e.to_string())
    });
    let r = run::run(&mut guard, &mut app, &mut feed, &stop);
    drop(guard);
    Ok(r?)
}

/// A feed with nothing to feed: the diff is computed before the screen opens.
struct Still;

impl Feed for Still {
    fn pump(&mut self, _app: &mut App) -> bool {
        false
    }
    fn reconfigure(&mut self, _app: &mut App, _ns: u64, _comm: Option<String>) {}
}

/// Shows a comparison in the TUI until `q`.
pub fn show_diff(d: Diff, topo: Topology) -> Result<(), CmdError> {
    let mut app = App::for_diff(d, topo);
    let stop = stop_on_signals()?;
    let mut guard = enter()?;
    let r = run::run(&mut guard, &mut app, &mut Still, &stop);
    drop(guard);
    Ok(r?)
}

/// What to do when the live source cannot start.
const DEMO_HINT: &str = "`lbscope top --demo` shows the TUI over a recording without root";

#[cfg(feature = "bpf")]
fn run_live(args: &TopArgs, interval_ns: u64) -> Result<(), CmdError> {
    use super::report::{live_config, probe_names};
    use crate::source::live::{clock, LiveSource};
    let cfg = live_config(&args.collect, false, Some((args.fold.when, &args.filter)))?;
    let topo = Topology::detect()?;
    let filter = build_filter(&args.filter, &topo, true)?;
    let stop = stop_on_signals()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(crate::source::QUEUE_BATCHES);
    let folded = cfg.fold;
    let source =
        LiveSource::start(cfg, tx).map_err(|e| CmdError::Failed(format!("{e} ({DEMO_HINT})")))?;
    let mut probe_mode = crate::tui::probe_mode(&probe_names(&source.report));
    if folded {
        probe_mode.push_str(", latency folded in the kernel");
    }
    let base = clock::realtime_offset_ns();
    let mut app = App::new(
        topo.clone(),
        interval_ns,
        SourceInfo::Live { probe_mode },
        base,
    );
    app.comm = filter.comm.clone();
    if !source.report.kallsyms {
        app.status = Some(
            "/proc/kallsyms gave no addresses: migration reasons fall back to context rules".into(),
        );
    }
    let analyzer = Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns,
            filter,
            model: args.model.config(&super::version::kernel_release()),
        },
    );
    let mut guard = enter()?;
    let mut request_stop = || source.stop_async();
    let mut feed = run::LiveFeed::new(&rx, analyzer, &mut request_stop);
    let r = run::run(&mut guard, &mut app, &mut feed, &stop);
    drop(guard);
    Ok(r?)
}

/// Without BPF support there is no live source.
#[cfg(not(feature = "bpf"))]
fn run_live(args: &TopArgs, _interval_ns: u64) -> Result<(), CmdError> {
    let _ = (build_filter, &args.filter);
    Err(CmdError::Failed(format!(
        "{} ({DEMO_HINT})",
        crate::source::SourceError::NoBpf
    )))
}
