//! The sinks commands wire into the pipeline (the TUI's is in `crate::tui::run`):
//! - `print`: snapshots as report text or JSON lines, and warnings on stderr;
//! - `recorder`: every batch into a recording, with a progress line;
//! - `validate`: every batch into the validator (the model against the kernel's decisions);
//! - `export`: every event into Perfetto and JSON-lines files;
//! - `history`: every snapshot kept, for replay and diff;
//! - `metrics`: counters, histograms and gauges for `serve`'s OpenMetrics endpoint;
//! - `flight`: the last seconds of events in a ring, written as a recording on a trigger;
//! - `timeline`: the per-CPU timeline of a replay's clip.

mod export;
mod flight;
mod history;
mod metrics;
mod print;
mod recorder;
mod timeline;
mod validate;

pub use export::{JsonlSink, PerfettoSink};
pub use flight::{Destination, DumpRequests, FlightRecorder};
pub use history::History;
pub use metrics::{DumpCounters, Exposition, Metrics, CONTENT_TYPE as METRICS_CONTENT_TYPE};
pub use print::{Printer, Warnings};
pub use recorder::Recorder;
pub use timeline::TimelineSink;
pub use validate::Validation;
