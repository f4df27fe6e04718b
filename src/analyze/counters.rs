//! The balancer's own counters in schedstat's vocabulary (lb_count, lb_balanced, lb_failed,
//! lb_gained, the imbalance by migration type, alb_pushed), per domain level and idle type,
//! counted from the balancer's events, and balancer migrations by reason and level from the
//! migration tracepoint. Pure: events in, counts out.
//!
//! Where each figure comes from (the kernel's `sched_balance_rq`/`load_balance`):
//! - `lb_count`: one per [`BalanceCall`] (the kernel counts it at the call's entry);
//! - `lb_failed`: calls that asked `need_active_balance` (asked exactly in the branch that
//!   counts `lb_failed`); `lb_balanced`: the other calls that moved nothing (no busiest group
//!   or queue, `should_we_balance` said no, or every task pinned);
//! - `lb_gained`: one per `detach_task` ([`Balance`] with a pid), the active-balance
//!   stopper's included (the kernel counts those under the idle type `idle`, as made
//!   somewhere up to the stopper's CPU's next switch); `alb_pushed`: the stopper's alone;
//! - the imbalance: each busiest-group search whose call went on to look for tasks (a later
//!   search of the same call, which only a redo makes, tasks moved, or the failed branch)
//!   adds its `env->imbalance` under its migration type; a last search that found a group in
//!   a call that moved nothing and did not fail may have found no busiest queue (the kernel
//!   adds nothing) or only pinned tasks (it adds): those are counted apart as undetermined.
//!
//! [`RunCounters`] counts over the window between the run's two `/proc/schedstat` reads, so
//! that its figures compare with the kernel's difference: a count whose moment falls inside
//! a read (the kernel printed each CPU at some instant of it) is counted apart as in flight.

use super::read_window::{Place, Window};
use crate::event::{
    Balance, BalanceCall, BalanceOrigin, CpuIdleType, Event, EventKind, MigrationType, Reason,
};
use crate::schedstat::{idle_index, IDLE_ORDER};
use crate::topology::IndexedTopology;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most searches kept per executing CPU for the call in progress (a redo drops one CPU of the
/// domain each time, so a call makes at most as many as the domain has CPUs).
const MAX_PENDING: usize = 256;

/// The schedstat name of an idle type.
pub fn idle_name(i: CpuIdleType) -> &'static str {
    match i {
        CpuIdleType::NotIdle => "busy",
        CpuIdleType::Idle => "idle",
        CpuIdleType::NewlyIdle => "newly_idle",
    }
}

/// The imbalance added up by migration type (`env->imbalance` is load for `load`, a
/// utilization for `util`, a task count for `task` and misfit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Imbalance {
    pub load: u64,
    pub util: u64,
    pub task: u64,
    pub misfit: u64,
}

impl Imbalance {
    /// All four (schedstat's single `lb_imbalance` before version 17).
    pub fn total(&self) -> u64 {
        self.load + self.util + self.task + self.misfit
    }

    fn of(&mut self, t: MigrationType) -> &mut u64 {
        match t {
            MigrationType::Load => &mut self.load,
            MigrationType::Util => &mut self.util,
            MigrationType::Task => &mut self.task,
            MigrationType::Misfit => &mut self.misfit,
        }
    }

    fn add(&mut self, t: MigrationType, v: u64) {
        *self.of(t) += v;
    }

    fn sub(&mut self, t: MigrationType, v: u64) {
        let f = self.of(t);
        *f = f.saturating_sub(v);
    }
}

/// The four counters the kernel's schedstat has one for one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    pub lb_gained: u64,
}

/// One domain level and idle type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterRow {
    /// The level's report key ("smt", "llc", "numa", ...; "sd_level{N}" for a domain the
    /// topology does not have).
    pub level: String,
    /// "busy", "idle" or "newly_idle".
    pub idle: String,
    #[serde(flatten)]
    pub counts: Counts,
    /// Busiest-group searches (a call makes one, and one more per redo).
    pub searches: u64,
    /// Imbalance the kernel added to its lb_imbalance, by migration type.
    pub imbalance: Imbalance,
    /// Calls whose imbalance cannot be told (see the module's header).
    pub imbalance_undetermined: u64,
    /// Their searches' imbalance: the kernel added all, part or none of it.
    #[serde(default)]
    pub imbalance_undetermined_amount: Imbalance,
    /// Counts whose moment fell inside a `/proc/schedstat` read, left out of `counts`
    /// (run totals only; zero per interval).
    #[serde(default, skip_serializing_if = "is_zero_counts")]
    pub in_flight: Counts,
    /// The imbalance of the searches of calls made during a read: left out of `imbalance`
    /// and of the undetermined amount, the kernel added all, part or none of it (run totals
    /// only).
    #[serde(default, skip_serializing_if = "is_zero_imbalance")]
    pub imbalance_in_flight_amount: Imbalance,
}

