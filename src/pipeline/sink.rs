//! [`Sink`]: what consumes the pipeline's output. A sink sees each batch of events before
//! the analyzer does (the recorder, the validator, the JSONL exporter), or the analyzer's
//! state after each event (the Perfetto exporter's counter tracks), or each closed interval's
//! snapshot (report printers, the TUI, history for replay and diff), and the source's
//! warnings; every method has a do-nothing default, so a sink implements only what it reads.

use crate::analyze::{Analyzer, Snapshot};
use crate::event::Event;
use std::io;

/// A consumer of the pipeline.
pub trait Sink {
    /// A batch of events, in delivery order, before the analyzer folds it. Called for every
    /// batch until the source ends, also after the driver's interval count was reached.
    fn events(&mut self, _batch: &[Event]) -> io::Result<()> {
        Ok(())
    }

    /// Whether [`Sink::applied`] must be called after each event of the next batch (asked once
    /// a batch; it costs a call per event, so only sinks that draw per-event state ask).
    fn per_event(&self) -> bool {
        false
    }

    /// One event, after the analyzer applied it: `analyzer` holds the state it left.
    fn applied(&mut self, _ev: &Event, _analyzer: &Analyzer) -> io::Result<()> {
        Ok(())
    }

    /// A closed interval (the final partial one included).
    fn snapshot(&mut self, _s: &Snapshot) -> io::Result<()> {
        Ok(())
    }

    /// Something the user should know that does not stop collection.
    fn warning(&mut self, _w: &str) {}

    /// The source ended and the last snapshot was delivered: flush.
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}
