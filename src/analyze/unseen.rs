//! What the events show went unrecorded: a switch on a CPU whose previous task is not the
//! one that CPU last switched to (a switch gap: switches happened that no record says), and
//! a task seen on a CPU other than the one it was last seen on with no migration between (an
//! unseen migration, which the model's task table notices). Both happen where the kernel ran
//! no BPF program at the tracepoint (no recursion miss is counted then) or where records were
//! lost; `perf stat` and tracefs still count those hits.
//!
//! Owns the per-CPU last switched-to task and the interval's counts. Folded mode sends
//! switches only at idle transitions, so it counts neither.

use super::Analyzer;
use crate::event::Pid;

/// The interval's counts and what they are judged from.
#[derive(Clone, Debug, Default)]
pub(super) struct Unseen {
    /// The task each CPU last switched to, by CPU.
    current: Vec<Option<Pid>>,
    /// Switch gaps in the open interval.
    pub(super) switch_gaps: u64,
}

impl Unseen {
    /// A switch on `cpu` from `prev` to `next`: counts a gap when `cpu` last switched to
    /// another task than `prev`.
    #[inline]
    pub(super) fn switched(&mut self, cpu: u32, prev: Pid, next: Pid) {
        let i = cpu as usize;
        if i >= self.current.len() {
            if i >= crate::cpuset::MAX_CPUS {
                return;
            }
            self.current.resize(i + 1, None);
        }
        if self.current[i].is_some_and(|p| p != prev) {
            self.switch_gaps += 1;
        }
        self.current[i] = Some(next);
    }

    /// Forgets every CPU's task (folded mode: switches no longer all arrive).
    pub(super) fn forget(&mut self) {
        self.current.clear();
    }
}

impl Analyzer {
    /// Counts the moves the task table noticed (each in `migrations.unseen`, under the same
    /// task and CPU filter as seen migrations).
    #[inline(never)]
    pub(super) fn count_unseen(&mut self) {
        let moves: Vec<_> = self.model.tasks_mut().take_unseen().collect();
        for m in moves {
            if self.config.filter.matches_move(m.src, m.dst) && self.task_matches(m.pid) {
                self.migrations.record_unseen();
            }
        }
    }
}
