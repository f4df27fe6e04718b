//! Folded mode's user-space half: reads the run-queue latency histograms the BPF programs
//! fold (per CPU and per process, in two banks) and turns them into [`EventKind::Fold`]
//! events.
//!
//! The programs fill the bank named in the `fold_ctl` map, of the per-CPU histograms and of
//! the per-process maps alike. Each flush, every drain period (half an interval, 100 to
//! 500 ms), makes the other bank the one filled, waits [`SETTLE`] for the handlers that read
//! the old number, then reads and clears the bank it retired: samples reach the analyzer at
//! most a drain period after they were taken, none is counted twice, and none is lost unless
//! a handler holding a run queue's lock stalls past the wait (a vCPU descheduled mid-handler)
//! and writes in the microseconds between the read and the clear. Each flush wakes both
//! threads and reads every process that ran (a 2.2 KiB entry a process): flushing every
//! 100 ms cost `top` a fifth more CPU at `-i 1`. A task's first run on each CPU in each
//! 100 ms is streamed as a switch whatever the flush period (the BPF side counts the periods
//! from its clock), so the model knows where every thread runs (uneven_spread).
//!
//! A process's histogram comes as one array of buckets, each the sum of a sample's fine
//! bucket and runqlat slot (bpf/lbscope.h, `struct lbs_proc_hist`), split back here into the
//! two histograms. Each bank has its own per-process map, so a flush takes the retired one's
//! entries out in batches (a syscall for up to [`PROC_BATCH`] processes) instead of three
//! syscalls a process; what a batch leaves (an error) is taken one entry at a time. The
//! batches and the per-CPU lookup read into buffers the flush keeps ([`mapio::Buffers`]). The
//! histograms go into a sparse set ([`FoldedSet`]): only their non-zero counters travel to
//! the analyzer.

use super::mapio;
use super::skel::LbscopeSkel;
use crate::analyze::{fine_bounds, fine_index, log2_slot, LOG2_SLOTS};
use crate::event::{Event, EventKind, Fold, FoldedSet};
use libbpf_rs::{MapCore, MapFlags};
use std::sync::OnceLock;

/// Counters in one `struct lbs_hist`: count, min, max, the log2 slots, the fine buckets.
/// The slots are the analyzer's; the fine buckets stop at the kernel's cap (LBS_FINE_LEN).
const HIST_WORDS: usize = 3 + LOG2_SLOTS + FINE_LEN;
const FINE_LEN: usize = 528;
/// Bytes in one `struct lbs_proc_hist`: min and max (64-bit), the summed buckets (32-bit).
const PROC_BYTES: usize = 16 + 4 * PROC_BUCKETS;
const PROC_BUCKETS: usize = FINE_LEN + LOG2_SLOTS;

/// The kernel's fine bucket of a latency (capped at its last one, LBS_FINE_LEN - 1).
fn kernel_fine(ns: u64) -> usize {
    fine_index(ns).min(FINE_LEN - 1)
}

/// The (fine bucket, slot) pair each summed bucket of a process's histogram stands for. As a
/// latency grows, its fine bucket and its slot never fall and at each step one rises: along
/// that path their sum is new at every step. Every pair on it starts at a fine bucket's lower
/// bound or at a slot's (2^s us), so those values name them all.
fn proc_pairs() -> &'static [Option<(u16, u8)>; PROC_BUCKETS] {
    static PAIRS: OnceLock<[Option<(u16, u8)>; PROC_BUCKETS]> = OnceLock::new();
    PAIRS.get_or_init(|| {
        let mut pairs = [None; PROC_BUCKETS];
        let fine_lows = (0..FINE_LEN).map(|i| fine_bounds(i).0);
        let slot_lows = (1..LOG2_SLOTS).map(|s| (1u64 << s) * 1000);
        for ns in fine_lows.chain(slot_lows) {
            let (i, s) = (kernel_fine(ns), log2_slot(ns / 1000));
            if let Some(p) = pairs.get_mut(i + s) {
                // FINE_LEN and LOG2_SLOTS fit (compile-time checks below).
                *p = Some((i as u16, s as u8));
            }
        }
        pairs
    })
}

