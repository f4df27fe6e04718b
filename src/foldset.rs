//! A set of latency histograms folded in the kernel, one per CPU or per process
//! ([`crate::event::Fold`]'s two parts), with every counter in one arena. A folded flush
//! carries a histogram for each process that ran in its period: a vector or two of its own
//! for each made a flush of a thousand processes two thousand allocations, freed by another
//! thread, the larger part of the flush's cost. Here a set makes two, whatever its size.
//!
//! The analyzer, the codec and the tests read each histogram as a [`FoldedRef`]; JSON sees
//! the set as a list of `(id, histogram)` pairs, as it saw the vectors before.

use crate::event::FoldedHist;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One histogram of the set: its id, figures and where its counters sit in the arena.
#[derive(Clone, Copy, Debug)]
struct Head {
    id: u32,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    /// Its log2 slots start here in the arena, its fine buckets after them.
    at: usize,
    log2_len: u32,
    fine_len: u32,
}

/// Histograms folded in the kernel, each under an id (a CPU or a thread-group id).
#[derive(Clone, Debug, Default)]
pub struct FoldedSet {
    heads: Vec<Head>,
    counts: Vec<u64>,
}

/// One histogram of a [`FoldedSet`], borrowed: the fields of a [`FoldedHist`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FoldedRef<'a> {
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub log2: &'a [u64],
    pub fine: &'a [u64],
}

impl FoldedRef<'_> {
    /// An owned copy.
    pub fn to_hist(&self) -> FoldedHist {
        FoldedHist {
            count: self.count,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            log2: self.log2.to_vec(),
            fine: self.fine.to_vec(),
        }
    }
}

impl FoldedHist {
    /// Borrowed, as a set's histograms are read.
    pub fn as_ref(&self) -> FoldedRef<'_> {
        FoldedRef {
            count: self.count,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            log2: &self.log2,
            fine: &self.fine,
        }
    }
}

impl FoldedSet {
    /// An empty set with room for `hists` histograms of `counters` counters in all: a flush
    /// sized by the one before fills its arena without moving it (doubling a large arena as
    /// it filled cost a flush of a thousand processes a tenth of its time in copies).
    pub fn with_capacity(hists: usize, counters: usize) -> FoldedSet {
        FoldedSet {
            heads: Vec::with_capacity(hists),
            counts: Vec::with_capacity(counters),
        }
    }

    /// Counters held, all histograms together (see [`FoldedSet::with_capacity`]).
    pub fn counters(&self) -> usize {
        self.counts.len()
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
            let log2_end = h.at + h.log2_len as usize;
            let fine_end = log2_end + h.fine_len as usize;
            let r = FoldedRef {
                count: h.count,
                min_ns: h.min_ns,
                max_ns: h.max_ns,
                log2: &self.counts[h.at..log2_end],
                fine: &self.counts[log2_end..fine_end],
            };
            (h.id, r)
        })
    }

    /// Adds a copy of `h` under `id`.
    pub fn push(&mut self, id: u32, h: FoldedRef<'_>) {
        self.push_with(
            id,
            h.min_ns,
            h.max_ns,
            h.log2.len(),
            h.fine.len(),
            |l, f| {
                l.copy_from_slice(h.log2);
                f.copy_from_slice(h.fine);
                h.count
            },
        );
    }

    /// Adds a histogram under `id` with `log2_len` slots and `fine_len` fine buckets, all
    /// zero until `fill` writes them in place; `fill` returns the count. No vector of its own
    /// is made for it.
    pub fn push_with(
        &mut self,
        id: u32,
        min_ns: u64,
        max_ns: u64,
        log2_len: usize,
        fine_len: usize,
        fill: impl FnOnce(&mut [u64], &mut [u64]) -> u64,
    ) {
        let at = self.counts.len();
        self.counts.resize(at + log2_len + fine_len, 0);
        let (log2, fine) = self.counts[at..].split_at_mut(log2_len);
        let count = fill(log2, fine);
        self.heads.push(Head {
            id,
            count,
            min_ns,
            max_ns,
            at,
            // A length past u32 cannot come: the kernel's and the codec's are bounded.
            log2_len: u32::try_from(log2_len).unwrap_or(u32::MAX),
            fine_len: u32::try_from(fine_len).unwrap_or(u32::MAX),
        });
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
            s.push(id, h.as_ref());
        }
        s
    }
}

impl Serialize for FoldedSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
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

    /// What goes in comes out, in order, each histogram's counters its own; sorting moves
    /// the histograms whole; equality ignores the arena's layout; JSON is the list of pairs
    /// the vectors gave.
    #[test]
    fn holds_sorts_compares_and_serializes_as_the_pairs() {
        let pairs = vec![
            (9, hist(3, &[1, 2], &[0, 0, 3])),
            (2, hist(0, &[], &[])),
            (5, hist(7, &[7], &[4, 3])),
        ];
        let mut s: FoldedSet = pairs.clone().into_iter().collect();
        assert_eq!(s.len(), 3);
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
        w.push_with(4, 1, 2, 2, 3, |l, f| {
            assert_eq!((l.len(), f.len()), (2, 3));
            assert!(l.iter().chain(f.iter()).all(|c| *c == 0), "zeroed");
            l[1] = 6;
            f[2] = 6;
            6
        });
        assert_eq!(w.iter().next().unwrap().1.to_hist(), {
            let mut h = hist(6, &[0, 6], &[0, 0, 6]);
            (h.min_ns, h.max_ns) = (1, 2);
            h
        });
    }
}
