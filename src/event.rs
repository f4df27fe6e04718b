//! `Event`: the one vocabulary between sources (live kernel, recording) and everything
//! downstream. Timestamps are kernel CLOCK_MONOTONIC nanoseconds as taken in BPF; `cpu` is the
//! CPU that executed the probe. Kinds name the CPU they are *about* explicitly where it can
//! differ from the executing one (a wakeup placed on another CPU, a migration, an rq update).
//! Nothing downstream may know whether an event came from the kernel or a file.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// A kernel thread id (`task->pid`). 0 is the idle task.
pub type Pid = u32;

/// One observation: 32 bytes, half a cache line. The kinds that come by the hundred
/// thousand a second (switches, wakeups, run-queue lengths) are inline in [`EventKind`]; the
/// rare and bulky ones are boxed, so that the queues and batches every live event goes
/// through hold two events a cache line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// CLOCK_MONOTONIC nanoseconds.
    pub ts_ns: u64,
    /// The CPU that ran the probe.
    pub cpu: u32,
    /// What happened.
    pub kind: EventKind,
}

#[cfg(test)]
impl Event {
    /// A clock event on `cpu` at `ts_ns`: what the ordering tests move around.
    pub(crate) fn clock_at(ts_ns: u64, cpu: u32) -> Event {
        Event {
            ts_ns,
            cpu,
            kind: EventKind::Clock,
        }
    }

    /// An RT push or pull call's record on `cpu`, stamped at its entry `ts_ns`.
    pub(crate) fn rt_call_at(
        ts_ns: u64,
        cpu: u32,
        func: RtFunc,
        rq_cpu: u32,
        len_ns: u32,
    ) -> Event {
        Event {
            ts_ns,
            cpu,
            kind: EventKind::RtCall(Box::new(RtCall {
                func,
                rq_cpu,
                len_ns,
            })),
        }
    }
}

/// Why a task changed CPU: the JSON names are a stable contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Wakeup,
    Fork,
    Exec,
    PeriodicBalance,
    NohzIdleBalance,
    NewidleBalance,
    ActiveBalance,
    NumaBalancing,
    Affinity,
    Hotplug,
    RtPushPull,
    DlPushPull,
    SchedExt,
    Unknown,
}

impl Reason {
    /// Every reason, in report order.
    pub const ALL: [Reason; 14] = [
        Reason::Wakeup,
        Reason::Fork,
        Reason::Exec,
        Reason::PeriodicBalance,
        Reason::NohzIdleBalance,
        Reason::NewidleBalance,
        Reason::ActiveBalance,
        Reason::NumaBalancing,
        Reason::Affinity,
        Reason::Hotplug,
        Reason::RtPushPull,
        Reason::DlPushPull,
        Reason::SchedExt,
        Reason::Unknown,
    ];

    /// The stable JSON/text name.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Wakeup => "wakeup",
            Reason::Fork => "fork",
            Reason::Exec => "exec",
            Reason::PeriodicBalance => "periodic_balance",
            Reason::NohzIdleBalance => "nohz_idle_balance",
            Reason::NewidleBalance => "newidle_balance",
            Reason::ActiveBalance => "active_balance",
            Reason::NumaBalancing => "numa_balancing",
            Reason::Affinity => "affinity",
            Reason::Hotplug => "hotplug",
            Reason::RtPushPull => "rt_push_pull",
            Reason::DlPushPull => "dl_push_pull",
            Reason::SchedExt => "sched_ext",
            Reason::Unknown => "unknown",
        }
    }

    /// Whether the load balancer proper (sched_balance_rq and its active-balance stopper)
    /// made this move.
    pub fn is_balancer(self) -> bool {
        matches!(
            self,
            Reason::PeriodicBalance
                | Reason::NohzIdleBalance
                | Reason::NewidleBalance
                | Reason::ActiveBalance
        )
    }
}

/// How a migration's reason was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonSource {
    /// From the kernel stack, matched against the function table: exact.
    Stack,
    /// The stack could not be taken (stack map full or a collision); inferred from the
    /// executing context (softirq, stopper thread, which CPU ran the code).
    Context,
    /// The task was in `TASK_WAKING`: `try_to_wake_up` places it, the state the kernel
    /// itself tests for a wakeup's move (`migrate_task_rq_fair`). Exact; no stack is taken.
    TaskState,
}