/// Processes read and deleted by one batch syscall. Its buffer (70 KiB, kept between
/// flushes) grows with it. A hash map's batch takes whole buckets and fails on one
/// larger than this: with these maps' 1,024 buckets it does not happen, and the entries one
/// leaves are taken one at a time.
const PROC_BATCH: u32 = 32;

/// The flush state.
pub(super) struct Folder {
    /// The bank the programs fill, of the per-CPU histograms and the per-process maps alike.
    filling: u32,
    /// When the last flush ran (monotonic ns).
    last: u64,
    /// Zeros to clear a bank of the per-CPU histograms with, kept between flushes.
    zeros: Vec<Vec<u8>>,
    /// What the maps are read into.
    bufs: mapio::Buffers,
    /// The last per-process read's histograms and counters: the next one's room.
    room: (usize, usize),
}

/// How long a flush waits between retiring a bank and reading it. The folding handlers run
/// with the run queue's lock held, for microseconds: one that read the bank's number before
/// the turn has written its sample by then.
pub(super) const SETTLE: std::time::Duration = std::time::Duration::from_millis(2);

impl Folder {
    /// Starts with bank 0 filling (the maps' initial state), and puts the empty `Fold` that
    /// opens a folded stream first in `batch`, before any event the programs sent.
    pub(super) fn new(now: u64, batch: &mut Vec<Event>) -> Folder {
        batch.insert(0, fold_event(now, Fold::default()));
        Folder {
            filling: 0,
            last: now,
            zeros: Vec::new(),
            bufs: mapio::Buffers::default(),
            room: (0, 0),
        }
    }

    /// Whether a flush is due at `now`, every `period_ns`.
    pub(super) fn due(&self, now: u64, period_ns: u64) -> bool {
        past(now, self.last, period_ns)
    }

    /// Retires the filling bank, waits [`SETTLE`], reads and clears it (the per-CPU
    /// histograms and every process's), and appends the Fold stamped `at`; `now` is the
    /// time of the turn.
    pub(super) fn flush(
        &mut self,
        skel: &LbscopeSkel<'_>,
        now: u64,
        at: u64,
        out: &mut Vec<Event>,
    ) {
        let retired = self.filling;
        self.filling = 1 - retired;
        self.set_filling(skel);
        self.last = now;
        std::thread::sleep(SETTLE);
        let (hists, counters) = self.room;
        let mut fold = Fold {
            by_cpu: Default::default(),
            by_tgid: FoldedSet::with_capacity(hists + hists / 8, counters + counters / 8),
        };
        read_cpu_bank(skel, retired, &mut self.zeros, &mut self.bufs, &mut fold);
        read_proc_bank(skel, retired, &mut self.bufs, &mut fold);
        self.room = (fold.by_tgid.len(), fold.by_tgid.counters());
        out.push(fold_event(at, fold));
    }

    fn set_filling(&self, skel: &LbscopeSkel<'_>) {
        let _ = skel.maps.fold_ctl.update(
            &0u32.to_ne_bytes(),
            &self.filling.to_ne_bytes(),
            MapFlags::ANY,
        );
    }
}

/// Whether `period_ns` has passed from `since` to `now`, within the poll loop's jitter (a
/// tenth early counts).
fn past(now: u64, since: u64, period_ns: u64) -> bool {
    now.saturating_sub(since) >= period_ns / 10 * 9
}

fn fold_event(now: u64, fold: Fold) -> Event {
    Event {
        ts_ns: now,
        cpu: 0,
        kind: EventKind::Fold(Box::new(fold)),
    }
}

/// The first `n` words of a map value; `None` when it is shorter.
fn words(b: &[u8], n: usize) -> Option<impl Iterator<Item = u64> + '_> {
    let b = b.get(..n * 8)?;
    Some(
        b.chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))),
    )
}

/// One `struct lbs_hist` (a CPU's) from its bytes, added to `set` under `id`, its zeros left
/// out; nothing for an empty one or a size mismatch.
fn parse_hist(b: &[u8], id: u32, set: &mut FoldedSet) {
    let Some(mut w) = words(b, HIST_WORDS) else {
        return;
    };
    let (Some(count), Some(min_ns), Some(max_ns)) = (w.next(), w.next(), w.next()) else {
        return;
    };
    if count == 0 {
        return;
    }
    set.push_with(id, min_ns, max_ns, |f| {
        for (i, n) in (0u32..).zip(w.by_ref().take(LOG2_SLOTS)) {
            f.log2(i, n);
        }
        for (i, n) in (0u32..).zip(w) {
            f.fine(i, n);
        }
        count
    });
}

