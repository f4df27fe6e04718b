//! The flight recorder's pure parts: [`Ring`] keeps the last seconds of events (bounded in
//! event time and in memory) with the state a reader needs to start there, and [`Trigger`]
//! says when an interval's figures call for a dump. No I/O, clock or terminal: the sink in
//! `crate::pipeline::sinks::flight` writes the dumps.

mod ring;
mod trigger;

pub use ring::{Ring, RingLimits};
pub use trigger::{Trigger, TriggerError};
