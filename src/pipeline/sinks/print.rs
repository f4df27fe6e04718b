//! Report printing: each snapshot as text or a JSON line, flushed at once (a live report is
//! read as it goes); and the source's warnings on stderr.

use crate::analyze::Snapshot;
use crate::pipeline::Sink;
use crate::topology::Topology;
use std::io::{self, Write};

/// Prints snapshots as text or JSON lines.
pub struct Printer<'a, W: Write> {
    out: W,
    json: bool,
    topo: &'a Topology,
    clock_base_ns: i64,
}

impl<'a, W: Write> Printer<'a, W> {
    /// A printer onto `out`; text labels levels with `topo` and shows wall-clock times from
    /// `clock_base_ns`.
    pub fn new(out: W, json: bool, topo: &'a Topology, clock_base_ns: i64) -> Self {
        Printer {
            out,
            json,
            topo,
            clock_base_ns,
        }
    }

    /// The output, for what is printed after the intervals.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Sink for Printer<'_, W> {
    fn snapshot(&mut self, s: &Snapshot) -> io::Result<()> {
        if self.json {
            crate::output::json::render_json(s, &mut self.out)?;
        } else {
            crate::output::text::render_text(s, self.topo, self.clock_base_ns, &mut self.out)?;
        }
        self.out.flush()
    }
}

/// Prints the source's warnings on stderr.
pub struct Warnings;

impl Sink for Warnings {
    fn warning(&mut self, w: &str) {
        eprintln!("lbscope: warning: {w}");
    }
}