/// Facts about the executing context of a migration, taken in BPF, used when the stack is
/// missing and to split rows of the stack table that need them (exec vs affinity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrateContext {
    /// The executing task is the CPU's stopper thread (`migration/N`).
    pub in_stopper: bool,
    /// Executing in hardirq context.
    pub in_hardirq: bool,
    /// Executing in softirq context, serving SCHED_SOFTIRQ (the balancer's softirq).
    pub in_sched_softirq: bool,
    /// The migrating task has `in_execve` set.
    pub in_execve: bool,
    /// The executing task is the idle task (pid 0).
    pub current_idle: bool,
    /// The migrating task is in `TASK_WAKING`: the move is a wakeup's placement
    /// (try_to_wake_up sets that state before choosing the CPU).
    pub waking: bool,
    /// The migrating task's scheduling policy (SCHED_NORMAL 0, FIFO 1, RR 2, BATCH 3, IDLE 5,
    /// DEADLINE 6, EXT 7).
    pub policy: u32,
}

/// `task->__state`'s TASK_DEAD bit (include/linux/sched.h): a `Switch`'s `prev_state` with it
/// is the task's last switch-out, after its exit.
pub const TASK_DEAD: u32 = 0x80;

/// Kinds of events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// `sched_switch` on `cpu`. `prev_state` 0 (TASK_RUNNING) means prev was preempted and
    /// stays runnable on this CPU.
    Switch {
        prev_pid: Pid,
        prev_state: u32,
        next_pid: Pid,
    },
    /// `sched_waking`: runs in the waker before placement; `prev_cpu` is `task_cpu(p)`.
    Waking { pid: Pid, prev_cpu: u32 },
    /// `sched_wakeup`: after placement; `target_cpu` is where `p` is queued.
    Wakeup { pid: Pid, target_cpu: u32 },
    /// `sched_wakeup_new`: a new task placed on `target_cpu`; `cpu` is the parent's CPU.
    WakeupNew {
        pid: Pid,
        tgid: Pid,
        target_cpu: u32,
    },
    /// A task changed CPU (`sched_migrate_task` with src != dst). `stack_id` names a
    /// [`EventKind::Stack`] seen earlier, if any. Forks never fire it: the analyzer derives
    /// fork placements from [`EventKind::WakeupNew`].
    Migrate(Box<MigrateInfo>),
    /// A distinct kernel stack at `sched_migrate_task`, symbolized and classified once.
    /// Frames are innermost first, compiler suffixes kept.
    Stack(Box<StackInfo>),
    /// `sched_update_nr_running_tp`: the exact `nr_running` of `rq_cpu`, after the change,
    /// with the root cfs_rq's `util_est` and its count of CFS tasks (`h_nr_running`;
    /// `h_nr_queued` in 6.12.37 and later 6.12 releases, `h_nr_runnable` since 6.14: what each
    /// release's balancer sums) at that moment; the kernel changes
    /// both just before. Also sent with `nr_running` unchanged, at a switch to sleep or a
    /// wakeup, when util_est moved with no enqueue or dequeue to carry it (6.12's delayed
    /// dequeue). `None` where not read: older recordings, folded mode.
    NrRunning {
        rq_cpu: u16,
        nr_running: u32,
        #[serde(default, skip_serializing_if = "OptU32::is_none")]
        util_est: OptU32,
        #[serde(default, skip_serializing_if = "OptU32::is_none")]
        cfs_h_nr_running: OptU32,
    },
    /// `pelt_cfs_tp` on a root cfs_rq (rate-limited per CPU): the CPU's CFS load, runnable and
    /// util averages, and `util_est` (the estimated utilization the balancer takes when it is
    /// higher than `util_avg`; `None` in recordings made before it was recorded).
    Pelt(Box<PeltInfo>),
    /// `sched_cpu_capacity_tp`: `rq->cpu_capacity` of `rq_cpu`.
    Capacity { rq_cpu: u32, capacity: u64 },
    /// SCHED_SOFTIRQ (vector 7) entry or exit on `cpu`. `idle` at entry: the CPU was idle
    /// (the balancer runs with idle type CPU_IDLE).
    BalanceSoftirq { entry: bool, idle: bool },
    /// `sched_move_numa`, `sched_swap_numa` or `sched_stick_numa`.
    Numa(Box<NumaInfo>),
    /// A task is known with this thread-group id and name (first sight, or `sched_process_exec`
    /// with `exec` set).
    Task(Box<TaskInfo>),
    /// The cgroup (unified hierarchy) a task was in when announced (first sight or exec):
    /// `id` is the cgroup's kernfs id, `path` its path under the cgroup2 mount when the
    /// source could name it.
    Cgroup(Box<CgroupInfo>),
    /// A task's allowed CPUs, sent at first sight and whenever they change.
    Affinity { pid: Pid, cpus: Box<CpuSet> },
    /// `sched_process_exit`.
    Exit { pid: Pid, tgid: Pid },
    /// Events the ring buffer could not take on `cpu` since the previous `Lost` for it.
    Lost { count: u64 },
    /// The source's clock reached `ts_ns` with every earlier event delivered: lets intervals
    /// close when the machine is quiet.
    Clock,
    /// A decision of the balancer read from its `struct lb_env` (fentry mode only, where the
    /// kernel allows fentry): at the exit of the busiest-group search (`pid` None, `balanced`
    /// when no busiest group was found) or at `detach_task` (`pid` Some: the task it moves).
    /// `cpu` is where the balancer runs (normally `dst_cpu`).
    Balance(Box<Balance>),
    /// One whole call of the balancer on one domain (`sched_balance_rq`, `load_balance` before
    /// 6.10), from its entry (the event's time) to its exit (fentry mode only): what the
    /// kernel's schedstat counts per call. `cpu` is where it ran.
    BalanceCall(Box<BalanceCall>),
    /// One whole call of the RT class's own push or pull code (`push_rt_task`,
    /// `pull_rt_task`, `rto_push_irq_work_func`), from its entry (the event's time) to its
    /// exit, where the kernel allows the balancer hooks. `cpu` is where it ran.
    RtCall(Box<RtCall>),
    /// A snapshot of `/proc/schedstat` as the kernel printed it, taken by the source at the
    /// start or the end of a run. The event's time is when the read began.
    Schedstat(Box<SchedstatText>),
    /// Run-queue latency folded in the kernel since the previous `Fold` (live `--fold`): the
    /// source streams no per-task wait, so the analyzer takes latency from these alone. A
    /// folded source sends an empty one first, before any other event.
    Fold(Box<Fold>),
}

