//! `CpuSet`: a fixed-size bitmap of CPU numbers, the one representation of spans, groups and
//! affinity masks everywhere in the crate. Fixed size keeps it `Copy` and allocation-free on the
//! analyzer's hot path; `MAX_CPUS` bounds what the tool supports.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Largest number of CPUs the tool represents.
pub const MAX_CPUS: usize = 1024;
const WORDS: usize = MAX_CPUS / 64;

/// The entry of `cpu` in a per-CPU table grown on demand; `None` for CPU numbers past
/// [`MAX_CPUS`] (a corrupt event must not make a table huge).
#[inline]
pub fn per_cpu_mut<T: Clone + Default>(v: &mut Vec<T>, cpu: u32) -> Option<&mut T> {
    let c = cpu as usize;
    if c >= MAX_CPUS {
        return None;
    }
    if v.len() <= c {
        v.resize(c + 1, T::default());
    }
    Some(&mut v[c])
}

/// A set of CPU numbers below [`MAX_CPUS`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpuSet {
    bits: [u64; WORDS],
}

impl Default for CpuSet {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuSet {
    /// The empty set.
    pub const fn new() -> Self {
        CpuSet { bits: [0; WORDS] }
    }

    /// Every CPU below `n`.
    pub fn first_n(n: usize) -> Self {
        let mut s = Self::new();
        for c in 0..n.min(MAX_CPUS) {
            s.insert(c);
        }
        s
    }

    /// Builds a set from mask words as the kernel lays out a `cpumask` (word 0 holds CPUs 0-63).
    pub fn from_words(words: &[u64]) -> Self {
        let mut s = Self::new();
        for (i, w) in words.iter().take(WORDS).enumerate() {
            s.bits[i] = *w;
        }
        s
    }

    /// The mask words, lowest CPUs first, trailing zero words dropped.
    pub fn words(&self) -> Vec<u64> {
        let last = self.bits.iter().rposition(|w| *w != 0).map_or(0, |i| i + 1);
        self.bits[..last].to_vec()
    }

    /// Adds `cpu`; CPUs at or past [`MAX_CPUS`] are ignored.
    pub fn insert(&mut self, cpu: usize) {
        if cpu < MAX_CPUS {
            self.bits[cpu / 64] |= 1 << (cpu % 64);
        }
    }

    /// Removes `cpu`.
    pub fn remove(&mut self, cpu: usize) {
        if cpu < MAX_CPUS {
            self.bits[cpu / 64] &= !(1 << (cpu % 64));
        }
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < MAX_CPUS && self.bits[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|w| *w == 0)
    }

    /// Set intersection.
    pub fn and(&self, other: &CpuSet) -> CpuSet {
        let mut r = *self;
        for (a, b) in r.bits.iter_mut().zip(other.bits.iter()) {
            *a &= *b;
        }
        r
    }

    /// Set union.
    pub fn or(&self, other: &CpuSet) -> CpuSet {
        let mut r = *self;
        for (a, b) in r.bits.iter_mut().zip(other.bits.iter()) {
            *a |= *b;
        }
        r
    }

    /// Whether the two sets share a CPU.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.bits
            .iter()
            .zip(other.bits.iter())
            .any(|(a, b)| a & b != 0)
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.bits
            .iter()
            .zip(other.bits.iter())
            .all(|(a, b)| a & !b == 0)
    }

    /// The lowest CPU in the set.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The lowest CPU in both sets (the first of [`CpuSet::and`], without building it).
    pub fn first_common(&self, other: &CpuSet) -> Option<usize> {
        self.bits
            .iter()
            .zip(other.bits.iter())
            .enumerate()
            .find(|(_, (a, b))| *a & *b != 0)
            .map(|(i, (a, b))| i * 64 + (a & b).trailing_zeros() as usize)
    }

