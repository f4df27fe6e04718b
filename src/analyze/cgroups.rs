//! The cgroups the analyzer has seen (`Cgroup` events): each cgroup id gets an index, which
//! a task's entry holds (a small number instead of a path, and no lookup of a map of its own
//! per event), with its path as the source named it and how many tasks were announced in it;
//! and the migrations of the open interval counted by cgroup and reason.
//!
//! Invariants: memory is bounded by the distinct cgroups seen in the run (as the model's own
//! cgroup names are); the per-interval counts by the cgroups whose tasks moved.

use super::migrations::{reason_index, NR_REASONS};
use super::snapshot::CgroupMigrations;
use crate::event::Reason;
use crate::idhash::IdMap;
use std::collections::BTreeMap;

/// Cgroups listed per interval (latency and migrations each).
pub const TOP_CGROUPS: usize = 20;

/// One cgroup seen.
#[derive(Clone, Debug, Default)]
struct Entry {
    /// Its path relative to the cgroup2 mount, once a `Cgroup` event named it.
    path: Option<String>,
    /// Tasks announced in it.
    announced: u64,
}

/// The cgroup table and the interval's migrations by cgroup.
#[derive(Clone, Debug, Default)]
pub(super) struct Cgroups {
    by_id: IdMap<u64, u32>,
    entries: Vec<Entry>,
    /// Migrations of the open interval by cgroup index, by reason.
    moves: IdMap<u32, [u64; NR_REASONS]>,
}

impl Cgroups {
    /// A task was announced in cgroup `id`, named `path` when the source could: its index.
    pub(super) fn announce(&mut self, id: u64, path: Option<&str>) -> u32 {
        let entries = &mut self.entries;
        let i = *self.by_id.entry(id).or_insert_with(|| {
            entries.push(Entry::default());
            (entries.len() - 1) as u32
        });
        let e = &mut self.entries[i as usize];
        e.announced += 1;
        if let Some(p) = path {
            if e.path.as_deref() != Some(p) {
                e.path = Some(p.to_string());
            }
        }
        i
    }

    /// The path of the cgroup at index `i`, if named.
    pub(super) fn path(&self, i: u32) -> Option<&str> {
        self.entries.get(i as usize)?.path.as_deref()
    }

    /// One counted migration of a task in the cgroup at index `i`.
    pub(super) fn moved(&mut self, i: u32, reason: Reason) {
        self.moves.entry(i).or_insert([0; NR_REASONS])[reason_index(reason)] += 1;
    }

    /// The named cgroups with the most migrations of the interval (most first, then by
    /// path; cgroups sharing a path, a cgroup removed and made again, are one), then starts
    /// afresh.
    pub(super) fn take_moves(&mut self) -> Vec<CgroupMigrations> {
        let mut by_path: BTreeMap<&str, [u64; NR_REASONS]> = BTreeMap::new();
        for (i, counts) in self.moves.drain() {
            let Some(p) = self.entries.get(i as usize).and_then(|e| e.path.as_deref()) else {
                continue;
            };
            let sum = by_path.entry(p).or_insert([0; NR_REASONS]);
            for (s, n) in sum.iter_mut().zip(counts) {
                *s += n;
            }
        }
        let mut v: Vec<CgroupMigrations> = by_path
            .into_iter()
            .map(|(path, counts)| CgroupMigrations {
                path: path.to_string(),
                total: counts.iter().sum(),
                by_reason: Reason::ALL
                    .iter()
                    .zip(counts)
                    .filter(|(_, n)| *n > 0)
                    .map(|(r, n)| (r.name().to_string(), n))
                    .collect(),
            })
            .collect();
        // Stable: equal totals stay in path order.
        v.sort_by_key(|c| std::cmp::Reverse(c.total));
        v.truncate(TOP_CGROUPS);
        v
    }

    /// Every named cgroup with the tasks announced in it, most first (then by path).
    pub(super) fn seen(&self) -> Vec<(String, u64)> {
        let mut by_path: BTreeMap<&str, u64> = BTreeMap::new();
        for e in &self.entries {
            if let Some(p) = &e.path {
                *by_path.entry(p).or_insert(0) += e.announced;
            }
        }
        let mut v: Vec<(String, u64)> = by_path
            .into_iter()
            .map(|(p, n)| (p.to_string(), n))
            .collect();
        v.sort_by_key(|c| std::cmp::Reverse(c.1));
        v
    }
}
