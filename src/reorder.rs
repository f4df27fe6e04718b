//! Puts a recording's events back in time order before anything reads them.
//!
//! A recording holds events in the order they were delivered. Each CPU's events come in time
//! order, but one CPU's can come after later ones of another: in the lab's TCG guests a vCPU
//! the host stopped delivers what it staged when it runs again (the demo recording has a
//! quarter of its events 5 ms or more behind the newest delivered, the worst 0.9 s; a
//! recording of this host's own kernel under hackbench, none over 50 us). Replayed as
//! delivered, the model judged a wakeup against a CPU whose switch it had already applied
//! while the timeline, placing that switch at its delivery, drew the CPU idle: one finding,
//! two stories.
//!
//! [`Reorder`] holds events for a window of event time and releases them in time order
//! (events of equal time in delivery order, so a task's name still precedes its first event).
//! A recording's reader ([`Reorder::new`]) orders a record the kernel makes when a call
//! returns but stamps with its entry (a balancer call, an RT push or pull) at its return,
//! where it was made: after the searches made inside it, which the analysis pairs with it.
//! Validation ([`Reorder::by_stamp`], over a longer window) orders every event by its stamp:
//! it pairs a migration made inside an RT call with the call, which must come first.
//! An event later than the window is released where it stands, as before. Memory: the
//! window's events, at most [`MAX_HELD`].
//!
//! Pure: no I/O or clock; the file source and validation share it.

use crate::event::{Event, EventKind};
use std::collections::VecDeque;

/// How far behind the newest event one may come and still be put in its place.
pub const REORDER_NS: u64 = 2_000_000_000;

/// Events held at most; past it the oldest go out early.
pub const MAX_HELD: usize = 1 << 20;

/// Where an event goes in the order: its time, or its call's return for a record made then.
fn order_ns(e: &Event) -> u64 {
    match &e.kind {
        EventKind::BalanceCall(c) => c.exit_ns(e.ts_ns),
        EventKind::RtCall(c) => c.exit_ns(e.ts_ns),
        _ => e.ts_ns,
    }
}

/// An event's stamp, whatever its kind.
fn stamp_ns(e: &Event) -> u64 {
    e.ts_ns
}

/// A window of events kept in time order, each with its place in the order (computed once).
#[derive(Clone, Debug)]
pub struct Reorder {
    held: VecDeque<(u64, Event)>,
    newest: u64,
    window_ns: u64,
    /// Where an event goes in the order.
    place: fn(&Event) -> u64,
}

impl Reorder {
    /// Holds events for `window_ns` of event time; a call's record goes at its return.
    pub fn new(window_ns: u64) -> Reorder {
        Reorder::placing(window_ns, order_ns)
    }

    /// Holds events for `window_ns` of event time, each placed by its stamp.
    pub fn by_stamp(window_ns: u64) -> Reorder {
        Reorder::placing(window_ns, stamp_ns)
    }

    fn placing(window_ns: u64, place: fn(&Event) -> u64) -> Reorder {
        Reorder {
            held: VecDeque::new(),
            newest: 0,
            window_ns,
            place,
        }
    }

    /// Takes one event and appends to `out` those now older than the window.
    pub fn push(&mut self, e: Event, out: &mut Vec<Event>) {
        let t = (self.place)(&e);
        // `newest`, the latest place seen, is at least the last held one's.
        if t >= self.newest {
            self.held.push_back((t, e));
            self.newest = t;
        } else {
            let at = self.held.partition_point(|x| x.0 <= t);
            self.held.insert(at, (t, e));
        }
        let due = self.newest.saturating_sub(self.window_ns);
        while let Some(f) = self.held.front() {
            if f.0 > due && self.held.len() <= MAX_HELD {
                break;
            }
            out.extend(self.held.pop_front().map(|(_, e)| e));
        }
    }

    /// Appends every event held, in order.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        out.extend(self.held.drain(..).map(|(_, e)| e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(window: u64, evs: &[(u64, u32)]) -> Vec<(u64, u32)> {
        let mut r = Reorder::new(window);
        let mut out = Vec::new();
        for &(t, c) in evs {
            r.push(Event::clock_at(t, c), &mut out);
        }
        r.finish(&mut out);
        out.iter().map(|e| (e.ts_ns, e.cpu)).collect()
    }

    #[test]
    fn a_late_cpu_s_events_go_back_in_their_place() {
        // CPU 1's 2 and 5 come after CPU 0's 3, 4 and 6; equal times keep delivery order.
        let got = run(
            10,
            &[
                (1, 0),
                (3, 0),
                (4, 0),
                (6, 0),
                (2, 1),
                (5, 1),
                (6, 1),
                (7, 0),
            ],
        );
        assert_eq!(
            got,
            vec![
                (1, 0),
                (2, 1),
                (3, 0),
                (4, 0),
                (5, 1),
                (6, 0),
                (6, 1),
                (7, 0)
            ]
        );
    }

    /// An RT call stamped at its entry (100) and returning at 150, delivered after a move at
    /// 120 made inside it: a recording's reader places it at its return, validation at its
    /// stamp.
    #[test]
    fn a_call_s_record_goes_at_its_return_or_at_its_stamp() {
        let call = Event::rt_call_at(100, 0, crate::event::RtFunc::Push, 0, 50);
        let order = |mut r: Reorder| {
            let mut out = Vec::new();
            for e in [
                Event::clock_at(120, 0),
                call.clone(),
                Event::clock_at(130, 1),
            ] {
                r.push(e, &mut out);
            }
            r.finish(&mut out);
            out.iter()
                .map(|e| (e.ts_ns, matches!(e.kind, EventKind::RtCall(_))))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            order(Reorder::new(1_000)),
            [(120, false), (130, false), (100, true)]
        );
        assert_eq!(
            order(Reorder::by_stamp(1_000)),
            [(100, true), (120, false), (130, false)]
        );
    }

    #[test]
    fn events_leave_once_older_than_the_window_and_later_ones_stay_where_they_come() {
        let mut r = Reorder::new(10);
        let mut out = Vec::new();
        for t in [0, 5, 10] {
            r.push(Event::clock_at(t, 0), &mut out);
        }
        assert_eq!(out.len(), 1, "0 is 10 behind the newest: out");
        r.push(Event::clock_at(25, 0), &mut out);
        assert_eq!(
            out.iter().map(|e| e.ts_ns).collect::<Vec<_>>(),
            vec![0, 5, 10]
        );
        // 3 is later than the window: released at once, after what already left.
        r.push(Event::clock_at(3, 1), &mut out);
        assert_eq!(out.last().map(|e| (e.ts_ns, e.cpu)), Some((3, 1)));
        r.finish(&mut out);
        assert_eq!(out.last().map(|e| e.ts_ns), Some(25));
    }
}
