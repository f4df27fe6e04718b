//! Puts the live source's events back in time order. Each CPU's records reach user space in
//! their order, but not interleaved with other CPUs' as they happened: a CPU sends its staged
//! records a few at a time (bpf/lbscope.h, `LBS_STAGED`), and the balancer hooks have a ring
//! buffer of their own. [`Merge`] keeps one queue per ring buffer and CPU and releases, at
//! each drain, every event stamped up to a watermark, merged by time.
//!
//! Invariants: events leave in time order across queues and in arrival order within one; an
//! event stamped at or before a watermark already released leaves at the next release (the
//! analyzer then takes it at the latest time it saw), is counted in [`Merge::late`], and
//! widens the hold-back to twice its delay (up to [`MAX_HOLDBACK_NS`]): a machine whose CPUs
//! stall (a virtual machine's vCPUs descheduled by its host) gets the wait it needs.

use crate::event::Event;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// How far behind the drain's clock the watermark starts: more than a staged record can wait
/// in its CPU's stage (a tick at 100 Hz, plus the stage's age limit), with room to spare.
pub const HOLDBACK_NS: u64 = 25_000_000;

/// The most a late event widens the hold-back to.
pub const MAX_HOLDBACK_NS: u64 = 2_000_000_000;

/// Per-queue events, merged by time up to a watermark.
pub struct Merge {
    queues: Vec<VecDeque<Event>>,
    nr_cpus: usize,
    /// The newest watermark released.
    released_to: u64,
    /// Events that arrived stamped at or before a watermark already released.
    pub late: u64,
    /// The longest such delay, ns.
    pub late_max_ns: u64,
    /// How far behind the drain's clock the watermark stays now.
    pub holdback_ns: u64,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The queues with an event to release (reused between releases).
    active: Vec<usize>,
    /// Per queue: the most it held at the start of a release lately (an eighth less at each
    /// complete release), what its room follows.
    peaks: Vec<usize>,
}

/// Up to this many queues with events, the merge scans their fronts; past it, a heap.
const SCAN_MAX: usize = 8;

/// Room (events, 512 KiB) a queue always keeps. Past it, a queue keeps room for twice what
/// it held lately at a release. One that took a burst (a drain held up behind a busy
/// consumer) gives the rest back over the next releases, instead of holding the largest burst
/// of the run for the rest of it. One that fills the same way at every drain keeps its room
/// instead of giving it back after each release and growing again, by reallocations, at the
/// next drain (at `-i 1` a CPU's queue takes tens of thousands of events a drain under
/// hackbench here).
const KEEP: usize = 8 * 1024;

impl Merge {
    /// Queues for `rings` ring buffers of `nr_cpus` CPUs, and one for the source's own events.
    pub fn new(rings: usize, nr_cpus: usize) -> Merge {
        let nr_cpus = nr_cpus.max(1);
        let nr_queues = rings * nr_cpus + 1;
        Merge {
            queues: (0..nr_queues).map(|_| VecDeque::new()).collect(),
            nr_cpus,
            released_to: 0,
            late: 0,
            late_max_ns: 0,
            holdback_ns: HOLDBACK_NS,
            heap: BinaryHeap::new(),
            active: Vec::new(),
            peaks: vec![0; nr_queues],
        }
    }

    /// The queue of ring buffer `ring`'s records made on `cpu` (a CPU past the possible ones
    /// shares the last one's queue, keeping its arrival order).
    pub fn queue(&mut self, ring: usize, cpu: u32) -> &mut VecDeque<Event> {
        let cpu = (cpu as usize).min(self.nr_cpus - 1);
        let q = (ring * self.nr_cpus + cpu).min(self.queues.len() - 2);
        &mut self.queues[q]
    }

    /// Queues events the source makes itself (losses, folded histograms, clock), stamped in
    /// non-decreasing order.
    pub fn push_own(&mut self, events: &mut Vec<Event>) {
        let last = self.queues.len() - 1;
        self.queues[last].extend(events.drain(..));
    }