/// The payload of [`EventKind::Migrate`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrateInfo {
    pub pid: Pid,
    pub src_cpu: u32,
    pub dst_cpu: u32,
    pub reason: Reason,
    pub source: ReasonSource,
    pub stack_id: Option<u32>,
    pub ctx: MigrateContext,
}

/// The payload of [`EventKind::Stack`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackInfo {
    pub id: u32,
    pub reason: Reason,
    pub frames: Vec<String>,
}

/// The payload of [`EventKind::Pelt`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeltInfo {
    pub rq_cpu: u32,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
    pub util_est: Option<u64>,
    /// Sent by a busiest-group search as it began, for a CPU of its span (the balancer
    /// hooks), with the run queue's task counts: what the kernel was about to read, not a
    /// sample. A search sends only the CPUs whose figures changed since the last search that
    /// sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_search: Option<SearchTasks>,
}

/// A run queue's task counts as a busiest-group search began ([`PeltInfo::at_search`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchTasks {
    /// `rq->nr_running`.
    pub nr_running: u32,
    /// The CFS tasks the balancer counts (`cfs.h_nr_running`, `h_nr_runnable` since 6.14).
    pub cfs_h_nr_running: u32,
    /// `idle_cpu()`: the idle task running, nothing queued, no wakeup pending.
    pub idle: bool,
}

/// The payload of [`EventKind::Numa`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaInfo {
    pub op: NumaOp,
    pub pid: Pid,
    pub src_cpu: i32,
    pub dst_pid: Pid,
    pub dst_cpu: i32,
}

/// The payload of [`EventKind::Task`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    pub pid: Pid,
    pub tgid: Pid,
    pub comm: String,
    pub exec: bool,
}

