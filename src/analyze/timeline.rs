//! The CPU timeline: for every CPU, when it was idle, running, and how many tasks waited on
//! it, as the analyzer's own state said after each event; and the marks drawn over it
//! (migrations with their reason, the balancer's decisions where the recording has them).
//!
//! Pure: it is fed by [`Timeline::observe`] after the analyzer applied an event and reads
//! the analyzer's per-CPU state ([`Analyzer::cpu_activity`]) at the analyzer's time, so the
//! timeline and the interval figures come from one accounting. Nothing here reads a clock.
//!
//! Storage is a list of state changes per CPU (a change is stored only when the CPU's state
//! differs from its previous one), and a list of marks, both in time order. Memory is
//! bounded by the window, not by the run: changes and marks older than `now - window` go,
//! and each CPU keeps at most [`LANE_BUDGET`] / CPUs changes (at least [`MIN_LANE`]), the
//! oldest going first, so a storm shortens what is kept instead of growing it. A CPU's changes
//! sit in fixed-size blocks ([`blocks::Blocks`]): memory follows what the window holds, within
//! a block and a spare, and nothing is copied to grow. The marks' queue grows by doubling up
//! to its bound and no further (not the next power of two past it: the oldest goes before the
//! newest comes). Neither is reserved whole at once: a ring buffer's head cycles through all
//! the room it has, touching every page of it in turn, so a reserve larger than the window's
//! content made a long run's memory creep up for as long as the head took to go round. A replay
//! restricts the timeline to a clip of the recording ([`Timeline::clip`]) and moves the
//! clip when the screen leaves it.
//!
//! Times: a state change is placed at the analyzer's time (the latest event time seen: an
//! event delivered after later ones from another CPU's buffer is applied then, as in every
//! interval figure), so the timeline shows what the figures were computed from; a mark keeps
//! its event's own timestamp, so a late delivery shows as a mark ahead of the state change
//! it caused.
//!
//! A cell (a span of time on one CPU, or on a folded group of CPUs) is summarised by
//! [`Timeline::cell`]: the most tasks waiting at any instant of the span (the maximum), and
//! the time running out of the time known. [`CellKind::of`] turns that into what the screen
//! draws: waiting wins (a cell with 2 waiting at any instant says 2), then busy the whole
//! span, busy part of it, idle the whole span.

mod blocks;

use super::Analyzer;
use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind, MigrationType, Pid, Reason};
use blocks::Blocks;
use std::collections::VecDeque;

/// Changes kept over all CPUs at most (each CPU gets its share).
pub const LANE_BUDGET: usize = 1 << 20;
/// Changes a CPU keeps at least, however many CPUs there are.
pub const MIN_LANE: usize = 4096;
/// Marks kept at most.
pub const MARK_BUDGET: usize = 1 << 16;
/// The live window: what a timeline keeps behind its newest event.
pub const WINDOW_NS: u64 = 60_000_000_000;

/// A CPU's state between two events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuState {
    /// A switch was seen on the CPU, so whether it runs a task is known.
    pub known: bool,
    /// It runs a task (not its idle task).
    pub running: bool,
    /// Tasks waiting on its run queue (woken or preempted, not yet running).
    pub waiting: u16,
}

/// A state change of one CPU: 12 bytes, packed to 4-byte alignment (a `u64` beside the
/// 4-byte state would take 16 with its padding: 4 MiB more at [`LANE_BUDGET`]). Fields are
/// only read and written by value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, packed(4))]
struct Change {
    t_ns: u64,
    state: CpuState,
}

/// What is drawn over the states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkKind {
    /// A task changed CPU.
    Migrate {
        /// The task.
        pid: Pid,
        /// Where it left.
        src: u32,
        /// Where it went.
        dst: u32,
        /// Why.
        reason: Reason,
    },
    /// A balancer decision from `struct lb_env` (fentry recordings only).
    Balance {
        /// The CPU the pass balanced for (`dst_cpu`).
        cpu: u32,
        /// `sd->level`.
        level: u32,
        /// No busiest group was found.
        balanced: bool,
        /// `env->imbalance`.
        imbalance: u64,
        /// `env->migration_type`.
        migration_type: MigrationType,
        /// The task detached (a move), or none (a search).
        pid: Option<Pid>,
        /// `env->src_cpu` (meaningful for a move).
        src: u32,
    },
}

