//! Searches that read a CPU whose vCPU had stopped. A record's time is taken when its probe
//! runs, just after the change it reports; a vCPU the host stops in between (an emulator's
//! vCPU threads waiting their turn, a cloud guest's steal time) reports the change with the
//! time it ran again, so the kernel, searching on another CPU, may have read the changed run
//! queue well before the record says. The sign in a recording: a CPU of the search's span that
//! made records up to [`ACTIVE_NS`] before the search, then none for [`SILENT_NS`] or more,
//! and whose first record after is a change of its own run queue's length. Such a search is
//! set aside as stalled (the model's count of that CPU is unknown by a task), whatever either
//! answer was, as a raced one is; unless the search sent the run queues it read (the
//! balancer hooks' `PeltInfo::at_search`), which validation then judges.
//!
//! In the lab (2s-smt-numa under TCG, two CIs): that sign on 10 of 20 and 5 of 12 SMT
//! disagreements that one task turns over, against 0.5% of the SMT searches where the model
//! and the kernel agreed.
//!
//! Pure: fed the events in time order. Memory: one time per CPU, and the searches waiting for
//! their CPUs' next records (at most [`MAX_WAIT_NS`] of them).

use crate::event::{Event, EventKind};
use std::collections::VecDeque;

/// A CPU with a record this recent before a search was running then.
pub const ACTIVE_NS: u64 = 1_000_000;
/// A CPU with no record for this long after a search had stopped, when its next record is a
/// change of its run queue.
pub const SILENT_NS: u64 = 5_000_000;
/// The longest a search waits for its CPUs' next records; one still silent then is taken as
/// quiet, not stopped (an idle or single-task CPU makes no records for long).
pub const MAX_WAIT_NS: u64 = 1_000_000_000;

#[derive(Clone, Debug)]
struct Held<T> {
    item: T,
    t_ns: u64,
    /// CPUs of the span that were running at the search and have made no record since.
    waiting: Vec<u32>,
    stalled: bool,
}

/// Holds each search until the CPUs it read show whether they had stopped.
#[derive(Clone, Debug)]
pub struct StallWatch<T> {
    /// Per CPU, the time of its last record (0: none yet).
    last: Vec<u64>,
    held: VecDeque<Held<T>>,
}

impl<T> Default for StallWatch<T> {
    fn default() -> Self {
        StallWatch {
            last: Vec::new(),
            held: VecDeque::new(),
        }
    }
}

/// Whether `e` is a record a CPU made itself (not one its source added: clock, losses,
/// /proc/schedstat reads, folded latency).
fn made_by_cpu(e: &Event) -> bool {
    !matches!(
        e.kind,
        EventKind::Clock | EventKind::Lost { .. } | EventKind::Schedstat(_) | EventKind::Fold(_)
    )
}

impl<T> StallWatch<T> {
    /// A search at `t_ns` from `dst` over the CPUs of `span`: handed back at once when none of
    /// them but `dst` was running, else held.
    pub fn hold(
        &mut self,
        item: T,
        t_ns: u64,
        dst: u32,
        span: impl Iterator<Item = u32>,
    ) -> Option<T> {
        let waiting: Vec<u32> = span
            .filter(|&c| c != dst)
            .filter(|&c| {
                let last = self.last.get(c as usize).copied().unwrap_or(0);
                last > 0 && last + ACTIVE_NS >= t_ns
            })
            .collect();
        if waiting.is_empty() {
            return Some(item);
        }
        self.held.push_back(Held {
            item,
            t_ns,
            waiting,
            stalled: false,
        });
        None
    }

    /// Takes the next event in time order; returns the searches it settled, each with whether
    /// a CPU it read had stopped.
    pub fn saw(&mut self, e: &Event) -> Vec<(T, bool)> {
        if !made_by_cpu(e) {
            return self.release(e.ts_ns);
        }
        let cpu = e.cpu;
        let own_rq =
            matches!(e.kind, EventKind::NrRunning { rq_cpu, .. } if u32::from(rq_cpu) == cpu);
        for h in &mut self.held {
            if let Some(i) = h.waiting.iter().position(|&c| c == cpu) {
                h.waiting.swap_remove(i);
                if own_rq && e.ts_ns >= h.t_ns + SILENT_NS {
                    h.stalled = true;
                }
            }
        }
        let c = cpu as usize;
        if self.last.len() <= c {
            self.last.resize(c + 1, 0);
        }
        self.last[c] = self.last[c].max(e.ts_ns);
        self.release(e.ts_ns)
    }

