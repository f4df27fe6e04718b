//! The analyzer: folds [`Event`]s into per-interval [`Snapshot`]s. Pure and deterministic: no
//! I/O, no clock, no terminal; time comes only from event timestamps, so replaying a
//! recording gives exactly the figures the live run showed.
//!
//! [`Analyzer`] is the one owner of state: per-CPU state (current task, nr_running, PELT,
//! capacity), per-task state (tgid, comm, affinity, runqlat enqueue time, where it waits),
//! and the interval's counters, which live in the submodules:
//! - `hist`: latency histograms (runqlat log2 slots, log-linear percentiles);
//! - `latency`: per-interval latency collection (global, per CPU, per domain, per process);
//! - `migrations`: counts by reason and level crossed, unknown stacks;
//! - `idle`: idle-while-others-wait time per domain;
//! - `folded`: folded mode, for sources that fold latency in the kernel (from the first
//!   `Fold` event on: latency from `Fold` alone, waiters from `nr_running`, no per-task wait);
//! - `filter`: what is reported; `snapshot`: the JSON contract.
//!
//! Invariants: memory is bounded by CPUs, live tasks and distinct stacks, never by time (a
//! task's state is dropped at its exit, and at switch-in when nothing else is known of it).
//! Time never runs backwards inside the analyzer: an event stamped earlier than one already
//! seen (ring buffers of different CPUs interleave) is accounted at the latest time seen, in
//! arrival order; latency deltas saturate at zero.

mod filter;
mod folded;
mod hist;

mod idle;
mod latency;
mod migrations;
mod per_task;
mod snapshot;
mod task;
#[cfg(test)]
pub(crate) mod tests;

pub use filter::{AnalyzerConfig, Filter};
pub use hist::{log2_slot, LOG2_SLOTS};
pub use idle::WaitStatus;
pub use latency::TOP_PROCESSES;
pub use migrations::reason_names;
pub use per_task::TOP_TASKS;
pub use snapshot::{
    CpuLatency, CpuStatus, DomainLatency, IdleWhileWaiting, LatencySummary, MigrationStats,
    ProcessLatency, Signal, Snapshot, TaskMigrations, UnknownStack, SIGNAL_MIN_FRACTION,
};

use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind, Pid, Reason, ReasonSource};
use crate::idhash::IdMap;
use crate::model::{IdleStretch, Model};
use crate::topology::{IndexedTopology, Topology};
use idle::IdleAccounting;
use latency::LatencyCollector;
use migrations::MigrationCounter;
use per_task::PerTask;
use std::collections::BTreeMap;
use task::{forget_exited, identity, wait_on, Exited, TaskState};

/// A silence longer than this many intervals (no event, not even a `Clock` tick) is reported
/// as one long snapshot after the interrupted one, instead of one empty snapshot per
/// interval: a bogus far-future timestamp must not make the analyzer emit millions of them.
pub const MAX_EMPTY_INTERVALS: u64 = 3600;

/// What is known of a CPU (`None` = not seen yet).
#[derive(Clone, Debug, Default)]
struct CpuState {
    current: Option<Pid>,
    nr_running: Option<u32>,
    util_avg: Option<u64>,
    capacity: Option<u64>,
}

/// The pure analyzer. Feed it events with [`Analyzer::push`]; it emits one [`Snapshot`] per
/// interval of event time.
#[derive(Clone, Debug)]
pub struct Analyzer {
    topo: IndexedTopology,
    config: AnalyzerConfig,
    interval_ns: u64,
    /// Every CPU of the topology: an affinity mask holding them all is the default.
    all_cpus: CpuSet,
    /// Start of the open interval; `None` before the first event (and after `finish`).
    start: Option<u64>,
    /// Latest event time seen.
    now: u64,
    /// An event arrived since the last closed interval.
    dirty: bool,
    events: u64,
    cpus: Vec<CpuState>,
    tasks: IdMap<Pid, TaskState>,
    /// The names of the tasks whose entry says `named`.
    names: IdMap<Pid, String>,
    /// Identity (tgid, comm) of tasks that exited, kept for [`task::EXITED_GRACE_NS`] so that the
    /// task filter still knows them: an exiting task can still block and be woken, and moved,
    /// after `sched_process_exit`. Only filled while a task filter is active.
    exited: Exited,
    idle: IdleAccounting,
    migrations: MigrationCounter,
    per_task: PerTask,
    latency: LatencyCollector,
    lost: u64,
    lost_by_cpu: BTreeMap<u32, u64>,
    lost_total: u64,
    /// A `Fold` event was seen: see the `folded` module. Never reset.
    folded: bool,
    /// Folded histograms dropped as inconsistent (damaged or crafted input).
    dropped_folds: u64,
    /// Folded mode: a thread's name for processes whose leader is not known (their folded
    /// latency needs a name); forgotten when one of their threads exits.
    thread_names: IdMap<Pid, String>,
    model: Model,
}

