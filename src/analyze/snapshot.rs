//! `Snapshot`: what the analyzer says about one interval. This is a documented JSON contract
//! (one JSON object per line, `lbscope ... --json`): field names are stable, new fields may be
//! added, none renamed. Every `f64` is a decimal with few digits (microseconds with at most
//! three decimals, fractions with at most six) so that JSON round trips compare equal.

pub use super::per_task::TaskMigrations;
use crate::cpuset::CpuSet;
use crate::model::{DomainView, Finding};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Figures of one interval `[t_start_ns, t_end_ns)`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Interval start, CLOCK_MONOTONIC ns (event time).
    pub t_start_ns: u64,
    /// Interval end (exclusive), CLOCK_MONOTONIC ns.
    pub t_end_ns: u64,
    /// The interval was cut short by `finish()` (it ends at the last event seen).
    pub partial: bool,
    /// Events folded in this interval (excluding `Clock` ticks).
    pub events: u64,
    /// Task migrations, including fork placements.
    pub migrations: MigrationStats,
    /// Run-queue latency of every matching task (runqlat's definition).
    pub runqlat_us: LatencySummary,
    /// Run-queue latency by the CPU the task started running on (CPUs with samples only).
    pub runqlat_by_cpu: Vec<CpuLatency>,
    /// Run-queue latency summed over each domain's span (domains with samples only), levels
    /// bottom-up.
    pub runqlat_by_domain: Vec<DomainLatency>,
    /// Run-queue latency by process, the top 20 by sample count.
    pub runqlat_by_process: Vec<ProcessLatency>,
    /// Idle-while-others-wait time of every domain of every level, bottom-up.
    pub idle_while_waiting: Vec<IdleWhileWaiting>,
    /// Events the ring buffer dropped in this interval: when non-zero every figure above may
    /// be incomplete.
    pub lost_events: u64,
    /// Dropped events by CPU (non-zero only).
    pub lost_by_cpu: BTreeMap<u32, u64>,
    /// Switches whose previous task was not the one their CPU last switched to: switches
    /// happened that no record says, because the kernel ran no BPF program at them (it
    /// counts no miss then) or their records were lost. Non-zero: figures may be
    /// incomplete, as with `lost_events`. Not counted in folded mode.
    #[serde(default)]
    pub switch_gaps: u64,
    /// Per-CPU state at the end of the interval.
    pub cpus: Vec<CpuStatus>,
    /// Which kernel's balancer rules the model applied ("v6_1", "v6_6_plus").
    #[serde(default)]
    pub model_rules: String,
    /// The balancer's view of every domain at the end of the interval, levels bottom-up.
    #[serde(default)]
    pub domains: Vec<DomainView>,
    /// Wrong placements found in the interval: the first `--max-findings` in event order.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Every finding of the interval counted by kind (all kinds present).
    #[serde(default)]
    pub findings_by_kind: BTreeMap<String, u64>,
    /// The most migrated tasks of the interval (at most 10), most migrations first.
    #[serde(default)]
    pub migrations_by_task: Vec<TaskMigrations>,
    /// What the measurements alone point at, worst first, without the model: domains where
    /// a CPU sat idle while a task it could have run waited elsewhere in the span for at
    /// least [`SIGNAL_MIN_FRACTION`] of the interval.
    #[serde(default)]
    pub signals: Vec<Signal>,
    /// Run-queue latency by cgroup (the tasks' own cgroup, not its ancestors), the top 20
    /// by sample count; cgroups the source could not name are left out.
    #[serde(default)]
    pub runqlat_by_cgroup: Vec<CgroupLatency>,
    /// Migrations by cgroup (as counted in `migrations`, fork placements included), the top
    /// 20 by count.
    #[serde(default)]
    pub migrations_by_cgroup: Vec<CgroupMigrations>,
    /// The balancer's counters of the interval in schedstat's vocabulary, per level and
    /// idle type (absent when the source streams no balancer event).
    #[serde(
        default,
        skip_serializing_if = "super::counters::BalancerCounters::is_empty"
    )]
    pub balancer_counters: super::counters::BalancerCounters,
    /// The last snapshot of a run only (a recording's end, Ctrl-C): the balancer's counters
    /// over the whole run beside the kernel's `/proc/schedstat` difference; absent when the
    /// run has no balancer event, no balancer migration and no schedstat read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balancer_counters_run: Option<super::run_counters::RunReport>,
}

/// An idle-while-others-wait share of the interval from which a domain is a [`Signal`].
pub const SIGNAL_MIN_FRACTION: f64 = 0.01;

/// A measured signal: one domain's idle-while-others-wait time over the interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// What was measured: "idle_while_others_wait".
    pub kind: String,
    /// Level key.
    pub level: String,
    /// The domain's span.
    pub span: CpuSet,
    /// Share of the interval a CPU was idle while a movable task waited in the span.
    pub movable_fraction: f64,
    /// The same time, ns.
    pub movable_ns: u64,
    /// Share of the interval only pinned tasks waited while a CPU was idle.
    pub pinned_fraction: f64,
}

impl Signal {
    /// The signals of an interval's idle-while-waiting figures, worst first.
    pub fn of(idle: &[IdleWhileWaiting]) -> Vec<Signal> {
        let mut v: Vec<Signal> = idle
            .iter()
            .filter(|w| w.movable_fraction >= SIGNAL_MIN_FRACTION)
            .map(|w| Signal {
                kind: "idle_while_others_wait".into(),
                level: w.level.clone(),
                span: w.span,
                movable_fraction: w.movable_fraction,
                movable_ns: w.movable_ns,
                pinned_fraction: w.pinned_fraction,
            })
            .collect();
        v.sort_by(|a, b| b.movable_fraction.total_cmp(&a.movable_fraction));
        v
    }
}

