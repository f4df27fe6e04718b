//! The balancer model: what the kernel's load balancer sees at each domain (group statistics,
//! group types, busiest group, imbalance) computed from the event stream, and the findings
//! (wrong placements) judged against it.
//!
//! Pure and deterministic like the analyzer that owns it: no I/O, no clock, no terminal; time
//! comes only from event timestamps. The analyzer feeds every event to [`Model::push`], reports
//! idle-while-waiting stretches it has measured through [`Model::missed_pull`] (that accounting
//! lives in `analyze::idle`, not here), and takes the interval's views and findings with
//! [`Model::take`].
//!
//! Invariants: memory is bounded by CPUs, domains and live tasks (a task is dropped at its
//! exit) plus at most `max_findings` finding details per interval.
//!
//! Approximations (see also `stats`): per-CPU inputs are the last `NrRunning`, `Pelt` and
//! `Capacity` events (capacity 1024 until one is seen) and idleness from `Switch`; per-task
//! load and misfit are not observable, so the model works with per-CPU figures only; a
//! thread's place is the last CPU it was seen on. A folded source (live `--fold`) sends
//! switches only at idle transitions and wakeups only while a CPU may be idle: idleness stays
//! exact, but a busy CPU's `current` may name a task switched out since, and a thread is seen
//! running (for uneven_spread) at its first run on each CPU in each 100 ms.
//! A CPU with a remote wakeup on its way (`waking`) is not idle to the balancer, as
//! idle_cpu() says while rq->ttwu_pending is set.

mod capacity;
pub mod domains;
pub mod findings;
mod judge;
pub mod margin;
mod placement;
mod spread;
pub mod stats;
mod task;
#[cfg(test)]
mod tests;
mod waking;

pub use domains::DomainView;
pub use findings::{Finding, FindingKind, FindingLog};
pub use stats::{GroupStats, GroupType, MigrationType, ModelRules};

use crate::cpuset::CpuSet;
use crate::event::{CpuIdleType, Event, EventKind, OptU32, PeltInfo, Pid};
use crate::idhash::IdSet;
use crate::topology::{IndexedTopology, LevelKind, Topology};
use domains::{DomainTable, ModelDomain};
use serde_json::json;
use stats::CpuSample;
pub use task::{TaskExt, TaskTable, UnseenMove};

/// The model's thresholds; every one is a `report`/`diff` flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelConfig {
    /// Which kernel's rules (from the kernel release of the recording or the running kernel).
    pub rules: ModelRules,
    /// missed_pull: how long a CPU may stay idle while a movable task waits, in ms; `None` =
    /// per domain, see [`Model::missed_pull_ns`].
    pub missed_pull_ms: Option<u64>,
    /// ping_pong: the window of an A -> B -> A round trip, ns.
    pub ping_pong_ns: u64,
    /// churn: migrations per second into a domain above which churn is considered.
    pub churn_per_s: u64,
    /// uneven_spread: the most loaded node (or LLC) must hold more than this percentage of the
    /// least loaded one's threads.
    pub spread_ratio_pct: u64,
    /// uneven_spread: processes with fewer threads than this are not judged.
    pub spread_min_threads: u32,
    /// uneven_spread: how long (ns of event time) a process must stay uneven on every sample
    /// before it is reported (it is also judged at each interval's close).
    pub spread_hold_ns: u64,
    /// Finding details kept per interval (all are counted).
    pub max_findings: usize,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            rules: ModelRules::default(),
            missed_pull_ms: None,
            ping_pong_ns: 10_000_000,
            churn_per_s: 200,
            spread_ratio_pct: 200,
            spread_min_threads: 4,
            spread_hold_ns: 100_000_000,
            max_findings: 50,
        }
    }
}

/// An idle-while-waiting stretch the analyzer measured in one domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleStretch {
    /// Level index.
    pub level: usize,
    /// The domain's span.
    pub span: CpuSet,
    /// When the stretch began (ns).
    pub since_ns: u64,
    /// Now (ns).
    pub now_ns: u64,
    /// Idle CPUs of the span.
    pub idle: CpuSet,
    /// CPUs of the span with a waiting task.
    pub waiting: CpuSet,
    /// Some of the waiting tasks (at most 8).
    pub pids: Vec<Pid>,
}

