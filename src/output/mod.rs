//! Sinks that turn analyzer [`crate::analyze::Snapshot`]s into text for people (`text`) and
//! JSON lines for programs (`json`), and exporters of raw events: JSON lines (`jsonl`) and
//! Perfetto traces (`perfetto`). Sinks are thin: no analysis of their own (the Perfetto
//! exporter runs an [`crate::analyze::Analyzer`] to draw its figures over time).

pub mod counters_text;
pub mod diff_markdown;
pub mod diff_text;
pub mod json;
pub mod jsonl;
pub mod model_text;
pub mod perfetto;
#[cfg(test)]
mod tests;
pub mod text;
pub mod validation_text;

pub use json::render_json;
pub use text::render_text;
