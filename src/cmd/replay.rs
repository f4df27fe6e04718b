//! `lbscope replay` (and `top --demo`): a recording analysed through the pipeline into a
//! history of snapshots, which the TUI walks at the chosen speed; `+`/`-` and `/` analyse
//! it again with the new interval or filter.

use super::{damage_outcome, settings, stop_on_signals, CmdError};
use crate::analyze::timeline::{Timeline, WINDOW_NS};
use crate::analyze::Snapshot;
use crate::analyze::{Analyzer, AnalyzerConfig};
use crate::cli::{FilterArgs, ModelArgs, ReplayArgs};
use crate::pipeline::sinks::{History, TimelineSink};
use crate::pipeline::{Driver, Sink, Source};
use crate::record::{Damage, Header, RecordError};
use crate::tui::app::{App, SourceInfo};
use crate::tui::run::{self, ReplayFeed, Retimeline};
use std::sync::atomic::AtomicBool;

/// Runs `lbscope replay`.
pub fn run(args: &ReplayArgs) -> Result<(), CmdError> {
    let interval_ns = settings::interval_ns(args.interval)?;
    let speed = settings::speed(args.speed)?;
    let path = args.file.clone();
    let open = || Source::file(&path);
    // The file name: the title line has no room for a long path.
    let name = args.file.file_name().map_or_else(
        || args.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    replay(
        &open,
        &name,
        interval_ns,
        speed,
        (&args.filter, &args.model),
    )
}

/// Every interval of a recording, the final partial one included.
pub fn analyze_recording(
    src: Source,
    interval_ns: u64,
    filter: &FilterArgs,
    model: &ModelArgs,
) -> Result<(Header, Vec<Snapshot>, Damage), CmdError> {
    analyze_with(src, interval_ns, (filter, model), None)
}

/// The timeline of a recording's `[lo, hi)` (its state followed from the start).
pub fn timeline_of(
    src: Source,
    interval_ns: u64,
    (filter, model): (&FilterArgs, &ModelArgs),
    (lo, hi): (u64, u64),
) -> Result<Timeline, CmdError> {
    let n = src.topology().nr_cpus;
    let mut sink = TimelineSink(Timeline::new(n, u64::MAX).clip(lo, hi));
    analyze_with(src, interval_ns, (filter, model), Some(&mut sink))?;
    Ok(sink.0)
}

/// [`analyze_recording`], with more sinks in the same pass.
fn analyze_with(
    src: Source,
    interval_ns: u64,
    (filter, model): (&FilterArgs, &ModelArgs),
    extra: Option<&mut dyn Sink>,
) -> Result<(Header, Vec<Snapshot>, Damage), CmdError> {
    let model = model.config(&src.header.kernel_release);
    let topo = src.topology().clone();
    let filter = settings::filter(filter, &topo, false)?;
    let mut history = History::default();
    let analyzer = Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns,
            filter,
            model,
        },
    );
    // A recording warns only of damage, which the damage report covers; stderr would draw
    // over the screen during a re-analysis.
    let stop = AtomicBool::new(false);
    let mut driver = Driver::new(analyzer);
    match extra {
        Some(x) => driver.run(&src, &mut [&mut history as &mut dyn Sink, x], &stop)?,
        None => driver.run(&src, &mut [&mut history], &stop)?,
    };
    let header = src.header.clone();
    Ok((header, history.0, src.finish().damage))
}

/// Opens the recording again (each analysis reads it from the start).
pub type Opener<'a> = dyn Fn() -> Result<Source, RecordError> + 'a;

/// Shows the recording `open` opens in the TUI until `q`; a damaged recording is then an
/// [`CmdError::Incomplete`] (exit 3), as in `report`.
pub fn replay(
    open: &Opener<'_>,
    name: &str,
    interval_ns: u64,
    speed: f64,
    (filter, model): (&FilterArgs, &ModelArgs),
) -> Result<(), CmdError> {
    let src = open()?;
    // The first pass keeps the recording's last minute on the timeline; the feed reads the
    // recording again for another clip when the screen needs one.
    let mut tl = TimelineSink(Timeline::new(src.topology().nr_cpus, WINDOW_NS));
    let (header, snaps, damage) = analyze_with(src, interval_ns, (filter, model), Some(&mut tl))?;
    let covered = match (snaps.first(), snaps.last()) {
        (Some(a), Some(b)) if b.t_end_ns - a.t_start_ns > WINDOW_NS => {
            (b.t_end_ns - WINDOW_NS, u64::MAX)
        }
        _ => (0, u64::MAX),
    };
    let mut info = crate::tui::recording_info(name, &header);
    if let (Some(a), Some(b)) = (snaps.first(), snaps.last()) {
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
    app.window = crate::tui::history::fit_window(snaps.len());
    app.replace_history(snaps, None);
    app.timeline = Some(tl.0);
    if !damage.is_clean() {
        app.status = Some(format!(
            "damaged recording: {} chunk(s) skipped; figures cover the readable chunks",
            damage.skipped_chunks
        ));
    }
    let stop = stop_on_signals()?;
    let mut guard = crate::tui::term::enter().map_err(|e| CmdError::Failed(e.to_string()))?;
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
    })
    .with_timeline(Retimeline {
        build: Box::new(move |lo, hi| {
            let src = open().map_err(|e| e.to_string())?;
            timeline_of(src, interval_ns, (filter, model), (lo, hi)).map_err(|e| e.to_string())
        }),
        covered,
    });
    let r = run::run(&mut guard, &mut app, &mut feed, &stop);
    drop(guard);
    r?;
    // A damaged recording exits as `report` does (3), once the screen is back.
    damage_outcome(std::path::Path::new(name), &damage)
}
