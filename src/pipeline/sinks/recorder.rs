//! The recorder: every batch into a recording (`crate::record::Writer`), a chunk flushed at
//! least once a second of wall time, with an optional progress line on stderr. The file is
//! sealed when the source has ended (`Sink::finish`).

use crate::event::{Event, EventKind};
use crate::pipeline::Sink;
use crate::record::{Header, RecordError, WriteStats, Writer};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// Writes batches into a recording.
pub struct Recorder {
    writer: Option<Writer>,
    stats: Option<WriteStats>,
    last_flush: Instant,
    lost: u64,
    progress: Option<Progress>,
}

struct Progress {
    last: Instant,
    shown: bool,
}

impl Recorder {
    /// Creates the recording at `path` with `header`; `progress` shows a line on stderr.
    pub fn create(path: &Path, header: &Header, progress: bool) -> Result<Recorder, RecordError> {
        Ok(Recorder {
            writer: Some(Writer::create(path, header)?),
            stats: None,
            last_flush: Instant::now(),
            lost: 0,
            progress: progress.then(|| Progress {
                last: Instant::now(),
                shown: false,
            }),
        })
    }

    /// What the sealed file holds (`None` before the source ended).
    pub fn stats(&self) -> Option<WriteStats> {
        self.stats
    }

    /// Events the ring buffer dropped, as the recording's `Lost` events count them.
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

impl Sink for Recorder {
    fn events(&mut self, events: &[Event]) -> io::Result<()> {
        let Some(writer) = &mut self.writer else {
            return Ok(());
        };
        for e in events {
            if let EventKind::Lost { count } = e.kind {
                self.lost += count;
            }
        }
        writer.write_events(events).map_err(io::Error::other)?;
        if self.last_flush.elapsed() >= Duration::from_secs(1) {
            writer.flush().map_err(io::Error::other)?;
            self.last_flush = Instant::now();
        }
        if let Some(p) = &mut self.progress {
            if p.last.elapsed() >= Duration::from_millis(500) {
                let s = writer.stats();
                eprint!(
                    "\r\x1b[Krecording: {} events, {} KiB ({:.1} B/event), {} lost",
                    s.events,
                    s.bytes / 1024,
                    s.bytes as f64 / s.events.max(1) as f64,
                    self.lost
                );
                p.last = Instant::now();
                p.shown = true;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.progress.as_ref().is_some_and(|p| p.shown) {
            eprintln!();
        }
        if let Some(w) = self.writer.take() {
            self.stats = Some(w.finish().map_err(io::Error::other)?);
        }
        if self.lost > 0 {
            eprintln!("lbscope: {} events were lost (ring buffer full): figures over those intervals are marked; try --ringbuf-mb 64", self.lost);
        }
        Ok(())
    }
}
