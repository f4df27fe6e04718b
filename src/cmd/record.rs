//! `lbscope record`: the live source teed into a recording, with a progress line; and the
//! recording header that describes this machine and run.

use super::CmdError;
use crate::record::{Header, Writer};
use crate::topology::Topology;
use std::time::{Duration, Instant};

/// The header for a recording of this machine.
pub fn header(topo: &Topology, probes: Vec<(String, String)>, clock_base_ns: i64) -> Header {
    use super::version::{kernel_release, read_trim};
    Header {
        format_version: crate::record::FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel_release: kernel_release(),
        hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
        clock_base_ns,
        created_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        topology: topo.clone(),
        probes,
        command_line: std::env::args().collect(),
    }
}

/// Tees event batches into a recording: flushes a chunk at least once a second of wall time.
pub struct Tee {
    writer: Writer,
    last_flush: Instant,
    lost: u64,
    progress: Option<Progress>,
}

struct Progress {
    last: Instant,
    shown: bool,
}

impl Tee {
    /// Creates the recording at `path`.
    pub fn create(
        path: &std::path::Path,
        header: &Header,
        progress: bool,
    ) -> Result<Tee, CmdError> {
        let writer = Writer::create(path, header)?;
        Ok(Tee {
            writer,
            last_flush: Instant::now(),
            lost: 0,
            progress: progress.then(|| Progress {
                last: Instant::now(),
                shown: false,
            }),
        })
    }

    /// Appends a batch; flushes when a second has passed since the last flush.
    pub fn write(&mut self, events: &[crate::event::Event]) -> std::io::Result<()> {
        for e in events {
            if let crate::event::EventKind::Lost { count } = e.kind {
                self.lost += count;
            }
        }
        self.writer
            .write_events(events)
            .map_err(std::io::Error::other)?;
        if self.last_flush.elapsed() >= Duration::from_secs(1) {
            self.writer.flush().map_err(std::io::Error::other)?;
            self.last_flush = Instant::now();
        }
        if let Some(p) = &mut self.progress {
            if p.last.elapsed() >= Duration::from_millis(500) {
                let s = self.writer.stats();
                eprint!(
                    "\r\x1b[Krecording: {} events, {} KiB ({:.1} B/event), {} lost",
                    s.events,
                    s.bytes / 1024,
                    s.bytes as f64 / s.events.max(1) as f64,
                    self.lost
                );
                p.last = Instant::now();
                p.shown = true;
            }
        }
        Ok(())
    }

    /// Finishes the file and returns its statistics.
    pub fn finish(self) -> Result<crate::record::WriteStats, CmdError> {
        if self.progress.as_ref().is_some_and(|p| p.shown) {
            eprintln!();
        }
        let lost = self.lost;
        let s = self.writer.finish()?;
        if lost > 0 {
            eprintln!("lbscope: {lost} events were lost (ring buffer full): figures over those intervals are marked; try --ringbuf-mb 64");
        }
        Ok(s)
    }
}

/// Refuses an output path that cannot be a recording: a directory, a symlink, or a missing
/// parent directory.
pub fn check_output(path: &std::path::Path) -> Result<(), CmdError> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.file_type().is_symlink() {
            return Err(CmdError::Usage(format!(
                "{}: is a symbolic link; lbscope does not write through links: name the target file",
                path.display()
            )));
        }
        if m.is_dir() {
            return Err(CmdError::Usage(format!(
                "{}: is a directory: name a file",
                path.display()
            )));
        }
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent {
        if !dir.is_dir() {
            return Err(CmdError::Usage(format!(
                "{}: directory {} does not exist",
                path.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Runs `lbscope record`.
#[cfg(feature = "bpf")]
pub fn run(args: &crate::cli::RecordArgs) -> Result<(), CmdError> {
    use crate::source::live::{clock, LiveSource};
    use crate::source::SourceMsg;
    use std::io::IsTerminal;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(CmdError::Usage(format!(
                "--duration {d}: a number of seconds above 0"
            )));
        }
    }
    let topo = Topology::detect()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(crate::source::QUEUE_BATCHES);
    let cfg = super::report::live_config(&args.collect, true, None)?;
    // A bad output path fails before anything is traced.
    check_output(&args.output)?;
    let base = clock::realtime_offset_ns();
    let progress = !args.quiet && std::io::stderr().is_terminal();
    let source = LiveSource::start(cfg, tx)?;
    let probes = super::report::probe_names(&source.report);
    let mut tee = Tee::create(&args.output, &header(&topo, probes, base), progress)?;
    if !args.quiet {
        eprintln!(
            "lbscope: recording to {}{}; Ctrl-C to stop",
            args.output.display(),
            args.duration
                .map(|d| format!(" for {d} s"))
                .unwrap_or_default()
        );
    }
    let started = Instant::now();
    let mut stopping = false;
    loop {
        if !stopping
            && (stop.load(Ordering::SeqCst)
                || args
                    .duration
                    .is_some_and(|d| started.elapsed().as_secs_f64() >= d))
        {
            stopping = true;
            source.stop_async();
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(SourceMsg::Batch(b)) => tee.write(&b)?,
            Ok(SourceMsg::Warning(w)) => eprintln!("lbscope: warning: {w}"),
            Ok(SourceMsg::End) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    let s = tee.finish()?;
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
