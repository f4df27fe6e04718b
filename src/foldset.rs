//! A set of latency histograms folded in the kernel, one per CPU or per process
//! ([`crate::event::Fold`]'s two parts), sparse: each histogram keeps only its non-zero
//! counters, as (index, count) pairs in two arenas the whole set shares. A folded flush
//! carries a histogram for each process that ran in its period, and in a period of 100 to
//! 500 ms a process's few samples fill a handful of its 554 counters: dense counters were
//! zeroed, written, summed and merged whole, at every read for every process. Here a set makes
//! three allocations, whatever its size, and every step touches only the counters that hold
//! samples.
//!
//! The analyzer and the tests read each histogram as a [`FoldedRef`]; the codec and JSON see
//! it dense, as a [`FoldedHist`] (a list of `(id, histogram)` pairs for the set), as they saw
//! the vectors before.

use crate::event::FoldedHist;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One non-zero counter of a folded histogram: a log2 slot's or a fine bucket's index, and
/// its count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub i: u32,
    pub n: u64,
}

/// One histogram of the set: its id, figures and where its counters sit in the arenas.
#[derive(Clone, Copy, Debug)]
struct Head {
    id: u32,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    log2_at: usize,
    log2_n: usize,
    fine_at: usize,
    fine_n: usize,
}

/// Histograms folded in the kernel, each under an id (a CPU or a thread-group id).
#[derive(Clone, Debug, Default)]
pub struct FoldedSet {
    heads: Vec<Head>,
    log2: Vec<Bucket>,
    fine: Vec<Bucket>,
}

/// One histogram of a [`FoldedSet`], borrowed: its non-zero log2 slots and fine buckets, by
/// rising index, as the set's fills make them (the analyzer's check refuses any other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoldedRef<'a> {
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub log2: &'a [Bucket],
    pub fine: &'a [Bucket],
}

/// Dense counters from sparse ones, trailing zeros dropped.
pub fn dense(b: &[Bucket]) -> Vec<u64> {
    let mut v = vec![0; b.iter().map(|b| b.i as usize + 1).max().unwrap_or(0)];
    for b in b {
        v[b.i as usize] += b.n;
    }
    v
}

impl FoldedRef<'_> {
    /// An owned, dense copy.
    pub fn to_hist(&self) -> FoldedHist {
        FoldedHist {
            count: self.count,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            log2: dense(self.log2),
            fine: dense(self.fine),
        }
    }
}

impl FoldedHist {
    /// Calls `f` with the histogram as a set would hold it (tests build folded histograms
    /// densely).
    #[cfg(test)]
    pub fn with_ref<R>(&self, f: impl FnOnce(FoldedRef<'_>) -> R) -> R {
        let mut s = FoldedSet::default();
        s.push_hist(0, self);
        let (_, r) = s.iter().next().expect("the histogram just pushed");
        f(r)
    }
}

/// Where a fill writes one histogram's counters ([`FoldedSet::push_with`]).
pub struct Fill<'a> {
    log2: &'a mut Vec<Bucket>,
    fine: &'a mut Vec<Bucket>,
    log2_at: usize,
    fine_at: usize,
}

/// Adds `n` at index `i` of the counters from `at` on: to the last pair when it has that
/// index (indices come in rising order), else as a new pair; nothing for a zero.
#[inline]
fn put(v: &mut Vec<Bucket>, at: usize, i: u32, n: u64) {
    if n == 0 {
        return;
    }
    let mine = v.len() > at;
    match v.last_mut() {
        Some(b) if mine && b.i == i => b.n = b.n.wrapping_add(n),
        _ => v.push(Bucket { i, n }),
    }
}

impl Fill<'_> {
    /// Adds `n` to log2 slot `i`; slots come in rising order (a repeat adds to the last).
    #[inline]
    pub fn log2(&mut self, i: u32, n: u64) {
        put(self.log2, self.log2_at, i, n);
    }

    /// Adds `n` to fine bucket `i`; buckets come in rising order (a repeat adds to the last).
    #[inline]
    pub fn fine(&mut self, i: u32, n: u64) {
        put(self.fine, self.fine_at, i, n);
    }
}

impl FoldedSet {
    /// An empty set with room for `hists` histograms of `counters` non-zero counters in all
    /// (slots and buckets each): a flush sized by the one before fills its arenas without
    /// moving them.
    pub fn with_capacity(hists: usize, counters: usize) -> FoldedSet {
        FoldedSet {
            heads: Vec::with_capacity(hists),
            log2: Vec::with_capacity(counters),
            fine: Vec::with_capacity(counters),
        }
    }

    /// Non-zero counters held, all histograms together, in the larger of the two arenas (see
    /// [`FoldedSet::with_capacity`]).
    pub fn counters(&self) -> usize {
        self.log2.len().max(self.fine.len())
    }