/// The payload of [`EventKind::Cgroup`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupInfo {
    pub pid: Pid,
    pub id: u64,
    pub path: Option<String>,
}

/// A `u32` that may be absent, in four bytes (an `Option<u32>` takes eight): `u32::MAX`
/// stands for absent, a value the counts and utilizations carried this way never reach (a
/// `Some(u32::MAX)` is kept as `u32::MAX - 1`). Serialized as an `Option<u32>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OptU32(u32);

impl OptU32 {
    /// Absent.
    pub const NONE: OptU32 = OptU32(u32::MAX);

    /// `v`, or absent.
    pub const fn new(v: Option<u32>) -> OptU32 {
        match v {
            Some(x) if x == u32::MAX => OptU32(u32::MAX - 1),
            Some(x) => OptU32(x),
            None => OptU32::NONE,
        }
    }

    /// `v`, present.
    pub const fn some(v: u32) -> OptU32 {
        OptU32::new(Some(v))
    }

    /// The value, if present.
    pub const fn get(self) -> Option<u32> {
        if self.0 == u32::MAX {
            None
        } else {
            Some(self.0)
        }
    }

    /// Whether it is absent.
    pub fn is_none(&self) -> bool {
        self.0 == u32::MAX
    }
}

impl Default for OptU32 {
    fn default() -> OptU32 {
        OptU32::NONE
    }
}

impl From<Option<u32>> for OptU32 {
    fn from(v: Option<u32>) -> OptU32 {
        OptU32::new(v)
    }
}

impl std::fmt::Debug for OptU32 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for OptU32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

impl<'de> Deserialize<'de> for OptU32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<OptU32, D::Error> {
        Option::<u32>::deserialize(d).map(OptU32::new)
    }
}

/// Histograms folded in the kernel over one flush period, a drain period of the live source
/// (see [`EventKind::Fold`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fold {
    /// Samples of tasks that started to run on each CPU (CPUs without samples left out).
    pub by_cpu: FoldedSet,
    /// The same samples by process (thread-group id). Processes past the kernel table's
    /// room are in `by_cpu` only.
    pub by_tgid: FoldedSet,
}

pub use crate::foldset::{Bucket, FoldedRef, FoldedSet};

/// One latency histogram as the kernel folds it, in the analyzer's own buckets: runqlat's
/// log2 microsecond slots and the log-linear nanosecond buckets, trailing zeros dropped,
/// with the exact count, minimum and maximum.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedHist {
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub log2: Vec<u64>,
    pub fine: Vec<u64>,
}

/// The balancer's view in [`EventKind::Balance`], as `struct lb_env` held it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balance {
    /// `sd->level` of the domain being balanced (0 = the lowest, e.g. SMT).
    pub level: u32,
    /// `sd->span_weight`: CPUs the domain spans.
    pub sd_weight: u32,
    /// `env->idle`.
    pub idle: CpuIdleType,
    /// `env->migration_type`.
    pub migration_type: MigrationType,
    /// `env->imbalance`.
    pub imbalance: u64,
    /// The search found no busiest group (always false at `detach_task`).
    pub balanced: bool,
    /// The search is a retry after every task of the busiest CPU was pinned away from
    /// `dst_cpu`: the kernel searched again without that CPU (`redo` in the balancer).
    pub redo: bool,
    /// `env->dst_cpu`, the CPU pulling.
    pub dst_cpu: u32,
    /// `env->src_cpu`, the CPU pulled from (meaningful at `detach_task`).
    pub src_cpu: u32,
    /// The task detached, at `detach_task`.
    pub pid: Option<Pid>,
    /// Where the pass runs, from the balancer's own code paths (the softirq serving a nohz
    /// kick, the active-balance stopper); `None` when the origin hooks did not run (older
    /// recordings, kernels without them).
    pub origin: Option<BalanceOrigin>,
    /// A search's own length (ns, from its entry, the event's time, to its exit): the kernel
    /// reads the CPUs' state one after another within it. `None` when not recorded (older
    /// recordings) or not a search.
    pub search_ns: Option<u32>,
}