impl Analyzer {
    /// An analyzer for a machine with this topology.
    pub fn new(topology: Topology, config: AnalyzerConfig) -> Analyzer {
        let mut all_cpus = topology.online.or(&CpuSet::first_n(topology.nr_cpus));
        for l in &topology.levels {
            for d in &l.domains {
                all_cpus = all_cpus.or(&d.span);
            }
        }
        let nr = all_cpus.iter().last().map_or(0, |c| c + 1);
        let model = Model::new(&topology, config.model.clone());
        Analyzer {
            idle: IdleAccounting::new(&topology, |level, span| model.missed_pull_ns(level, span)),
            migrations: MigrationCounter::new(topology.levels.len()),
            per_task: PerTask::default(),
            latency: LatencyCollector::default(),
            interval_ns: config.interval_ns.max(1),
            all_cpus,
            start: None,
            now: 0,
            dirty: false,
            events: 0,
            cpus: vec![CpuState::default(); nr],
            tasks: IdMap::default(),
            names: IdMap::default(),
            exited: IdMap::default(),
            lost: 0,
            lost_by_cpu: BTreeMap::new(),
            lost_total: 0,
            folded: false,
            dropped_folds: 0,
            thread_names: IdMap::default(),
            model,
            topo: IndexedTopology::new(topology),
            config,
        }
    }

    /// The topology the analyzer labels levels with.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The settings it was built with.
    pub fn config(&self) -> &AnalyzerConfig {
        &self.config
    }

