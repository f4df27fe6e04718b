//! Subcommand implementations: each is wiring only, a source, the analyzer and a list of
//! sinks handed to the one driver (`crate::pipeline`); `settings` checks every flag.

pub mod diff;
pub mod doctor;
pub mod export;
pub mod record;
pub mod replay;
pub mod report;
pub mod serve;
pub mod settings;
pub mod top;
pub mod version;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Errors that end a command; `main` prints them and picks the exit code.
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    /// Bad input from the user (exit 2).
    #[error("{0}")]
    Usage(String),
    /// A source could not start (exit 1).
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    /// The machine's topology could not be read (exit 1).
    #[error(transparent)]
    Topology(#[from] crate::topology::TopologyError),
    /// A recording could not be read or written (exit 1).
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
    /// The command ran, but over incomplete input: a damaged recording (exit 3).
    #[error("{0}")]
    Incomplete(String),
    /// A command could not run, with what to do instead (exit 1).
    #[error("{0}")]
    Failed(String),
    /// Writing output failed (a closed pipe is not an error: see `main`).
    #[error("writing output: {0}")]
    Io(#[from] std::io::Error),
}

/// A stop flag raised by SIGINT and SIGTERM.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>, CmdError> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

/// Turns a recording's damage into the command's outcome: the results stand, the exit code
/// says they are incomplete.
pub fn damage_outcome(path: &Path, d: &crate::record::Damage) -> Result<(), CmdError> {
    if d.is_clean() {
        return Ok(());
    }
    for m in &d.messages {
        eprintln!("lbscope: {}: {m}", path.display());
    }
    Err(CmdError::Incomplete(format!(
        "{}: damaged recording: {} chunk(s), {} bytes skipped{}; the figures above cover the readable chunks",
        path.display(),
        d.skipped_chunks,
        d.skipped_bytes,
        if d.truncated_tail { ", truncated at the end" } else { "" }
    )))
}