fn is_zero_counts(c: &Counts) -> bool {
    *c == Counts::default()
}

pub(crate) fn is_zero_imbalance(i: &Imbalance) -> bool {
    *i == Imbalance::default()
}

/// The balancer's counters of one interval or run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalancerCounters {
    /// The balancer's calls were recorded ([`BalanceCall`] events: lb_count, lb_balanced,
    /// lb_failed and the imbalance are known); without them only lb_gained and the searches.
    pub calls_recorded: bool,
    /// Per level (bottom-up) and idle type (busy, idle, newly idle), rows with any count.
    pub rows: Vec<CounterRow>,
    /// Tasks the active-balance stopper pushed, per level (alb_pushed).
    pub alb_pushed: BTreeMap<String, u64>,
    /// Times the stopper ran (an upper bound of alb_count, which the kernel counts only once
    /// it found a domain and a task to push).
    pub stopper_runs: u64,
    /// Balancer migrations by reason and level crossed, from the migration tracepoint's
    /// kernel stacks (every kernel; the level is the lowest domain spanning both CPUs).
    pub gained_by_migrations: BTreeMap<String, BTreeMap<String, u64>>,
}

impl BalancerCounters {
    /// Nothing counted.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
            && self.alb_pushed.is_empty()
            && self.stopper_runs == 0
            && self.gained_by_migrations.is_empty()
    }
}

/// A level: the topology's index, or the kernel's `sd->level` where no domain of the
/// topology spans `sd_weight` CPUs around the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum LevelId {
    Topo(usize),
    Raw(u32),
}

#[derive(Clone, Copy, Debug)]
struct Search {
    level: LevelId,
    idle: CpuIdleType,
    migration_type: MigrationType,
    imbalance: u64,
    balanced: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Row {
    counts: Counts,
    in_flight: Counts,
    searches: u64,
    imbalance: Imbalance,
    undetermined: u64,
    undetermined_amount: Imbalance,
    in_flight_amount: Imbalance,
}

/// The counting, over an interval (no window) or a run (the schedstat window).
#[derive(Clone, Debug, Default)]
pub struct Counter {
    rows: BTreeMap<Key, Row>,
    alb_pushed: BTreeMap<LevelId, u64>,
    stopper_runs: u64,
    by_migrations: BTreeMap<(Reason, Option<usize>), u64>,
    calls: bool,
    /// The searches of the call in progress on each executing CPU.
    pending: Vec<Vec<Search>>,
    /// The tasks the call in progress on each executing CPU detached: (row, when). The
    /// kernel adds them to lb_gained at the end of detach_tasks, after the last detach, so
    /// each is counted at the call's exit, as made somewhere from its detach to that exit.
    pending_gained: Vec<Vec<(Key, u64)>>,
    /// The tasks the active-balance stopper detached, per executing CPU: (row, when). Its
    /// detach_one_task adds each to lb_gained right after the detach, but a stalled vCPU can
    /// hold that line back for many ms (a lab guest on 6.1: 13 ms, across the start read of
    /// /proc/schedstat), so each is counted at the stopper's end (the CPU's next switch, see
    /// [`Counter::switched`]) as made somewhere from its detach to then.
    pending_stopper: Vec<Vec<(Key, u64)>>,
    /// Whether `pending_stopper` holds any: the check every switch makes.
    stopper_pending: bool,
    window: Window<Held>,
    windowed: bool,
}

/// A count placed inside the window that moves to in flight if the end read falls inside its
/// call (see [`Window`]).
#[derive(Clone, Copy, Debug)]
enum Held {
    Count(Key, Which),
    /// A search's imbalance, under its migration type; `true` when counted as undetermined.
    Amount(Key, MigrationType, u64, bool),
    /// Counts taken only inside the window (no in flight): a search, a balancer migration,
    /// a stopper run, an active balance's push. Held only for the start read.
    Search(Key),
    Migration(Reason, Option<usize>),
    Stopper,
    Pushed(LevelId),
}

/// A row's key: the domain level and the idle type's index.
type Key = (LevelId, usize);

/// Which of the four counts.
#[derive(Clone, Copy, Debug)]
enum Which {
    Count,
    Balanced,
    Failed,
    Gained,
}

fn field(c: &mut Counts, w: Which) -> &mut u64 {
    match w {
        Which::Count => &mut c.lb_count,
        Which::Balanced => &mut c.lb_balanced,
        Which::Failed => &mut c.lb_failed,
        Which::Gained => &mut c.lb_gained,
    }
}

fn bump(c: &mut Counts, w: Which) {
    *field(c, w) += 1;
}

impl Counter {
    /// A counter over the window the run's `/proc/schedstat` reads set (all of the run when
    /// it has none).
    pub fn windowed() -> Counter {
        Counter {
            windowed: true,
            ..Counter::default()
        }
    }

