//! The analyzer: folds [`Event`]s into per-interval [`Snapshot`]s. Pure and deterministic: no
//! I/O, no clock, no terminal; time comes only from event timestamps, so replaying a
//! recording gives exactly the figures the live run showed.
//!
//! [`Analyzer`] is the one owner of state. It owns the model, whose per-CPU table (current
//! task, nr_running, PELT, capacity) and task table are the run's only ones: each task's
//! entry also holds the analyzer's part (tgid, comm, cgroup, affinity, runqlat enqueue time, where it
//! waits, its migrations this interval), so an event looks a task up once. The interval's
//! counters live in the submodules:
//! - `apply`: the one match on each event's kind, and what it does to the state;
//! - `per_task`: the most migrated tasks of each interval;
//! - `hist`: latency histograms (runqlat log2 slots, log-linear percentiles);
//! - `latency`: per-interval latency collection (global, per CPU, per domain, per process,
//!   per cgroup);
//! - `cgroups`: the cgroups seen (a task's entry holds its cgroup's index) and migrations by
//!   cgroup;
//! - `migrations`: counts by reason and level crossed, unknown stacks;
//! - `idle`: idle-while-others-wait time per domain;
//! - `folded`: folded mode, for sources that fold latency in the kernel (from the first
//!   `Fold` event on: latency from `Fold` alone, waiters from `nr_running`, no per-task wait);
//! - `filter`: what is reported; `snapshot`: the JSON contract;
//! - `timeline`: the per-CPU timeline the TUI draws, read from this state after each event.
//!
//! Invariants: memory is bounded by CPUs, live tasks and distinct stacks, never by time (a
//! task's entry, in the one task table the analyzer shares with the model, goes at its exit).
//! Time never runs backwards inside the analyzer: an event stamped earlier than one already
//! seen (ring buffers of different CPUs interleave) is accounted at the latest time seen, in
//! arrival order; latency deltas saturate at zero.

mod apply;
mod cgroups;
pub mod counters;
mod filter;
mod folded;
mod hist;
pub mod run_counters;

mod idle;
mod latency;
mod migrations;
mod per_task;
mod read_window;
mod snapshot;
mod task;
#[cfg(test)]
pub(crate) mod tests;
pub mod timeline;
mod unseen;

pub use cgroups::TOP_CGROUPS;
pub use filter::{AnalyzerConfig, Filter};
pub use hist::{fine_bounds, fine_index, log2_slot, LOG2_SLOTS};
pub use idle::WaitStatus;
pub use latency::TOP_PROCESSES;
pub use migrations::reason_names;
pub use per_task::TOP_TASKS;
pub use snapshot::{
    CgroupLatency, CgroupMigrations, CpuLatency, CpuStatus, DomainLatency, IdleWhileWaiting,
    LatencySummary, MigrationStats, ProcessLatency, Signal, Snapshot, TaskMigrations, UnknownStack,
    SIGNAL_MIN_FRACTION,
};

use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind, Pid};
use crate::idhash::IdMap;
use crate::model::{IdleStretch, Model};
use crate::topology::{IndexedTopology, Topology};
use idle::IdleAccounting;
use latency::LatencyCollector;
use migrations::MigrationCounter;
use per_task::PerTask;
use std::collections::BTreeMap;
use task::{forget_exited, identity, Exited, TaskState};

