//! Migration counting: by reason, by the topology level crossed, the reason x level matrix,
//! how many reasons were guessed from context, and which unclassified stacks keep showing up.
//!
//! Owns the stack descriptions (`Stack` events) and the per-interval counters. A description
//! keeps only a stack's innermost frames, and stacks that differ deeper down (nearly all of
//! them: a new id a few times a second under load) share one copy of those frames, so what
//! grows with the run is a map entry per id (bounded by the BPF stack map), not its frames.

use super::snapshot::{MigrationStats, UnknownStack};
use crate::event::Reason;
use crate::topology::Topology;
use std::collections::HashMap;
use std::sync::Arc;

/// Frames kept per stack: enough to recognize the caller of `set_task_cpu`.
const TOP_FRAMES: usize = 8;
/// Unknown stacks reported per interval.
const TOP_STACKS: usize = 20;

pub(super) const NR_REASONS: usize = Reason::ALL.len();

/// Position of `r` in [`Reason::ALL`].
pub(super) fn reason_index(r: Reason) -> usize {
    Reason::ALL
        .iter()
        .position(|x| *x == r)
        .unwrap_or(NR_REASONS - 1)
}

/// Counters of one interval plus the stack descriptions.
#[derive(Clone, Debug)]
pub struct MigrationCounter {
    /// `matrix[level][reason]`; the last row is the "unknown" level.
    matrix: Vec<[u64; NR_REASONS]>,
    context: u64,
    unseen: u64,
    unknown_stacks: HashMap<u32, u64>,
    /// Stack id -> its innermost frames, an index in `frames`.
    stacks: HashMap<u32, u32>,
    /// The distinct lists of innermost frames, each once.
    frames: Vec<Arc<[String]>>,
    frames_index: HashMap<Arc<[String]>, u32>,
}

impl MigrationCounter {
    /// Counters for a topology with `nr_levels` levels.
    pub fn new(nr_levels: usize) -> MigrationCounter {
        MigrationCounter {
            matrix: vec![[0; NR_REASONS]; nr_levels + 1],
            context: 0,
            unseen: 0,
            unknown_stacks: HashMap::new(),
            stacks: HashMap::new(),
            frames: Vec::new(),
            frames_index: HashMap::new(),
        }
    }

    /// Remembers the frames of a stack id (the source sends each once, before its first use).
    pub fn describe_stack(&mut self, id: u32, frames: &[String]) {
        let top = &frames[..frames.len().min(TOP_FRAMES)];
        let at = match self.frames_index.get(top) {
            Some(&at) => at,
            None => {
                let at = self.frames.len() as u32;
                let shared: Arc<[String]> = top.into();
                self.frames.push(Arc::clone(&shared));
                self.frames_index.insert(shared, at);
                at
            }
        };
        self.stacks.insert(id, at);
    }

    /// Counts one migration. `level`: the level crossed (`None` = unknown); `by_context`: the
    /// reason was inferred without a stack; `stack_id`: the stack, counted only for
    /// [`Reason::Unknown`] (classified stacks are not news).
    pub fn record(
        &mut self,
        reason: Reason,
        level: Option<usize>,
        by_context: bool,
        stack_id: Option<u32>,
    ) {
        let unknown_row = self.matrix.len() - 1;
        let row = level.map_or(unknown_row, |l| l.min(unknown_row));
        self.matrix[row][reason_index(reason)] += 1;
        if by_context {
            self.context += 1;
        }
        if let (Reason::Unknown, Some(id)) = (reason, stack_id) {
            *self.unknown_stacks.entry(id).or_insert(0) += 1;
        }
    }

    /// Counts one migration no record said (see [`MigrationStats::unseen`]).
    pub fn record_unseen(&mut self) {
        self.unseen += 1;
    }

