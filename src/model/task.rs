//! What the model keeps per task: its process, its cgroup, its affinity, the last CPU it was
//! seen on, its last migration (for ping-pong) and whether it ran this interval (for spread).
//! What every switch and wakeup reads or writes stays in one small entry per task; the cgroup
//! and the last migration, read only at migrations and spread samples, are kept apart.
//!
//! The table is the one per-task table of a run: each entry also holds what its owner keeps
//! of the task (`ext`: the analyzer's runqlat and wait state; nothing for the validator's own
//! model), so that a switch or a wakeup looks its task up once for both.
//!
//! It also notices moves it was not told of: a task seen on a CPU other than its last one,
//! with no migration between (the kernel ran no BPF program at that `sched_migrate_task`,
//! or its record was lost), is an unseen move, queued for the owner ([`TaskTable::take_unseen`]).
//!
//! Invariants: a task's entries go at its exit; `allowed` is `None` for "every CPU"; a default
//! entry says no more than no entry.

use crate::cpuset::CpuSet;
use crate::event::{Pid, Reason};
use crate::idhash::IdMap;
use crate::topology::{first_holders, NOT_HELD};
use std::collections::hash_map::Entry;

/// A task's last migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastMove {
    /// Source CPU.
    pub src: u32,
    /// Destination CPU.
    pub dst: u32,
    /// When.
    pub t_ns: u64,
    /// Why.
    pub reason: Reason,
}

/// A move the table was not told of: the task was last seen on `src` and is now on `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnseenMove {
    /// The task.
    pub pid: Pid,
    /// The CPU it was last seen on.
    pub src: u32,
    /// The CPU it is seen on now.
    pub dst: u32,
}

/// What the owner of a [`TaskTable`] keeps per task beside the model.
pub trait TaskExt: Clone + Default + std::fmt::Debug {}

impl<X: Clone + Default + std::fmt::Debug> TaskExt for X {}

/// One task's entry.
#[derive(Clone, Debug, Default)]
pub struct Task<X = ()> {
    tgid: Option<Pid>,
    /// Boxed: inline, the mask would make every entry several times larger.
    allowed: Option<Box<CpuSet>>,
    cpu: Option<u32>,
    ran: bool,
    /// The owner's part.
    pub ext: X,
}

/// The id of the unified hierarchy's root cgroup (its kernfs root node).
pub const ROOT_CGROUP: u64 = 1;

/// Threads per bucket ([`TaskTable::spread`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spread {
    /// (tgid, threads per bucket).
    pub processes: Vec<(Pid, Vec<u64>)>,
    /// (cgroup id, threads per bucket, its processes).
    pub cgroups: Vec<(u64, Vec<u64>, Vec<Pid>)>,
}

/// What the spread is judged over, fixed by the topology and indexed once: the buckets, each
/// CPU's bucket (the first holding it) and all their CPUs, so that a task costs one lookup
/// and one mask test per sample, not one per bucket.
#[derive(Clone, Debug, Default)]
pub struct Buckets {
    /// The buckets' CPUs.
    pub sets: Vec<CpuSet>,
    of_cpu: Vec<u32>,
    all: CpuSet,
}

impl Buckets {
    /// Indexes `sets`.
    pub fn new(sets: Vec<CpuSet>) -> Buckets {
        Buckets {
            of_cpu: first_holders(&sets),
            all: sets.iter().fold(CpuSet::new(), |a, b| a.or(b)),
            sets,
        }
    }

    /// The bucket `cpu` counts in.
    fn of(&self, cpu: u32) -> Option<usize> {
        let i = *self.of_cpu.get(cpu as usize)?;
        (i != NOT_HELD).then_some(i as usize)
    }
}

/// Every task the model knows.
#[derive(Clone, Debug)]
pub struct TaskTable<X = ()> {
    tasks: IdMap<Pid, Task<X>>,
    /// Each task's cgroup id, for those announced with one.
    cgroups: IdMap<Pid, u64>,
    /// Each task's last migration, for those that moved.
    last_moves: IdMap<Pid, LastMove>,
    /// Moves noticed and not yet taken by the owner.
    unseen: Vec<UnseenMove>,
    /// Whether unseen moves are queued (off by default: an owner that never takes them, or
    /// whose events leave most switches out, has them ignored).
    notice: bool,
}