/// What is known of one CPU.
#[derive(Clone, Copy, Debug, Default)]
struct CpuState {
    current: Option<Pid>,
    /// The CPU's stopper thread is woken or running (it is not a CFS task).
    stopper: bool,
    /// Tasks of other classes than CFS among `nr_running`, as the last `NrRunning` that
    /// carried the CFS count said (`None`: not known, and only the stopper is told apart).
    not_cfs: Option<u32>,
    nr_running: Option<u32>,
    /// Balancer moves into this CPU since its last `NrRunning`: detach_tasks moves a batch
    /// before attach_tasks queues it, so `nr_running` lags by that many.
    pending_in: u32,
    load: u64,
    runnable: u64,
    util: u64,
    /// A PELT sample was seen (`util` is then known).
    pelt_seen: bool,
    /// When the last PELT sample came.
    pelt_ns: u64,
    /// When the last record of its tasks came (a switch, its run queue's length, a remote
    /// wakeup queued or activated).
    tasks_ns: u64,
    /// The run queue the last busiest-group search that read this CPU sent
    /// (`PeltInfo::at_search`: the balancer hooks); the CPU's at any later search that did
    /// not send it again, unless a record of the CPU came after it.
    at_search: Option<SearchPelt>,
    /// When `at_search` came.
    search_ns: u64,
    /// util_est (0 when the recording does not have it).
    util_est: u64,
    capacity: Option<u64>,
    /// Remote wakeups queued for this CPU and not yet activated (see `waking`).
    wakes_pending: u32,
}

/// A CPU's run queue as a busiest-group search was about to read it: the root PELT sums and
/// the task counts.
#[derive(Clone, Copy, Debug, Default)]
struct SearchPelt {
    load: u64,
    runnable: u64,
    util: u64,
    util_est: u64,
    nr_running: u32,
    not_cfs: u32,
    idle: bool,
}

impl CpuState {
    /// `nr_running` as last seen, else what the current task says of it.
    fn nr_running(&self) -> u32 {
        self.nr_running.unwrap_or(match self.current {
            Some(0) | None => 0,
            Some(_) => 1,
        })
    }

    /// The capacity as last seen, else a full one.
    fn capacity(&self) -> u64 {
        self.capacity.unwrap_or(stats::CAPACITY_SCALE)
    }

    /// [`CpuState::sample`] for a busiest-group search that began at `since`, from the run
    /// queue the searches sent where it is the newest: its PELT sums unless a PELT sample
    /// came after it, its task counts unless a record of its tasks did. A search sends a CPU
    /// as it begins, or nothing when the CPU is as the last search sent it; a record after
    /// `since` is the CPU changing while the search ran, and one between the last search's
    /// record and `since` a change that search's record does not hold (in the lab, 14 of
    /// 2,946 searches of one run read a CPU whose records had changed since a search last
    /// sent it, and sent nothing for it).
    fn sample_at_search(&self, since: u64) -> CpuSample {
        let mut s = self.sample();
        let Some(p) = self.at_search.filter(|_| self.search_ns <= since) else {
            return s;
        };
        if self.pelt_ns <= self.search_ns {
            s.load_avg = p.load;
            s.runnable_avg = p.runnable;
            s.util_avg = p.util;
            s.util_est = p.util_est;
        }
        if self.tasks_ns <= self.search_ns {
            s.nr_running = p.nr_running;
            s.not_cfs = p.not_cfs;
            s.idle = p.idle;
        }
        s
    }

