//! `lbscope record`: the live source into the recorder, with a progress line; no analysis.

use super::CmdError;

/// Runs `lbscope record`.
#[cfg(feature = "bpf")]
pub fn run(args: &crate::cli::RecordArgs) -> Result<(), CmdError> {
    use super::{settings, stop_on_signals};
    use crate::pipeline::sinks::{Recorder, Warnings};
    use crate::pipeline::{Driver, Source};
    use std::io::IsTerminal;
    let duration = settings::duration(args.duration)?;
    let cfg = settings::live_config(&args.collect, true, None)?;
    // A bad output path fails before anything is traced.
    settings::check_output(&args.output)?;
    let topo = crate::topology::Topology::detect()?;
    let stop = stop_on_signals()?;
    let progress = !args.quiet && std::io::stderr().is_terminal();
    let src = Source::live(cfg, topo)?;
    let mut recorder = Recorder::create(&args.output, &src.header, progress)?;
    if !args.quiet {
        eprintln!(
            "lbscope: recording to {}{}; Ctrl-C to stop",
            args.output.display(),
            args.duration
                .map(|d| format!(" for {d} s"))
                .unwrap_or_default()
        );
    }
    let deadline = duration.map(|d| std::time::Instant::now() + d);
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

/// Without BPF support there is nothing to record.
#[cfg(not(feature = "bpf"))]
pub fn run(_args: &crate::cli::RecordArgs) -> Result<(), CmdError> {
    Err(crate::source::SourceError::NoBpf.into())
}