    /// Moves queued events stamped at or before `upto` to `out`, in time order, until `out`
    /// holds `room` events; returns whether every such event left (else the next call with
    /// the same `upto` goes on where this one stopped, in the same order).
    pub fn release(&mut self, upto: u64, out: &mut Vec<Event>, room: usize) -> bool {
        for (peak, q) in self.peaks.iter_mut().zip(&self.queues) {
            *peak = (*peak).max(q.len());
        }
        let mut active = std::mem::take(&mut self.active);
        active.clear();
        active.extend(
            self.queues
                .iter()
                .enumerate()
                .filter(|(_, q)| q.front().is_some_and(|e| e.ts_ns <= upto))
                .map(|(i, _)| i),
        );
        // Whether every queue's front is now past `upto`: each loop below keeps exactly the
        // queues still holding such an event.
        let done = if active.len() <= SCAN_MAX {
            // Few queues (a small machine): the earliest front by a scan.
            while !active.is_empty() && out.len() < room {
                let (mut best, mut limit) = (0, upto);
                let mut best_ts = u64::MAX;
                for (k, &i) in active.iter().enumerate() {
                    let t = self.queues[i].front().map_or(u64::MAX, |e| e.ts_ns);
                    if t < best_ts {
                        limit = limit.min(best_ts);
                        (best, best_ts) = (k, t);
                    } else {
                        limit = limit.min(t);
                    }
                }
                if !self.take_run(active[best], limit, upto, out, room) {
                    // In index order still: ties go to the lower queue.
                    active.remove(best);
                }
            }
            active.is_empty()
        } else {
            self.heap.clear();
            for &i in &active {
                let t = self.queues[i].front().map_or(u64::MAX, |e| e.ts_ns);
                self.heap.push(Reverse((t, i)));
            }
            while out.len() < room {
                let Some(Reverse((_, i))) = self.heap.pop() else {
                    break;
                };
                let limit = self
                    .heap
                    .peek()
                    .map_or(upto, |Reverse((t, _))| (*t).min(upto));
                if self.take_run(i, limit, upto, out, room) {
                    let t = self.queues[i].front().map_or(u64::MAX, |e| e.ts_ns);
                    self.heap.push(Reverse((t, i)));
                }
            }
            self.heap.is_empty()
        };
        self.active = active;
        if done {
            self.released_to = self.released_to.max(upto.min(u64::MAX - 1));
            for (peak, q) in self.peaks.iter_mut().zip(&mut self.queues) {
                let keep = (*peak).max(KEEP);
                if q.capacity() > 2 * keep {
                    q.shrink_to(q.len().max(keep));
                }
                *peak -= *peak / 8;
            }
        }
        done
    }

    /// Moves queue `i`'s first event, then the next ones stamped up to `limit`, to `out`,
    /// while it holds fewer than `room`; returns whether the queue still holds one stamped up
    /// to `upto`. Runs are short where CPUs interleave (one or two events), so each event is
    /// popped on its own rather than drained as a range.
    fn take_run(
        &mut self,
        i: usize,
        limit: u64,
        upto: u64,
        out: &mut Vec<Event>,
        room: usize,
    ) -> bool {
        let q = &mut self.queues[i];
        while let Some(e) = q.pop_front() {
            if e.ts_ns < self.released_to {
                let delay = self.released_to - e.ts_ns;
                self.late += 1;
                self.late_max_ns = self.late_max_ns.max(delay);
                self.holdback_ns = self
                    .holdback_ns
                    .max(delay.saturating_mul(2).min(MAX_HOLDBACK_NS));
            }
            out.push(e);
            if out.len() >= room || q.front().is_none_or(|n| n.ts_ns > limit) {
                break;
            }
        }
        q.front().is_some_and(|e| e.ts_ns <= upto)
    }

