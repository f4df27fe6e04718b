//! The file source: replays a recording's events down the same channel the live source uses,
//! one batch per chunk put back in time order, so reports over a recording run the same
//! pipeline as live ones.

use crate::record::{Damage, Reader};
use crate::reorder::{Reorder, REORDER_NS};
use crate::source::{Batch, BatchPool, SourceMsg};
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;

/// An open recording being replayed on its own thread.
pub struct FileSource {
    thread: Option<JoinHandle<Damage>>,
}

impl FileSource {
    /// Replays an opened reader into `tx` (bounded: the reader waits for the analyzer
    /// instead of loading the file into memory), then sends `End`.
    pub fn start(mut reader: Reader, tx: SyncSender<SourceMsg>) -> FileSource {
        let pool = BatchPool::new();
        let thread = std::thread::spawn(move || {
            // Events go out in time order (see `reorder`), so every command over a recording
            // reads the same order whatever the host did to its CPUs while it was written.
            let mut order = Reorder::new(REORDER_NS);
            let mut sent = true;
            while let Some(events) = reader.next_chunk() {
                // The batches' vectors come back through the pool once consumed.
                let mut out = pool.take(events.len());
                for e in events {
                    order.push(e, &mut out);
                }
                if !out.is_empty()
                    && tx
                        .send(SourceMsg::Batch(Batch::pooled(out, &pool)))
                        .is_err()
                {
                    sent = false;
                    break;
                }
            }
            if sent {
                let mut out = pool.take(0);
                order.finish(&mut out);
                if out.is_empty() || tx.send(SourceMsg::Batch(Batch::pooled(out, &pool))).is_ok() {
                    let _ = tx.send(SourceMsg::End);
                }
            }
            reader.damage().clone()
        });
        FileSource {
            thread: Some(thread),
        }
    }

    /// Waits for the replay to end and returns what the reader skipped.
    pub fn damage(mut self) -> Damage {
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}
