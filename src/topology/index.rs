//! `IndexedTopology`: a [`Topology`] with per-CPU tables for the queries the analyzer and the
//! model ask for every migration and wakeup: which domain a CPU owns at a level, the level a
//! move crossed, the NUMA node of a CPU. [`Topology`] answers them by searching the level's
//! domains (128 of them at the SMT level of a 256-CPU machine); the tables answer by index.
//!
//! It dereferences to the [`Topology`] it was built from, and its own methods, named as
//! `Topology`'s, take precedence over them: callers holding one get the same answers faster.
//!
//! Invariants: `owner[level][cpu]` is the index of the first domain of that level whose `cpus`
//! hold `cpu` ([`Level::domain_index`]), `node[cpu]` the first NUMA node holding it, both
//! [`NOT_HELD`] where there is none; CPUs past the tables have none. `partition[level]` holds when
//! every domain of the level spans exactly the CPUs that own it and no CPU owns two: a CPU is
//! then in another's domain exactly when both own the same one.

use super::{Domain, Level, Topology};
use crate::cpuset::CpuSet;
use std::ops::Deref;

/// No domain or node (or set of [`first_holders`]) holds the CPU.
pub const NOT_HELD: u32 = u32::MAX;

/// A topology with its per-CPU lookup tables; see the module documentation.
#[derive(Clone, Debug)]
pub struct IndexedTopology {
    topo: Topology,
    owner: Vec<Vec<u32>>,
    node: Vec<u32>,
    partition: Vec<bool>,
}

impl Deref for IndexedTopology {
    type Target = Topology;

    fn deref(&self) -> &Topology {
        &self.topo
    }
}

/// For each CPU up to the last one held, the index of the first of `sets` that holds it,
/// [`NOT_HELD`] where none does.
pub fn first_holders<'a>(sets: impl IntoIterator<Item = &'a CpuSet>) -> Vec<u32> {
    let mut table = Vec::new();
    for (i, set) in sets.into_iter().enumerate() {
        for c in set.iter() {
            if table.len() <= c {
                table.resize(c + 1, NOT_HELD);
            }
            if table[c] == NOT_HELD {
                table[c] = i as u32;
            }
        }
    }
    table
}

impl IndexedTopology {
    /// Builds the tables of `topo`.
    pub fn new(topo: Topology) -> IndexedTopology {
        let owner = topo
            .levels
            .iter()
            .map(|l: &Level| first_holders(l.domains.iter().map(|d| &d.cpus)))
            .collect();
        let node = first_holders(&topo.numa_nodes);
        let partition = topo
            .levels
            .iter()
            .map(|l| {
                let mut seen = CpuSet::new();
                l.domains.iter().all(|d| {
                    let fresh = d.span == d.cpus && !seen.intersects(&d.span);
                    seen = seen.or(&d.span);
                    fresh
                })
            })
            .collect();
        IndexedTopology {
            topo,
            owner,
            node,
            partition,
        }
    }

    /// [`Topology::domain_index`] by table.
    pub fn domain_index(&self, level: usize, cpu: usize) -> Option<usize> {
        let i = *self.owner.get(level)?.get(cpu)?;
        (i != NOT_HELD).then_some(i as usize)
    }

    /// Whether the domains of `level` partition its CPUs, each spanning exactly the CPUs that
    /// own it: a CPU is then in `domain_of(level, c)` exactly when it owns the same domain.
    pub fn partitions(&self, level: usize) -> bool {
        self.partition.get(level).copied().unwrap_or(false)
    }

    /// [`Topology::domain_of`] by table.
    pub fn domain_of(&self, level: usize, cpu: usize) -> Option<&Domain> {
        let i = self.domain_index(level, cpu)?;
        self.topo.levels[level].domains.get(i)
    }

    /// [`Topology::span`] by table.
    pub fn span(&self, level: usize, cpu: usize) -> Option<CpuSet> {
        self.domain_of(level, cpu).map(|d| d.span)
    }

    /// [`Topology::crossed_level`] by table.
    pub fn crossed_level(&self, src: usize, dst: usize) -> Option<usize> {
        if src == dst || !self.topo.online.contains(src) || !self.topo.online.contains(dst) {
            return None;
        }
        (0..self.owner.len()).find(|&l| match self.domain_index(l, dst) {
            None => false,
            // Both own one domain, or not: no need to read its span.
            Some(i) if self.partition[l] => self.domain_index(l, src) == Some(i),
            Some(i) => self.topo.levels[l].domains[i].span.contains(src),
        })
    }

    /// [`Topology::node_of`] by table.
    pub fn node_of(&self, cpu: usize) -> Option<usize> {
        let n = *self.node.get(cpu)?;
        (n != NOT_HELD).then_some(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::LevelKind;

    /// Every query agrees with the topology's own search, on a machine with overlapping NUMA
    /// domains and on a synthetic one, for every CPU pair and a few CPUs past the end.
    #[test]
    fn tables_answer_as_the_search_does() {
        let synthetic = Topology::synthetic(
            &[
                (LevelKind::Smt, "SMT", 2),
                (LevelKind::Llc, "MC", 8),
                (LevelKind::Numa, "NUMA", 32),
            ],
            32,
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
        let mut topos = vec![synthetic];
        for entry in std::fs::read_dir(root).unwrap() {
            topos.push(Topology::from_root(&entry.unwrap().path()).unwrap());
        }
        for topo in topos {
            let ix = IndexedTopology::new(topo.clone());
            let n = topo.nr_cpus + 3;
            for a in 0..n {
                assert_eq!(ix.node_of(a), topo.node_of(a));
                for l in 0..topo.levels.len() + 1 {
                    assert_eq!(ix.domain_index(l, a), topo.domain_index(l, a));
                    assert_eq!(ix.span(l, a), topo.span(l, a));
                }
                for b in 0..n {
                    assert_eq!(ix.crossed_level(a, b), topo.crossed_level(a, b));
                }
            }
        }
    }
}
