//! The one loop behind live reports (and, with a file source, replays): receive event
//! batches, fold them into the analyzer, hand closed intervals to a sink, and on a stop
//! request drain the source and flush the partial interval.

use crate::analyze::{Analyzer, Snapshot};
use crate::event::Event;
use crate::source::SourceMsg;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// How a pipeline run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The requested number of intervals was printed.
    Count,
    /// A stop was requested (Ctrl-C, SIGTERM); the partial interval was printed.
    Stopped,
    /// The source ended on its own.
    SourceEnded,
}

/// What a run calls out to.
pub struct Hooks<'a> {
    /// Called once when the run wants the source to stop.
    pub request_stop: &'a mut dyn FnMut(),
    /// Sees every batch before the analyzer does (the recorder).
    pub tee: &'a mut dyn FnMut(&[Event]) -> std::io::Result<()>,
    /// Receives each closed interval.
    pub sink: &'a mut dyn FnMut(&Snapshot) -> std::io::Result<()>,
    /// Receives the source's warnings.
    pub warn: &'a mut dyn FnMut(&str),
}

/// Runs until `count` snapshots were emitted, `stop` is set, or the source ends.
/// `request_stop` is called once when the run wants the source to stop; the loop then keeps
/// receiving until the source's `End`, so nothing already collected is lost. `tee` sees every
/// batch before the analyzer does (the recorder), including those after the count was reached.
pub fn run(
    rx: &Receiver<SourceMsg>,
    analyzer: &mut Analyzer,
    count: Option<u64>,
    stop: &AtomicBool,
    hooks: Hooks<'_>,
) -> std::io::Result<Ended> {
    let Hooks {
        request_stop,
        tee,
        sink,
        warn,
    } = hooks;
    let mut emitted = 0u64;
    let mut snaps = Vec::new();
    let mut stopping: Option<Ended> = None;
    loop {
        if stopping.is_none() && stop.load(Ordering::SeqCst) {
            stopping = Some(Ended::Stopped);
            request_stop();
        }
        let msg = match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => SourceMsg::End,
        };
        match msg {
            SourceMsg::Batch(events) => {
                tee(&events)?;
                if stopping == Some(Ended::Count) {
                    continue;
                }
                for ev in events.iter() {
                    analyzer.push(ev, &mut snaps);
                    if snaps.is_empty() {
                        continue;
                    }
                    for s in snaps.drain(..) {
                        if stopping == Some(Ended::Count) {
                            break;
                        }
                        sink(&s)?;
                        emitted += 1;
                        if count.is_some_and(|c| emitted >= c) {
                            stopping = Some(Ended::Count);
                            request_stop();
                        }
                    }
                }
            }
            SourceMsg::Warning(w) => warn(&w),
            SourceMsg::End => {
                let ended = stopping.unwrap_or(Ended::SourceEnded);
                if ended != Ended::Count {
                    if let Some(s) = analyzer.finish() {
                        sink(&s)?;
                    }
                }
                return Ok(ended);
            }
        }
    }
}