/// One call of the balancer on one domain, as [`EventKind::BalanceCall`] carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceCall {
    /// `sd->level` of the domain balanced.
    pub level: u32,
    /// `sd->span_weight`: CPUs the domain spans (names the domain where `level` counts levels
    /// the kernel dropped as degenerate).
    pub sd_weight: u32,
    /// The call's idle type.
    pub idle: CpuIdleType,
    /// `this_cpu`: the CPU balanced for, whose domain `sd` is (the one pulling; under a nohz
    /// idle balance not the CPU running the code).
    pub this_cpu: u32,
    /// The call's return value, `ld_moved`: tasks moved (0: the kernel counts the call as
    /// balanced or failed).
    pub moved: u32,
    /// The call went through the kernel's failed branch (`need_active_balance` was asked,
    /// which the kernel does exactly where it counts `lb_failed`).
    pub failed: bool,
    /// Where the call ran (see [`Balance::origin`]).
    pub origin: Option<BalanceOrigin>,
    /// From entry to exit, ns (saturating at `u32::MAX`).
    pub len_ns: u32,
}

impl BalanceCall {
    /// When the call returned (entry time + length).
    pub fn exit_ns(&self, entry_ns: u64) -> u64 {
        entry_ns.saturating_add(u64::from(self.len_ns))
    }
}

/// The RT class's push and pull functions [`EventKind::RtCall`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtFunc {
    /// `push_rt_task(rq, pull)`: pushes one queued RT task of `rq` to a CPU running lower
    /// priority work (`rq` is the source).
    Push,
    /// `pull_rt_task(this_rq)`: pulls RT tasks from overloaded CPUs to `this_rq`, or, with
    /// the RT_PUSH_IPI feature, asks them to push (`rq` is the destination).
    Pull,
    /// `rto_push_irq_work_func`: the irq work that pushes this CPU's RT tasks at another
    /// CPU's request (RT_PUSH_IPI), passing the request on (`rq` is this CPU, the source).
    PushIrqWork,
}

impl RtFunc {
    /// Every function, in wire order (its index is its code).
    pub const ALL: [RtFunc; 3] = [RtFunc::Push, RtFunc::Pull, RtFunc::PushIrqWork];

    /// The kernel function's name.
    pub fn kernel_name(self) -> &'static str {
        match self {
            RtFunc::Push => "push_rt_task",
            RtFunc::Pull => "pull_rt_task",
            RtFunc::PushIrqWork => "rto_push_irq_work_func",
        }
    }

    /// Whether the call's `rq` is where tasks leave (push) rather than arrive (pull).
    pub fn rq_is_source(self) -> bool {
        !matches!(self, RtFunc::Pull)
    }
}

/// One call of an RT push or pull function, as [`EventKind::RtCall`] carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtCall {
    /// The function.
    pub func: RtFunc,
    /// `rq->cpu` of the run queue it works on: the source of a push, the destination of a
    /// pull (the running CPU for the irq work).
    pub rq_cpu: u32,
    /// From entry to exit, ns (saturating at `u32::MAX`).
    pub len_ns: u32,
}

impl RtCall {
    /// When the call returned (entry time + length).
    pub fn exit_ns(&self, entry_ns: u64) -> u64 {
        entry_ns.saturating_add(u64::from(self.len_ns))
    }
}

/// `/proc/schedstat` as read at the start or end of a run ([`EventKind::Schedstat`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedstatText {
    /// Taken at the run's end (else its start).
    pub end: bool,
    /// How long the read took, ns: the kernel printed each CPU's counters at some instant
    /// between the event's time and this much later.
    pub read_ns: u64,
    /// The file's text, unparsed.
    pub text: String,
}

/// The code path a balancer pass runs in, as the balancer hooks see it (bpf/balancer.bpf.c):
/// independent of the stack table, so it can judge the stack-derived reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BalanceOrigin {
    /// The CPU balances its own domains: its tick's softirq, or newly idle.
    Own,
    /// Inside the balancer softirq serving a nohz kick: the idle-load-balancer CPU balances
    /// every idle CPU's domains (its own last), `dst_cpu` being the one balanced for.
    NohzIdle,
    /// Inside `active_load_balance_cpu_stop`, the stopper on the busiest CPU pushing one task.
    /// A record from it with no pid is the stopper's entry (not a search).
    Stopper,
}

