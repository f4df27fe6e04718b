//! The file source: replays a recording's events down the same channel the live source uses,
//! one batch per chunk, so reports over a recording run the same pipeline as live ones.

use crate::record::{Damage, Header, Reader, RecordError};
use crate::source::{Batch, BatchPool, SourceMsg};
use std::path::Path;
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;

/// An open recording being replayed on its own thread.
pub struct FileSource {
    /// The recording's header.
    pub header: Header,
    /// Event batches, then `End`.
    pub rx: Receiver<SourceMsg>,
    thread: Option<JoinHandle<Damage>>,
}

impl FileSource {
    /// Opens `path` and starts replaying it.
    pub fn open(path: &Path) -> Result<FileSource, RecordError> {
        let reader = Reader::open(path)?;
        Ok(Self::start(reader))
    }

    /// Replays an already opened reader.
    pub fn start(mut reader: Reader) -> FileSource {
        let header = reader.header().clone();
        // Bounded: the reader waits for the analyzer instead of loading the file into memory.
        let (tx, rx) = mpsc::sync_channel(super::QUEUE_BATCHES);
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
            header,
            rx,
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