    fn sample(&self) -> CpuSample {
        let nr = self.nr_running();
        CpuSample {
            nr_running: nr,
            not_cfs: self.not_cfs.unwrap_or(u32::from(self.stopper)),
            load_avg: self.load,
            runnable_avg: self.runnable,
            util_avg: self.util,
            util_est: self.util_est,
            capacity: self.capacity(),
            // idle_cpu(): also not idle while rq->ttwu_pending is set.
            idle: nr == 0 && self.current.is_none_or(|p| p == 0) && self.wakes_pending == 0,
        }
    }

    /// Seen running its idle task with nothing queued. Findings use this, not the
    /// sample's idleness, so that a CPU not seen yet never counts as an idle one.
    fn known_idle(&self) -> bool {
        self.current == Some(0) && self.nr_running.unwrap_or(0) == 0
    }

    /// Running something other than its idle task (and other than `pid`).
    fn busy_with_other(&self, pid: Pid) -> bool {
        self.current.is_some_and(|c| c != 0 && c != pid)
    }
}

/// The model's answer for one balance pass ([`Model::decide_at`]).
#[derive(Clone, Debug)]
pub struct BalancePass {
    /// Level index of the domain.
    pub level: usize,
    /// Index in `groups` of the group holding the pulling CPU.
    pub local: usize,
    /// Every group's statistics and type.
    pub groups: Vec<GroupStats>,
    /// Busiest group, imbalance and migration type.
    pub decision: stats::Decision,
}

/// What is known of one CPU, as the analyzer reads it from the one per-CPU table (`None`:
/// not seen yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuView {
    /// The task it runs (0: its idle task).
    pub current: Option<Pid>,
    /// Its run queue's nr_running, as last seen.
    pub nr_running: Option<u32>,
    /// Its root cfs_rq's util_avg, as last seen.
    pub util_avg: Option<u64>,
    /// Its capacity, as last seen.
    pub capacity: Option<u64>,
}

/// The longest wait for a busy CPU's tick to kick the nohz idle balancer (HZ=100).
pub(crate) const NOHZ_KICK_MS: u64 = 10;

/// The stopper threads' pids (one per CPU, started at boot): a set, and the range it spans,
/// which settles the check every switch and wakeup makes for nearly every task without a
/// hash lookup.
#[derive(Clone, Debug, Default)]
struct Stoppers {
    set: IdSet<Pid>,
    lo: Pid,
    hi: Pid,
}

impl Stoppers {
    fn insert(&mut self, pid: Pid) {
        if self.set.is_empty() {
            (self.lo, self.hi) = (pid, pid);
        }
        (self.lo, self.hi) = (self.lo.min(pid), self.hi.max(pid));
        self.set.insert(pid);
    }

    #[inline]
    fn contains(&self, pid: Pid) -> bool {
        (self.lo..=self.hi).contains(&pid) && !self.set.is_empty() && self.set.contains(&pid)
    }
}

/// The balancer model; see the module documentation. `X` is what the owner of its task
/// table keeps per task beside it ([`TaskTable`]).
#[derive(Clone, Debug)]
pub struct Model<X = ()> {
    topo: IndexedTopology,
    config: ModelConfig,
    table: DomainTable,
    cpus: Vec<CpuState>,
    /// The CPUs whose state is `known_idle`, kept as it changes so that a wakeup's check
    /// intersects sets instead of visiting every CPU of the LLC.
    known_idle: CpuSet,
    /// How many CPUs of each LLC domain (by index at `llc_level`) are in `known_idle`, when
    /// that level's domains partition the CPUs (empty otherwise): a wakeup onto a busy LLC
    /// is then settled by one count.
    llc_idle: Vec<u32>,
    tasks: TaskTable<X>,
    /// Pids of the CPUs' stopper threads (`migration/N`), which are not CFS tasks.
    stoppers: Stoppers,
    /// Wakeups between `sched_waking` and `sched_wakeup` (see `waking`).
    wakes: waking::InFlight,
    log: FindingLog,
    /// Migrations into each domain (flat index) this interval.
    moves: Vec<u64>,
    /// Each domain's imbalance at the previous interval close.
    prev_imbalance: Vec<u64>,
    /// The highest level sharing the LLC (the wakeup scan's scope), if any.
    llc_level: Option<usize>,
    /// uneven_spread's samples.
    spread: spread::SpreadWatch,
    /// The groups' `sgc->capacity` as the balancer's recorded searches refreshed them.
    sgc: capacity::GroupCapacities,
    /// The newest event's time ([`Model::tick`]).
    now: u64,
}

