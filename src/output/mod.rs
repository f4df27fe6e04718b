//! Sinks that turn analyzer [`crate::analyze::Snapshot`]s into text for people (`text`) and
//! JSON lines for programs (`json`). Sinks are thin: no state of their own beyond what is
//! passed in, no analysis.

pub mod diff_text;
pub mod json;
pub mod model_text;
#[cfg(test)]
mod tests;
pub mod text;

pub use json::render_json;
pub use text::render_text;