impl<X> Default for TaskTable<X> {
    fn default() -> Self {
        TaskTable {
            tasks: IdMap::default(),
            cgroups: IdMap::default(),
            last_moves: IdMap::default(),
            unseen: Vec::new(),
            notice: false,
        }
    }
}

/// Sets `t`'s CPU to `cpu`, queueing an unseen move when it was last seen elsewhere.
#[inline]
fn seen_at<X>(t: &mut Task<X>, unseen: &mut Vec<UnseenMove>, notice: bool, pid: Pid, cpu: u32) {
    if let Some(src) = t.cpu.replace(cpu) {
        if src != cpu && notice {
            unseen.push(UnseenMove { pid, src, dst: cpu });
        }
    }
}

impl<X: TaskExt> TaskTable<X> {
    /// The owner's part of `pid`'s entry, if it has one.
    #[inline]
    pub fn ext(&self, pid: Pid) -> Option<&X> {
        self.tasks.get(&pid).map(|t| &t.ext)
    }

    /// The owner's part of `pid`'s entry, if it has one.
    #[inline]
    pub fn ext_mut(&mut self, pid: Pid) -> Option<&mut X> {
        self.tasks.get_mut(&pid).map(|t| &mut t.ext)
    }

    /// The owner's part of `pid`'s entry, made if missing.
    #[inline]
    pub fn ext_entry(&mut self, pid: Pid) -> &mut X {
        &mut self.tasks.entry(pid).or_default().ext
    }