impl Model {
    /// A model of `topo`'s domains with a task table of its own.
    pub fn new(topo: &Topology, config: ModelConfig) -> Model {
        Model::with_tasks(topo, config)
    }
}

impl<X: TaskExt> Model<X> {
    /// A model of `topo`'s domains whose task table also holds its owner's `X` per task.
    pub fn with_tasks(topo: &Topology, config: ModelConfig) -> Model<X> {
        let table = DomainTable::new(topo, config.rules);
        let n = table.doms.len();
        let llc_level = topo
            .levels
            .iter()
            .rposition(|l| matches!(l.kind, LevelKind::Smt | LevelKind::Cluster | LevelKind::Llc));
        let topo_ix = IndexedTopology::new(topo.clone());
        let llc_idle = match llc_level {
            Some(l) if topo_ix.partitions(l) => vec![0; topo.levels[l].domains.len()],
            _ => Vec::new(),
        };
        Model {
            topo: topo_ix,
            llc_idle,
            log: FindingLog::new(config.max_findings),
            config,
            table,
            cpus: vec![CpuState::default(); cpu_slots(topo)],
            known_idle: CpuSet::new(),
            tasks: TaskTable::default(),
            stoppers: Stoppers::default(),
            wakes: waking::InFlight::default(),
            moves: vec![0; n],
            prev_imbalance: vec![0; n],
            llc_level,
            spread: spread::SpreadWatch::new(topo, llc_level),
            now: 0,
            sgc: capacity::GroupCapacities::default(),
        }
    }

    /// What is known of `cpu`; `None` past the CPUs seen.
    #[inline]
    pub fn cpu(&self, cpu: usize) -> Option<CpuView> {
        self.cpus.get(cpu).map(|c| CpuView {
            current: c.current,
            nr_running: c.nr_running,
            util_avg: c.pelt_seen.then_some(c.util),
            capacity: c.capacity,
        })
    }