/// One `struct lbs_proc_hist` from its bytes, split and added to `set` under `id`; nothing
/// for an empty one or a size mismatch. Along the summed buckets a latency's fine bucket and
/// slot never fall (see [`proc_pairs`]), so each non-zero one adds to the pairs of its fine
/// bucket and slot in rising order. A 100 ms period leaves a handful of a process's buckets
/// non-zero: they are found a block of eight at a time, and only they are split.
fn parse_proc_hist(b: &[u8], id: u32, set: &mut FoldedSet) {
    let Some(b) = b.get(..PROC_BYTES) else {
        return;
    };
    let (head, buckets) = b.split_at(16);
    let Some(mut head) = words(head, 2) else {
        return;
    };
    let (Some(min_ns), Some(max_ns)) = (head.next(), head.next()) else {
        return;
    };
    let pairs = proc_pairs();
    let (before, mut total) = (set.len(), 0);
    set.push_with(id, min_ns, max_ns, |f| {
        let mut add = |k: usize, c: &[u8]| {
            let n = u64::from(u32::from_ne_bytes([c[0], c[1], c[2], c[3]]));
            if n == 0 {
                return;
            }
            if let Some((i, s)) = pairs[k] {
                f.fine(u32::from(i), n);
                f.log2(u32::from(s), n);
                total += n;
            }
        };
        let blocks = buckets.chunks_exact(32);
        let tail = blocks.remainder();
        for (j, block) in blocks.enumerate() {
            let word = |o: usize| u64::from_ne_bytes(block[o..o + 8].try_into().unwrap_or([0; 8]));
            if word(0) | word(8) | word(16) | word(24) != 0 {
                for (k, c) in block.chunks_exact(4).enumerate() {
                    add(j * 8 + k, c);
                }
            }
        }
        let base = PROC_BUCKETS - tail.len() / 4;
        for (k, c) in tail.chunks_exact(4).enumerate() {
            add(base + k, c);
        }
        total
    });
    if total == 0 {
        set.truncate(before);
    }
}

const _: () = assert!(FINE_LEN <= u16::MAX as usize && LOG2_SLOTS <= u8::MAX as usize);
const _: () = assert!(PROC_BYTES - 16 == 4 * PROC_BUCKETS);

/// Reads and clears one bank of the per-CPU histograms into `fold`.
fn read_cpu_bank(
    skel: &LbscopeSkel<'_>,
    bank: u32,
    zeros: &mut Vec<Vec<u8>>,
    bufs: &mut mapio::Buffers,
    fold: &mut Fold,
) {
    let key = bank.to_ne_bytes();
    let cpu_hist = &skel.maps.cpu_hist;
    let (mut cpus, mut len) = (0, 0);
    let _ = bufs.lookup_percpu(cpu_hist, &key, |cpu, b| {
        (cpus, len) = (cpu + 1, b.len());
        parse_hist(b, cpu as u32, &mut fold.by_cpu);
    });
    // Only a bank that was found holds a CPU's histogram.
    if !fold.by_cpu.is_empty() {
        if zeros.len() != cpus || zeros.iter().any(|z| z.len() != len) {
            *zeros = vec![vec![0u8; len]; cpus];
        }
        let _ = cpu_hist.update_percpu(&key, zeros, MapFlags::ANY);
    }
}

