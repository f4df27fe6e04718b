//! The intervals a screen keeps (the app's `history`): each as the figures its history charts
//! read ([`chart_figures`]) and as its whole snapshot packed (JSON, then zstd), unpacked again
//! when the screen shows that interval, so that seeking back shows every table of a past
//! interval. Only two snapshots are held whole: the newest, and the one opened for the
//! interval shown.
//!
//! Why: a whole snapshot of a 2-CPU machine under hackbench is about 50 KiB on the heap,
//! mostly its 50 findings with their evidence and the latency of 20 processes, in hundreds of
//! small allocations of every size; 600 of them were 30 MiB, and the allocator kept growing
//! after the history was full. An interval's chart figures are a few hundred bytes of tables,
//! its packed snapshot a few KiB in one allocation.
//!
//! Invariants: `figures` and `packed` hold one entry per interval, oldest first; `newest` is
//! the last interval whole (set iff the history is not empty); `open`, when set, is the whole
//! snapshot of an interval still kept, named by its sequence number (intervals are numbered
//! from the first pushed, so the number survives dropping the oldest).

use super::history::chart_figures;
use crate::analyze::Snapshot;
use std::collections::{vec_deque, BTreeMap, VecDeque};
use std::mem::size_of;
use std::ops::RangeBounds;

/// zstd's fastest level: a snapshot packs in tens of microseconds, to a tenth of its JSON.
const LEVEL: i32 = 1;

/// The kept intervals. See the module header.
#[derive(Clone, Debug, Default)]
pub struct History {
    figures: VecDeque<Snapshot>,
    packed: VecDeque<Box<[u8]>>,
    /// Sequence number of `figures[0]`.
    first_seq: u64,
    newest: Option<Snapshot>,
    open: Option<(u64, Snapshot)>,
    packer: Packer,
}

/// What packing reuses from one interval to the next: the JSON text, the compressed bytes and
/// zstd's context. Made afresh at every interval, these tens to hundreds of KiB were freed
/// under the packed snapshot just allocated, which then pinned the hole: the main heap grew by
/// a few KiB an interval for as long as the screen ran. Now the only allocation an interval
/// keeps is its packed snapshot, of exactly its length.
#[derive(Default)]
struct Packer {
    json: Vec<u8>,
    out: Vec<u8>,
    zstd: Option<zstd::bulk::Compressor<'static>>,
}

impl Clone for Packer {
    /// A copy packs with buffers of its own.
    fn clone(&self) -> Packer {
        Packer::default()
    }
}

impl std::fmt::Debug for Packer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packer")
            .field("json", &self.json.capacity())
            .field("out", &self.out.capacity())
            .finish_non_exhaustive()
    }
}

impl Packer {
    /// A snapshot as JSON compressed by zstd; empty if it could not be written (never
    /// expected: the JSON lines of `report --json` are the same text).
    fn pack(&mut self, s: &Snapshot) -> Box<[u8]> {
        self.json.clear();
        if serde_json::to_writer(&mut self.json, s).is_err() {
            return Box::default();
        }
        let zstd = match &mut self.zstd {
            Some(z) => z,
            None => match zstd::bulk::Compressor::new(LEVEL) {
                Ok(z) => self.zstd.insert(z),
                Err(_) => return Box::default(),
            },
        };
        self.out.clear();
        self.out
            .reserve(zstd::zstd_safe::compress_bound(self.json.len()));
        match zstd.compress_to_buffer(&self.json, &mut self.out) {
            Ok(n) => Box::from(&self.out[..n]),
            Err(_) => Box::default(),
        }
    }
}

