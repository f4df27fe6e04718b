//! Wakeups on their way to a CPU: between `sched_waking` (in the waker) and `sched_wakeup`
//! (where the task is queued). A wakeup from another CPU is queued on the target's wake list
//! (ttwu_queue_wakelist: always across LLCs, and within one when the target runs nothing),
//! which sets the target's rq->ttwu_pending until the target has enqueued the task; while it
//! is set, idle_cpu() says the CPU is not idle (6.1 and 6.12 alike), so update_sg_lb_stats
//! does not count it among the group's idle CPUs. A wakeup from the target CPU itself is
//! activated in place and never sets the flag.
//!
//! Approximation: the target is marked from `sched_waking` on (the task's previous CPU, or
//! where `sched_migrate_task` moves it), a little before ttwu_queue sets the flag; the flag
//! is cleared after the whole list is enqueued, when `nr_running` already says busy.
//!
//! Memory: one entry per task between its two tracepoints; a wakeup whose `sched_wakeup` was
//! lost ends at the task's next switch-in or exit.

use super::{Model, TaskExt};
use crate::event::Pid;
use crate::idhash::IdMap;

/// Each waking task: the waker's CPU and the target so far (the crate's fast pid hash: a
/// wakeup storm looks it up three times per wakeup).
pub(super) type InFlight = IdMap<Pid, (u32, u32)>;

impl<X: TaskExt> Model<X> {
    /// A `Waking` of `pid` (last on `prev_cpu`) by a waker on `cpu`.
    #[inline]
    pub fn waking(&mut self, cpu: u32, pid: Pid, prev_cpu: u32) {
        if pid == 0 {
            return;
        }
        // One lookup: a wakeup still on its way (its sched_wakeup lost) is replaced.
        if let Some((waker, target)) = self.wakes.insert(pid, (cpu, prev_cpu)) {
            self.mark_pending(waker, target, false);
        }
        self.mark_pending(cpu, prev_cpu, true);
    }

    /// `pid` moved to `dst`: a waking task's placement (select_task_rq) retargets its wakeup.
    #[inline]
    pub(super) fn wake_moved(&mut self, pid: Pid, dst: u32) {
        if let Some(w) = self.wakes.get_mut(&pid) {
            let (waker, old) = *w;
            w.1 = dst;
            self.mark_pending(waker, old, false);
            self.mark_pending(waker, dst, true);
        }
    }

    /// `pid` was queued (`sched_wakeup`), runs, or exited: its wakeup is no longer on its way.
    #[inline]
    pub(super) fn wake_done(&mut self, pid: Pid) {
        if self.wakes.is_empty() {
            return;
        }
        if let Some((waker, target)) = self.wakes.remove(&pid) {
            self.mark_pending(waker, target, false);
        }
    }

    /// Counts (or uncounts) a wakeup from `waker` queued for `target`: only a remote one
    /// goes through the wake list.
    fn mark_pending(&mut self, waker: u32, target: u32, add: bool) {
        if waker == target {
            return;
        }
        let now = self.now;
        if let Some(c) = self.cpu_mut(target) {
            c.tasks_ns = now;
            c.wakes_pending = if add {
                c.wakes_pending + 1
            } else {
                c.wakes_pending.saturating_sub(1)
            };
        }
    }
}
