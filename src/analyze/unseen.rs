//! What the events show went unrecorded: a switch on a CPU whose previous task is not the
//! one that CPU last switched to (a switch gap: switches happened that no record says), and
//! a task seen on a CPU other than the one it was last seen on with no migration between (an
//! unseen migration, which the model's task table notices). Both happen where the kernel ran
//! no BPF program at the tracepoint (no recursion miss is counted then) or where records were
//! lost; `perf stat` and tracefs still count those hits.
//!
//! A switch gap is judged against the model's record of the task each CPU last switched to
//! (read before the switch updates it). Folded mode sends switches only at idle transitions,
//! so it counts neither.

use super::Analyzer;
use crate::event::Pid;

impl Analyzer {
    /// A switch on `cpu` from `prev`, before the model takes it: counts a gap when `cpu`
    /// last switched to another task than `prev`.
    #[inline]
    pub(super) fn check_switch(&mut self, cpu: u32, prev: Pid) {
        let last = self.model.cpu(cpu as usize).and_then(|c| c.current);
        if last.is_some_and(|p| p != prev) {
            self.switch_gaps += 1;
        }
    }

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