    fn level(topo: &IndexedTopology, cpu: u32, sd_level: u32, sd_weight: u32) -> LevelId {
        (0..topo.levels.len())
            .find(|&l| {
                topo.span(l, cpu as usize)
                    .is_some_and(|s| s.len() == sd_weight as usize)
            })
            .map_or(LevelId::Raw(sd_level), LevelId::Topo)
    }

    fn count(&mut self, key: Key, w: Which, a: u64, b: u64) {
        let place = match self.windowed {
            true => self.window.place(a, b),
            false => Place::In,
        };
        let row = self.rows.entry(key).or_default();
        match place {
            Place::In => bump(&mut row.counts, w),
            Place::InFlight => bump(&mut row.in_flight, w),
            Place::Out => {}
        }
        if place == Place::In && self.windowed {
            self.window.hold(Held::Count(key, w), b);
            self.window.hold_before(Held::Count(key, w), b);
        }
    }

    /// Moves a held count to in flight: the end read fell inside its call.
    fn unhold(&mut self, h: Held) {
        match h {
            Held::Search(_) | Held::Migration(..) | Held::Stopper | Held::Pushed(_) => {
                self.uncount(h)
            }
            Held::Count(key, w) => {
                let row = self.rows.entry(key).or_default();
                let c = field(&mut row.counts, w);
                *c = c.saturating_sub(1);
                bump(&mut row.in_flight, w);
            }
            Held::Amount(key, t, v, undetermined) => {
                let row = self.rows.entry(key).or_default();
                if undetermined {
                    row.undetermined = row.undetermined.saturating_sub(1);
                    row.undetermined_amount.sub(t, v);
                } else {
                    row.imbalance.sub(t, v);
                }
                row.in_flight_amount.add(t, v);
            }
        }
    }

    /// Takes back a count placed inside before the start read that the read leaves out.
    fn uncount(&mut self, h: Held) {
        fn down(c: &mut u64) {
            *c = c.saturating_sub(1);
        }
        match h {
            Held::Count(k, w) => down(field(&mut self.rows.entry(k).or_default().counts, w)),
            Held::Amount(k, t, v, undetermined) => {
                let row = self.rows.entry(k).or_default();
                if undetermined {
                    down(&mut row.undetermined);
                    row.undetermined_amount.sub(t, v);
                } else {
                    row.imbalance.sub(t, v);
                }
            }
            Held::Search(k) => down(&mut self.rows.entry(k).or_default().searches),
            Held::Migration(r, l) => down(self.by_migrations.entry((r, l)).or_insert(0)),
            Held::Stopper => down(&mut self.stopper_runs),
            Held::Pushed(l) => down(self.alb_pushed.entry(l).or_insert(0)),
        }
    }

    /// Counts `h` at moment `t` where `t` is inside the window (held for the start read
    /// while it has not come).
    fn count_inside(&mut self, t: u64, h: Held) {
        if !self.inside(t) {
            return;
        }
        match h {
            Held::Search(k) => self.rows.entry(k).or_default().searches += 1,
            Held::Migration(r, l) => *self.by_migrations.entry((r, l)).or_insert(0) += 1,
            Held::Stopper => self.stopper_runs += 1,
            Held::Pushed(l) => *self.alb_pushed.entry(l).or_insert(0) += 1,
            Held::Count(..) | Held::Amount(..) => return,
        }
        if self.windowed {
            self.window.hold_before(h, t);
        }
    }