    /// The held searches whose CPUs all made a record since, or that waited their longest,
    /// in the order they were held.
    fn release(&mut self, now: u64) -> Vec<(T, bool)> {
        let mut out = Vec::new();
        let ready = |h: &Held<T>| h.waiting.is_empty() || now > h.t_ns + MAX_WAIT_NS;
        // Asked first: a search is held for microseconds, over many events, and rebuilding
        // the queue at each of them allocated.
        if !self.held.iter().any(ready) {
            return out;
        }
        let mut keep = VecDeque::with_capacity(self.held.len());
        for h in self.held.drain(..) {
            if ready(&h) {
                out.push((h.item, h.stalled));
            } else {
                keep.push_back(h);
            }
        }
        self.held = keep;
        out
    }

    /// Every search still held, as at the end of the run (a CPU that never made another record
    /// is taken as quiet).
    pub fn finish(&mut self) -> Vec<(T, bool)> {
        self.held.drain(..).map(|h| (h.item, h.stalled)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, cpu: u32, kind: EventKind) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            kind,
        }
    }

    fn nr(ts: u64, cpu: u32, rq: u16) -> Event {
        ev(
            ts,
            cpu,
            EventKind::NrRunning {
                rq_cpu: rq,
                nr_running: 1,
                util_est: crate::event::OptU32::NONE,
                cfs_h_nr_running: crate::event::OptU32::NONE,
            },
        )
    }

    fn switch(ts: u64, cpu: u32) -> Event {
        ev(
            ts,
            cpu,
            EventKind::Switch {
                prev_pid: 1,
                prev_state: 0,
                next_pid: 2,
            },
        )
    }

    const MS: u64 = 1_000_000;

    /// A search is held only for the CPUs of its span, other than its own, that made a
    /// record within `ACTIVE_NS` before it.
    #[test]
    fn only_running_cpus_are_waited_for() {
        let mut w = StallWatch::default();
        assert!(w.saw(&switch(MS, 1)).is_empty());
        assert!(w.saw(&switch(10 * MS, 2)).is_empty());
        assert_eq!(
            w.hold("a", 10 * MS + 1, 0, [0, 1, 3].into_iter()),
            Some("a")
        );
        assert_eq!(w.hold("b", 10 * MS + 1, 0, [0, 1, 2].into_iter()), None);
        assert_eq!(w.saw(&switch(10 * MS + 2, 1)), vec![]);
        assert_eq!(w.saw(&switch(10 * MS + 3, 2)), vec![("b", false)]);
    }

    /// Silent for `SILENT_NS` and back with its own run queue's change: stalled. Back with
    /// anything else, back sooner, or a change of another CPU's run queue: not.
    #[test]
    fn a_cpu_back_late_with_its_run_queue_changed_had_stopped() {
        let cases = [
            (nr(8 * MS, 1, 1), true),
            (switch(8 * MS, 1), false),
            (nr(4 * MS, 1, 1), false),
            (nr(8 * MS, 1, 0), false),
        ];
        for (back, stalled) in cases {
            let mut w = StallWatch::default();
            w.saw(&switch(2 * MS, 1));
            assert_eq!(w.hold(7, 2 * MS + 500, 0, [0, 1].into_iter()), None);
            assert_eq!(w.saw(&switch(3 * MS, 0)), vec![], "not CPU 1's record");
            assert_eq!(w.saw(&back), vec![(7, stalled)], "{back:?}");
        }
    }

    /// A CPU that never comes back is taken as quiet: after `MAX_WAIT_NS`, or at the end.
    #[test]
    fn a_cpu_that_stays_silent_is_quiet() {
        let mut w = StallWatch::default();
        w.saw(&switch(MS, 1));
        assert_eq!(w.hold(1, MS, 0, [1].into_iter()), None);
        assert_eq!(w.hold(2, MS, 0, [1].into_iter()), None);
        let clock = ev(MS + MAX_WAIT_NS + 1, 0, EventKind::Clock);
        assert_eq!(w.saw(&clock), vec![(1, false), (2, false)]);
        assert_eq!(w.hold(3, MS, 0, [1].into_iter()), None);
        assert_eq!(w.finish(), vec![(3, false)]);
    }
}
