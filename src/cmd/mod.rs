//! Subcommand implementations: each wires a source, the analyzer and a sink. `pipeline` is
//! the one loop they share.

pub mod diff;
pub mod doctor;
pub mod export;
pub mod pipeline;
pub mod record;
pub mod report;
pub mod top;
pub mod version;

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
