//! [`Batch`]: events on their way from a source to the consumer, and the [`BatchPool`] that
//! takes their vectors back.
//!
//! The consumer (the analyzer's thread) bounds how fast the whole pipeline goes. It takes a
//! batch's events out one by one ([`Batch::drain`]), so each is dropped just after it was
//! analyzed, while still in cache, rather than in a second pass over the whole batch. A
//! dropped batch hands its vector back to its source's pool (emptied there if the consumer
//! did not drain it), and the source reuses the allocation for its next batch: a live batch
//! has room for [`CHUNK`] events (512 KiB of 32-byte events), which a fresh allocation would
//! take from the kernel and zero page by page.
//!
//! Invariants: a pool holds at most [`SPARE`] vectors, with room for at most [`POOLED`]
//! events in all; what it does not take is freed where the batch is dropped, as an unpooled
//! batch is.

use crate::event::Event;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

/// Vectors a pool keeps: the consumer may hand back as many as the channel held, plus the
/// one it was on and the one the source was filling, before the source takes any.
const SPARE: usize = super::QUEUE_BATCHES + 2;

/// Events a live batch holds at most (512 KiB): a drain that read more sends several. Every
/// live batch has room for exactly this many, so the pool hands the same allocations round
/// and none is ever regrown: batches sized by the drain before, then grown by doubling when
/// a drain read more, churned blocks of every size from 64 KiB to 4 MiB a few times a second,
/// faulting in fresh pages each time, and the allocator's heap grew with the holes they left.
pub const CHUNK: usize = 16 * 1024;

/// The room a pool keeps in all, in events: [`SPARE`] live batches (3 MiB).
const POOLED: usize = SPARE * CHUNK;

/// A batch of events, in delivery order.
#[derive(Debug)]
pub struct Batch {
    events: Vec<Event>,
    pool: Option<Arc<BatchPool>>,
}

impl Batch {
    /// A batch freed where it is dropped.
    pub fn new(events: Vec<Event>) -> Batch {
        Batch { events, pool: None }
    }

    /// A batch whose vector goes back to `pool` when it is dropped.
    pub fn pooled(events: Vec<Event>, pool: &Arc<BatchPool>) -> Batch {
        Batch {
            events,
            pool: Some(Arc::clone(pool)),
        }
    }

    /// Takes the events out in order, leaving the batch empty (its vector still goes back to
    /// its pool when it is dropped). Events not taken are dropped with the iterator.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Event> {
        self.events.drain(..)
    }
}

impl Deref for Batch {
    type Target = [Event];

    fn deref(&self) -> &[Event] {
        &self.events
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.put(std::mem::take(&mut self.events));
        }
    }
}

/// Vectors handed back by dropped batches, for their source to reuse.
#[derive(Debug, Default)]
pub struct BatchPool {
    spare: Mutex<Vec<Vec<Event>>>,
}

impl BatchPool {
    /// An empty pool, to share between a source and its batches.
    pub fn new() -> Arc<BatchPool> {
        Arc::new(BatchPool::default())
    }

    fn put(&self, events: Vec<Event>) {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        let room: usize = spare.iter().map(Vec::capacity).sum();
        if spare.len() < SPARE && room + events.capacity() <= POOLED {
            spare.push(events);
        }
    }

    /// An empty vector with room for `cap` events: one handed back (its events dropped now,
    /// on the caller's thread; its allocation cut down if far larger than asked, so that a
    /// burst's batches are not kept), else a new one.
    pub fn take(&self, cap: usize) -> Vec<Event> {
        let back = self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match back {
            Some(mut v) => {
                v.clear();
                if v.capacity() > cap.saturating_mul(4) {
                    v.shrink_to(cap);
                }
                v.reserve(cap);
                v
            }
            None => Vec::with_capacity(cap),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;

    fn events(n: usize) -> Vec<Event> {
        (0..n as u64)
            .map(|i| Event {
                ts_ns: i,
                cpu: 0,
                kind: EventKind::Task(Box::new(crate::event::TaskInfo {
                    pid: i as u32,
                    tgid: i as u32,
                    comm: format!("t{i}"),
                    exec: false,
                })),
            })
            .collect()
    }

    /// Draining takes the events in order and leaves the batch empty; its vector still comes
    /// back to the pool, with its allocation.
    #[test]
    fn a_drained_batch_goes_back_empty() {
        let pool = BatchPool::new();
        let mut b = Batch::pooled(events(10), &pool);
        let ts: Vec<u64> = b.drain().map(|e| e.ts_ns).collect();
        assert_eq!(ts, (0..10).collect::<Vec<u64>>());
        assert!(b.is_empty());
        drop(b);
        assert!(pool.take(10).capacity() >= 10);
    }

    /// A dropped batch's vector comes back to its pool with its allocation and is handed out
    /// empty; the pool keeps no more than `SPARE`; an unpooled batch and `release` free.
    #[test]
    fn dropped_batches_come_back_empty() {
        let pool = BatchPool::new();
        let b = Batch::pooled(events(100), &pool);
        assert_eq!(b.len(), 100);
        assert_eq!(b[7].ts_ns, 7);
        drop(b);
        let v = pool.take(50);
        assert!(v.is_empty());
        assert!(v.capacity() >= 100, "the allocation is reused");
        drop(Batch::pooled(v, &pool));
        assert!(
            pool.take(10).capacity() < 100,
            "a far larger one is cut down"
        );
        for _ in 0..SPARE + 3 {
            drop(Batch::pooled(events(3), &pool));
        }
        assert_eq!(pool.spare.lock().unwrap().len(), SPARE);
        for _ in 0..SPARE {
            pool.take(0);
        }
        assert!(pool.spare.lock().unwrap().is_empty());
        drop(Batch::pooled(Vec::with_capacity(POOLED + 1), &pool));
        assert!(
            pool.spare.lock().unwrap().is_empty(),
            "a burst's vector is freed"
        );
        drop(Batch::pooled(Vec::with_capacity(POOLED / 2), &pool));
        drop(Batch::pooled(Vec::with_capacity(POOLED / 2 + 1), &pool));
        assert_eq!(
            pool.spare.lock().unwrap().len(),
            1,
            "the pool's room is bounded in all"
        );
        for _ in 0..SPARE {
            pool.take(0);
        }
        drop(Batch::new(events(3)));
        assert!(pool.spare.lock().unwrap().is_empty());
        assert_eq!(
            Arc::strong_count(&pool),
            1,
            "no batch holds the pool any more"
        );
    }
}