    /// CPUs in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            words: &self.bits,
            base: 0,
            word: 0,
        }
    }

    /// Parses the kernel's list format: `0-3,8,10-11` (empty string or whitespace = empty set).
    pub fn parse_list(s: &str) -> Result<CpuSet, String> {
        let mut set = CpuSet::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(set);
        }
        for part in s.split(',') {
            let part = part.trim();
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a, b),
                None => (part, part),
            };
            let a: usize = a
                .trim()
                .parse()
                .map_err(|_| format!("bad CPU list item '{part}'"))?;
            let b: usize = b
                .trim()
                .parse()
                .map_err(|_| format!("bad CPU list item '{part}'"))?;
            if a > b || b >= MAX_CPUS {
                return Err(format!(
                    "bad CPU range '{part}' (CPUs must be below {MAX_CPUS})"
                ));
            }
            for c in a..=b {
                set.insert(c);
            }
        }
        Ok(set)
    }

    /// Parses the kernel's hex mask format: `ff` or `00000000,000000ff` (comma-separated 32-bit
    /// words, most significant first).
    pub fn parse_mask(s: &str) -> Result<CpuSet, String> {
        let mut set = CpuSet::new();
        let words: Vec<&str> = s.trim().split(',').collect();
        for (i, w) in words.iter().rev().enumerate() {
            let v = u32::from_str_radix(w.trim(), 16).map_err(|_| format!("bad CPU mask '{s}'"))?;
            for b in 0..32 {
                if v & (1 << b) != 0 {
                    set.insert(i * 32 + b);
                }
            }
        }
        Ok(set)
    }
}

impl fmt::Display for CpuSet {
    /// The kernel's list format, `0-3,8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut it = self.iter().peekable();
        while let Some(a) = it.next() {
            let mut b = a;
            while it.peek() == Some(&(b + 1)) {
                b = it.next().unwrap_or(b);
            }
            if !first {
                write!(f, ",")?;
            }
            first = false;
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CpuSet::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

/// The CPUs of a [`CpuSet`] in ascending order ([`CpuSet::iter`]): one word at a time, its set
/// bits lowest first.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    /// The words not started yet.
    words: &'a [u64],
    /// The CPU number of bit 0 of `word`.
    base: usize,
    /// What is left of the current word.
    word: u64,
}

impl Iterator for Iter<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.word == 0 {
            let (&w, rest) = self.words.split_first()?;
            // The first word starts at 0; each later one 64 CPUs on.
            self.base = MAX_CPUS - 64 * (rest.len() + 1);
            self.word = w;
            self.words = rest;
        }
        let b = self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        Some(self.base + b)
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = CpuSet::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_round_trip() {
        let s = CpuSet::parse_list("0-3,8,10-11").unwrap();
        assert_eq!(s.len(), 7);
        assert_eq!(s.to_string(), "0-3,8,10-11");
        assert!(CpuSet::parse_list("3-1").is_err());
        assert!(CpuSet::parse_list("x").is_err());
        assert!(CpuSet::parse_list("").unwrap().is_empty());
    }

    #[test]
    fn mask_parse() {
        let s = CpuSet::parse_mask("00000001,0000000f").unwrap();
        assert_eq!(s.to_string(), "0-3,32");
    }

    #[test]
    fn set_ops() {
        let a = CpuSet::parse_list("0-3").unwrap();
        let b = CpuSet::parse_list("2-5").unwrap();
        assert_eq!(a.and(&b).to_string(), "2-3");
        assert_eq!(a.or(&b).to_string(), "0-5");
        assert!(a.intersects(&b));
        assert!(CpuSet::parse_list("1-2").unwrap().is_subset(&a));
        assert_eq!(CpuSet::from_words(&a.words()), a);
    }

    /// `iter` and `first_common` visit exactly the CPUs a bit-by-bit scan finds, in order,
    /// for sets with CPUs at word edges, in the last word, spread out, and none.
    #[test]
    fn iteration_matches_a_scan() {
        let lists = [
            "",
            "0",
            "63",
            "64",
            "0,63-64,127-128",
            "1023",
            "5,200-260,700,1000-1023",
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut sets: Vec<CpuSet> = lists
            .iter()
            .map(|l| CpuSet::parse_list(l).unwrap())
            .collect();
        for _ in 0..20 {
            let mut s = CpuSet::new();
            for _ in 0..40 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.insert((x % MAX_CPUS as u64) as usize);
            }
            sets.push(s);
        }
        for a in &sets {
            let scan: Vec<usize> = (0..MAX_CPUS).filter(|&c| a.contains(c)).collect();
            assert_eq!(a.iter().collect::<Vec<_>>(), scan);
            for b in &sets {
                assert_eq!(a.first_common(b), a.and(b).iter().next());
            }
        }
    }
}
