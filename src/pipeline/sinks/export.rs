//! The exporters as sinks: JSON lines takes every batch as it comes; Perfetto takes every
//! event after the analyzer applied it, to draw the analyzer's per-domain status beside it.

use crate::analyze::Analyzer;
use crate::event::Event;
use crate::output::jsonl::JsonlWriter;
use crate::output::perfetto::PerfettoWriter;
use crate::pipeline::Sink;
use std::io::{self, Write};

/// Writes every event as a JSON line.
pub struct JsonlSink<W: Write>(Option<JsonlWriter<W>>);

impl<W: Write> JsonlSink<W> {
    /// A sink onto `out`.
    pub fn new(out: W) -> Self {
        JsonlSink(Some(JsonlWriter::new(out)))
    }
}

impl<W: Write> Sink for JsonlSink<W> {
    fn events(&mut self, batch: &[Event]) -> io::Result<()> {
        if let Some(w) = &mut self.0 {
            for ev in batch {
                w.write(ev)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        match self.0.take() {
            Some(w) => w.finish().map(drop),
            None => Ok(()),
        }
    }
}

/// Writes every event into a Perfetto trace.
pub struct PerfettoSink<W: Write>(Option<PerfettoWriter<W>>);

impl<W: Write> PerfettoSink<W> {
    /// A sink writing with `w`; the driver's analyzer must be
    /// [`crate::output::perfetto::analyzer`]'s.
    pub fn new(w: PerfettoWriter<W>) -> Self {
        PerfettoSink(Some(w))
    }
}

impl<W: Write> Sink for PerfettoSink<W> {
    fn per_event(&self) -> bool {
        true
    }

    fn applied(&mut self, ev: &Event, analyzer: &Analyzer) -> io::Result<()> {
        match &mut self.0 {
            Some(w) => w.write(ev, analyzer),
            None => Ok(()),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        match self.0.take() {
            Some(w) => w.finish()?.flush(),
            None => Ok(()),
        }
    }
}