/// One mark, at the analyzer's time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// When.
    pub t_ns: u64,
    /// What.
    pub kind: MarkKind,
}

impl Mark {
    /// Whether the mark is drawn on `cpu`'s row: a migration on its source and destination,
    /// a balancer decision on the CPU balanced for.
    pub fn on(&self, cpu: u32) -> bool {
        match self.kind {
            MarkKind::Migrate { src, dst, .. } => src == cpu || dst == cpu,
            MarkKind::Balance { cpu: c, .. } => c == cpu,
        }
    }

    /// Whether it concerns task `pid`.
    pub fn names(&self, p: Pid) -> bool {
        match self.kind {
            MarkKind::Migrate { pid, .. } => pid == p,
            MarkKind::Balance { pid, .. } => pid == Some(p),
        }
    }
}

/// A span of time on one CPU or a group, summarised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    /// Time the state was known, summed over the CPUs (ns).
    pub known_ns: u64,
    /// Time running, summed over the CPUs (ns).
    pub busy_ns: u64,
    /// The most tasks waiting on one CPU at any instant of the span.
    pub max_waiting: u16,
}

/// What a cell is drawn as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// No state known in the span (before the first switch, or outside what is kept).
    Unknown,
    /// Idle the whole span.
    Idle,
    /// Running for part of the span, idle the rest, nobody waiting.
    Part,
    /// Running the whole span, nobody waiting.
    Busy,
    /// At some instant of the span this many tasks waited (the most in the span).
    Waiting(u16),
}

