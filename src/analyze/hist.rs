//! Run-queue latency histograms: runqlat's log2 microsecond slots (for the familiar picture)
//! plus a finer log-linear nanosecond histogram (for percentiles), an exact max and min.
//!
//! Invariants: the sum of `log2` equals the sum of `fine` (the count); memory is fixed (at
//! most twice [`FINE_LEN`] + [`LOG2_SLOTS`] counters), never grown by the number of samples.
//!
//! Percentile precision: the fine histogram keeps every value below 16 ns exact and splits
//! each power of two above into 16 equal sub-buckets, so a bucket's width is at most 1/16 of
//! its lower bound. A percentile is reported as its bucket's midpoint (clamped to the exact
//! min and max), hence within about 3.2% of the true sample value.

use super::snapshot::LatencySummary;

/// runqlat's `MAX_SLOTS`: the last slot catches every larger latency.
pub const LOG2_SLOTS: usize = 26;

/// Sub-buckets per power of two, as a shift (16 sub-buckets).
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// Number of fine buckets needed for any `u64`.
const FINE_LEN: usize = ((64 - SUB_BITS as usize) * SUB as usize) + SUB as usize;

/// runqlat's slot for a latency in microseconds: floor(log2(us)), with 0 and 1 both in slot 0,
/// capped at the last slot (libbpf-tools `log2l` then `if (slot >= MAX_SLOTS)`).
pub fn log2_slot(us: u64) -> usize {
    if us < 2 {
        0
    } else {
        ((63 - us.leading_zeros()) as usize).min(LOG2_SLOTS - 1)
    }
}

/// The fine bucket of a value in nanoseconds.
pub fn fine_index(v: u64) -> usize {
    if v < SUB {
        v as usize
    } else {
        let octave = 63 - v.leading_zeros(); // >= SUB_BITS
        let sub = (v >> (octave - SUB_BITS)) & (SUB - 1);
        ((octave - SUB_BITS + 1) as u64 * SUB + sub) as usize
    }
}

/// Inclusive value range of a fine bucket.
pub fn fine_bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i);
    }
    let octave = (i / SUB) as u32 + SUB_BITS - 1;
    let sub = i % SUB;
    let width = 1u64 << (octave - SUB_BITS);
    let lo = (1u64 << octave) + sub * width;
    (lo, lo + (width - 1))
}

/// One latency histogram.
///
/// Laid out so that a sample touches few cache lines, at addresses known from the
/// histogram's own: the exact min and max and the log2 slots of latencies below 4 ms share
/// the first line, and the fine buckets follow inline (no pointer to chase first).
/// Histograms are recorded into in no particular order (one per CPU, one per process), so
/// each line touched is likely a miss. Counters are narrow (log2 slots 32-bit, fine buckets
/// 16-bit: a line holds two octaves of them) so that the histograms in use take less cache;
/// the rare counter that wraps carries into `wide`.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct LatHist {
    /// `u64::MAX` while empty.
    min_ns: u64,
    max_ns: u64,
    log2: [u32; LOG2_SLOTS],
    /// How many times each counter wrapped, once one has.
    wide: Option<Box<Wide>>,
    fine: [u16; FINE_LEN],
}

/// The high parts of a histogram's counters: a log2 slot's count is `log2 << 32` plus its
/// low part, a fine bucket's `fine << 16` plus its low part.
#[derive(Clone, Debug)]
struct Wide {
    log2: [u32; LOG2_SLOTS],
    fine: [u64; FINE_LEN],
}

impl Default for LatHist {
    fn default() -> Self {
        LatHist {
            min_ns: u64::MAX,
            max_ns: 0,
            log2: [0; LOG2_SLOTS],
            wide: None,
            fine: [0; FINE_LEN],
        }
    }
}

/// Which counter array of a histogram.
#[derive(Clone, Copy)]
enum Counters {
    Log2,
    Fine,
}

impl LatHist {
    /// Number of samples.
    pub fn count(&self) -> u64 {
        (0..LOG2_SLOTS).map(|i| self.get(Counters::Log2, i)).sum()
    }

    fn is_empty(&self) -> bool {
        self.log2.iter().all(|c| *c == 0) && self.wide.is_none()
    }

    /// The full value of one counter.
    fn get(&self, which: Counters, i: usize) -> u64 {
        match which {
            Counters::Log2 => {
                let hi = self.wide.as_ref().map_or(0, |w| u64::from(w.log2[i]));
                (hi << 32) | u64::from(self.log2[i])
            }
            Counters::Fine => {
                let hi = self.wide.as_ref().map_or(0, |w| w.fine[i]);
                (hi << 16) | u64::from(self.fine[i])
            }
        }
    }

