//! `lbscope record`: the live source into the recorder, with a progress line; no analysis.
//! With `--ring`, the flight recorder instead: the last seconds in memory, written at the
//! first trigger (analysed per second for it), SIGUSR1, or the end.

use super::CmdError;

/// Runs `lbscope record`.
#[cfg(feature = "bpf")]
pub fn run(args: &crate::cli::RecordArgs) -> Result<(), CmdError> {
    use super::{settings, stop_on_signals};
    use crate::pipeline::sinks::{Recorder, Warnings};
    use crate::pipeline::{Driver, Source};
    use std::io::IsTerminal;
    settings::record_cgroup(args.cgroup.as_deref())?;
    let duration = settings::duration(args.duration)?;
    let ring = settings::flight(&args.flight)?;
    let mut cfg = settings::live_config(&args.collect, true, None, None)?;
    cfg.schedstat = true;
    // A bad output path fails before anything is traced.
    settings::check_output(&args.output)?;
    let topo = crate::topology::Topology::detect()?;
    let stop = stop_on_signals()?;
    let progress = !args.quiet && std::io::stderr().is_terminal();
    let src = Source::live(cfg, topo)?;
    let deadline = duration.map(|d| std::time::Instant::now() + d);
    let until = args
        .duration
        .map(|d| format!(" for {d} s"))
        .unwrap_or_default();
    if let Some((limits, triggers)) = ring {
        return ring_only(args, src, limits, triggers, deadline, &until, stop);
    }
    let mut recorder = Recorder::create(&args.output, &src.header, progress)?;
    if !args.quiet {
        eprintln!(
            "lbscope: recording to {}{until}; Ctrl-C to stop",
            args.output.display(),
        );
        eprintln!("lbscope: {}", src.probes.balancer_line());
    }
    let mut driver = Driver::without_analyzer().deadline(deadline);
    driver.run(&src, &mut [&mut recorder, &mut Warnings], &stop)?;
    src.finish();
    let s = recorder.stats().unwrap_or_default();
    if !args.quiet {
        eprintln!(
            "lbscope: wrote {} events in {} chunks, {} bytes ({:.1} bytes/event) to {}",
            s.events,
            s.chunks,
            s.bytes,
            s.bytes as f64 / s.events.max(1) as f64,
            args.output.display()
        );
    }
    Ok(())
}

/// `record --ring`: the flight recorder into `-o`, the run analysed only when a trigger
/// needs its intervals.
#[cfg(feature = "bpf")]
fn ring_only(
    args: &crate::cli::RecordArgs,
    src: crate::pipeline::Source,
    limits: crate::flight::RingLimits,
    triggers: Vec<crate::flight::Trigger>,
    deadline: Option<std::time::Instant>,
    until: &str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<(), CmdError> {
    use crate::analyze::{Analyzer, AnalyzerConfig};
    use crate::pipeline::sinks::{
        Destination, DumpCounters, DumpRequests, FlightRecorder, Warnings,
    };
    use crate::pipeline::Driver;
    let requests = DumpRequests::default();
    requests.on_sigusr1()?;
    if !args.quiet {
        let on: Vec<&str> = args.flight.trigger.iter().map(String::as_str).collect();
        eprintln!(
            "lbscope: keeping the last {} s in memory{until}; written to {} at the first of {}SIGUSR1 or the end",
            args.flight.ring.unwrap_or_default(),
            args.output.display(),
            if on.is_empty() { String::new() } else { format!("{}, ", on.join(", ")) }
        );
    }
    let driver = if triggers.is_empty() {
        Driver::without_analyzer()
    } else {
        let model = crate::cli::ModelArgs::default().config(&src.header.kernel_release);
        Driver::new(Analyzer::new(
            src.topology().clone(),
            AnalyzerConfig {
                model,
                ..AnalyzerConfig::default()
            },
        ))
    };
    let mut flight = FlightRecorder::new(
        limits,
        triggers,
        src.header.clone(),
        Destination::File(args.output.clone()),
        requests,
        DumpCounters::default(),
        stop.clone(),
    )?;
    driver
        .deadline(deadline)
        .run(&src, &mut [&mut flight, &mut Warnings], &stop)?;
    src.finish();
    Ok(())
}

/// Without BPF support there is nothing to record.
#[cfg(not(feature = "bpf"))]
pub fn run(_args: &crate::cli::RecordArgs) -> Result<(), CmdError> {
    Err(crate::source::SourceError::NoBpf.into())
}
