//! Every snapshot of a run, kept in order (the final partial one included): what replay
//! walks and diff compares.

use crate::analyze::Snapshot;
use crate::pipeline::Sink;
use std::io;

/// The snapshots of a run.
#[derive(Debug, Default)]
pub struct History(pub Vec<Snapshot>);

impl Sink for History {
    fn snapshot(&mut self, s: &Snapshot) -> io::Result<()> {
        self.0.push(s.clone());
        Ok(())
    }
}