    /// Adds `n` to one counter, carrying into `wide`.
    #[inline]
    fn add(&mut self, which: Counters, i: usize, n: u64) {
        let carry = match which {
            Counters::Log2 => {
                let sum = u64::from(self.log2[i]) + (n & u64::from(u32::MAX));
                self.log2[i] = sum as u32;
                (n >> 32) + (sum >> 32)
            }
            Counters::Fine => {
                let sum = u64::from(self.fine[i]) + (n & u64::from(u16::MAX));
                self.fine[i] = sum as u16;
                (n >> 16) + (sum >> 16)
            }
        };
        if carry > 0 {
            self.carry(which, i, carry);
        }
    }

    #[cold]
    fn carry(&mut self, which: Counters, i: usize, carry: u64) {
        let w = self.wide.get_or_insert_with(|| {
            Box::new(Wide {
                log2: [0; LOG2_SLOTS],
                fine: [0; FINE_LEN],
            })
        });
        // A count is at most a u64: its high part fits.
        match which {
            Counters::Log2 => w.log2[i] = (u64::from(w.log2[i]) + carry) as u32,
            Counters::Fine => w.fine[i] += carry,
        }
    }

    /// Adds one latency in nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        // runqlat divides by 1000 (integer) before taking the slot.
        self.add(Counters::Log2, log2_slot(ns / 1000), 1);
        self.add(Counters::Fine, fine_index(ns), 1);
    }

    /// Whether a histogram folded in the kernel may be added: its slots and buckets fit, come
    /// by rising index, and each list sums to its count, exactly (a damaged or crafted
    /// recording cannot corrupt the figures).
    pub fn folded_ok(f: crate::event::FoldedRef<'_>) -> bool {
        let fits = |b: &[crate::event::Bucket], len: usize| {
            b.windows(2).all(|w| w[0].i < w[1].i) && b.last().is_none_or(|l| (l.i as usize) < len)
        };
        let sums_to = |b: &[crate::event::Bucket]| {
            b.iter().map(|b| u128::from(b.n)).sum::<u128>() == u128::from(f.count)
        };
        fits(f.log2, LOG2_SLOTS)
            && fits(f.fine, FINE_LEN)
            && sums_to(f.log2)
            && sums_to(f.fine)
            && (f.count == 0 || f.min_ns <= f.max_ns)
    }

    /// Adds a histogram folded in the kernel, one that [`LatHist::folded_ok`] passed, counter
    /// by counter (no histogram is built for it).
    pub fn add_folded(&mut self, f: crate::event::FoldedRef<'_>) {
        debug_assert!(Self::folded_ok(f));
        if f.count == 0 {
            return;
        }
        self.min_ns = self.min_ns.min(f.min_ns);
        self.max_ns = self.max_ns.max(f.max_ns);
        for (which, counts) in [(Counters::Log2, f.log2), (Counters::Fine, f.fine)] {
            for b in counts {
                self.add(which, b.i as usize, b.n);
            }
        }
    }

    /// A histogram folded in the kernel, checked: `None` unless [`LatHist::folded_ok`].
    #[cfg(test)]
    pub fn from_folded(f: &crate::event::FoldedHist) -> Option<LatHist> {
        let mut h = LatHist::default();
        f.with_ref(|r| {
            Self::folded_ok(r).then(|| {
                h.add_folded(r);
                h
            })
        })
    }

    /// The histogram as a folded source sends it (trailing zeros dropped): tests build
    /// folded streams from recorded samples with it.
    #[cfg(test)]
    pub(crate) fn to_folded(&self) -> crate::event::FoldedHist {
        let all = |which, n| (0..n).map(|i| self.get(which, i)).collect::<Vec<u64>>();
        let trim = |mut v: Vec<u64>| {
            v.truncate(v.iter().rposition(|c| *c != 0).map_or(0, |i| i + 1));
            v
        };
        let count = self.count();
        crate::event::FoldedHist {
            count,
            min_ns: if count > 0 { self.min_ns } else { 0 },
            max_ns: self.max_ns,
            log2: trim(all(Counters::Log2, LOG2_SLOTS)),
            fine: trim(all(Counters::Fine, FINE_LEN)),
        }
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &LatHist) {
        if other.is_empty() {
            return;
        }
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        for (which, len) in [(Counters::Log2, LOG2_SLOTS), (Counters::Fine, FINE_LEN)] {
            for i in 0..len {
                let c = other.get(which, i);
                if c != 0 {
                    self.add(which, i, c);
                }
            }
        }
    }

    /// The value (ns) at permille `q` (500 = median, 999 = p99.9): nearest rank, reported as
    /// the bucket midpoint clamped to the exact min and max.
    fn quantile_ns(&self, q: u64) -> u64 {
        let count = self.count();
        if count == 0 {
            return 0;
        }
        let rank = ((count as u128 * q as u128).div_ceil(1000)).max(1) as u64;
        let mut seen = 0u64;
        for i in 0..FINE_LEN {
            seen += self.get(Counters::Fine, i);
            if seen >= rank {
                let (lo, hi) = fine_bounds(i);
                let mid = lo + (hi - lo) / 2;
                return mid.clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }

    /// The serializable summary, in microseconds.
    pub fn summary(&self) -> LatencySummary {
        let mut log2: Vec<u64> = (0..LOG2_SLOTS)
            .map(|i| self.get(Counters::Log2, i))
            .collect();
        log2.truncate(log2.iter().rposition(|c| *c != 0).map_or(0, |i| i + 1));
        LatencySummary {
            count: log2.iter().sum(),
            log2_buckets: log2,
            p50: ns_to_us(self.quantile_ns(500)),
            p90: ns_to_us(self.quantile_ns(900)),
            p99: ns_to_us(self.quantile_ns(990)),
            p999: ns_to_us(self.quantile_ns(999)),
            max: ns_to_us(self.max_ns),
        }
    }
}

/// Nanoseconds as microseconds. Written as an integer over 1000 so the value prints with at
/// most three decimals and parses back to the same `f64` (JSON round trips compare equal).
pub fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fine_buckets_are_contiguous_and_cover_u64() {
        let mut next = 0u64;
        for i in 0..FINE_LEN {
            let (lo, hi) = fine_bounds(i);
            assert_eq!(lo, next, "bucket {i}");
            assert!(hi >= lo);
            assert_eq!(fine_index(lo), i);
            assert_eq!(fine_index(hi), i);
            next = hi.wrapping_add(1);
        }
        assert_eq!(next, 0, "last bucket ends at u64::MAX");
        assert_eq!(fine_index(u64::MAX), FINE_LEN - 1);
    }

    #[test]
    fn percentiles_within_precision() {
        let mut h = LatHist::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.max, 1000.0);
        for (got, want) in [
            (s.p50, 500.0),
            (s.p90, 900.0),
            (s.p99, 990.0),
            (s.p999, 999.0),
        ] {
            assert!((got - want).abs() / want < 0.035, "{got} vs {want}");
        }
        let mut one = LatHist::default();
        one.record(12_345);
        let s = one.summary();
        assert_eq!((s.p50, s.p999, s.max), (12.345, 12.345, 12.345));
    }

    #[test]
    fn folded_equals_recorded() {
        let mut a = LatHist::default();
        for v in [3, 900, 5_000, 1_000_000, 7_777_777] {
            a.record(v);
        }
        let f = a.to_folded();
        let b = LatHist::from_folded(&f).expect("consistent");
        assert_eq!(b.summary(), a.summary());
        let mut bad = f.clone();
        bad.count += 1;
        assert!(
            LatHist::from_folded(&bad).is_none(),
            "count must be the sums"
        );
        // One sample moved past the last slot: the sums still hold.
        let mut long = f;
        let last = long.log2.len() - 1;
        long.log2[last] -= 1;
        long.log2.resize(LOG2_SLOTS + 1, 0);
        long.log2[LOG2_SLOTS] = 1;
        assert!(LatHist::from_folded(&long).is_none(), "too many slots");
        let mut zeros = long.clone();
        (zeros.log2[last], zeros.log2[LOG2_SLOTS]) = (zeros.log2[last] + 1, 0);
        assert!(
            LatHist::from_folded(&zeros).is_some(),
            "zeros past the last slot hold nothing"
        );
    }

    /// Adding a folded histogram onto a filled one is merging the histogram it folds: the
    /// same counters, min and max; an empty one changes nothing.
    #[test]
    fn adding_folded_is_merging() {
        let (mut a, mut b) = (LatHist::default(), LatHist::default());
        for v in [40, 2_000, 2_000, 90_000] {
            a.record(v);
        }
        for v in [7, 2_000, 65_000, 3_000_000_000] {
            b.record(v);
        }
        let mut merged = a.clone();
        merged.merge(&b);
        let f = b.to_folded();
        assert!(f.with_ref(LatHist::folded_ok));
        f.with_ref(|r| a.add_folded(r));
        assert_eq!(a.to_folded(), merged.to_folded());
        assert_eq!((a.min_ns, a.max_ns), (7, 3_000_000_000));
        LatHist::default().to_folded().with_ref(|r| a.add_folded(r));
        assert_eq!(a.to_folded(), merged.to_folded());
    }

    /// The check is exact at the 64-bit edges: counts that sum to the count pass, counts
    /// whose sum wraps to it (2^64 + c) do not.
    #[test]
    fn folded_check_is_exact_past_64_bits() {
        let h = |count, log2: &[u64], fine: &[u64]| crate::event::FoldedHist {
            count,
            min_ns: 1,
            max_ns: 2,
            log2: log2.to_vec(),
            fine: fine.to_vec(),
        };
        let ok = |f: crate::event::FoldedHist| f.with_ref(LatHist::folded_ok);
        assert!(ok(h(u64::MAX, &[u64::MAX - 1, 1], &[u64::MAX])));
        assert!(!ok(h(0, &[u64::MAX, 1], &[0])), "wraps to 0");
        assert!(!ok(h(1, &[u64::MAX, 2], &[1])), "wraps to 1");
        let full = vec![u64::MAX; FINE_LEN];
        assert!(!ok(h(u64::MAX, &[u64::MAX], &full)));
        assert!(ok(h(3, &[1, 2], &[0, 3])));
        assert!(!ok(h(3, &[1, 2], &[0, 2])));
        // Sparse counters must come by rising index, each once.
        use crate::event::{Bucket, FoldedRef};
        let b = |i, n| Bucket { i, n };
        let r = |log2: &[Bucket]| {
            LatHist::folded_ok(FoldedRef {
                count: 3,
                min_ns: 1,
                max_ns: 2,
                log2,
                fine: &[b(4, 3)],
            })
        };
        assert!(r(&[b(0, 1), b(1, 2)]));
        assert!(!r(&[b(1, 2), b(0, 1)]), "falling");
        assert!(!r(&[b(1, 1), b(1, 2)]), "repeated");
        assert!(
            !r(&[b(0, 1), b(LOG2_SLOTS as u32, 2)]),
            "past the last slot"
        );
    }

    #[test]
    fn counters_carry_past_32_bits() {
        let mut h = LatHist::default();
        let (s, i) = (log2_slot(5), fine_index(5_000));
        // 2^16 - 1 samples: the fine bucket is full, its carry not yet taken.
        for _ in 0..u16::MAX {
            h.record(5_000);
        }
        assert!(h.wide.is_none());
        assert_eq!(h.get(Counters::Fine, i), u64::from(u16::MAX));
        h.record(5_000);
        assert_eq!(h.get(Counters::Fine, i), 1 << 16);
        assert_eq!(h.count(), 1 << 16);
        // 2^32 - 1 samples, both counters one short of 32 bits.
        h.log2[s] = u32::MAX;
        h.fine[i] = u16::MAX;
        h.wide.as_mut().unwrap().fine[i] = u64::from(u16::MAX);
        assert_eq!(h.get(Counters::Fine, i), u64::from(u32::MAX));
        h.record(5_000);
        assert_eq!(h.count(), 1 << 32);
        assert_eq!(h.get(Counters::Fine, i), 1 << 32);
        let mut sum = LatHist::default();
        sum.merge(&h);
        sum.merge(&h);
        assert_eq!(sum.count(), 1 << 33);
        assert_eq!(
            LatHist::from_folded(&sum.to_folded()).unwrap().count(),
            1 << 33
        );
        assert_eq!(sum.summary().p50, 5.0);
    }

    #[test]
    fn merge_adds() {
        let mut a = LatHist::default();
        let mut b = LatHist::default();
        a.record(5_000);
        b.record(1_000_000);
        b.record(10);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        let s = a.summary();
        assert_eq!(s.max, 1000.0);
        assert_eq!(s.log2_buckets.iter().sum::<u64>(), 3);
        assert_eq!(s.log2_buckets[0], 1);
        assert_eq!(s.log2_buckets[2], 1);
        assert_eq!(s.log2_buckets[9], 1);
    }
}