    /// Every CPU's view, in CPU order: the CPUs the topology names, and any other seen.
    pub fn cpus(&self) -> impl Iterator<Item = CpuView> + '_ {
        (0..self.cpus.len()).filter_map(|c| self.cpu(c))
    }

    /// The one task table.
    pub fn tasks(&self) -> &TaskTable<X> {
        &self.tasks
    }

    /// The one task table, for its owner's part of each entry.
    pub fn tasks_mut(&mut self) -> &mut TaskTable<X> {
        &mut self.tasks
    }

    /// The rules in use.
    pub fn rules(&self) -> ModelRules {
        self.config.rules
    }

    fn cpu_mut(&mut self, cpu: u32) -> Option<&mut CpuState> {
        crate::cpuset::per_cpu_mut(&mut self.cpus, cpu)
    }

    fn sample(&self, cpu: usize) -> CpuSample {
        self.cpus.get(cpu).map(CpuState::sample).unwrap_or_default()
    }

    /// Whether `cpu` is known to be idle (see `CpuState::known_idle`).
    fn known_idle(&self, cpu: usize) -> bool {
        self.cpus.get(cpu).is_some_and(CpuState::known_idle)
    }

    /// Brings `known_idle` (and the LLC counts) up to date after `cpu`'s state changed.
    fn refresh_idle(&mut self, cpu: u32) {
        let c = cpu as usize;
        let idle = self.cpus.get(c).is_some_and(CpuState::known_idle);
        if idle == self.known_idle.contains(c) {
            return;
        }
        match idle {
            true => self.known_idle.insert(c),
            false => self.known_idle.remove(c),
        }
        if let Some(n) = self
            .llc_level
            .and_then(|l| self.topo.domain_index(l, c))
            .and_then(|d| self.llc_idle.get_mut(d))
        {
            *n = if idle { *n + 1 } else { *n - 1 };
        }
    }

    fn samples(&self) -> Vec<CpuSample> {
        self.cpus.iter().map(CpuState::sample).collect()
    }

    /// Whether a search has sent the run queue of every CPU of `cpus` (then
    /// [`Model::decide_at_search`] reads, for each, what the searches sent or a record newer
    /// than that, whatever records a stopped CPU still holds back).
    pub fn search_sent_all(&self, mut cpus: impl Iterator<Item = u32>) -> bool {
        cpus.all(|c| {
            self.cpus
                .get(c as usize)
                .is_some_and(|s| s.at_search.is_some())
        })
    }

    fn samples_at_search(&self, since: u64) -> Vec<CpuSample> {
        self.cpus
            .iter()
            .map(|c| c.sample_at_search(since))
            .collect()
    }

    /// Folds one event: per-CPU and per-task state, and the findings judged at events
    /// (busy_wakeup, harmful_migration, ping_pong).
    ///
    /// The kinds of nearly every event (switches, wakeups, `nr_running`, PELT) have their own
    /// entry points, for a caller that already matched the event's kind ([`Model::tick`]
    /// first, then one of them or [`Model::push_other`]); the others are handled out of line,
    /// so that the per-event path stays small.
    #[inline]
    pub fn push(&mut self, ev: &Event) {
        let (t, cpu) = (ev.ts_ns, ev.cpu);
        self.tick(t);
        match &ev.kind {
            EventKind::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => {
                self.stopper_switch(cpu, *prev_pid, *prev_state, *next_pid);
                self.switched(cpu, *next_pid);
                self.switched_out(*prev_pid, *prev_state);
            }
            EventKind::Wakeup { pid, target_cpu } => {
                self.woken(t, *pid, *target_cpu);
            }
            EventKind::NrRunning {
                rq_cpu,
                nr_running,
                util_est,
                cfs_h_nr_running,
            } => self.run_queue(*rq_cpu, *nr_running, *util_est, *cfs_h_nr_running),
            EventKind::Pelt(p) if p.at_search.is_some() => self.pelt_at_search(p),
            EventKind::Pelt(p) => {
                self.pelt(p.rq_cpu, p.load_avg, p.runnable_avg, p.util_avg, p.util_est)
            }
            _ => self.push_other(ev),
        }
    }

    /// The first step of every event: the time-driven samples (uneven_spread) that are due
    /// at `t`, the event's timestamp.
    #[inline]
    pub fn tick(&mut self, t: u64) {
        self.now = t;
        self.spread_tick(t);
    }

    /// A `Switch` on `cpu` to `next`; returns the owner's part of `next`'s entry (none for
    /// the idle task).
    #[inline]
    pub fn switched(&mut self, cpu: u32, next: Pid) -> Option<&mut X> {
        self.wake_done(next);
        let now = self.now;
        if let Some(c) = self.cpu_mut(cpu) {
            c.current = Some(next);
            c.tasks_ns = now;
        }
        self.refresh_idle(cpu);
        self.tasks.ran(next, cpu)
    }

    /// The switch-out of `prev` in state `prev_state`: after its exit (TASK_DEAD), its entry
    /// goes (an exiting task may run again after `sched_process_exit`, which makes it one).
    #[inline]
    pub fn switched_out(&mut self, prev: Pid, prev_state: u32) {
        if prev_state & crate::event::TASK_DEAD != 0 {
            self.tasks.remove(prev);
        }
    }

    /// A `Wakeup` at `t` of `pid`, queued on `target`; returns the owner's part of its entry
    /// (none for pid 0).
    #[inline]
    pub fn woken(&mut self, t: u64, pid: Pid, target: u32) -> Option<&mut X> {
        self.wake_done(pid);
        if self.stoppers.contains(pid) {
            if let Some(c) = self.cpu_mut(target) {
                c.stopper = true;
            }
        }
        self.check_wakeup(t, pid, target);
        self.tasks.place(pid, target)
    }

    /// The stopper's part of a `Switch` on `cpu`: it runs from its wakeup until it switches
    /// out asleep (it never waits preempted: the stop class preempts every other).
    #[inline]
    pub fn stopper_switch(&mut self, cpu: u32, prev: Pid, prev_state: u32, next: Pid) {
        let next_is = self.stoppers.contains(next);
        let prev_sleeps = prev_state != 0 && self.stoppers.contains(prev);
        if !next_is && !prev_sleeps {
            return;
        }
        if let Some(c) = self.cpu_mut(cpu) {
            if next_is {
                c.stopper = true;
            } else if prev_sleeps {
                c.stopper = false;
            }
        }
    }

    /// An `NrRunning` of `rq_cpu`: its run queue's length, and what the record carries of its
    /// root cfs_rq (nothing when it does not): util_est, the newest figure until the next
    /// `Pelt` or `NrRunning` of that CPU; and the CFS task count, which tells the other
    /// classes' tasks among `nr_running` until the next `NrRunning` (every enqueue and
    /// dequeue, of any class, changes nr_running).
    #[inline]
    pub fn run_queue(
        &mut self,
        rq_cpu: u16,
        nr_running: u32,
        util_est: OptU32,
        cfs_h_nr_running: OptU32,
    ) {
        let cpu = u32::from(rq_cpu);
        let now = self.now;
        if let Some(c) = self.cpu_mut(cpu) {
            c.nr_running = Some(nr_running);
            c.tasks_ns = now;
            c.pending_in = 0;
            if let Some(e) = util_est.get() {
                c.util_est = u64::from(e);
            }
            if let Some(h) = cfs_h_nr_running.get() {
                c.not_cfs = Some(nr_running.saturating_sub(h));
            }
        }
        self.refresh_idle(cpu);
    }

    /// A `Pelt` sample of `rq_cpu` (at the time [`Model::tick`] was given).
    #[inline]
    pub fn pelt(
        &mut self,
        rq_cpu: u32,
        load: u64,
        runnable: u64,
        util: u64,
        util_est: Option<u64>,
    ) {
        let now = self.now;
        if let Some(c) = self.cpu_mut(rq_cpu) {
            c.load = load;
            c.runnable = runnable;
            c.util = util;
            c.pelt_seen = true;
            c.pelt_ns = now;
            c.util_est = util_est.unwrap_or(0);
        }
    }

    /// A run queue a busiest-group search sent (a `Pelt` with `at_search`): kept for
    /// [`Model::decide_at_search`] only, so that everything else sees the same samples with
    /// the balancer hooks as without.
    pub fn pelt_at_search(&mut self, p: &PeltInfo) {
        let Some(t) = p.at_search else {
            return;
        };
        let now = self.now;
        if let Some(c) = self.cpu_mut(p.rq_cpu) {
            c.search_ns = now;
            c.at_search = Some(SearchPelt {
                load: p.load_avg,
                runnable: p.runnable_avg,
                util: p.util_avg,
                util_est: p.util_est.unwrap_or(0),
                nr_running: t.nr_running,
                not_cfs: t.nr_running.saturating_sub(t.cfs_h_nr_running),
                idle: t.idle,
            });
        }
    }

    /// [`Model::push`] for every kind without its own entry point (after [`Model::tick`]).
    #[inline(never)]
    pub fn push_other(&mut self, ev: &Event) {
        let t = ev.ts_ns;
        match &ev.kind {
            EventKind::Waking { pid, prev_cpu } => self.waking(ev.cpu, *pid, *prev_cpu),
            EventKind::WakeupNew {
                pid,
                tgid,
                target_cpu,
            } => {
                self.tasks.identify(*pid, *tgid);
                self.tasks.place(*pid, *target_cpu);
            }
            EventKind::Migrate(m) if m.src_cpu != m.dst_cpu && m.pid != 0 => {
                let level = self
                    .topo
                    .crossed_level(m.src_cpu as usize, m.dst_cpu as usize);
                self.migrated(t, m.pid, m.src_cpu, m.dst_cpu, m.reason, level);
            }
            EventKind::Capacity { rq_cpu, capacity } => {
                if let Some(c) = self.cpu_mut(*rq_cpu) {
                    c.capacity = Some(*capacity);
                }
            }
            EventKind::Task(t) => {
                // The per-CPU stopper threads are named by the kernel (cpu_stop_threads).
                if t.comm.starts_with("migration/") {
                    self.stoppers.insert(t.pid);
                }
                self.tasks.identify(t.pid, t.tgid)
            }
            EventKind::Affinity { pid, cpus } => self.tasks.set_allowed(*pid, cpus),
            EventKind::Cgroup(c) => {
                self.tasks.set_cgroup(c.pid, c.id);
                if let Some(p) = &c.path {
                    self.spread.name_cgroup(c.id, p);
                }
            }
            EventKind::Exit { pid, .. } => {
                self.wake_done(*pid);
                self.tasks.remove(*pid);
            }
            EventKind::Balance(b) if b.pid.is_none() && !b.is_stopper_entry() => {
                self.balance_search(t, b.dst_cpu, b.sd_weight, b.idle);
            }
            _ => {}
        }
    }

    /// The model's decision for one of the kernel's balance passes: `dst_cpu` pulling at its
    /// domain of `sd_weight` CPUs (the kernel's `sd->level` counts levels this topology may
    /// have dropped as degenerate, so the span weight names the domain) with idle type
    /// `idle`, from the per-CPU state folded so far; `None` when no domain around `dst_cpu`
    /// spans `sd_weight` CPUs.
    pub fn decide_at(
        &self,
        dst_cpu: u32,
        sd_weight: u32,
        idle: CpuIdleType,
    ) -> Option<BalancePass> {
        self.decide(&self.samples(), dst_cpu, sd_weight, idle)
    }

    /// [`Model::decide_at`] for a search the kernel began at `since`, with the run queues the
    /// searches sent where the recording has them (the balancer hooks send those of the
    /// span's CPUs as a search begins); a CPU with a record newer than what they sent has its
    /// record ([`CpuState::sample_at_search`]).
    pub fn decide_at_search(
        &self,
        since: u64,
        dst_cpu: u32,
        sd_weight: u32,
        idle: CpuIdleType,
    ) -> Option<BalancePass> {
        self.decide(&self.samples_at_search(since), dst_cpu, sd_weight, idle)
    }

    fn decide(
        &self,
        samples: &[CpuSample],
        dst_cpu: u32,
        sd_weight: u32,
        idle: CpuIdleType,
    ) -> Option<BalancePass> {
        let cpu = dst_cpu as usize;
        let level = self.level_spanning(cpu, sd_weight)?;
        let dom = &self.table.doms[self.table.index(&self.topo, level, cpu)?];
        let local = dom.group_of(cpu)?;
        let dst_idle = idle != CpuIdleType::NotIdle;
        let caps = self.group_capacities(level, dom);
        let (groups, decision) = dom.decide_with(samples, &caps, Some(cpu), local, dst_idle);
        Some(BalancePass {
            level,
            local,
            groups,
            decision,
        })
    }

    /// The level whose domain around `cpu` spans `sd_weight` CPUs.
    fn level_spanning(&self, cpu: usize, sd_weight: u32) -> Option<usize> {
        (0..self.topo.levels.len()).find(|&l| {
            self.topo
                .span(l, cpu)
                .is_some_and(|s| s.len() == sd_weight as usize)
        })
    }

    /// A busiest-group search of the kernel's at `t` (a `Balance` event): update_sd_lb_stats
    /// refreshes the local group's `sgc->capacity` first (update_group_capacity), on a newly
    /// idle pass only once it is due again. The lowest level's groups are single CPUs whose
    /// capacity is the CPU's own (`Capacity` events); a group one level up sums its child
    /// domain's groups as last refreshed, or, under an overlapping (NUMA) child, its CPUs'
    /// current capacities. Due again after `sd->balance_interval`, taken as its least,
    /// the span weight in ms (sd_init's min_interval; it doubles while the domain stays
    /// balanced).
    pub fn balance_search(&mut self, t: u64, dst_cpu: u32, sd_weight: u32, idle: CpuIdleType) {
        let cpu = dst_cpu as usize;
        let Some(level) = self.level_spanning(cpu, sd_weight).filter(|&l| l > 0) else {
            return;
        };
        let Some(group) = self.topo.span(level - 1, cpu) else {
            return;
        };
        if idle == CpuIdleType::NewlyIdle && !self.sgc.due(t, level, &group) {
            return;
        }
        let capacity = self.child_capacity(level - 1, cpu);
        let interval = u64::from(sd_weight) * 1_000_000;
        self.sgc.refresh(t, level, group, capacity, interval);
    }

    /// update_group_capacity's sum over the groups of `cpu`'s domain at level `child`.
    fn child_capacity(&self, child: usize, cpu: usize) -> u64 {
        let now = |s: &CpuSet| -> u64 {
            s.iter()
                .map(|c| {
                    self.cpus
                        .get(c)
                        .map_or(stats::CAPACITY_SCALE, CpuState::capacity)
                })
                .sum()
        };
        let Some(span) = self.topo.span(child, cpu) else {
            return 0;
        };
        if child == 0 || self.topo.levels[child].kind == LevelKind::Numa {
            return now(&span);
        }
        match self.table.index(&self.topo, child, cpu) {
            Some(i) => self.table.doms[i]
                .groups
                .iter()
                .map(|h| self.sgc.of(child, h).unwrap_or_else(|| now(h)))
                .sum(),
            None => now(&span),
        }
    }

    /// Each group's `sgc->capacity` of `dom` (at `level`) where a recorded search refreshed
    /// it; empty when none is known.
    fn group_capacities(&self, level: usize, dom: &ModelDomain) -> Vec<Option<u64>> {
        if level == 0 || self.sgc.is_empty() {
            return Vec::new();
        }
        dom.groups.iter().map(|g| self.sgc.of(level, g)).collect()
    }

    /// The report key of level `level`.
    pub fn level_key(&self, level: usize) -> &str {
        self.topo.level_key(Some(level))
    }

    /// Closes the interval `[start, end)`: judges churn and uneven_spread, and returns every
    /// domain's view at `end` (those whose span passes `keep`), the kept findings and the counts
    /// by kind.
    pub fn take(
        &mut self,
        start: u64,
        end: u64,
        keep: impl Fn(&CpuSet) -> bool,
    ) -> (
        Vec<DomainView>,
        Vec<Finding>,
        std::collections::BTreeMap<String, u64>,
    ) {
        let samples = self.samples();
        let mut views = Vec::with_capacity(self.table.doms.len());
        let len = end.saturating_sub(start);
        for i in 0..self.table.doms.len() {
            let dom = &self.table.doms[i];
            let v = dom.view_with(&samples, &self.group_capacities(dom.level, dom));
            let moves = std::mem::take(&mut self.moves[i]);
            let prev = std::mem::replace(&mut self.prev_imbalance[i], v.imbalance);
            let rate = (moves as u128 * 1_000_000_000 / u128::from(len.max(1))) as u64;
            if len > 0 && rate > self.config.churn_per_s && v.imbalance >= prev {
                self.churn(end, &v, moves, rate, prev);
            }
            if keep(&v.span) {
                views.push(v);
            }
        }
        self.uneven_spread(end);
        self.tasks.new_interval();
        let (f, by_kind) = self.log.take();
        (views, f, by_kind)
    }
}

/// Slots of the per-CPU table at the start: up to the highest CPU the topology names.
fn cpu_slots(topo: &Topology) -> usize {
    let mut all = topo.online.or(&CpuSet::first_n(topo.nr_cpus));
    for l in &topo.levels {
        for d in &l.domains {
            all = all.or(&d.span);
        }
    }
    all.iter().last().map_or(0, |c| c + 1)
}