    /// The interval's figures, then zeroes the counters.
    pub fn take(&mut self, topo: &Topology) -> MigrationStats {
        let unknown_row = self.matrix.len() - 1;
        let level_key = |row: usize| -> String {
            if row == unknown_row {
                "unknown".to_string()
            } else {
                topo.level_key(Some(row)).to_string()
            }
        };
        let mut s = MigrationStats::default();
        for r in Reason::ALL {
            s.by_reason.insert(r.name().to_string(), 0);
        }
        for row in 0..unknown_row {
            s.by_level.insert(level_key(row), 0);
        }
        for (row, counts) in self.matrix.iter().enumerate() {
            for (ri, &n) in counts.iter().enumerate() {
                if n == 0 {
                    continue;
                }
                let reason = Reason::ALL[ri].name().to_string();
                let level = level_key(row);
                s.total += n;
                *s.by_reason.entry(reason.clone()).or_insert(0) += n;
                *s.by_level.entry(level.clone()).or_insert(0) += n;
                *s.matrix
                    .entry(reason)
                    .or_default()
                    .entry(level)
                    .or_insert(0) += n;
            }
        }
        s.context_classified = self.context;
        s.unseen = std::mem::take(&mut self.unseen);
        let mut stacks: Vec<(u32, u64)> = self.unknown_stacks.drain().collect();
        // Most frequent first; ids break ties so the output does not depend on hashing.
        stacks.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        s.unknown_stacks = stacks
            .into_iter()
            .take(TOP_STACKS)
            .map(|(stack_id, count)| UnknownStack {
                stack_id,
                count,
                frames: self
                    .stacks
                    .get(&stack_id)
                    .map(|&at| self.frames[at as usize].to_vec())
                    .unwrap_or_default(),
            })
            .collect();
        for row in &mut self.matrix {
            *row = [0; NR_REASONS];
        }
        self.context = 0;
        s
    }
}

/// Reason names in report order, for renderers.
pub fn reason_names() -> impl Iterator<Item = &'static str> {
    Reason::ALL.iter().map(|r| r.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_an_index() {
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(reason_index(*r), i);
        }
        assert_eq!(reason_names().count(), NR_REASONS);
    }

    #[test]
    fn unknown_level_row_and_unknown_stacks() {
        let topo = Topology::synthetic_flat(4);
        let mut m = MigrationCounter::new(topo.levels.len());
        m.describe_stack(7, &["a".to_string(), "b".to_string()]);
        m.record(Reason::Unknown, None, false, Some(7));
        m.record(Reason::Unknown, Some(0), true, Some(7));
        m.record(Reason::Unknown, Some(0), false, Some(9));
        m.record(Reason::Wakeup, Some(0), false, Some(3));
        let s = m.take(&topo);
        assert_eq!(s.total, 4);
        assert_eq!(s.by_level["unknown"], 1);
        assert_eq!(s.by_level["llc"], 3);
        assert_eq!(s.matrix["unknown"]["unknown"], 1);
        assert_eq!(s.context_classified, 1);
        assert_eq!(s.unknown_stacks.len(), 2);
        assert_eq!(s.unknown_stacks[0].stack_id, 7);
        assert_eq!(s.unknown_stacks[0].count, 2);
        assert_eq!(s.unknown_stacks[0].frames, vec!["a", "b"]);
        assert!(s.unknown_stacks[1].frames.is_empty());
        let empty = m.take(&topo);
        assert_eq!(empty.total, 0);
        assert_eq!(empty.by_reason.len(), NR_REASONS);
        assert!(empty.matrix.is_empty());
    }

    /// Stacks whose innermost frames are the same (they differ deeper down) keep one copy of
    /// them; each id still names its own, and a longer stack keeps only its innermost ones.
    #[test]
    fn stacks_that_differ_deeper_down_share_their_frames() {
        let topo = Topology::synthetic_flat(2);
        let mut m = MigrationCounter::new(topo.levels.len());
        let deep = |tail: &str| -> Vec<String> {
            (0..TOP_FRAMES)
                .map(|i| format!("f{i}"))
                .chain([tail.to_string()])
                .collect()
        };
        for id in 0..100 {
            m.describe_stack(id, &deep(&format!("caller{id}")));
        }
        m.describe_stack(500, &["x".to_string()]);
        assert_eq!(m.stacks.len(), 101);
        assert_eq!(m.frames.len(), 2, "two distinct lists of innermost frames");
        m.record(Reason::Unknown, Some(0), false, Some(42));
        m.record(Reason::Unknown, Some(0), false, Some(500));
        m.record(Reason::Unknown, Some(0), false, Some(500));
        let s = m.take(&topo);
        assert_eq!(s.unknown_stacks[0].stack_id, 500);
        assert_eq!(s.unknown_stacks[0].frames, vec!["x"]);
        assert_eq!(s.unknown_stacks[1].stack_id, 42);
        assert_eq!(s.unknown_stacks[1].frames, deep("")[..TOP_FRAMES].to_vec());
    }
}
