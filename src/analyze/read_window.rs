//! The window between a run's two `/proc/schedstat` reads, and where a count's moment falls
//! against it: inside, outside, or in flight (made during a read, which the kernel may have
//! printed before or after it).
//!
//! A balancer call's record carries its entry time and is made at its exit, so a time-ordered
//! stream takes a call that spans the end read before the read itself. Counts placed inside
//! before the end read is known are therefore held while their call may still span it (its
//! exit is not older than the newest moment seen): when the end read comes, those it falls
//! inside move to in flight. Pure: moments in, places out.

/// Where a count's moment falls against the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    In,
    Out,
    InFlight,
}

/// How far outside the window a count is still taken as in flight rather than out: timestamps
/// of different CPUs are not exactly in order. In a lab guest under emulation, an active
/// balance's detach stamped 1.4 ms before the start read (on the stopper's CPU) was still
/// counted by the kernel after that read (its lb_gained was in the difference of the two
/// reads). Counts inside the window are not touched: lbscope's figure stays what it was, and
/// only what the kernel may add beyond it grows.
const READ_GUARD_NS: u64 = 2_000_000;

/// Held counts past which the ones the stream has left behind are dropped.
const PRUNE_MIN: usize = 64;

/// The two reads, `(read start, read end)` of each, and the counts placed inside that the
/// end read may yet fall inside (`H` says what to move, with the moment its call exited).
#[derive(Clone, Debug)]
pub(super) struct Window<H> {
    start: Option<(u64, u64)>,
    end: Option<(u64, u64)>,
    /// The newest moment seen in the stream.
    newest: u64,
    held: Vec<(H, u64)>,
    /// Counts placed inside before the start read came (a recording in time order puts
    /// what its CPUs delivered late before that read), with their latest moment: the start
    /// read takes them out or in flight. At most [`MAX_BEFORE`].
    before: Vec<(H, u64)>,
    prune_at: usize,
}

/// Counts kept for the start read at most; past it the start read corrects none (a stream
/// with no reads keeps every count inside, as it did).
const MAX_BEFORE: usize = 1 << 16;

impl<H> Default for Window<H> {
    fn default() -> Self {
        Window {
            start: None,
            end: None,
            newest: 0,
            held: Vec::new(),
            before: Vec::new(),
            prune_at: PRUNE_MIN,
        }
    }
}

impl<H> Window<H> {
    /// Where a count made at some moment in `[a, b]` falls.
    pub(super) fn place(&self, a: u64, b: u64) -> Place {
        let g = READ_GUARD_NS;
        if let Some((s0, s1)) = self.start {
            if b.saturating_add(g) < s0 {
                return Place::Out;
            }
            if a <= s1 {
                return Place::InFlight;
            }
        }
        if let Some((e0, e1)) = self.end {
            if a > e1.saturating_add(g) {
                return Place::Out;
            }
            if b >= e0 {
                return Place::InFlight;
            }
        }
        Place::In
    }

    /// An event of the stream stamped `ts`. A held count whose call exited before the newest
    /// moment seen can no longer span the end read: the stream takes that read in time
    /// order, after every event already seen.
    pub(super) fn saw(&mut self, ts: u64) {
        self.newest = self.newest.max(ts);
        if self.held.len() >= self.prune_at {
            let newest = self.newest;
            self.held.retain(|(_, exit)| *exit >= newest);
            self.prune_at = (self.held.len() * 2).max(PRUNE_MIN);
        }
    }

    /// The start read, at `span`: the counts placed inside before it, split into those it
    /// leaves out and those within its guard, now in flight.
    pub(super) fn start(&mut self, span: (u64, u64)) -> (Vec<H>, Vec<H>) {
        self.start = Some(span);
        let (mut out, mut in_flight) = (Vec::new(), Vec::new());
        for (h, b) in std::mem::take(&mut self.before) {
            match self.place(b, b) {
                Place::Out => out.push(h),
                Place::InFlight => in_flight.push(h),
                Place::In => {}
            }
        }
        (out, in_flight)
    }

    /// Notes `h`, a count just placed inside at moment `b`, while the start read has not
    /// come.
    pub(super) fn hold_before(&mut self, h: H, b: u64) {
        if self.start.is_none() && self.end.is_none() && self.before.len() < MAX_BEFORE {
            self.before.push((h, b));
        }
    }

    /// The end read, at `span`: returns the held counts it falls inside, now in flight.
    pub(super) fn end(&mut self, span: (u64, u64)) -> Vec<H> {
        self.end = Some(span);
        std::mem::take(&mut self.held)
            .into_iter()
            .filter(|(_, exit)| *exit >= span.0)
            .map(|(h, _)| h)
            .collect()
    }

    /// Holds `h`, a count just placed inside for a call that exited at `exit`, while the end
    /// read may still fall inside that call.
    pub(super) fn hold(&mut self, h: H, exit: u64) {
        if self.end.is_none() && exit >= self.newest {
            self.held.push((h, exit));
        }
    }

    /// Forgets the held counts (their figures were taken).
    pub(super) fn clear_held(&mut self) {
        self.held.clear();
    }
}
