//! The RT class's push and pull calls ([`EventKind::RtCall`]) as an oracle for the
//! `rt_push_pull` reason, independent of the stack table: a migration made on a CPU while that
//! CPU was inside `push_rt_task` on the migration's source run queue, `pull_rt_task` on its
//! destination one, or `rto_push_irq_work_func` pushing from its own, is the RT class's.
//!
//! Pure: a function of the event stream (in time order). Memory: the calls not yet over,
//! a few per CPU.

use crate::event::{RtCall, RtFunc};
use std::collections::HashMap;

/// One call in progress: its CPU's run queue it works on, its function and its exit time.
#[derive(Clone, Copy, Debug)]
struct Open {
    func: RtFunc,
    rq_cpu: u32,
    entry_ns: u64,
    exit_ns: u64,
}

/// The RT calls seen, by the CPU that ran them, until their exit has passed.
#[derive(Clone, Debug, Default)]
pub struct RtCalls {
    open: HashMap<u32, Vec<Open>>,
}

impl RtCalls {
    /// A call on `cpu` entered at `ts_ns` (its event's time).
    pub fn push(&mut self, cpu: u32, ts_ns: u64, call: &RtCall) {
        let calls = self.open.entry(cpu).or_default();
        calls.retain(|o| o.exit_ns >= ts_ns);
        calls.push(Open {
            func: call.func,
            rq_cpu: call.rq_cpu,
            entry_ns: ts_ns,
            exit_ns: call.exit_ns(ts_ns),
        });
    }

    /// The function of the call inside which a migration from `src` to `dst`, made on `cpu`
    /// at `ts_ns`, is that call's push or pull; `None` when there is none.
    pub fn inside(&mut self, cpu: u32, ts_ns: u64, src: u32, dst: u32) -> Option<RtFunc> {
        let calls = self.open.get_mut(&cpu)?;
        calls.retain(|o| o.exit_ns >= ts_ns);
        calls
            .iter()
            .rev()
            .find(|o| {
                o.entry_ns <= ts_ns && o.rq_cpu == if o.func.rq_is_source() { src } else { dst }
            })
            .map(|o| o.func)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(func: RtFunc, rq_cpu: u32, len_ns: u32) -> RtCall {
        RtCall {
            func,
            rq_cpu,
            len_ns,
        }
    }

    #[test]
    fn a_push_holds_moves_from_its_run_queue_a_pull_moves_into_its_own() {
        let mut c = RtCalls::default();
        c.push(1, 100, &call(RtFunc::Push, 1, 50));
        c.push(2, 100, &call(RtFunc::Pull, 2, 50));
        // On CPU 1, from its own run queue, within the call.
        assert_eq!(c.inside(1, 120, 1, 3), Some(RtFunc::Push));
        // On CPU 1 but into it: not that push's move.
        assert_eq!(c.inside(1, 121, 3, 1), None);
        // On CPU 2, into its own run queue.
        assert_eq!(c.inside(2, 130, 5, 2), Some(RtFunc::Pull));
        assert_eq!(c.inside(2, 131, 2, 5), None);
        // On a CPU running no call, or after the call's exit.
        assert_eq!(c.inside(3, 120, 1, 3), None);
        assert_eq!(c.inside(1, 151, 1, 3), None);
        // Before the entry (an earlier move reaching the validator late) is not inside.
        c.push(4, 1_000, &call(RtFunc::PushIrqWork, 4, 10));
        assert_eq!(c.inside(4, 999, 4, 0), None);
        assert_eq!(c.inside(4, 1_010, 4, 0), Some(RtFunc::PushIrqWork));
    }

    #[test]
    fn a_push_inside_the_irq_work_and_a_remote_run_queue() {
        let mut c = RtCalls::default();
        // The irq work on CPU 0 calls push_rt_task on CPU 0's run queue.
        c.push(0, 10, &call(RtFunc::PushIrqWork, 0, 100));
        c.push(0, 20, &call(RtFunc::Push, 0, 30));
        assert_eq!(c.inside(0, 25, 0, 6), Some(RtFunc::Push));
        // After the inner push returned, still inside the irq work.
        assert_eq!(c.inside(0, 60, 0, 6), Some(RtFunc::PushIrqWork));
        // A wakeup's push_rt_tasks on CPU 3 for CPU 5's run queue: the move leaves CPU 5.
        c.push(3, 200, &call(RtFunc::Push, 5, 10));
        assert_eq!(c.inside(3, 205, 5, 1), Some(RtFunc::Push));
        assert_eq!(c.inside(3, 206, 3, 1), None);
    }
}
