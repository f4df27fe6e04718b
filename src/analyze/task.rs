//! What the analyzer keeps per task (identity, cgroup, affinity, runqlat's enqueue time, where it
//! waits), in its part of the one task table it shares with the model
//! (`crate::model::TaskTable`), and how a task's wait moves in the idle accounting. An entry
//! goes at the task's exit; its name, in a table of its own, goes with it.

use super::idle::{IdleAccounting, WaitSlot};
use crate::cpuset::CpuSet;
use crate::event::Pid;
use crate::idhash::IdMap;
use crate::model::TaskTable;
use std::rc::Rc;

/// What is known of a task.
#[derive(Clone, Debug, Default)]
pub(super) struct TaskState {
    pub(super) tgid: Option<u32>,
    /// Its name is known (kept apart, in the analyzer's `names`: read only for the task
    /// filter and for naming a process, it would make every entry larger).
    pub(super) named: bool,
    /// Its cgroup: the index in the analyzer's cgroup table (`super::cgroups`).
    pub(super) cgroup: Option<u32>,
    /// Its migrations in the open interval (`per_task` lists the most migrated).
    pub(super) migrations: u32,
    /// `None` = every CPU (the default, and any mask containing every CPU). Behind a
    /// pointer: a restricted mask is rare, and inline it would make every task's entry five
    /// times larger and the task table that much less cache-friendly; shared with the idle
    /// accounting's index of the task while it waits.
    pub(super) allowed: Option<Rc<CpuSet>>,
    /// runqlat's enqueue timestamp.
    pub(super) enqueue_ts: Option<u64>,
    /// Where it waits, while it is runnable and not running.
    pub(super) wait: Option<WaitSlot>,
}

/// Marks task `pid` (its state `t`) waiting on `cpu` in the idle accounting, moving it if it
/// waited elsewhere. A free function so that callers keep their one lookup of the entry.
pub(super) fn wait_on(
    idle: &mut IdleAccounting,
    t: &mut TaskState,
    pid: Pid,
    cpu: u32,
    counted: bool,
) {
    if let Some(old) = t.wait.take() {
        idle.remove_waiter(pid, old);
    }
    t.wait = Some(idle.add_waiter(pid, cpu, counted, t.allowed.as_ref()));
}

/// How long an exited task's identity is kept for the task filter.
pub(super) const EXITED_GRACE_NS: u64 = 1_000_000_000;

/// Identity (tgid, comm, cgroup index) of tasks that exited, with the time they exited.
pub(super) type Exited = IdMap<Pid, (Ident<String>, u64)>;

/// Who a task is, as the task filter knows it: its process, its name, its cgroup's index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Ident<S> {
    pub(super) tgid: Option<u32>,
    pub(super) comm: Option<S>,
    pub(super) cgroup: Option<u32>,
}

/// What is known of task `pid` at `now` (its tgid, name and cgroup), as the task filter knows it:
/// from its entry while it lives, for [`EXITED_GRACE_NS`] after its exit from `exited` (an
/// exiting task can still be woken and moved, which makes it an entry again, without one).
pub(super) fn identity<'a>(
    tasks: &TaskTable<TaskState>,
    names: &'a IdMap<Pid, String>,
    exited: &'a Exited,
    now: u64,
    pid: Pid,
) -> Ident<&'a str> {
    match tasks.ext(pid) {
        Some(t) if t.tgid.is_some() || t.named || t.cgroup.is_some() => Ident {
            tgid: t.tgid,
            comm: names.get(&pid).map(String::as_str),
            cgroup: t.cgroup,
        },
        _ => match exited.get(&pid) {
            Some((who, at)) if now.saturating_sub(*at) < EXITED_GRACE_NS => Ident {
                tgid: who.tgid,
                comm: who.comm.as_deref(),
                cgroup: who.cgroup,
            },
            _ => Ident::default(),
        },
    }
}

/// Forgets the exited tasks whose grace ([`EXITED_GRACE_NS`]) is over at `now`.
pub(super) fn forget_exited(exited: &mut Exited, now: u64) {
    exited.retain(|_, (_, at)| now.saturating_sub(*at) < EXITED_GRACE_NS);
}