impl BalanceOrigin {
    /// The stable JSON/text name.
    pub fn name(self) -> &'static str {
        match self {
            BalanceOrigin::Own => "own",
            BalanceOrigin::NohzIdle => "nohz_idle",
            BalanceOrigin::Stopper => "stopper",
        }
    }
}

impl Balance {
    /// The record of the active-balance stopper's entry, not a busiest-group search.
    pub fn is_stopper_entry(&self) -> bool {
        self.pid.is_none() && self.origin == Some(BalanceOrigin::Stopper)
    }
}

/// `enum cpu_idle_type` (the kernel's numbering: 0 idle, 1 not idle, 2 newly idle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuIdleType {
    Idle,
    NotIdle,
    NewlyIdle,
}

impl CpuIdleType {
    /// The stable JSON/text name.
    pub fn name(self) -> &'static str {
        match self {
            CpuIdleType::Idle => "idle",
            CpuIdleType::NotIdle => "not_idle",
            CpuIdleType::NewlyIdle => "newly_idle",
        }
    }

    /// From the kernel's value; `None` when out of range.
    pub fn from_kernel(v: u32) -> Option<Self> {
        match v {
            0 => Some(CpuIdleType::Idle),
            1 => Some(CpuIdleType::NotIdle),
            2 => Some(CpuIdleType::NewlyIdle),
            _ => None,
        }
    }
}

/// `enum migration_type` (0 load, 1 util, 2 task, 3 misfit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationType {
    Load,
    Util,
    Task,
    Misfit,
}

impl MigrationType {
    /// The stable JSON/text name.
    pub fn name(self) -> &'static str {
        match self {
            MigrationType::Load => "load",
            MigrationType::Util => "util",
            MigrationType::Task => "task",
            MigrationType::Misfit => "misfit",
        }
    }

    /// From the kernel's value.
    pub fn from_kernel(v: u32) -> Option<Self> {
        match v {
            0 => Some(MigrationType::Load),
            1 => Some(MigrationType::Util),
            2 => Some(MigrationType::Task),
            3 => Some(MigrationType::Misfit),
            _ => None,
        }
    }
}

/// The three NUMA balancing tracepoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NumaOp {
    Move,
    Swap,
    Stick,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event is half a cache line: the live pipeline moves every one through its merge
    /// queues and batches, and padding 64-byte events to 128 cost `top` a fifth to a half
    /// more CPU per context switch of the load (tests/bench/HISTORY.md). The kinds that come by the
    /// hundred thousand a second stay inline; the rare and bulky ones are boxed.
    #[test]
    fn an_event_is_half_a_cache_line() {
        assert_eq!(std::mem::size_of::<EventKind>(), 16);
        assert_eq!(std::mem::size_of::<Event>(), 32);
    }

    /// An absent value and every value but the sentinel come back as they went in, also
    /// through JSON (as an `Option<u32>`); the sentinel itself is kept one below.
    #[test]
    fn opt_u32_holds_every_count_but_its_sentinel() {
        for v in [None, Some(0), Some(1), Some(1024), Some(u32::MAX - 1)] {
            let o = OptU32::new(v);
            assert_eq!(o.get(), v);
            assert_eq!(o.is_none(), v.is_none());
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(json, serde_json::to_string(&v).unwrap());
            assert_eq!(serde_json::from_str::<OptU32>(&json).unwrap(), o);
        }
        assert_eq!(OptU32::some(u32::MAX).get(), Some(u32::MAX - 1));
        assert_eq!(OptU32::default(), OptU32::NONE);
        assert_eq!(format!("{:?}", OptU32::some(3)), "Some(3)");
    }

    /// A NrRunning event's JSON is what it was with `Option` fields: the optional counts
    /// left out when absent.
    #[test]
    fn nr_running_json_leaves_absent_counts_out() {
        let e = EventKind::NrRunning {
            rq_cpu: 3,
            nr_running: 2,
            util_est: OptU32::some(17),
            cfs_h_nr_running: OptU32::NONE,
        };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(
            json,
            r#"{"type":"nr_running","rq_cpu":3,"nr_running":2,"util_est":17}"#
        );
        assert_eq!(serde_json::from_str::<EventKind>(&json).unwrap(), e);
    }
}
