//! [`Driver`]: the one loop. It receives a [`Source`]'s batches, hands each to the sinks that
//! read events, folds it into the analyzer (when the run has one), hands the per-event state
//! to the sinks that ask for it and every closed interval to the sinks. [`Driver::run`]
//! blocks until the source ends; [`Driver::pump`] takes what has arrived and returns, for
//! the TUI's own loop. On a stop request the source is asked to stop and the loop keeps
//! receiving until its `End`, so nothing already collected is lost; the partial interval is
//! then flushed.

use super::{Sink, Source};
use crate::analyze::{Analyzer, Snapshot};
use crate::source::{Batch, SourceMsg};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The requested number of intervals was delivered.
    Count,
    /// A stop was requested (Ctrl-C, SIGTERM, the deadline); the partial interval was
    /// delivered.
    Stopped,
    /// The source ended on its own.
    SourceEnded,
}

/// What a [`Driver::pump`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pumped {
    /// Snapshots or warnings were delivered.
    pub changed: bool,
    /// The source has ended.
    pub ended: bool,
}

/// The driver of one run: the analyzer (none for a plain recording) and where the run is.
pub struct Driver {
    analyzer: Option<Analyzer>,
    count: Option<u64>,
    deadline: Option<Instant>,
    emitted: u64,
    stopping: Option<Ended>,
    snaps: Vec<Snapshot>,
    /// Events the source lost, counted here when there is no analyzer to count them.
    lost: u64,
}

impl Driver {
    /// A driver folding events into `analyzer`.
    pub fn new(analyzer: Analyzer) -> Driver {
        Driver::with(Some(analyzer))
    }

    /// A driver that only hands batches to sinks (a recording without analysis).
    pub fn without_analyzer() -> Driver {
        Driver::with(None)
    }

    fn with(analyzer: Option<Analyzer>) -> Driver {
        Driver {
            analyzer,
            count: None,
            deadline: None,
            emitted: 0,
            stopping: None,
            snaps: Vec::new(),
            lost: 0,
        }
    }

    /// Stops the run once `count` snapshots were delivered.
    pub fn count(mut self, count: Option<u64>) -> Driver {
        self.count = count;
        self
    }

    /// Stops the run at `deadline` (wall time), as a stop request would.
    pub fn deadline(mut self, deadline: Option<Instant>) -> Driver {
        self.deadline = deadline;
        self
    }

    /// The analyzer, when the run has one.
    pub fn analyzer(&self) -> Option<&Analyzer> {
        self.analyzer.as_ref()
    }

    /// The analyzer, to reconfigure it between intervals.
    pub fn analyzer_mut(&mut self) -> Option<&mut Analyzer> {
        self.analyzer.as_mut()
    }

    /// Events the source reported lost (its ring buffer was full) since the run started.
    pub fn lost_events(&self) -> u64 {
        match &self.analyzer {
            Some(a) => a.lost_total(),
            None => self.lost,
        }
    }

    /// Snapshots delivered so far.
    pub fn delivered(&self) -> u64 {
        self.emitted
    }

    /// Runs until the count was delivered, `stop` is set (or the deadline passed) and the
    /// source drained, or the source ends; then calls every sink's `finish`.
    pub fn run(
        &mut self,
        src: &Source,
        sinks: &mut [&mut dyn Sink],
        stop: &AtomicBool,
    ) -> io::Result<Ended> {
        loop {
            let due = self.deadline.is_some_and(|d| Instant::now() >= d);
            if self.stopping.is_none() && (stop.load(Ordering::SeqCst) || due) {
                self.stopping = Some(Ended::Stopped);
                src.stop();
            }
            let msg = match src.rx.recv_timeout(Duration::from_millis(50)) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => SourceMsg::End,
            };
            match msg {
                SourceMsg::Batch(mut events) => self.batch(src, &mut events, sinks)?,
                SourceMsg::Warning(w) => sinks.iter_mut().for_each(|s| s.warning(&w)),
                SourceMsg::End => {
                    let ended = self.stopping.unwrap_or(Ended::SourceEnded);
                    if ended != Ended::Count {
                        self.flush(sinks)?;
                    }
                    for s in sinks.iter_mut() {
                        s.finish()?;
                    }
                    return Ok(ended);
                }
            }
        }
    }

    /// Takes at most `max_batches` batches that have arrived, without waiting. At the
    /// source's end nothing is flushed: a screen keeps showing the last full interval.
    pub fn pump(
        &mut self,
        src: &Source,
        sinks: &mut [&mut dyn Sink],
        max_batches: usize,
    ) -> io::Result<Pumped> {
        let mut p = Pumped::default();
        let before = self.emitted;
        for _ in 0..max_batches {
            match src.rx.try_recv() {
                Ok(SourceMsg::Batch(mut events)) => self.batch(src, &mut events, sinks)?,
                Ok(SourceMsg::Warning(w)) => {
                    sinks.iter_mut().for_each(|s| s.warning(&w));
                    p.changed = true;
                }
                Ok(SourceMsg::End) | Err(TryRecvError::Disconnected) => {
                    p.ended = true;
                    break;
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        p.changed |= self.emitted != before;
        Ok(p)
    }

    /// One batch: to the sinks that read events, then through the analyzer, each event taken
    /// out of the batch and dropped once analyzed (while in cache).
    fn batch(
        &mut self,
        src: &Source,
        events: &mut Batch,
        sinks: &mut [&mut dyn Sink],
    ) -> io::Result<()> {
        for s in sinks.iter_mut() {
            s.events(events)?;
        }
        if self.stopping == Some(Ended::Count) {
            return Ok(());
        }
        let Some(analyzer) = self.analyzer.as_mut() else {
            for ev in events.iter() {
                if let crate::event::EventKind::Lost { count } = ev.kind {
                    self.lost += count;
                }
            }
            return Ok(());
        };
        // Asked once a batch: a sink's answer holds for the batch, and asking each event
        // cost a call per sink and event.
        let per_event: Vec<usize> = (0..sinks.len()).filter(|&i| sinks[i].per_event()).collect();
        for ev in events.drain() {
            analyzer.push(&ev, &mut self.snaps);
            for &i in &per_event {
                sinks[i].applied(&ev, analyzer)?;
            }
            if self.snaps.is_empty() {
                continue;
            }
            // Hands the closed intervals to the sinks, up to the count.
            for snap in self.snaps.drain(..) {
                if self.stopping == Some(Ended::Count) {
                    break;
                }
                for s in sinks.iter_mut() {
                    s.snapshot(&snap)?;
                }
                self.emitted += 1;
                if self.count.is_some_and(|c| self.emitted >= c) {
                    self.stopping = Some(Ended::Count);
                    src.stop();
                }
            }
        }
        Ok(())
    }

    /// The partial interval, to every sink.
    fn flush(&mut self, sinks: &mut [&mut dyn Sink]) -> io::Result<()> {
        if let Some(snap) = self.analyzer.as_mut().and_then(Analyzer::finish) {
            for s in sinks.iter_mut() {
                s.snapshot(&snap)?;
            }
            self.emitted += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