    /// Every entry's owner part.
    pub fn exts(&self) -> impl Iterator<Item = (Pid, &X)> + '_ {
        self.tasks.iter().map(|(p, t)| (*p, &t.ext))
    }

    /// Visits every entry's owner part with `take`, which returns a count and may reset it;
    /// returns the (pid, count) pairs with a count above zero.
    pub fn take_counts(&mut self, mut take: impl FnMut(&mut X) -> u64) -> Vec<(Pid, u64)> {
        self.tasks
            .iter_mut()
            .filter_map(|(p, t)| {
                let n = take(&mut t.ext);
                (n > 0).then_some((*p, n))
            })
            .collect()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// No entry is held.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Its thread-group id is `tgid`.
    pub fn identify(&mut self, pid: Pid, tgid: Pid) {
        if pid != 0 {
            self.tasks.entry(pid).or_default().tgid = Some(tgid);
        }
    }

    /// Its cgroup's id.
    pub fn set_cgroup(&mut self, pid: Pid, id: u64) {
        if pid != 0 {
            self.cgroups.insert(pid, id);
        }
    }

    /// Its allowed CPUs.
    pub fn set_allowed(&mut self, pid: Pid, cpus: &CpuSet) {
        if pid != 0 {
            // A mask holding every online CPU is stored as is: `allowed()` then allows all.
            self.tasks.entry(pid).or_default().allowed = Some(Box::new(*cpus));
        }
    }

    /// Its affinity (`None` = every CPU).
    pub fn allowed(&self, pid: Pid) -> Option<&CpuSet> {
        self.tasks.get(&pid).and_then(|t| t.allowed.as_deref())
    }

    /// The last CPU it was seen on.
    pub fn cpu(&self, pid: Pid) -> Option<u32> {
        self.tasks.get(&pid).and_then(|t| t.cpu)
    }

    /// It was queued on `cpu` (wakeup placement), without running yet; returns the owner's
    /// part of its entry.
    #[inline]
    pub fn place(&mut self, pid: Pid, cpu: u32) -> Option<&mut X> {
        if pid == 0 {
            return None;
        }
        let t = self.tasks.entry(pid).or_default();
        seen_at(t, &mut self.unseen, self.notice, pid, cpu);
        Some(&mut t.ext)
    }

    /// It started running on `cpu`; returns the owner's part of its entry.
    #[inline]
    pub fn ran(&mut self, pid: Pid, cpu: u32) -> Option<&mut X> {
        if pid == 0 {
            return None;
        }
        let t = self.tasks.entry(pid).or_default();
        seen_at(t, &mut self.unseen, self.notice, pid, cpu);
        t.ran = true;
        Some(&mut t.ext)
    }

    /// It was seen on `cpu` (switched out there), if it has an entry; returns the owner's
    /// part of it, made if missing when `make` (a new entry has seen no CPU yet).
    #[inline]
    pub fn seen_on(&mut self, pid: Pid, cpu: u32, make: bool) -> Option<&mut X> {
        match self.tasks.entry(pid) {
            Entry::Occupied(o) => {
                let t = o.into_mut();
                seen_at(t, &mut self.unseen, self.notice, pid, cpu);
                Some(&mut t.ext)
            }
            Entry::Vacant(v) => make.then(|| &mut v.insert(Task::default()).ext),
        }
    }

    /// Queue unseen moves from now on (`true`) or not.
    pub fn notice_unseen(&mut self, on: bool) {
        self.notice = on;
        if !on {
            self.unseen.clear();
        }
    }

    /// Whether moves were noticed since the last [`TaskTable::take_unseen`].
    #[inline]
    pub fn has_unseen(&self) -> bool {
        !self.unseen.is_empty()
    }

    /// The moves noticed since the last call, oldest first.
    pub fn take_unseen(&mut self) -> std::vec::Drain<'_, UnseenMove> {
        self.unseen.drain(..)
    }

    /// Records its move `src -> dst` at `t`; returns the previous move if this one undoes it
    /// (`dst -> src`) within `window` ns.
    pub fn migrated(
        &mut self,
        pid: Pid,
        src: u32,
        dst: u32,
        t: u64,
        window: u64,
    ) -> Option<LastMove> {
        let last = *self.last_moves.get(&pid)?;
        (last.src == dst && last.dst == src && t.saturating_sub(last.t_ns) <= window)
            .then_some(last)
    }

    /// It moved `src -> dst` at `t` for `reason` (call after [`TaskTable::migrated`]).
    pub fn moved(&mut self, pid: Pid, src: u32, dst: u32, t_ns: u64, reason: Reason) {
        let t = self.tasks.entry(pid).or_default();
        // Last seen elsewhere than where this move starts: an earlier move went unseen.
        seen_at(t, &mut self.unseen, self.notice, pid, src);
        t.cpu = Some(dst);
        self.last_moves.insert(
            pid,
            LastMove {
                src,
                dst,
                t_ns,
                reason,
            },
        );
    }

    /// Forgets it; returns the owner's part.
    pub fn remove(&mut self, pid: Pid) -> Option<X> {
        self.cgroups.remove(&pid);
        self.last_moves.remove(&pid);
        self.tasks.remove(&pid).map(|t| t.ext)
    }

    /// Clears the ran-this-interval marks.
    pub fn new_interval(&mut self) {
        for t in self.tasks.values_mut() {
            t.ran = false;
        }
    }

    /// How the threads that ran this interval and may run on every bucket sit in the buckets:
    /// per process (by tgid), and per cgroup other than the root holding more than one such
    /// process (with its processes), both sorted by id.
    pub fn spread(&self, buckets: &Buckets) -> Spread {
        let n = buckets.sets.len();
        let mut procs: IdMap<Pid, Vec<u64>> = IdMap::default();
        let mut groups: IdMap<u64, (Vec<u64>, Vec<Pid>)> = IdMap::default();
        for (pid, t) in &self.tasks {
            let (Some(tgid), Some(cpu), true) = (t.tgid, t.cpu, t.ran) else {
                continue;
            };
            // May run on every bucket: all their CPUs are in its mask.
            if t.allowed
                .as_ref()
                .is_some_and(|a| !buckets.all.is_subset(a))
            {
                continue;
            }
            let Some(i) = buckets.of(cpu) else {
                continue;
            };
            procs.entry(tgid).or_insert_with(|| vec![0; n])[i] += 1;
            // The root cgroup holds whatever was never put anywhere: no one's job.
            let cgroup = self.cgroups.get(pid).copied();
            if let Some(cg) = cgroup.filter(|&cg| cg != ROOT_CGROUP) {
                let g = groups.entry(cg).or_insert_with(|| (vec![0; n], Vec::new()));
                g.0[i] += 1;
                g.1.push(tgid);
            }
        }
        let mut processes: Vec<(Pid, Vec<u64>)> = procs.into_iter().collect();
        processes.sort_unstable_by_key(|p| p.0);
        let mut cgroups: Vec<(u64, Vec<u64>, Vec<Pid>)> = groups
            .into_iter()
            .filter_map(|(id, (h, mut p))| {
                p.sort_unstable();
                p.dedup();
                (p.len() > 1).then_some((id, h, p))
            })
            .collect();
        cgroups.sort_unstable_by_key(|g| g.0);
        Spread { processes, cgroups }
    }
}