    /// Histograms in the set.
    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// Each histogram with its id, in the set's order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, FoldedRef<'_>)> + '_ {
        self.heads.iter().map(|h| {
            let r = FoldedRef {
                count: h.count,
                min_ns: h.min_ns,
                max_ns: h.max_ns,
                log2: &self.log2[h.log2_at..h.log2_at + h.log2_n],
                fine: &self.fine[h.fine_at..h.fine_at + h.fine_n],
            };
            (h.id, r)
        })
    }

    /// Adds the dense histogram `h` under `id`, its zeros left out.
    pub fn push_hist(&mut self, id: u32, h: &FoldedHist) {
        self.push_with(id, h.min_ns, h.max_ns, |f| {
            for (i, n) in (0u32..).zip(&h.log2) {
                f.log2(i, *n);
            }
            for (i, n) in (0u32..).zip(&h.fine) {
                f.fine(i, *n);
            }
            h.count
        });
    }

    /// Adds a histogram under `id` whose counters `fill` writes, by rising index, into the
    /// set's arenas (no vector of its own is made for it); `fill` returns the count.
    pub fn push_with(
        &mut self,
        id: u32,
        min_ns: u64,
        max_ns: u64,
        fill: impl FnOnce(&mut Fill<'_>) -> u64,
    ) {
        let (log2_at, fine_at) = (self.log2.len(), self.fine.len());
        let count = fill(&mut Fill {
            log2: &mut self.log2,
            fine: &mut self.fine,
            log2_at,
            fine_at,
        });
        self.heads.push(Head {
            id,
            count,
            min_ns,
            max_ns,
            log2_at,
            log2_n: self.log2.len() - log2_at,
            fine_at,
            fine_n: self.fine.len() - fine_at,
        });
    }

    /// Keeps the first `n` histograms only, with their counters (before any sort: the arenas
    /// hold them in the order they came).
    pub fn truncate(&mut self, n: usize) {
        if let Some(h) = self.heads.get(n) {
            self.log2.truncate(h.log2_at);
            self.fine.truncate(h.fine_at);
            self.heads.truncate(n);
        }
    }

    /// Orders the histograms by id.
    pub fn sort_by_id(&mut self) {
        self.heads.sort_unstable_by_key(|h| h.id);
    }
}

/// Equal when they hold the same histograms under the same ids in the same order, however
/// their arenas are laid out.
impl PartialEq for FoldedSet {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for FoldedSet {}

impl FromIterator<(u32, FoldedHist)> for FoldedSet {
    fn from_iter<I: IntoIterator<Item = (u32, FoldedHist)>>(it: I) -> Self {
        let mut s = FoldedSet::default();
        for (id, h) in it {
            s.push_hist(id, &h);
        }
        s
    }
}

impl Serialize for FoldedSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(|(id, h)| (id, h.to_hist())))
    }
}

impl<'de> Deserialize<'de> for FoldedSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FoldedSet, D::Error> {
        Ok(Vec::<(u32, FoldedHist)>::deserialize(d)?
            .into_iter()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(count: u64, log2: &[u64], fine: &[u64]) -> FoldedHist {
        FoldedHist {
            count,
            min_ns: count,
            max_ns: 10 * count,
            log2: log2.to_vec(),
            fine: fine.to_vec(),
        }
    }

    /// What goes in comes out, in order, each histogram's counters its own and only its
    /// non-zero ones held; sorting moves the histograms whole; equality ignores the arenas'
    /// layout; JSON is the list of dense pairs the vectors gave.
    #[test]
    fn holds_sorts_compares_and_serializes_as_the_pairs() {
        let pairs = vec![
            (9, hist(3, &[1, 2], &[0, 0, 3])),
            (2, hist(0, &[], &[])),
            (5, hist(7, &[7], &[4, 3])),
        ];
        let mut s: FoldedSet = pairs.clone().into_iter().collect();
        assert_eq!(s.len(), 3);
        assert_eq!(s.fine.len(), 3, "zeros are not held");
        let back: Vec<(u32, FoldedHist)> = s.iter().map(|(i, h)| (i, h.to_hist())).collect();
        assert_eq!(back, pairs);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            serde_json::to_string(&pairs).unwrap()
        );
        let json: FoldedSet = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(json, s);
        s.sort_by_id();
        let mut sorted = pairs.clone();
        sorted.sort_by_key(|(i, _)| *i);
        let want: FoldedSet = sorted.into_iter().collect();
        assert_eq!(s, want);
        assert_ne!(s, pairs.into_iter().collect::<FoldedSet>(), "order counts");
        let mut w = FoldedSet::default();
        w.push_hist(1, &hist(0, &[], &[]));
        w.push_with(4, 1, 2, |f| {
            // A repeated index adds to its pair; a zero is left out.
            f.log2(1, 2);
            f.log2(1, 4);
            f.fine(0, 0);
            f.fine(2, 6);
            6
        });
        let got: Vec<(u32, FoldedHist)> = w.iter().map(|(i, h)| (i, h.to_hist())).collect();
        assert_eq!(got[0], (1, hist(0, &[], &[])));
        assert_eq!(got[1].1, {
            let mut h = hist(6, &[0, 6], &[0, 0, 6]);
            (h.min_ns, h.max_ns) = (1, 2);
            h
        });
        let one = w.iter().nth(1).unwrap().1;
        assert_eq!(one.log2, &[Bucket { i: 1, n: 6 }]);
        assert_eq!(one.fine, &[Bucket { i: 2, n: 6 }]);
        assert!(got[1].1.with_ref(|r| r == one));
    }
}
