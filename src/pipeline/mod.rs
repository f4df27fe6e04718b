//! The one pipeline every command runs: a [`Source`] of event batches, one [`Driver`] that
//! folds them into the analyzer, and [`Sink`]s that consume batches, per-event analyzer
//! state or interval snapshots.
//!
//! ```text
//!  live kernel / recording / generator          the analyzer (+ the model)
//!   Source --SourceMsg batches--> Driver --events--> Analyzer --Snapshot--> sinks
//!                                   |  (each batch first, to sinks that want events:
//!                                   |   recorder, validator, JSONL export)
//! ```
//! `report`, `record`, `top`, `replay`, `diff` and `export` differ only in the source they
//! open and the sinks they hand the driver (`crate::cmd`). ARCHITECTURE.md has the picture
//! and how to add a sink.

mod driver;
mod probes;
mod sink;
pub mod sinks;
mod source;

pub use driver::{Driver, Ended, Pumped};
pub use probes::{Attach, Probes};
pub use sink::Sink;
pub use source::{EndReport, Source};