    /// Events queued and not yet released.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(m: &mut Merge, ring: usize, evs: Vec<Event>) {
        for e in evs {
            m.queue(ring, e.cpu).push_back(e);
        }
    }

    fn times(v: &[Event]) -> Vec<(u64, u32)> {
        v.iter().map(|e| (e.ts_ns, e.cpu)).collect()
    }

    /// Clock events at these (time, CPU) pairs: what `times` reads back.
    fn clocks(at: &[(u64, u32)]) -> Vec<Event> {
        at.iter().map(|&(t, c)| Event::clock_at(t, c)).collect()
    }

    /// Two CPUs' runs arriving one after the other leave interleaved by time, only up to the
    /// watermark; the rest leaves at the next release, and a straggler counts as late.
    #[test]
    fn runs_of_two_cpus_leave_in_time_order_up_to_the_watermark() {
        let mut m = Merge::new(2, 2);
        push(&mut m, 0, clocks(&[(10, 0), (30, 0), (50, 0), (70, 0)]));
        push(&mut m, 0, clocks(&[(20, 1), (40, 1), (60, 1)]));
        push(&mut m, 1, clocks(&[(35, 1)]));
        m.push_own(&mut clocks(&[(45, 0)]));
        let mut out = Vec::new();
        assert!(m.release(50, &mut out, usize::MAX));
        assert_eq!(
            times(&out),
            [
                (10, 0),
                (20, 1),
                (30, 0),
                (35, 1),
                (40, 1),
                (45, 0),
                (50, 0)
            ]
        );
        assert_eq!(m.held(), 2);
        push(&mut m, 1, vec![Event::clock_at(48, 0)]);
        out.clear();
        m.release(u64::MAX, &mut out, usize::MAX);
        assert_eq!(times(&out), [(48, 0), (60, 1), (70, 0)]);
        assert_eq!(m.late, 1, "48 came after 50 was released");
        assert_eq!(m.late_max_ns, 2);
        assert_eq!(
            m.holdback_ns, HOLDBACK_NS,
            "a delay of 2 ns leaves it as it was"
        );
        assert_eq!(m.held(), 0);
    }

    /// Equal times keep each queue's arrival order, and queues in index order; a CPU past
    /// the queues shares the last CPU's queue.
    #[test]
    fn ties_and_out_of_range_cpus_keep_arrival_order() {
        let mut m = Merge::new(1, 2);
        push(&mut m, 0, clocks(&[(5, 1), (5, 7), (6, 1)]));
        push(&mut m, 0, clocks(&[(5, 0)]));
        let mut out = Vec::new();
        m.release(10, &mut out, usize::MAX);
        assert_eq!(times(&out), [(5, 0), (5, 1), (5, 7), (6, 1)]);
        assert_eq!(m.late, 0);
    }

    /// Sorted per-CPU runs of many CPUs (the heap) and of few (the scan) come out as one
    /// time-ordered sequence, whatever the order the runs were queued in.
    #[test]
    fn many_and_few_queues_merge_alike() {
        for cpus in [3usize, 24] {
            let mut m = Merge::new(1, cpus);
            let mut seed = 12345u64;
            let mut all = Vec::new();
            let mut next = vec![0u64; cpus];
            for _ in 0..40 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let cpu = (seed >> 33) as usize % cpus;
                let n = 1 + (seed >> 20) as usize % 32;
                let mut run = Vec::new();
                for _ in 0..n {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    next[cpu] += 1 + (seed >> 40) % 1000;
                    run.push(Event::clock_at(next[cpu], cpu as u32));
                    all.push((next[cpu], cpu as u32));
                }
                push(&mut m, 0, run);
            }
            let upto = all.iter().map(|a| a.0).max().unwrap() / 2;
            let mut out = Vec::new();
            m.release(upto, &mut out, usize::MAX);
            let mut want: Vec<_> = all.iter().copied().filter(|a| a.0 <= upto).collect();
            want.sort();
            let mut got = times(&out);
            assert!(
                got.windows(2).all(|w| w[0].0 <= w[1].0),
                "{cpus} CPUs: in time order"
            );
            got.sort();
            assert_eq!(
                got, want,
                "{cpus} CPUs: every event up to the watermark, once"
            );
            out.clear();
            m.release(u64::MAX, &mut out, usize::MAX);
            assert_eq!(out.len() + want.len(), all.len());
            assert_eq!(m.late, 0);
        }
    }

    /// Released a few at a time, events leave in the order one release gives them, and the
    /// watermark counts as released only once all of it left (few queues and many alike).
    #[test]
    fn a_release_in_parts_gives_the_order_of_one() {
        for cpus in [2usize, 24] {
            let fill = |m: &mut Merge| {
                for cpu in 0..cpus as u64 {
                    let evs = (0..50)
                        .map(|i| Event::clock_at(i * 7 + cpu * 3, cpu as u32))
                        .collect();
                    push(m, 0, evs);
                }
                m.push_own(&mut clocks(&[(100, 0), (200, 0)]));
            };
            let (mut whole, mut parts) = (Merge::new(1, cpus), Merge::new(1, cpus));
            fill(&mut whole);
            fill(&mut parts);
            let mut one = Vec::new();
            assert!(whole.release(300, &mut one, usize::MAX));
            let mut got = Vec::new();
            let mut calls = 0;
            loop {
                let mut out = Vec::new();
                let done = parts.release(300, &mut out, 16);
                calls += 1;
                assert!(out.len() <= 16, "{cpus} CPUs: {} in one part", out.len());
                got.extend(out);
                if done {
                    break;
                }
                assert_eq!(parts.released_to, 0, "not released until all of it left");
            }
            assert_eq!(times(&got), times(&one), "{cpus} CPUs");
            assert!(calls > one.len() / 16, "{cpus} CPUs: {calls} parts");
            assert_eq!(parts.released_to, 300);
            assert_eq!(parts.held(), whole.held());
        }
    }

    /// A queue that took a burst gives its room back once the burst is released, down to
    /// what it keeps; one that holds what it took keeps its room.
    #[test]
    fn a_burst_s_room_goes_back_after_its_release() {
        let mut m = Merge::new(1, 2);
        push(
            &mut m,
            0,
            (0..100_000).map(|i| Event::clock_at(i, 0)).collect(),
        );
        push(
            &mut m,
            0,
            (0..100_000).map(|i| Event::clock_at(i, 1)).collect(),
        );
        let mut out = Vec::new();
        assert!(!m.release(150_000, &mut out, 64 * 1024));
        assert!(
            m.queues[0].capacity() >= 100_000,
            "not before all of it left"
        );
        out.clear();
        assert!(m.release(50_000, &mut out, usize::MAX));
        assert_eq!(m.held(), 100_000 - 50_001 + 100_000 - 50_001);
        assert!(m.queues[0].capacity() >= 49_999, "still holding half of it");
        out.clear();
        assert!(m.release(u64::MAX, &mut out, usize::MAX));
        assert_eq!(m.held(), 0);
        // Drains that find little: the burst's room goes back an eighth of its peak at a time.
        let mut releases = 0;
        while m.queues.iter().any(|q| q.capacity() > 2 * KEEP) {
            push(&mut m, 0, vec![Event::clock_at(200_000 + releases, 0)]);
            out.clear();
            assert!(m.release(u64::MAX, &mut out, usize::MAX));
            releases += 1;
            assert!(releases < 30, "{:?}", m.peaks);
        }
        assert!(releases > 5, "not at once: {releases}");
    }

    /// A queue that fills the same way at every drain keeps its room: it is not given back
    /// after each release and grown again at the next drain.
    #[test]
    fn steady_drains_keep_their_room() {
        let mut m = Merge::new(1, 2);
        let mut out = Vec::new();
        let mut rooms = Vec::new();
        for d in 0..20u64 {
            let t0 = d * 100_000;
            push(
                &mut m,
                0,
                (0..40_000).map(|i| Event::clock_at(t0 + i, 0)).collect(),
            );
            out.clear();
            assert!(m.release(t0 + 100_000, &mut out, usize::MAX));
            assert_eq!(out.len(), 40_000);
            rooms.push(m.queues[0].capacity());
        }
        assert!(rooms[0] >= 40_000);
        assert!(rooms.windows(2).all(|w| w[0] == w[1]), "{rooms:?}");
    }

    /// A straggler widens the hold-back to twice its delay, capped.
    #[test]
    fn a_late_event_widens_the_holdback() {
        let mut m = Merge::new(1, 2);
        let mut out = Vec::new();
        m.release(100_000_000, &mut out, usize::MAX);
        push(&mut m, 0, vec![Event::clock_at(40_000_000, 1)]);
        m.release(200_000_000, &mut out, usize::MAX);
        assert_eq!((m.late, m.late_max_ns), (1, 60_000_000));
        assert_eq!(m.holdback_ns, 120_000_000);
        m.release(20_000_000_000, &mut out, usize::MAX);
        push(&mut m, 0, vec![Event::clock_at(1, 0)]);
        m.release(20_000_000_000, &mut out, usize::MAX);
        assert_eq!(m.holdback_ns, MAX_HOLDBACK_NS);
        assert_eq!(out.len(), 2);
    }
}
