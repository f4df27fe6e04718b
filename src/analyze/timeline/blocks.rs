//! [`Blocks`]: a double-ended queue of plain values stored in fixed-size blocks, for the
//! timeline's per-CPU changes. Pushed at the back, dropped from the front, read by index.
//!
//! Why not a `VecDeque`: a ring buffer's head goes round all the room it has, so room beyond
//! what the queue holds is touched page by page in time (a queue reserved at its bound crept
//! up for minutes), and growing it copies everything held and faults in a new buffer (a lane
//! doubling to half a million changes did that several times in a run's first minute). Here
//! memory follows what is held, to within a block and one spare: a block emptied at the front
//! is kept to take the next pushes, so a queue of steady length allocates nothing, and none
//! is ever copied.
//!
//! Invariants: `blocks` holds `len` values starting at `head` in `blocks[0]`
//! (`head < BLOCK`); every block but the last is full from `head` (the first) or from 0; no
//! block is empty.

use std::collections::VecDeque;

/// Values per block.
pub const BLOCK: usize = 4096;

/// See the module header.
#[derive(Clone, Debug)]
pub struct Blocks<T: Copy> {
    blocks: VecDeque<Box<[T]>>,
    head: usize,
    len: usize,
    spare: Option<Box<[T]>>,
}

impl<T: Copy + Default> Default for Blocks<T> {
    fn default() -> Self {
        Blocks {
            blocks: VecDeque::new(),
            head: 0,
            len: 0,
            spare: None,
        }
    }
}

impl<T: Copy + Default> Blocks<T> {
    /// Values held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Values the blocks held and the spare have room for.
    pub fn capacity(&self) -> usize {
        (self.blocks.len() + usize::from(self.spare.is_some())) * BLOCK
    }

    /// Value `i` from the front.
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        let at = self.head + i;
        Some(&self.blocks[at / BLOCK][at % BLOCK])
    }

    /// The first value.
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    /// The last value.
    pub fn back(&self) -> Option<&T> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    /// The last value, to change it.
    pub fn back_mut(&mut self) -> Option<&mut T> {
        let at = self.head + self.len.checked_sub(1)?;
        Some(&mut self.blocks[at / BLOCK][at % BLOCK])
    }

    /// Adds `v` at the back.
    pub fn push_back(&mut self, v: T) {
        let at = self.head + self.len;
        if at / BLOCK == self.blocks.len() {
            let block = self
                .spare
                .take()
                .unwrap_or_else(|| vec![T::default(); BLOCK].into_boxed_slice());
            self.blocks.push_back(block);
        }
        self.blocks[at / BLOCK][at % BLOCK] = v;
        self.len += 1;
    }

    /// Removes the first value.
    pub fn pop_front(&mut self) -> Option<T> {
        let v = *self.front()?;
        self.head += 1;
        self.len -= 1;
        if self.head == BLOCK || self.is_empty() {
            // The first block is spent: kept for the next push unless one is already.
            let block = self.blocks.pop_front();
            if self.spare.is_none() {
                self.spare = block;
            }
            self.head = 0;
        }
        Some(v)
    }

    /// The number of values from the front for which `pred` holds (they come first).
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid).is_some_and(&mut pred) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for Blocks<T> {
    /// The same values in the same order, however they sit in blocks.
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && (0..self.len).all(|i| self.get(i) == other.get(i))
    }
}

impl<T: Copy + Default> std::ops::Index<usize> for Blocks<T> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        self.get(i).expect("index within the queue")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a `VecDeque` doing the same, across block edges, with the front catching up
    /// with the back; memory stays within a block of what is held, plus the spare.
    #[test]
    fn behaves_as_a_deque_and_holds_what_it_holds() {
        let mut b: Blocks<u64> = Blocks::default();
        let mut d: VecDeque<u64> = VecDeque::new();
        let mut seed = 7u64;
        let mut next = 0u64;
        for _ in 0..40_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            if (seed >> 33) % 3 != 0 || d.is_empty() {
                b.push_back(next);
                d.push_back(next);
                next += 1;
            } else {
                assert_eq!(b.pop_front(), d.pop_front());
            }
            assert_eq!(b.len(), d.len());
            assert_eq!(b.front(), d.front());
            assert_eq!(b.back(), d.back());
            assert!(b.capacity() <= (d.len().div_ceil(BLOCK) + 2) * BLOCK);
        }
        for i in [0, 1, BLOCK - 1, BLOCK, d.len() / 2, d.len() - 1] {
            assert_eq!(b.get(i), d.get(i), "{i}");
            assert_eq!(b[i], d[i]);
        }
        assert_eq!(b.get(d.len()), None);
        let v = d[d.len() / 3];
        assert_eq!(b.partition_point(|x| *x < v), d.partition_point(|x| *x < v));
        assert!((5..b.len()).map(|i| b[i]).eq(d.iter().skip(5).copied()));
        *b.back_mut().unwrap() = 1;
        assert_eq!(b.back(), Some(&1));
        while b.pop_front().is_some() {}
        assert!(b.is_empty());
        assert_eq!(b.capacity(), BLOCK, "the spare alone");
    }

    /// A queue of steady length reuses its spare block: its room never grows.
    #[test]
    fn a_steady_queue_allocates_nothing_more() {
        let mut b: Blocks<u32> = Blocks::default();
        for i in 0..1_000 {
            b.push_back(i);
        }
        let room = b.capacity();
        for i in 0..100_000 {
            b.push_back(i);
            b.pop_front();
            assert!(b.capacity() <= room + BLOCK, "{i}");
        }
        assert_eq!(b.len(), 1_000);
    }
}
