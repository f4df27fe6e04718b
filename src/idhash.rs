//! A hasher for maps keyed by small integers (thread ids, stack ids): one multiply instead of
//! SipHash. The keys come from the kernel, not from an adversary who could aim collisions at
//! the analyzer, and the replay speed depends on these lookups.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Multiplicative (Fibonacci) hashing of integer keys.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A `HashMap` with integer keys hashed by [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A `HashSet` of integers hashed by [`IdHasher`].
pub type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keys_spread_over_buckets() {
        let mut seen = std::collections::HashSet::new();
        for pid in 0u32..4096 {
            let mut h = IdHasher::default();
            h.write_u32(pid);
            // hashbrown takes the top 7 bits as tag and the low bits as bucket index.
            seen.insert(h.finish() >> 52);
        }
        assert!(seen.len() > 3000, "{}", seen.len());
        let mut m: IdMap<u32, u32> = IdMap::default();
        for pid in 0..1000 {
            m.insert(pid, pid * 2);
        }
        assert_eq!(m.get(&999), Some(&1998));
        assert_eq!(m.len(), 1000);
    }
}
