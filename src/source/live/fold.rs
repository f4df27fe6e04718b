//! Folded mode's user-space half: reads the run-queue latency histograms the BPF programs
//! fold (per CPU and per process, in two banks) and turns them into [`EventKind::Fold`]
//! events.
//!
//! The programs fill the bank named in the `fold_ctl` map. Each flush reads and clears the
//! other bank, retired one flush earlier (no handler still writes into it by then), and then
//! makes it the one filled: samples reach the analyzer one to two flush periods after they
//! were taken, none is lost or counted twice. The last flush at stop retires the filling bank
//! too and reads both. Each flush also starts a new epoch: a task's first run in each is
//! streamed as a switch, so the model knows where every thread runs (uneven_spread).

use super::skel::LbscopeSkel;
use crate::analyze::LOG2_SLOTS;
use crate::event::{Event, EventKind, Fold, FoldedHist};
use libbpf_rs::{MapCore, MapFlags};

/// Counters in one `struct lbs_hist`: count, min, max, the log2 slots, the fine buckets.
/// The slots are the analyzer's; the fine buckets stop at the kernel's cap (LBS_FINE_LEN).
const HIST_WORDS: usize = 3 + LOG2_SLOTS + FINE_LEN;
const FINE_LEN: usize = 528;

/// The flush state.
pub(super) struct Folder {
    /// The bank the programs fill.
    filling: u32,
    /// When the last flush ran (monotonic ns).
    last: u64,
    /// Flushes so far: a task's first run after each is streamed.
    epoch: u32,
}

impl Folder {
    /// Starts with bank 0 filling (the maps' initial state), and puts the empty `Fold` that
    /// opens a folded stream first in `batch`, before any event the programs sent.
    pub(super) fn new(now: u64, batch: &mut Vec<Event>) -> Folder {
        batch.insert(0, fold_event(now, Fold::default()));
        Folder {
            filling: 0,
            last: now,
            epoch: 0,
        }
    }

    /// Whether a flush is due at `now`, every `period_ns` (within the poll loop's jitter).
    pub(super) fn due(&self, now: u64, period_ns: u64) -> bool {
        now.saturating_sub(self.last) >= period_ns / 10 * 9
    }

    /// Reads and clears the retired bank, then makes it the filling one; appends the Fold.
    pub(super) fn flush(&mut self, skel: &LbscopeSkel<'_>, now: u64, out: &mut Vec<Event>) {
        let retired = 1 - self.filling;
        let fold = read_bank(skel, retired);
        self.epoch = self.epoch.wrapping_add(1);
        set_filling(skel, retired, self.epoch);
        self.filling = retired;
        self.last = now;
        out.push(fold_event(now, fold));
    }

    /// The last flush: retires the filling bank as well and reads both.
    pub(super) fn finish(&mut self, skel: &LbscopeSkel<'_>, now: u64, out: &mut Vec<Event>) {
        self.flush(skel, now, out);
        // Handlers run for microseconds: one already past its bank lookup has finished.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let fold = read_bank(skel, 1 - self.filling);
        out.push(fold_event(now, fold));
    }
}

fn fold_event(now: u64, fold: Fold) -> Event {
    Event {
        ts_ns: now,
        cpu: 0,
        kind: EventKind::Fold(Box::new(fold)),
    }
}

fn set_filling(skel: &LbscopeSkel<'_>, bank: u32, epoch: u32) {
    let mut v = [0u8; 8];
    v[..4].copy_from_slice(&bank.to_ne_bytes());
    v[4..].copy_from_slice(&epoch.to_ne_bytes());
    let _ = skel
        .maps
        .fold_ctl
        .update(&0u32.to_ne_bytes(), &v, MapFlags::ANY);
}

/// One `struct lbs_hist` from its bytes; `None` for an empty one or a size mismatch.
fn parse_hist(b: &[u8]) -> Option<FoldedHist> {
    if b.len() < HIST_WORDS * 8 {
        return None;
    }
    let w: Vec<u64> = b[..HIST_WORDS * 8]
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    // A process's entry leaves `count` to us: the sum of its buckets.
    let count = match w[0] {
        0 => w[3 + LOG2_SLOTS..].iter().sum(),
        n => n,
    };
    if count == 0 {
        return None;
    }
    let trimmed = |s: &[u64]| s[..s.iter().rposition(|c| *c != 0).map_or(0, |i| i + 1)].to_vec();
    Some(FoldedHist {
        count,
        min_ns: w[1],
        max_ns: w[2],
        log2: trimmed(&w[3..3 + LOG2_SLOTS]),
        fine: trimmed(&w[3 + LOG2_SLOTS..]),
    })
}

/// Reads and clears one bank of both maps.
fn read_bank(skel: &LbscopeSkel<'_>, bank: u32) -> Fold {
    let mut fold = Fold::default();
    let key = bank.to_ne_bytes();
    let cpu_hist = &skel.maps.cpu_hist;
    if let Ok(Some(per_cpu)) = cpu_hist.lookup_percpu(&key, MapFlags::ANY) {
        for (cpu, b) in per_cpu.iter().enumerate() {
            if let Some(h) = parse_hist(b) {
                fold.by_cpu.push((cpu as u32, h));
            }
        }
        if !fold.by_cpu.is_empty() {
            let zeros = vec![vec![0u8; per_cpu.first().map_or(0, Vec::len)]; per_cpu.len()];
            let _ = cpu_hist.update_percpu(&key, &zeros, MapFlags::ANY);
        }
    }
    let procs = &skel.maps.proc_hist;
    let keys: Vec<Vec<u8>> = procs
        .keys()
        .filter(|k| k.len() == 8 && k[4..8] == key)
        .collect();
    for k in keys {
        if let Ok(Some(v)) = procs.lookup(&k, MapFlags::ANY) {
            if let Some(h) = parse_hist(&v) {
                let tgid = u32::from_ne_bytes(k[..4].try_into().unwrap_or([0; 4]));
                fold.by_tgid.push((tgid, h));
            }
        }
        let _ = procs.delete(&k);
    }
    fold.by_tgid.sort_unstable_by_key(|(t, _)| *t);
    fold
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_bpf_struct() {
        assert_eq!(
            std::mem::size_of::<super::super::skel::types::lbs_hist>(),
            HIST_WORDS * 8
        );
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
        let h = parse_hist(&b).unwrap();
        assert_eq!((h.count, h.min_ns, h.max_ns), (3, 10, 5_000));
        assert_eq!(h.log2, vec![2, 0, 1]);
        assert_eq!(h.fine.len(), 201);
        assert!(parse_hist(&vec![0u8; HIST_WORDS * 8]).is_none(), "empty");
        w[0] = 0;
        let b: Vec<u8> = w.iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(parse_hist(&b).unwrap().count, 3, "count from the buckets");
        assert!(parse_hist(&b[..16]).is_none(), "short");
    }
}