/// Migration counts of one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MigrationStats {
    /// All migrations.
    pub total: u64,
    /// By reason name ([`crate::event::Reason::name`]); every reason is present.
    pub by_reason: BTreeMap<String, u64>,
    /// By the level key crossed (every level of the topology, plus "unknown" when non-zero).
    pub by_level: BTreeMap<String, u64>,
    /// reason -> level -> count, non-zero cells only.
    pub matrix: BTreeMap<String, BTreeMap<String, u64>>,
    /// Migrations whose reason was inferred from the executing context (no stack).
    pub context_classified: u64,
    /// Migrations no record said, not in `total`: a task seen on a CPU other than the one
    /// it was last seen on, with no migration between (the kernel ran no BPF program at
    /// that `sched_migrate_task`, or the record was lost). Consecutive unseen moves of one
    /// task count as one. Not counted in folded mode.
    #[serde(default)]
    pub unseen: u64,
    /// Migrations with reason "unknown" by stack, most frequent first (at most 20).
    pub unknown_stacks: Vec<UnknownStack>,
}

/// One kernel stack that no table row matched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnknownStack {
    /// The source's stack id.
    pub stack_id: u32,
    /// Migrations with this stack in the interval.
    pub count: u64,
    /// The innermost frames (at most 8); empty when the stack was never described.
    pub frames: Vec<String>,
}

/// A run-queue latency distribution, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// runqlat's log2 slots (0-1, 2-3, 4-7, ... us; the 26th catches all larger), trailing
    /// empty slots trimmed.
    pub log2_buckets: Vec<u64>,
    /// Median (within ~3% of the sample value; see `analyze::hist`).
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Exact largest sample.
    pub max: f64,
}

/// Latency of tasks that started running on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuLatency {
    /// The CPU.
    pub cpu: u32,
    /// Its distribution.
    #[serde(flatten)]
    pub latency: LatencySummary,
}

/// Latency of tasks that started running on a CPU of one domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainLatency {
    /// Level key ("smt", "llc", "numa", ...).
    pub level: String,
    /// The domain's span.
    pub span: CpuSet,
    /// Its distribution.
    #[serde(flatten)]
    pub latency: LatencySummary,
}

/// Latency of the threads of one process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessLatency {
    /// Thread-group id; `None` for tasks whose process was never identified.
    pub tgid: Option<u32>,
    /// The process name (the leader's comm when known, else a thread's).
    pub comm: Option<String>,
    /// Its distribution.
    #[serde(flatten)]
    pub latency: LatencySummary,
}

/// Latency of the tasks of one cgroup.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CgroupLatency {
    /// The cgroup's path relative to the cgroup2 mount (`/system.slice/foo.service`).
    pub path: String,
    /// Its distribution.
    #[serde(flatten)]
    pub latency: LatencySummary,
}

/// Migrations of the tasks of one cgroup in one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CgroupMigrations {
    /// The cgroup's path relative to the cgroup2 mount.
    pub path: String,
    /// Its migrations.
    pub total: u64,
    /// By reason name (non-zero reasons only).
    pub by_reason: BTreeMap<String, u64>,
}

/// Idle-while-others-wait time of one domain over the interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdleWhileWaiting {
    /// Level key.
    pub level: String,
    /// The domain's span.
    pub span: CpuSet,
    /// Time during which a CPU of the span was idle while a task allowed to run there waited
    /// on another CPU of the span.
    pub movable_ns: u64,
    /// Time during which a CPU of the span was idle and tasks waited on other CPUs of the
    /// span, but affinity forbade every one of them from running on any idle CPU of the span.
    pub pinned_ns: u64,
    /// `movable_ns` / interval length.
    pub movable_fraction: f64,
    /// `pinned_ns` / interval length.
    pub pinned_fraction: f64,
}

/// One CPU's state at the end of an interval (`None` = not known yet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuStatus {
    /// The CPU.
    pub cpu: u32,
    /// Running its idle task; `None` until the CPU's first switch was seen.
    pub idle: Option<bool>,
    /// Runnable tasks on its run queue (from `sched_update_nr_running_tp`; in folded mode as
    /// the switches, wakeups and migrations read it).
    pub nr_running: Option<u32>,
    /// The running task (0 = idle). In folded mode only idleness is known: `None` while a
    /// task runs.
    pub current_pid: Option<u32>,
    /// Tasks this analysis sees waiting on its run queue (in folded mode, `nr_running` less
    /// the running task).
    pub waiting: u32,
    /// Last root CFS `util_avg` sample.
    pub util_avg: Option<u64>,
    /// Last `cpu_capacity`.
    pub capacity: Option<u64>,
}

impl Snapshot {
    /// Interval length in ns.
    pub fn len_ns(&self) -> u64 {
        self.t_end_ns.saturating_sub(self.t_start_ns)
    }
}

/// `ns / len` rounded down to six decimals (exactly representable in JSON text).
pub(crate) fn fraction(ns: u64, len: u64) -> f64 {
    if len == 0 {
        return 0.0;
    }
    let ppm = (ns.min(len) as u128 * 1_000_000 / len as u128) as u64;
    ppm as f64 / 1_000_000.0
}
