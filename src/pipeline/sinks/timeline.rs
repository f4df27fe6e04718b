//! The CPU timeline as a sink: it reads the analyzer's state after each event
//! ([`crate::analyze::timeline::Timeline::observe`]), for `replay`'s clip of a recording.
//! The live TUI's own sink feeds the app's timeline the same way.

use crate::analyze::timeline::Timeline;
use crate::analyze::Analyzer;
use crate::event::Event;
use crate::pipeline::Sink;
use std::io;

/// A timeline filled as the pipeline runs.
#[derive(Debug)]
pub struct TimelineSink(pub Timeline);

impl Sink for TimelineSink {
    fn per_event(&self) -> bool {
        true
    }

    fn applied(&mut self, ev: &Event, analyzer: &Analyzer) -> io::Result<()> {
        self.0.observe(ev, analyzer);
        Ok(())
    }
}