/// Takes every entry out of one bank's per-process map into `fold`, sorted by process.
fn read_proc_bank(skel: &LbscopeSkel<'_>, bank: u32, bufs: &mut mapio::Buffers, fold: &mut Fold) {
    let procs = if bank == 0 {
        &skel.maps.proc_hist0
    } else {
        &skel.maps.proc_hist1
    };
    // No program writes into a retired bank: deleting its entries as they are read races
    // with nothing.
    let mut take = |k: &[u8], v: &[u8]| {
        if let Ok(tgid) = k.try_into().map(u32::from_ne_bytes) {
            parse_proc_hist(v, tgid, &mut fold.by_tgid);
        }
    };
    // Batch after batch from the first bucket to the last; an error (ENOSPC: a bucket with
    // more processes than a batch's room) stops them. When they reach the last bucket the
    // map is empty: no program writes into a retired bank.
    if bufs.take_all(procs, PROC_BATCH, &mut take).is_err() {
        // Whatever the batches could not take, one entry at a time.
        let rest: Vec<Vec<u8>> = procs.keys().collect();
        for k in rest {
            if let Ok(Some(v)) = procs.lookup(&k, MapFlags::ANY) {
                take(&k, &v);
            }
            let _ = procs.delete(&k);
        }
    }
    fold.by_tgid.sort_by_id();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::FoldedHist;

    /// What a parse adds to an empty set, if anything (one histogram at most).
    fn parsed(parse: fn(&[u8], u32, &mut FoldedSet), b: &[u8]) -> Option<FoldedHist> {
        let mut set = FoldedSet::default();
        parse(b, 7, &mut set);
        assert!(set.len() <= 1);
        let h = set.iter().next().map(|(id, h)| {
            assert_eq!(id, 7);
            h.to_hist()
        });
        h
    }

    fn trimmed(s: &[u64]) -> Vec<u64> {
        let len = s.iter().rposition(|c| *c != 0).map_or(0, |i| i + 1);
        s[..len].to_vec()
    }

    #[test]
    fn layout_matches_the_bpf_struct() {
        assert_eq!(
            std::mem::size_of::<super::super::skel::types::lbs_hist>(),
            HIST_WORDS * 8
        );
    }

    #[test]
    fn proc_layout_matches_the_bpf_struct() {
        assert_eq!(
            std::mem::size_of::<super::super::skel::types::lbs_proc_hist>(),
            PROC_BYTES
        );
    }

    /// A `struct lbs_proc_hist`'s bytes: min, max, the summed buckets.
    fn proc_bytes(min_ns: u64, max_ns: u64, buckets: &[u32]) -> Vec<u8> {
        assert_eq!(buckets.len(), PROC_BUCKETS);
        let head = [min_ns, max_ns].into_iter().flat_map(u64::to_ne_bytes);
        head.chain(buckets.iter().flat_map(|c| c.to_ne_bytes()))
            .collect()
    }

    /// The (fine bucket, slot) pair of a summed bucket, as indices.
    fn pair(k: usize) -> Option<(usize, usize)> {
        proc_pairs()[k].map(|(i, s)| (usize::from(i), usize::from(s)))
    }

    /// The kernel's summed bucket of a latency (bpf/lbscope.bpf.c, `proc_hist_add`).
    fn summed(ns: u64) -> usize {
        kernel_fine(ns) + log2_slot(ns / 1000)
    }

    /// Every latency's summed bucket splits back into its own fine bucket and slot: around
    /// every bucket's and slot's edges, and past both caps.
    #[test]
    fn a_process_bucket_names_one_fine_bucket_and_one_slot() {
        let mut edges: Vec<u64> = (0..FINE_LEN)
            .flat_map(|i| {
                let (lo, hi) = fine_bounds(i);
                [lo, hi]
            })
            .chain((1..LOG2_SLOTS).map(|s| (1u64 << s) * 1000))
            .chain([u64::MAX / 2, u64::MAX])
            .collect();
        let near: Vec<u64> = edges
            .iter()
            .flat_map(|e| [e.saturating_sub(1), e.saturating_add(1)])
            .collect();
        edges.extend(near);
        edges.extend((0..200_000).step_by(7));
        for ns in edges {
            let k = summed(ns);
            assert!(k < PROC_BUCKETS, "{ns} ns");
            assert_eq!(
                pair(k),
                Some((kernel_fine(ns), log2_slot(ns / 1000))),
                "{ns} ns"
            );
        }
    }

    #[test]
    fn a_process_histogram_splits_into_slots_and_fine_buckets() {
        let samples = [
            300u64, 1_999, 2_000, 2_047, 2_048, 2_100, 70_000, 70_000, 5_000_000,
        ];
        let mut w = vec![0u32; PROC_BUCKETS];
        for ns in samples {
            w[summed(ns)] += 1;
        }
        let b = proc_bytes(300, 5_000_000, &w);
        let h = parsed(parse_proc_hist, &b).unwrap();
        assert_eq!((h.count, h.min_ns, h.max_ns), (9, 300, 5_000_000));
        let mut log2 = vec![0u64; LOG2_SLOTS];
        let mut fine = vec![0u64; FINE_LEN];
        for ns in samples {
            log2[log2_slot(ns / 1000)] += 1;
            fine[kernel_fine(ns)] += 1;
        }
        assert_eq!(h.log2[..], log2[..h.log2.len()]);
        assert_eq!(h.fine[..], fine[..h.fine.len()]);
        assert!(log2[h.log2.len()..].iter().all(|n| *n == 0));
        assert!(fine[h.fine.len()..].iter().all(|n| *n == 0));
        assert!(
            parsed(parse_proc_hist, &vec![0u8; PROC_BYTES]).is_none(),
            "empty"
        );
        assert!(parsed(parse_proc_hist, &b[..16]).is_none(), "short");
    }

    /// Over many sparse histograms (a few to a few hundred non-empty summed buckets, counts
    /// of every size), the split equals the plain one: every bucket added into dense slots and
    /// fine buckets, trailing zeros dropped.
    #[test]
    fn a_process_split_equals_the_dense_one() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..500 {
            let mut w = vec![0u32; PROC_BUCKETS];
            let (min_ns, max_ns) = (next() % 1000, next());
            let filled = 1 + next() as usize % if round % 2 == 0 { 8 } else { 400 };
            for _ in 0..filled {
                let k = next() as usize % PROC_BUCKETS;
                if pair(k).is_some() {
                    // Counts up to the 32-bit cap: their sums must not wrap.
                    let n = if round % 5 == 0 {
                        u32::MAX
                    } else {
                        1 + (next() % 1_000_000) as u32
                    };
                    w[k] = w[k].saturating_add(n);
                }
            }
            let b = proc_bytes(min_ns, max_ns, &w);
            let (mut log2, mut fine) = ([0u64; LOG2_SLOTS], [0u64; FINE_LEN]);
            for (k, n) in w.iter().enumerate() {
                if let Some((i, s)) = pair(k) {
                    fine[i] += u64::from(*n);
                    log2[s] += u64::from(*n);
                }
            }
            let count: u64 = fine.iter().sum();
            let want = (count > 0).then(|| FoldedHist {
                count,
                min_ns,
                max_ns,
                log2: trimmed(&log2),
                fine: trimmed(&fine),
            });
            assert_eq!(parsed(parse_proc_hist, &b), want, "round {round}");
        }
    }

    /// Each summed bucket alone, the first and the last of every block of eight and the
    /// two past the last block included, comes out as its own pair.
    #[test]
    fn every_process_bucket_alone_is_found() {
        let mut found = 0;
        for k in (0..PROC_BUCKETS).filter(|k| pair(*k).is_some()) {
            let mut w = vec![0u32; PROC_BUCKETS];
            w[k] = 3;
            let h = parsed(parse_proc_hist, &proc_bytes(1, 2, &w)).unwrap();
            let (i, s) = pair(k).unwrap();
            assert_eq!(
                (h.count, h.fine.len(), h.log2.len(), h.fine[i], h.log2[s]),
                (3, i + 1, s + 1, 3, 3),
                "bucket {k}"
            );
            found += 1;
        }
        assert!(
            (PROC_BUCKETS / 8 * 8..PROC_BUCKETS).any(|k| pair(k).is_some()),
            "the buckets past the last block hold a pair"
        );
        assert!(found > FINE_LEN, "{found} pairs");
    }

    #[test]
    fn parses_and_trims() {
        let mut w = vec![0u64; HIST_WORDS];
        w[0] = 3;
        w[1] = 10;
        w[2] = 5_000;
        w[3] = 2;
        w[3 + 2] = 1;
        w[3 + LOG2_SLOTS + 10] = 2;
        w[3 + LOG2_SLOTS + 200] = 1;
        let b: Vec<u8> = w.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let h = parsed(parse_hist, &b).unwrap();
        assert_eq!((h.count, h.min_ns, h.max_ns), (3, 10, 5_000));
        assert_eq!(h.log2, vec![2, 0, 1]);
        assert_eq!(h.fine.len(), 201);
        assert!(
            parsed(parse_hist, &vec![0u8; HIST_WORDS * 8]).is_none(),
            "empty"
        );
        assert!(parsed(parse_hist, &b[..16]).is_none(), "short");
    }
}