impl CellKind {
    /// The summary rule: waiting first (the maximum), then the share of time running.
    pub fn of(c: &Cell) -> CellKind {
        if c.max_waiting > 0 {
            CellKind::Waiting(c.max_waiting)
        } else if c.known_ns == 0 {
            CellKind::Unknown
        } else if c.busy_ns == 0 {
            CellKind::Idle
        } else if c.busy_ns >= c.known_ns {
            CellKind::Busy
        } else {
            CellKind::Part
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Lane {
    changes: Blocks<Change>,
    /// The state after the last change (what holds now).
    now: CpuState,
}

/// The room the marks' queue starts with at its first mark.
const FIRST_ROOM: usize = 1024;

/// Before adding one item to `q`, which never holds more than `cap` (the caller drops the
/// oldest first when it is full): a queue with no room left doubles (from [`FIRST_ROOM`]),
/// up to exactly `cap`. Its room is then at most twice the most it held, so memory follows
/// what the window holds, not the bound; doubling copies each item about once in all (marks
/// are a few hundred a second, against tens of thousands of changes).
fn room_within<T>(q: &mut VecDeque<T>, cap: usize) {
    if q.len() == q.capacity() && q.len() < cap {
        let want = (q.len() * 2).max(FIRST_ROOM).min(cap);
        q.reserve_exact(want - q.len());
    }
}

/// The per-CPU timeline and its marks. See the module header.
#[derive(Clone, Debug)]
pub struct Timeline {
    lanes: Vec<Lane>,
    marks: VecDeque<Mark>,
    window_ns: u64,
    lane_cap: usize,
    /// Only times in `[lo, hi)` are kept (a replay's clip); live: everything.
    clip: (u64, u64),
    /// The analyzer's latest time.
    now_ns: u64,
    /// Marks were dropped for the budget (not for the window).
    marks_capped: bool,
    /// The recording has balancer decisions (one was seen).
    balance_seen: bool,
    /// The source folds latency in the kernel (a `Fold` was seen): a CPU's waiting count
    /// above 2 is then a sample of its `nr_running`, at most one a millisecond per CPU.
    sampled: bool,
    /// Changes before this time were dropped (window or budget).
    trimmed_to: u64,
    /// The earliest time at which a change or a mark held falls out of the window: until
    /// then the cold front of each queue is not looked at (every event would).
    expire_at: u64,
}

impl Timeline {
    /// A timeline of `nr_cpus` CPUs keeping `window_ns` behind its newest event.
    pub fn new(nr_cpus: usize, window_ns: u64) -> Timeline {
        let n = nr_cpus.max(1);
        Timeline {
            lanes: vec![Lane::default(); n],
            marks: VecDeque::new(),
            window_ns,
            lane_cap: (LANE_BUDGET / n).max(MIN_LANE),
            clip: (0, u64::MAX),
            now_ns: 0,
            marks_capped: false,
            balance_seen: false,
            sampled: false,
            trimmed_to: 0,
            expire_at: u64::MAX,
        }
    }

    /// Keeps only `[lo, hi)` (a replay shows a clip of a recording; the state before `lo`
    /// is still followed, so the clip starts with the right state).
    pub fn clip(mut self, lo: u64, hi: u64) -> Timeline {
        self.clip = (lo, hi.max(lo));
        self
    }

    /// The clip in force (`(0, u64::MAX)` when none).
    pub fn clip_range(&self) -> (u64, u64) {
        self.clip
    }

    /// CPUs it has rows for.
    pub fn nr_cpus(&self) -> usize {
        self.lanes.len()
    }

    /// The analyzer's time at the last event observed.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Whether a balancer decision (fentry) was seen.
    pub fn has_balance(&self) -> bool {
        self.balance_seen
    }

    /// Whether waiting counts above 2 are samples (the source folds in the kernel: `--fold`)
    /// rather than every change.
    pub fn waiting_sampled(&self) -> bool {
        self.sampled
    }

    /// The earliest time kept: the first change held, or later where older changes went
    /// for the window or the budget; `None` before any change.
    pub fn kept_from(&self) -> Option<u64> {
        let first = self
            .lanes
            .iter()
            .filter_map(|l| l.changes.front().map(|c| c.t_ns))
            .min()?;
        Some(first.max(self.trimmed_to).max(self.clip.0))
    }

    /// Changes and marks held (memory accounting, tests).
    pub fn len(&self) -> usize {
        self.lanes.iter().map(|l| l.changes.len()).sum::<usize>() + self.marks.len()
    }

    /// Bytes its queues reserve (memory accounting, tests): a queue at its bound reserves
    /// exactly its bound.
    pub fn reserved_bytes(&self) -> usize {
        let lanes: usize = self.lanes.iter().map(|l| l.changes.capacity()).sum();
        lanes * std::mem::size_of::<Change>() + self.marks.capacity() * std::mem::size_of::<Mark>()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether marks were dropped for the budget within the window.
    pub fn marks_capped(&self) -> bool {
        self.marks_capped
    }

    /// Follows one event the analyzer just applied: records the state of every CPU it may
    /// have changed, and its mark.
    pub fn observe(&mut self, ev: &Event, a: &Analyzer) {
        let t = a.now_ns();
        self.now_ns = t;
        let ts = ev.ts_ns;
        if a.changes_no_cpu(&ev.kind) {
            return;
        }
        match &ev.kind {
            EventKind::Switch { .. } => self.update(ev.cpu, t, a),
            EventKind::Wakeup { target_cpu, .. } | EventKind::WakeupNew { target_cpu, .. } => {
                self.update(*target_cpu, t, a);
                if let EventKind::WakeupNew {
                    target_cpu, pid, ..
                } = &ev.kind
                {
                    if *target_cpu != ev.cpu {
                        self.mark(
                            ts,
                            MarkKind::Migrate {
                                pid: *pid,
                                src: ev.cpu,
                                dst: *target_cpu,
                                reason: Reason::Fork,
                            },
                        );
                    }
                }
            }
            EventKind::NrRunning { rq_cpu, .. } => self.update(u32::from(*rq_cpu), t, a),
            EventKind::Migrate(mi) => {
                self.update(mi.src_cpu, t, a);
                self.update(mi.dst_cpu, t, a);
                if mi.src_cpu != mi.dst_cpu {
                    self.mark(
                        ts,
                        MarkKind::Migrate {
                            pid: mi.pid,
                            src: mi.src_cpu,
                            dst: mi.dst_cpu,
                            reason: mi.reason,
                        },
                    );
                }
            }
            EventKind::Balance(b) => {
                self.balance_seen = true;
                if !b.is_stopper_entry() {
                    self.mark(
                        ts,
                        MarkKind::Balance {
                            cpu: b.dst_cpu,
                            level: b.level,
                            balanced: b.balanced,
                            imbalance: b.imbalance,
                            migration_type: b.migration_type,
                            pid: b.pid,
                            src: b.src_cpu,
                        },
                    );
                }
            }
            // Folded latency changes no CPU's state; it says how waiting counts are known.
            EventKind::Fold(_) => self.sampled = true,
            // Exits, affinity changes and the rest can end a wait anywhere: rare enough to
            // look at every CPU.
            _ => self.update_every_cpu(t, a),
        }
        self.expire(t);
    }

    /// [`Timeline::observe`] looking at every CPU after every event: what the per-kind
    /// choice of CPUs must equal.
    #[cfg(test)]
    fn observe_every_cpu(&mut self, a: &Analyzer) {
        let t = a.now_ns();
        self.now_ns = t;
        self.update_every_cpu(t, a);
        self.expire(t);
    }

    fn update_every_cpu(&mut self, t: u64, a: &Analyzer) {
        for c in 0..self.lanes.len() as u32 {
            self.update(c, t, a);
        }
    }

    fn update(&mut self, cpu: u32, t: u64, a: &Analyzer) {
        let Some(lane) = self.lanes.get_mut(cpu as usize) else {
            return;
        };
        let (idle, waiting) = a.cpu_activity(cpu);
        let state = CpuState {
            known: idle.is_some(),
            running: idle == Some(false),
            waiting: waiting.min(u32::from(u16::MAX)) as u16,
        };
        if state == lane.now {
            return;
        }
        lane.now = state;
        if t >= self.clip.1 {
            return;
        }
        // Before the clip only the latest state matters: it is the clip's first.
        let t = t.max(self.clip.0);
        if lane.changes.back().is_some_and(|c| c.t_ns == t) {
            lane.changes.back_mut().expect("checked").state = state;
            return;
        }
        if lane.changes.len() >= self.lane_cap {
            lane.changes.pop_front();
            if let Some(c) = lane.changes.front() {
                self.trimmed_to = self.trimmed_to.max(c.t_ns);
            }
        }
        lane.changes.push_back(Change { t_ns: t, state });
        // Once a later change follows it, this one goes when t leaves the window.
        self.expire_at = self.expire_at.min(t.saturating_add(self.window_ns));
    }

    fn mark(&mut self, t: u64, kind: MarkKind) {
        if t < self.clip.0 || t >= self.clip.1 {
            return;
        }
        // Marks keep the event's own time, so one delivered late lands in its place (nearly
        // all come in order: they go at the end without a search).
        let mut at = if self.marks.back().is_none_or(|m| m.t_ns <= t) {
            self.marks.len()
        } else {
            self.marks.partition_point(|m| m.t_ns <= t)
        };
        if self.marks.len() >= MARK_BUDGET {
            self.marks_capped = true;
            if at == 0 {
                // Older than every mark kept: the first to go.
                return;
            }
            self.marks.pop_front();
            at -= 1;
        }
        room_within(&mut self.marks, MARK_BUDGET);
        self.marks.insert(at, Mark { t_ns: t, kind });
        self.expire_at = self
            .expire_at
            .min(t.saturating_add(self.window_ns).saturating_add(1));
    }

    /// Drops what fell out of the window; a CPU keeps the change in force at its start.
    fn expire(&mut self, t: u64) {
        if t < self.expire_at {
            return;
        }
        let Some(lo) = t.checked_sub(self.window_ns) else {
            return;
        };
        let mut next = u64::MAX;
        for lane in &mut self.lanes {
            while lane.changes.len() > 1 && lane.changes[1].t_ns <= lo {
                lane.changes.pop_front();
                self.trimmed_to = lo;
            }
            if let Some(c) = lane.changes.get(1) {
                next = next.min(c.t_ns.saturating_add(self.window_ns));
            }
        }
        while self.marks.front().is_some_and(|m| m.t_ns < lo) {
            self.marks.pop_front();
        }
        if let Some(m) = self.marks.front() {
            next = next.min(m.t_ns.saturating_add(self.window_ns).saturating_add(1));
        }
        self.expire_at = next;
    }

    /// The state of `cpu` at time `t` (`None` when not kept or not yet known).
    pub fn state_at(&self, cpu: u32, t: u64) -> Option<CpuState> {
        let lane = self.lanes.get(cpu as usize)?;
        if t > self.now_ns || t >= self.clip.1 {
            return None;
        }
        let i = lane.changes.partition_point(|c| c.t_ns <= t);
        let s = lane.changes.get(i.checked_sub(1)?)?.state;
        s.known.then_some(s)
    }

    /// The known states of `cpu` over `[a, b)` (`b` already cut to what is known), as
    /// `(start, end, state)` pieces in time order.
    fn pieces(&self, cpu: u32, a: u64, b: u64) -> impl Iterator<Item = (u64, u64, CpuState)> + '_ {
        let changes = self.lanes.get(cpu as usize).map(|l| &l.changes);
        let first = changes.map_or(0, |ch| {
            ch.partition_point(|c| c.t_ns <= a).saturating_sub(1)
        });
        changes.into_iter().flat_map(move |ch| {
            (first..ch.len())
                .map(move |i| (i, &ch[i]))
                .take_while(move |(_, c)| c.t_ns < b)
                .filter_map(move |(i, c)| {
                    let end = ch.get(i + 1).map_or(b, |n| n.t_ns.min(b));
                    let start = c.t_ns.max(a);
                    (end > start && c.state.known).then_some((start, end, c.state))
                })
        })
    }

    /// `cpu`'s span `[a, b)` summarised. Time after the newest event is not known.
    pub fn cell(&self, cpu: u32, a: u64, b: u64) -> Cell {
        let mut cell = Cell::default();
        let b = b.min(self.now_ns.saturating_add(1)).min(self.clip.1);
        for (start, end, state) in self.pieces(cpu, a, b) {
            cell.known_ns += end - start;
            if state.running {
                cell.busy_ns += end - start;
            }
            cell.max_waiting = cell.max_waiting.max(state.waiting);
        }
        cell
    }

    /// The span `[a, b)` of a group of CPUs: times summed, the most waiting on one CPU.
    pub fn group_cell(&self, cpus: &CpuSet, a: u64, b: u64) -> Cell {
        let mut g = Cell::default();
        for c in cpus.iter() {
            let x = self.cell(c as u32, a, b);
            g.known_ns += x.known_ns;
            g.busy_ns += x.busy_ns;
            g.max_waiting = g.max_waiting.max(x.max_waiting);
        }
        g
    }

    /// The marks in `[a, b)`, in time order.
    pub fn marks(&self, a: u64, b: u64) -> impl Iterator<Item = &Mark> + '_ {
        let i = self.marks.partition_point(|m| m.t_ns < a);
        self.marks.iter().skip(i).take_while(move |m| m.t_ns < b)
    }

    /// The stretches of `[a, b)` during which `cpu` was idle, as `(start, end)`.
    pub fn idle_stretches(&self, cpu: u32, a: u64, b: u64) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        let b = b.min(self.now_ns).min(self.clip.1);
        for (start, end, _) in self.pieces(cpu, a, b).filter(|p| !p.2.running) {
            match out.last_mut() {
                Some(last) if last.1 == start => last.1 = end,
                _ => out.push((start, end)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