    /// Idle-while-others-wait status of every domain after the last event pushed, in
    /// topology order (levels bottom-up, then each level's domains): `(level index, span,
    /// status)`. A pure read of the state the interval figures are credited from, for sinks
    /// that draw it over time; the report filter does not apply.
    pub fn idle_waiting_status(&self) -> impl Iterator<Item = (usize, &CpuSet, WaitStatus)> + '_ {
        self.idle.statuses()
    }

    /// Goes on with another interval length and filter (the TUI's `+`/`-` and `/`): the
    /// open interval's figures are dropped and a new interval starts at the latest event
    /// time, while everything known of CPUs, tasks (identity, affinity, where they wait),
    /// kernel stacks and the model is kept, so that facts the source sends only once still
    /// hold. Waiters are counted again under the new filter.
    pub fn reconfigure(&mut self, interval_ns: u64, filter: Filter) {
        if self.start.is_some() {
            drop(self.close(self.now, true));
        }
        self.interval_ns = interval_ns.max(1);
        self.config.interval_ns = interval_ns;
        self.config.filter = filter;
        let waiting: Vec<(Pid, u32)> = self
            .tasks
            .iter()
            .filter_map(|(p, t)| t.wait.map(|w| (*p, w.cpu)))
            .collect();
        for (pid, cpu) in waiting {
            self.start_wait(pid, cpu);
        }
    }

    /// Latest event time seen (ns).
    pub fn now_ns(&self) -> u64 {
        self.now
    }

    /// Tasks the analyzer holds state for (memory accounting, tests).
    pub fn tracked_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// The thread ids the analyzer holds state for, in no order.
    pub fn tracked_pids(&self) -> impl Iterator<Item = Pid> + '_ {
        self.tasks.keys().copied()
    }

    /// Events lost since the analysis started.
    pub fn lost_total(&self) -> u64 {
        self.lost_total
    }

    /// Folds one event. When its time reaches the end of the open interval, that interval
    /// (and any empty ones after it) is closed and its snapshot pushed to `out` before the
    /// event is applied; the first interval starts at the first event.
    pub fn push(&mut self, ev: &Event, out: &mut Vec<Snapshot>) {
        let t = match self.start {
            None => {
                self.start = Some(ev.ts_ns);
                self.idle.restart(ev.ts_ns);
                ev.ts_ns
            }
            Some(_) => ev.ts_ns.max(self.now),
        };
        self.now = t;
        self.close_until(t, out);
        self.dirty = true;
        if !matches!(ev.kind, EventKind::Clock) {
            self.events += 1;
            self.model.tick(ev.ts_ns);
            self.apply(ev);
        }
        // The state after this event holds from `t` until the next event.
        self.idle.settle(t);
        self.check_missed_pulls(t);
    }

    /// Hands the model every idle-while-waiting stretch that outlasted its domain's balance
    /// interval, with some of the tasks waiting there.
    fn check_missed_pulls(&mut self, t: u64) {
        for o in self.idle.overdue(t) {
            let mut pids: Vec<Pid> = self
                .tasks
                .iter()
                .filter(|(_, s)| {
                    s.wait
                        .is_some_and(|w| w.counted() && o.waiting.contains(w.cpu as usize))
                })
                .map(|(p, _)| *p)
                .collect();
            pids.sort_unstable();
            pids.truncate(8);
            self.model.missed_pull(&IdleStretch {
                level: o.level,
                span: o.span,
                since_ns: o.since,
                now_ns: t,
                idle: o.idle,
                waiting: o.waiting,
                pids,
            });
        }
    }

    /// The partial interval so far, ending at the last event seen (for Ctrl-C or the end of a
    /// recording); `None` if no event arrived since the last closed interval. A later
    /// [`Analyzer::push`] starts a new interval at its event.
    pub fn finish(&mut self) -> Option<Snapshot> {
        if !self.dirty {
            return None;
        }
        let start = self.start?;
        let snap = self.close(self.now.max(start), true);
        self.start = None;
        Some(snap)
    }

    /// Closes every interval that ends at or before `t`.
    fn close_until(&mut self, t: u64, out: &mut Vec<Snapshot>) {
        while let Some(start) = self.start {
            let Some(end) = start.checked_add(self.interval_ns) else {
                return;
            };
            if t < end {
                return;
            }
            out.push(self.close(end, false));
            let skipped = (t - end) / self.interval_ns;
            if skipped > MAX_EMPTY_INTERVALS {
                // skipped * interval <= t - end, so this cannot overflow.
                out.push(self.close(end + skipped * self.interval_ns, false));
            }
        }
    }

    /// Ends the open interval at `end`, returns its snapshot and opens the next one there.
    fn close(&mut self, end: u64, partial: bool) -> Snapshot {
        let start = self.start.unwrap_or(end);
        forget_exited(&mut self.exited, end);
        let len = end.saturating_sub(start);
        self.idle.flush(end);
        let filter = &self.config.filter;
        let lat = self.latency.take(&self.topo, filter);
        let (domains, findings, findings_by_kind) = self
            .model
            .take(start, end, |span| filter.matches_span(span));
        let (tasks, names, exited, now) = (&self.tasks, &self.names, &self.exited, self.now);
        let migrations_by_task = self
            .per_task
            .take(|pid| identity(tasks, names, exited, now, pid));
        let idle_while_waiting = self.idle.take(len, &self.topo, filter);
        let snap = Snapshot {
            t_start_ns: start,
            t_end_ns: end,
            partial,
            events: std::mem::take(&mut self.events),
            migrations: self.migrations.take(&self.topo),
            runqlat_us: lat.global,
            runqlat_by_cpu: lat.by_cpu,
            runqlat_by_domain: lat.by_domain,
            runqlat_by_process: lat.by_process,
            signals: Signal::of(&idle_while_waiting),
            idle_while_waiting,
            lost_events: std::mem::take(&mut self.lost),
            lost_by_cpu: std::mem::take(&mut self.lost_by_cpu),
            cpus: self.cpu_table(),
            model_rules: self.model.rules().name().to_string(),
            domains,
            findings,
            findings_by_kind,
            migrations_by_task,
        };
        self.start = Some(end);
        self.dirty = false;
        snap
    }

    /// In folded mode only idleness is known exactly: a running task is shown as none.
    fn cpu_table(&self) -> Vec<CpuStatus> {
        self.cpus
            .iter()
            .enumerate()
            .filter(|(c, _)| self.config.filter.matches_cpu(*c as u32))
            .map(|(c, s)| CpuStatus {
                cpu: c as u32,
                idle: s.current.map(|p| p == 0),
                nr_running: s.nr_running,
                current_pid: match self.folded {
                    true => s.current.filter(|p| *p == 0),
                    false => s.current,
                },
                waiting: self.idle.waiting_on(c as u32),
                util_avg: s.util_avg,
                capacity: s.capacity,
            })
            .collect()
    }

    /// The state of `cpu`, grown on demand; `None` for CPU numbers past [`MAX_CPUS`].
    fn cpu_mut(&mut self, cpu: u32) -> Option<&mut CpuState> {
        crate::cpuset::per_cpu_mut(&mut self.cpus, cpu)
    }

    /// Applies one event to the model and to the analyzer's own state, with one match of its
    /// kind: the kinds of nearly every event (switches, wakeups, `nr_running`, PELT) inline,
    /// the others out of line, so that the per-event path stays small.
    #[inline]
    fn apply(&mut self, ev: &Event) {
        let (ts, cpu) = (ev.ts_ns, ev.cpu);
        match &ev.kind {
            EventKind::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => {
                self.model
                    .stopper_switch(cpu, *prev_pid, *prev_state, *next_pid);
                self.model.switched(cpu, *next_pid);
                self.on_switch(ts, cpu, *prev_pid, *prev_state, *next_pid);
            }
            EventKind::Wakeup { pid, target_cpu } => {
                self.model.woken(ts, *pid, *target_cpu);
                self.on_wakeup(ts, *pid, *target_cpu);
            }
            EventKind::NrRunning { rq_cpu, nr_running } => {
                self.model.nr_running(*rq_cpu, *nr_running);
                if let Some(c) = self.cpu_mut(*rq_cpu) {
                    c.nr_running = Some(*nr_running);
                    if self.folded {
                        self.refresh_queued(*rq_cpu);
                    }
                }
            }
            EventKind::Pelt {
                rq_cpu,
                load_avg,
                runnable_avg,
                util_avg,
                util_est,
            } => {
                self.model
                    .pelt(*rq_cpu, *load_avg, *runnable_avg, *util_avg, *util_est);
                if let Some(c) = self.cpu_mut(*rq_cpu) {
                    c.util_avg = Some(*util_avg);
                }
            }
            // Waking precedes placement and changes nothing here or in the model; Clock
            // never reaches this point.
            EventKind::Waking { .. } | EventKind::Clock => {}
            // The model's part of a migration is in `apply_other`, which shares the search
            // of the level crossed with it.
            EventKind::Migrate { .. } => self.apply_other(ev),
            _ => {
                self.model.push_other(ev);
                self.apply_other(ev);
            }
        }
    }

    /// [`Analyzer::apply`] for the kinds it does not handle inline.
    #[inline(never)]
    fn apply_other(&mut self, ev: &Event) {
        let (ts, cpu) = (ev.ts_ns, ev.cpu);
        match &ev.kind {
            EventKind::WakeupNew {
                pid,
                tgid,
                target_cpu,
            } => {
                self.set_identity(*pid, Some(*tgid), None);
                self.on_wakeup(ts, *pid, *target_cpu);
                // Fork never fires sched_migrate_task: a child placed away from its parent's
                // CPU is the fork balancer's migration.
                if *target_cpu != cpu {
                    let level = self.topo.crossed_level(cpu as usize, *target_cpu as usize);
                    let fork = (Reason::Fork, false, None);
                    self.count_migration(*pid, cpu, *target_cpu, level, fork);
                }
            }
            EventKind::Migrate {
                pid,
                src_cpu,
                dst_cpu,
                reason,
                source,
                stack_id,
                ..
            } => {
                if src_cpu == dst_cpu {
                    return;
                }
                // One search of the level crossed, for the model and for the counts.
                let level = self
                    .topo
                    .crossed_level(*src_cpu as usize, *dst_cpu as usize);
                if *pid != 0 {
                    self.model
                        .migrated(ts, *pid, *src_cpu, *dst_cpu, *reason, level);
                }
                let waiting = self.tasks.get(pid).is_some_and(|t| t.wait.is_some());
                if *pid != 0 && waiting {
                    self.start_wait(*pid, *dst_cpu);
                }
                let how = (*reason, *source == ReasonSource::Context, *stack_id);
                if self.count_migration(*pid, *src_cpu, *dst_cpu, level, how) {
                    self.per_task.count(*pid);
                }
            }
            EventKind::Stack { id, frames, .. } => self.migrations.describe_stack(*id, frames),
            EventKind::Capacity { rq_cpu, capacity } => {
                if let Some(c) = self.cpu_mut(*rq_cpu) {
                    c.capacity = Some(*capacity);
                }
            }
            EventKind::Task {
                pid,
                tgid,
                comm,
                exec,
            } => {
                self.set_identity(*pid, Some(*tgid), Some(comm));
                if *exec && pid == tgid {
                    self.latency.renamed(*tgid, comm);
                }
                if self.folded {
                    self.name_process(*pid, *tgid, comm);
                }
            }
            EventKind::Affinity { pid, cpus } => self.on_affinity(*pid, cpus),
            EventKind::Exit { pid, tgid } => {
                self.thread_names.remove(tgid);
                self.stop_wait(*pid);
                if let Some(t) = self.tasks.remove(pid) {
                    let comm = self.names.remove(pid);
                    if self.config.filter.filters_tasks() {
                        if self.exited.len() >= 4096 {
                            forget_exited(&mut self.exited, ev.ts_ns);
                        }
                        self.exited.insert(*pid, (t.tgid, comm, ev.ts_ns));
                    }
                }
            }
            EventKind::Fold(f) => self.on_fold(f),
            EventKind::Lost { count } => {
                self.lost += count;
                self.lost_total += count;
                *self.lost_by_cpu.entry(cpu).or_insert(0) += count;
            }
            // Balancer internals, NUMA ops and cgroups belong to the model; the kinds handled
            // inline never reach this point.
            EventKind::Cgroup { .. }
            | EventKind::BalanceSoftirq { .. }
            | EventKind::Numa { .. }
            | EventKind::Balance(_)
            | EventKind::Switch { .. }
            | EventKind::Wakeup { .. }
            | EventKind::NrRunning { .. }
            | EventKind::Pelt { .. }
            | EventKind::Waking { .. }
            | EventKind::Clock => {}
        }
    }

    // Each task's entry is looked up once per event where the order of the updates allows:
    // switches and wakeups are most of the stream.
    fn on_switch(&mut self, ts: u64, cpu: u32, prev: Pid, prev_state: u32, next: Pid) {
        if self.folded {
            return self.folded_switch(cpu, next);
        }
        if prev != 0 {
            if prev_state == 0 {
                // Preempted: still runnable, now waiting on this CPU (runqlat re-enqueues it).
                self.enqueue(ts, prev, cpu);
            } else {
                self.stop_wait_and_drop(prev);
            }
        }
        if next != 0 {
            if let Some(t) = self.tasks.get_mut(&next) {
                let (enq, tgid) = (t.enqueue_ts.take(), t.tgid);
                if let Some(w) = t.wait.take() {
                    self.idle.remove_waiter(next, w);
                }
                let empty = t.is_empty();
                if let Some(enq) = enq {
                    self.sample(cpu, next, tgid, ts.saturating_sub(enq));
                }
                if empty {
                    self.tasks.remove(&next);
                }
            }
        }
        if let Some(c) = self.cpu_mut(cpu) {
            c.current = Some(next);
            self.idle.set_idle(cpu, next == 0);
        }
    }

    /// Folded mode takes latency and waiters elsewhere: a wakeup changes nothing here.
    fn on_wakeup(&mut self, ts: u64, pid: Pid, target: u32) {
        if pid == 0 || self.folded {
            return;
        }
        let running = self
            .cpus
            .get(target as usize)
            .is_some_and(|c| c.current == Some(pid));
        if running {
            // Woken before it got to sleep (ttwu_runnable): it runs, nobody waits.
            self.tasks.entry(pid).or_default().enqueue_ts = Some(ts);
            self.stop_wait(pid);
        } else {
            self.enqueue(ts, pid, target);
        }
    }

    /// `pid` became runnable on `cpu` at `ts` and waits there: runqlat's enqueue time and
    /// the idle accounting's waiter, with one lookup of its entry.
    fn enqueue(&mut self, ts: u64, pid: Pid, cpu: u32) {
        let counted = self.task_matches(pid);
        let t = self.tasks.entry(pid).or_default();
        t.enqueue_ts = Some(ts);
        wait_on(&mut self.idle, t, pid, cpu, counted);
    }

    /// `pid` stopped waiting without running (it slept, or exits); its entry goes if nothing
    /// else is known of it.
    fn stop_wait_and_drop(&mut self, pid: Pid) {
        if let Some(t) = self.tasks.get_mut(&pid) {
            if let Some(w) = t.wait.take() {
                self.idle.remove_waiter(pid, w);
            }
            if t.is_empty() {
                self.tasks.remove(&pid);
            }
        }
    }

    fn on_affinity(&mut self, pid: Pid, cpus: &CpuSet) {
        if pid == 0 {
            return;
        }
        let allowed = (!self.all_cpus.is_subset(cpus)).then(|| std::rc::Rc::new(*cpus));
        let t = self.tasks.entry(pid).or_default();
        t.allowed = allowed;
        if let Some(w) = t.wait {
            // Re-index so the idle accounting sees the new mask.
            self.start_wait(pid, w.cpu);
        }
        self.drop_if_empty(pid);
    }

    /// Records what a Task or WakeupNew event says of a task.
    fn set_identity(&mut self, pid: Pid, tgid: Option<u32>, comm: Option<&str>) {
        if pid == 0 {
            return;
        }
        let t = self.tasks.entry(pid).or_default();
        if tgid.is_some() {
            t.tgid = tgid;
        }
        if let Some(c) = comm {
            t.named = true;
            if self.names.get(&pid).map(String::as_str) != Some(c) {
                self.names.insert(pid, c.to_string());
            }
        }
        let wait = t.wait;
        if let Some(w) = wait {
            if self.config.filter.filters_tasks() && self.task_matches(pid) != w.counted() {
                self.start_wait(pid, w.cpu);
            }
        }
    }

    fn task_matches(&self, pid: Pid) -> bool {
        let f = &self.config.filter;
        if !f.filters_tasks() {
            return true;
        }
        let (tgid, comm) = identity(&self.tasks, &self.names, &self.exited, self.now, pid);
        f.matches_task(pid, tgid, comm)
    }

    /// Marks `pid` waiting on `cpu`, moving it if it waited elsewhere.
    fn start_wait(&mut self, pid: Pid, cpu: u32) {
        let counted = self.task_matches(pid);
        let t = self.tasks.entry(pid).or_default();
        wait_on(&mut self.idle, t, pid, cpu, counted);
    }

    fn stop_wait(&mut self, pid: Pid) {
        if let Some(w) = self.tasks.get_mut(&pid).and_then(|t| t.wait.take()) {
            self.idle.remove_waiter(pid, w);
        }
    }

    fn drop_if_empty(&mut self, pid: Pid) {
        if self.tasks.get(&pid).is_some_and(TaskState::is_empty) {
            self.tasks.remove(&pid);
        }
    }

    /// One run-queue latency sample of `pid` (of process `tgid`, as its entry says), which
    /// started running on `cpu`.
    fn sample(&mut self, cpu: u32, pid: Pid, tgid: Option<u32>, ns: u64) {
        if !self.config.filter.matches_cpu(cpu) || !self.task_matches(pid) {
            return;
        }
        let names = &self.names;
        // The process's name: its leader's when known, else this thread's.
        let name = || {
            let leader_comm = tgid.and_then(|g| names.get(&g)).map(String::as_str);
            match leader_comm {
                Some(c) => (Some(c), true),
                None => (names.get(&pid).map(String::as_str), tgid == Some(pid)),
            }
        };
        self.latency.record(cpu, tgid, ns, name);
    }

    /// Counts `pid`'s move `src -> dst`, which crossed `level`, if the report shows it (and
    /// says whether it does). `how`: its reason, whether the reason comes from the context,
    /// its stack.
    fn count_migration(
        &mut self,
        pid: Pid,
        src: u32,
        dst: u32,
        level: Option<usize>,
        how: (Reason, bool, Option<u32>),
    ) -> bool {
        if src == dst || !self.config.filter.matches_move(src, dst) || !self.task_matches(pid) {
            return false;
        }
        let (reason, by_context, stack_id) = how;
        self.migrations.record(reason, level, by_context, stack_id);
        true
    }
}