/// A silence longer than this many intervals (no event, not even a `Clock` tick) is reported
/// as one long snapshot after the interrupted one, instead of one empty snapshot per
/// interval: a bogus far-future timestamp must not make the analyzer emit millions of them.
pub const MAX_EMPTY_INTERVALS: u64 = 3600;

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
    /// The names of the tasks whose entry says `named`.
    names: IdMap<Pid, String>,
    /// Identity (tgid, comm, cgroup) of tasks that exited, kept for [`task::EXITED_GRACE_NS`] so that the
    /// task filter still knows them: an exiting task can still block and be woken, and moved,
    /// after `sched_process_exit`. Only filled while a task filter is active.
    exited: Exited,
    idle: IdleAccounting,
    /// The cgroups seen, and the interval's migrations by cgroup.
    cgroups: cgroups::Cgroups,
    migrations: MigrationCounter,
    per_task: PerTask,
    latency: LatencyCollector,
    lost: u64,
    lost_by_cpu: BTreeMap<u32, u64>,
    lost_total: u64,
    /// Switch gaps in the open interval (see the `unseen` module).
    switch_gaps: u64,
    /// A `Fold` event was seen: see the `folded` module. Never reset.
    folded: bool,
    /// Folded histograms dropped as inconsistent (damaged or crafted input).
    dropped_folds: u64,
    /// Folded mode: a thread's name for processes whose leader is not known (their folded
    /// latency needs a name); forgotten when one of their threads exits.
    thread_names: IdMap<Pid, String>,
    /// Folded mode: exited leaders' identities, each with the count of `Fold` events with
    /// processes taken when it exited (see [`Analyzer::fold_exited`]).
    fold_exited: task::Exited,
    /// Folded mode: `Fold` events taken that carried processes.
    folds: u64,
    /// The balancer model, which also holds the one task table (with the analyzer's part of
    /// each entry).
    model: Model<TaskState>,
    /// The balancer's counters of the open interval.
    counters: counters::Counter,
    /// The balancer's counters of the whole run, over the window of its schedstat reads.
    run_counters: counters::Counter,
    /// The run's `/proc/schedstat` reads (start, end): their time and text.
    schedstat: [Option<(u64, crate::event::SchedstatText)>; 2],
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
        let mut model = Model::with_tasks(&topology, config.model.clone());
        model.tasks_mut().notice_unseen(true);
        Analyzer {
            idle: IdleAccounting::new(&topology, |level, span| model.missed_pull_ns(level, span)),
            migrations: MigrationCounter::new(topology.levels.len()),
            cgroups: cgroups::Cgroups::default(),
            per_task: PerTask::default(),
            latency: LatencyCollector::default(),
            interval_ns: config.interval_ns.max(1),
            all_cpus,
            start: None,
            now: 0,
            dirty: false,
            events: 0,
            names: IdMap::default(),
            exited: IdMap::default(),
            lost: 0,
            lost_by_cpu: BTreeMap::new(),
            lost_total: 0,
            switch_gaps: 0,
            folded: false,
            dropped_folds: 0,
            thread_names: IdMap::default(),
            fold_exited: IdMap::default(),
            folds: 0,
            model,
            counters: counters::Counter::default(),
            run_counters: counters::Counter::windowed(),
            schedstat: [None, None],
            topo: IndexedTopology::new(topology),
            config,
        }
    }

    /// The topology the analyzer labels levels with.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Lists the processes named `names` in every snapshot's `runqlat_by_process`, beyond
    /// the top [`TOP_PROCESSES`] too (the metrics endpoint's per-process allow-list).
    pub fn list_processes(&mut self, names: Vec<String>) {
        self.latency.list_processes(names);
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
            .model
            .tasks()
            .exts()
            .filter_map(|(p, t)| t.wait.map(|w| (p, w.cpu)))
            .collect();
        for (pid, cpu) in waiting {
            self.start_wait(pid, cpu);
        }
    }

    /// What `cpu` does after the last event pushed: whether it is idle (`None` before its
    /// first switch) and how many tasks wait on it (counted or not; in folded mode, those
    /// `nr_running` says are queued). The CPU timeline reads it.
    pub fn cpu_activity(&self, cpu: u32) -> (Option<bool>, u32) {
        let idle = self
            .model
            .cpu(cpu as usize)
            .and_then(|c| c.current)
            .map(|p| p == 0);
        (idle, self.idle.waiting_on(cpu))
    }

    /// Whether applying an event of this kind leaves what [`Analyzer::cpu_activity`] says of
    /// every CPU as it was (the timeline then looks at none). Wakings (a sixth of all events)
    /// and nr_running changes (a third) among them: a run queue's length feeds the waiting
    /// count only in folded mode, where it stands for the tasks queued.
    pub fn changes_no_cpu(&self, kind: &EventKind) -> bool {
        match kind {
            EventKind::Clock
            | EventKind::Pelt(_)
            | EventKind::Capacity { .. }
            | EventKind::Waking { .. }
            | EventKind::BalanceSoftirq { .. } => true,
            EventKind::NrRunning { .. } => !self.folded,
            _ => false,
        }
    }

    /// Latest event time seen (ns).
    pub fn now_ns(&self) -> u64 {
        self.now
    }

    /// Tasks the analyzer and the model hold an entry for (memory accounting, tests).
    pub fn tracked_tasks(&self) -> usize {
        self.model.tasks().len()
    }

    /// Tasks with a runqlat enqueue time or a wait open: none is left behind by a task that
    /// ran, slept or exited, and none is kept in folded mode.
    pub fn open_task_waits(&self) -> usize {
        self.model
            .tasks()
            .exts()
            .filter(|(_, t)| t.enqueue_ts.is_some() || t.wait.is_some())
            .count()
    }

    /// The thread ids the analyzer and the model hold an entry for, in no order.
    pub fn tracked_pids(&self) -> impl Iterator<Item = Pid> + '_ {
        self.model.tasks().exts().map(|(p, _)| p)
    }

    /// Every cgroup a task was announced in so far (named ones), with how many tasks, most
    /// first: what a `--cgroup` that matched nothing could have been.
    pub fn cgroups_seen(&self) -> Vec<(String, u64)> {
        self.cgroups.seen()
    }

    /// The balancer's counters over the whole run so far (over the window between its
    /// `/proc/schedstat` reads when it has them), beside the kernel's own difference.
    pub fn run_counters(&self) -> run_counters::RunReport {
        let mut c = self.run_counters.clone();
        run_counters::RunReport::new(
            c.take(&self.topo),
            &self.schedstat,
            &self.topo,
            self.lost_total,
        )
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
                .model
                .tasks()
                .exts()
                .filter(|(_, s)| {
                    s.wait
                        .is_some_and(|w| w.counted() && o.waiting.contains(w.cpu as usize))
                })
                .map(|(p, _)| p)
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
        let mut snap = self.close(self.now.max(start), true);
        snap.balancer_counters_run = Some(self.run_counters()).filter(|r| !r.is_empty());
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
        let cgroups = &self.cgroups;
        let lat = self.latency.take(&self.topo, filter, |c| cgroups.path(c));
        let (domains, findings, findings_by_kind) = self
            .model
            .take(start, end, |span| filter.matches_span(span));
        let moved = self.model.tasks_mut().take_counts(|t| {
            let n = t.migrations;
            t.migrations = 0;
            u64::from(n)
        });
        let (tasks, names, exited, now) = (self.model.tasks(), &self.names, &self.exited, self.now);
        let migrations_by_task = self
            .per_task
            .take(moved, |pid| identity(tasks, names, exited, now, pid));
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
            switch_gaps: std::mem::take(&mut self.switch_gaps),
            cpus: self.cpu_table(),
            model_rules: self.model.rules().name().to_string(),
            domains,
            findings,
            findings_by_kind,
            migrations_by_task,
            runqlat_by_cgroup: lat.by_cgroup,
            migrations_by_cgroup: self.cgroups.take_moves(),
            balancer_counters: self.counters.take(&self.topo),
            balancer_counters_run: None,
        };
        self.start = Some(end);
        self.dirty = false;
        snap
    }

    /// In folded mode only idleness is known exactly: a running task is shown as none.
    fn cpu_table(&self) -> Vec<CpuStatus> {
        self.model
            .cpus()
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
}