fn unpack(bytes: &[u8]) -> Option<Snapshot> {
    let json = zstd::stream::decode_all(bytes).ok()?;
    serde_json::from_slice(&json).ok()
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// Intervals kept.
    pub fn len(&self) -> usize {
        self.figures.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.figures.is_empty()
    }

    /// Room for `n` intervals in all without growing (a live screen's bound).
    pub fn reserve_total(&mut self, n: usize) {
        let more = n.saturating_sub(self.len());
        self.figures.reserve_exact(more);
        self.packed.reserve_exact(more);
    }

    /// Interval `i`'s chart figures (times, rates, percentiles: [`chart_figures`]; the other
    /// tables are empty).
    pub fn get(&self, i: usize) -> Option<&Snapshot> {
        self.figures.get(i)
    }

    /// The oldest interval's chart figures.
    pub fn front(&self) -> Option<&Snapshot> {
        self.figures.front()
    }

    /// The newest interval's chart figures.
    pub fn back(&self) -> Option<&Snapshot> {
        self.figures.back()
    }

    /// Every interval's chart figures, oldest first.
    pub fn iter(&self) -> vec_deque::Iter<'_, Snapshot> {
        self.figures.iter()
    }

    /// The chart figures of the intervals in `r`, oldest first.
    pub fn range(&self, r: impl RangeBounds<usize>) -> vec_deque::Iter<'_, Snapshot> {
        self.figures.range(r)
    }

    /// Adds the newest interval.
    pub fn push(&mut self, s: Snapshot) {
        self.figures.push_back(chart_figures(&s));
        let packed = self.packer.pack(&s);
        self.packed.push_back(packed);
        self.newest = Some(s);
    }

    /// Drops the oldest interval (and its whole snapshot if it was the one opened).
    pub fn pop_front(&mut self) {
        if self.figures.pop_front().is_none() {
            return;
        }
        self.packed.pop_front();
        if self
            .open
            .as_ref()
            .is_some_and(|(n, _)| *n == self.first_seq)
        {
            self.open = None;
        }
        self.first_seq += 1;
        if self.figures.is_empty() {
            self.newest = None;
        }
    }

    /// Forgets every interval.
    pub fn clear(&mut self) {
        let next = self.first_seq + self.len() as u64;
        *self = History {
            first_seq: next,
            ..History::default()
        };
    }

    /// The newest interval, whole.
    pub fn newest(&self) -> Option<&Snapshot> {
        self.newest.as_ref()
    }

    /// Interval `i` whole, if it is held so: the newest, or the one [`History::open`]ed.
    pub fn whole(&self, i: usize) -> Option<&Snapshot> {
        if i + 1 == self.len() {
            return self.newest.as_ref();
        }
        match &self.open {
            Some((n, s)) if *n == self.first_seq + i as u64 => Some(s),
            _ => None,
        }
    }

    /// Holds interval `i` whole (unpacking it unless it is the newest or already open), in
    /// place of the one opened before; false if there is no such interval or its packed
    /// form does not read back.
    pub fn open(&mut self, i: usize) -> bool {
        if i >= self.len() {
            return false;
        }
        if self.whole(i).is_some() {
            return true;
        }
        self.open = None;
        let Some(s) = self.unpack(i) else {
            return false;
        };
        self.open = Some((self.first_seq + i as u64, s));
        true
    }

    /// Interval `i` whole, unpacked on the spot.
    pub fn unpack(&self, i: usize) -> Option<Snapshot> {
        if i + 1 == self.len() {
            return self.newest.clone();
        }
        unpack(self.packed.get(i)?)
    }

    /// Snapshots held whole (at most two: the newest and the one opened).
    pub fn held_whole(&self) -> usize {
        usize::from(self.newest.is_some()) + usize::from(self.open.is_some())
    }

    /// Bytes the packing buffers reserve (reused from one interval to the next: the largest
    /// snapshot's JSON and its compressed bound; zstd's own context is not counted).
    pub fn packing_bytes(&self) -> usize {
        self.packer.json.capacity() + self.packer.out.capacity()
    }

    /// Bytes the past intervals hold: the packed snapshots exactly, the chart figures and
    /// both queues approximately (what their tables reserve, without the allocator's own
    /// overhead). The two whole snapshots are not counted (see [`History::held_whole`]).
    pub fn retained_bytes(&self) -> usize {
        let queues = self.figures.capacity() * size_of::<Snapshot>()
            + self.packed.capacity() * size_of::<Box<[u8]>>();
        let packed: usize = self.packed.iter().map(|p| p.len()).sum();
        let figures: usize = self.figures.iter().map(figures_heap_bytes).sum();
        queues + packed + figures
    }
}

/// What the tables of one interval's chart figures reserve on the heap, approximately (a
/// B-tree's nodes are counted as their entries).
fn figures_heap_bytes(s: &Snapshot) -> usize {
    fn map(m: &BTreeMap<String, u64>) -> usize {
        m.keys()
            .map(|k| size_of::<(String, u64)>() + k.capacity())
            .sum()
    }
    fn vec<T>(v: &[T], cap: usize, each: impl Fn(&T) -> usize) -> usize {
        cap * size_of::<T>() + v.iter().map(each).sum::<usize>()
    }
    map(&s.migrations.by_reason)
        + map(&s.findings_by_kind)
        + s.runqlat_us.log2_buckets.capacity() * size_of::<u64>()
        + vec(&s.runqlat_by_domain, s.runqlat_by_domain.capacity(), |d| {
            d.level.capacity() + d.latency.log2_buckets.capacity() * size_of::<u64>()
        })
        + vec(
            &s.idle_while_waiting,
            s.idle_while_waiting.capacity(),
            |w| w.level.capacity(),
        )
        + vec(&s.domains, s.domains.capacity(), |d| {
            d.level.capacity() + d.groups.capacity() * size_of::<crate::model::GroupStats>()
        })
}

impl std::ops::Index<usize> for History {
    type Output = Snapshot;

    /// Interval `i`'s chart figures.
    fn index(&self, i: usize) -> &Snapshot {
        &self.figures[i]
    }
}

impl From<Vec<Snapshot>> for History {
    fn from(snaps: Vec<Snapshot>) -> History {
        let mut h = History::new();
        h.reserve_total(snaps.len());
        for s in snaps {
            h.push(s);
        }
        h
    }
}
