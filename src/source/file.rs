//! The file source: replays a recording's events down the same channel the live source uses,
//! one batch per chunk, so reports over a recording run the same pipeline as live ones.

use crate::record::{Damage, Reader};
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
            while let Some(events) = reader.next_chunk() {
                // The reader allocates each chunk's events: those consumed are freed here.
                pool.release();
                if tx
                    .send(SourceMsg::Batch(Batch::pooled(events, &pool)))
                    .is_err()
                {
                    break;
                }
            }
            let _ = tx.send(SourceMsg::End);
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
