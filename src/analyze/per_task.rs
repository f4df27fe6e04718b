//! Per-task migration counts of the open interval: every `Migrate` the report counts (fork
//! placements are not moves of a task and are left out), by thread; at the interval's end the
//! most migrated tasks, named as the task filter knows them. A task's count lives in its
//! entry of the task table (no lookup of its own per migration); this keeps only the counts
//! of tasks that exited during the interval, and of moves of a task without an entry.
//!
//! Invariants: memory is bounded by the tasks that exited or had no entry in the open
//! interval.

use crate::event::Pid;
use crate::idhash::IdMap;
use serde::{Deserialize, Serialize};

/// Tasks listed per interval.
pub const TOP_TASKS: usize = 10;

/// One task's migrations in one interval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMigrations {
    /// Thread id.
    pub pid: Pid,
    /// Its process, when known.
    pub tgid: Option<Pid>,
    /// Its name, when known.
    pub comm: Option<String>,
    /// Migrations in the interval.
    pub count: u64,
}

/// Counts per task in the open interval kept outside the task table.
#[derive(Clone, Debug, Default)]
pub(super) struct PerTask {
    counts: IdMap<Pid, u64>,
    /// Who the tasks counted here were when they exited or their entry went.
    gone: IdMap<Pid, (Option<Pid>, Option<String>)>,
}

impl PerTask {
    /// One counted migration of `pid`, which has no entry.
    pub(super) fn count_unlisted(&mut self, pid: Pid) {
        *self.counts.entry(pid).or_default() += 1;
    }

    /// `pid` exited after `n` counted migrations in the interval.
    fn add_exited(&mut self, pid: Pid, n: u32) {
        if n > 0 {
            *self.counts.entry(pid).or_default() += u64::from(n);
        }
    }

    /// `pid` exited, or its entry went at its last switch-out, after `n` counted migrations
    /// in the interval; it was `tgid` named `name`. What a later call does not know (the
    /// switch-out after the exit, whose entry the exit emptied) does not erase what an earlier
    /// one kept.
    pub(super) fn gone(&mut self, pid: Pid, n: u32, tgid: Option<Pid>, name: Option<&str>) {
        self.add_exited(pid, n);
        if !self.counts.contains_key(&pid) {
            return;
        }
        let who = self.gone.entry(pid).or_default();
        if tgid.is_some() {
            who.0 = tgid;
        }
        if let Some(n) = name {
            who.1 = Some(n.to_string());
        }
    }

    /// The most migrated tasks (most first, then by pid) of `in_table` (pid, count) and the
    /// counts kept here, named by `identity`; the counts kept here start again.
    pub(super) fn take<'a>(
        &mut self,
        in_table: Vec<(Pid, u64)>,
        identity: impl Fn(Pid) -> super::task::Ident<&'a str>,
    ) -> Vec<TaskMigrations> {
        for (pid, n) in in_table {
            *self.counts.entry(pid).or_default() += n;
        }
        let mut v: Vec<(Pid, u64)> = self.counts.drain().collect();
        v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(TOP_TASKS);
        let v = v
            .into_iter()
            .map(|(pid, count)| {
                let who = identity(pid);
                let (tgid, comm) = match (who.tgid, who.comm) {
                    (None, None) => self
                        .gone
                        .get(&pid)
                        .map_or((None, None), |(g, n)| (*g, n.as_deref())),
                    known => known,
                };
                TaskMigrations {
                    pid,
                    tgid,
                    comm: comm.map(str::to_string),
                    count,
                }
            })
            .collect();
        self.gone.clear();
        v
    }
}