    fn inside(&self, t: u64) -> bool {
        !self.windowed || self.window.place(t, t) == Place::In
    }

    /// Counts one event.
    pub fn push(&mut self, topo: &IndexedTopology, ev: &Event) {
        if self.windowed {
            self.window.saw(ev.ts_ns);
        }
        match &ev.kind {
            EventKind::Balance(b) => self.balance(topo, ev, b),
            EventKind::BalanceCall(c) => self.call(topo, ev, c),
            EventKind::Schedstat(s) if self.windowed => {
                let span = (ev.ts_ns, ev.ts_ns.saturating_add(s.read_ns));
                match s.end {
                    false => {
                        let (out, in_flight) = self.window.start(span);
                        for h in out {
                            self.uncount(h);
                        }
                        for h in in_flight {
                            self.unhold(h);
                        }
                    }
                    true => {
                        for h in self.window.end(span) {
                            self.unhold(h);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Counts a migration the analyzer classified (balancer reasons only).
    pub fn migration(&mut self, ts: u64, reason: Reason, level: Option<usize>) {
        if reason.is_balancer() {
            self.count_inside(ts, Held::Migration(reason, level));
        }
    }

    fn balance(&mut self, topo: &IndexedTopology, ev: &Event, b: &Balance) {
        if b.is_stopper_entry() {
            self.count_inside(ev.ts_ns, Held::Stopper);
            return;
        }
        let level = Self::level(topo, b.dst_cpu, b.level, b.sd_weight);
        let key = (level, idle_index(b.idle));
        match b.pid {
            Some(_) if self.calls && b.origin != Some(BalanceOrigin::Stopper) => {
                of_cpu(&mut self.pending_gained, ev.cpu).push((key, ev.ts_ns));
            }
            Some(_) if b.origin == Some(BalanceOrigin::Stopper) => {
                of_cpu(&mut self.pending_stopper, ev.cpu).push((key, ev.ts_ns));
                self.stopper_pending = true;
                self.count_inside(ev.ts_ns, Held::Pushed(level));
            }
            // Without the calls, a detach counts at its own moment.
            Some(_) => self.count(key, Which::Gained, ev.ts_ns, ev.ts_ns),
            None => {
                self.count_inside(ev.ts_ns, Held::Search(key));
                let p = of_cpu(&mut self.pending, ev.cpu);
                if p.len() >= MAX_PENDING {
                    p.remove(0);
                }
                p.push(Search {
                    level,
                    idle: b.idle,
                    migration_type: b.migration_type,
                    imbalance: b.imbalance,
                    balanced: b.balanced,
                });
            }
        }
    }

    fn call(&mut self, topo: &IndexedTopology, ev: &Event, c: &BalanceCall) {
        self.calls = true;
        let level = Self::level(topo, c.this_cpu, c.level, c.sd_weight);
        let key = (level, idle_index(c.idle));
        let (entry, exit) = (ev.ts_ns, c.exit_ns(ev.ts_ns));
        // lb_count goes up near the call's entry, but a preemptible call (PREEMPT_RT, where
        // softirqs run in tasks) can wait between its entry and that line: a call spanning a
        // read is in flight (6.1-rt: lbscope 575, kernel 574, the call whose outcome was
        // made during the end read counted at its entry).
        self.count(key, Which::Count, entry, exit);
        let outcome = match (c.moved, c.failed) {
            (0, true) => Some(Which::Failed),
            (0, false) => Some(Which::Balanced),
            _ => None,
        };
        if let Some(w) = outcome {
            self.count(key, w, entry, exit);
        }
        let gained = take_cpu(&mut self.pending_gained, ev.cpu);
        for (k, ts) in gained {
            // Another call's detaches (its exit went unrecorded) count at their own moment.
            let end = if k == key { exit.max(ts) } else { ts };
            self.count(k, Which::Gained, ts, end);
        }
        let searches = take_cpu(&mut self.pending, ev.cpu);
        // Searches of this call only: same domain and idle type (an earlier call whose exit
        // was not recorded leaves its searches behind).
        let searches: Vec<&Search> = searches
            .iter()
            .filter(|s| s.level == level && s.idle == c.idle)
            .collect();
        let last = searches.len().saturating_sub(1);
        // The kernel adds a search's imbalance somewhere between the call's entry and exit.
        let place = match self.windowed {
            true => self.window.place(entry, exit),
            false => Place::In,
        };
        for (i, s) in searches.iter().enumerate() {
            if s.balanced || place == Place::Out {
                continue;
            }
            let went_on = i < last || c.moved > 0 || c.failed;
            let (t, v) = (s.migration_type, s.imbalance);
            let row = self.rows.entry(key).or_default();
            match (place, went_on) {
                (Place::InFlight, _) => row.in_flight_amount.add(t, v),
                (_, true) => row.imbalance.add(t, v),
                (_, false) => {
                    row.undetermined += 1;
                    row.undetermined_amount.add(t, v);
                }
            }
            if place == Place::In && self.windowed {
                self.window.hold(Held::Amount(key, t, v, !went_on), exit);
                self.window
                    .hold_before(Held::Amount(key, t, v, !went_on), exit);
            }
        }
    }

    /// `cpu` switched at `ts`: the active-balance stopper that ran there has returned, and
    /// the tasks it detached count as made from their detach to `ts`. (The stopper thread
    /// runs its work to the end: nothing preempts it.)
    pub fn switched(&mut self, cpu: u32, ts: u64) {
        if !self.stopper_pending {
            return;
        }
        for (k, t) in take_cpu(&mut self.pending_stopper, cpu) {
            self.count(k, Which::Gained, t, ts.max(t));
        }
        self.stopper_pending = self.pending_stopper.iter().any(|p| !p.is_empty());
    }

    /// The counts so far, then zeroes them (the calls in progress are kept; the stopper's
    /// detaches whose switch has not come yet count at their own moment).
    pub fn take(&mut self, topo: &IndexedTopology) -> BalancerCounters {
        let stopper: Vec<(Key, u64)> = self
            .pending_stopper
            .iter_mut()
            .flat_map(std::mem::take)
            .collect();
        self.stopper_pending = false;
        for (k, t) in stopper {
            self.count(k, Which::Gained, t, t);
        }
        let name = |l: LevelId| match l {
            LevelId::Topo(i) => topo.level_key(Some(i)).to_string(),
            LevelId::Raw(n) => format!("sd_level{n}"),
        };
        self.window.clear_held();
        let rows = std::mem::take(&mut self.rows)
            .into_iter()
            .filter(|(_, r)| {
                r.counts != Counts::default() || r.in_flight != Counts::default() || r.searches > 0
            })
            .map(|((l, i), r)| CounterRow {
                level: name(l),
                idle: idle_name(IDLE_ORDER[i]).to_string(),
                counts: r.counts,
                searches: r.searches,
                imbalance: r.imbalance,
                imbalance_undetermined: r.undetermined,
                imbalance_undetermined_amount: r.undetermined_amount,
                in_flight: r.in_flight,
                imbalance_in_flight_amount: r.in_flight_amount,
            })
            .collect();
        let mut gained_by_migrations: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for ((reason, level), n) in std::mem::take(&mut self.by_migrations) {
            let level = level.map_or("unknown".to_string(), |l| name(LevelId::Topo(l)));
            *gained_by_migrations
                .entry(reason.name().to_string())
                .or_default()
                .entry(level)
                .or_insert(0) += n;
        }
        BalancerCounters {
            calls_recorded: self.calls,
            rows,
            alb_pushed: std::mem::take(&mut self.alb_pushed)
                .into_iter()
                .map(|(l, n)| (name(l), n))
                .collect(),
            stopper_runs: std::mem::take(&mut self.stopper_runs),
            gained_by_migrations,
        }
    }
}

/// `cpu`'s list of what its call in progress holds, grown to reach it.
fn of_cpu<T>(per_cpu: &mut Vec<Vec<T>>, cpu: u32) -> &mut Vec<T> {
    let cpu = cpu as usize;
    if per_cpu.len() <= cpu {
        per_cpu.resize_with(cpu + 1, Vec::new);
    }
    &mut per_cpu[cpu]
}

/// `cpu`'s list, emptied (none when it never held anything).
fn take_cpu<T>(per_cpu: &mut [Vec<T>], cpu: u32) -> Vec<T> {
    per_cpu
        .get_mut(cpu as usize)
        .map(std::mem::take)
        .unwrap_or_default()
}
