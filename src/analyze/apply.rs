//! Applying one event to the analyzer's state: the one match on its kind (the common kinds
//! inline), and what switches, wakeups, migrations, identities and affinities do to the
//! per-CPU and per-task state, run-queue latency samples and migration counts (by cgroup
//! too).

use super::task::{forget_exited, identity, wait_on, Ident};
use super::Analyzer;
use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind, Pid, Reason, ReasonSource};

impl Analyzer {
    /// Applies one event to the model and to the analyzer's own state, with one match of its
    /// kind: the kinds of nearly every event (switches, wakeups, `nr_running`, PELT) inline,
    /// the others out of line, so that the per-event path stays small.
    #[inline]
    pub(super) fn apply(&mut self, ev: &Event) {
        let (ts, cpu) = (ev.ts_ns, ev.cpu);
        match &ev.kind {
            EventKind::Switch {
                prev_pid,
                prev_state,
                next_pid,
            } => {
                self.model
                    .stopper_switch(cpu, *prev_pid, *prev_state, *next_pid);
                self.counters.switched(cpu, ts);
                self.run_counters.switched(cpu, ts);
                self.on_switch(ts, cpu, *prev_pid, *prev_state, *next_pid);
            }
            EventKind::Wakeup { pid, target_cpu } => {
                self.on_wakeup(ts, *pid, *target_cpu, true);
            }
            EventKind::NrRunning {
                rq_cpu,
                nr_running,
                util_est,
                cfs_h_nr_running,
            } => {
                self.model
                    .run_queue(*rq_cpu, *nr_running, *util_est, *cfs_h_nr_running);
                if self.folded {
                    self.refresh_queued(u32::from(*rq_cpu));
                }
            }
            EventKind::Pelt(p) if p.at_search.is_some() => self.model.pelt_at_search(p),
            EventKind::Pelt(p) => {
                self.model
                    .pelt(p.rq_cpu, p.load_avg, p.runnable_avg, p.util_avg, p.util_est);
            }
            // Waking precedes placement and changes nothing here; the model marks the
            // wakeup's target (not idle while it is on its way). Clock never reaches this
            // point.
            EventKind::Waking { pid, prev_cpu } => self.model.waking(cpu, *pid, *prev_cpu),
            EventKind::Clock => {}
            // The model's part of a migration is in `apply_other`, which shares the search
            // of the level crossed with it.
            EventKind::Migrate(_) => self.apply_other(ev),
            // The analyzer first: at an exit it reads the task's entry, which the model then
            // removes.
            _ => {
                self.apply_other(ev);
                self.model.push_other(ev);
            }
        }
        if self.model.tasks().has_unseen() {
            self.count_unseen();
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
                self.inherit_cgroup(*pid, *tgid);
                // The model places a new task itself (`Model::push_other`), without judging it.
                self.on_wakeup(ts, *pid, *target_cpu, false);
                // Fork never fires sched_migrate_task: a child placed away from its parent's
                // CPU is the fork balancer's migration.
                if *target_cpu != cpu {
                    let level = self.topo.crossed_level(cpu as usize, *target_cpu as usize);
                    let fork = (Reason::Fork, false, None);
                    if self.count_migration(*pid, cpu, *target_cpu, level, fork) {
                        let cg = self.model.tasks().ext(*pid).and_then(|t| t.cgroup);
                        if let Some(cg) = cg {
                            self.cgroups.moved(cg, Reason::Fork);
                        }
                    }
                }
            }
            EventKind::Migrate(mi) => {
                let (pid, src_cpu, dst_cpu, reason) = (mi.pid, mi.src_cpu, mi.dst_cpu, mi.reason);
                if src_cpu == dst_cpu {
                    return;
                }
                // One search of the level crossed, for the model and for the counts.
                let level = self.topo.crossed_level(src_cpu as usize, dst_cpu as usize);
                if pid != 0 {
                    self.model
                        .migrated(ts, pid, src_cpu, dst_cpu, reason, level);
                }
                let how = (reason, mi.source == ReasonSource::Context, mi.stack_id);
                let counted = self.count_migration(pid, src_cpu, dst_cpu, level, how);
                self.run_counters.migration(ts, reason, level);
                // One lookup of its entry: its count in the interval, its cgroup, and whether
                // it waits.
                let exited = &self.exited;
                // An exiting task moved after its entry went (and came back empty): its
                // cgroup as the task filter still knows it.
                let exited_cgroup = || exited.get(&pid).and_then(|(who, _)| who.cgroup);
                let (waiting, cgroup) = match self.model.tasks_mut().ext_mut(pid) {
                    Some(t) => {
                        t.migrations += u32::from(counted);
                        (t.wait.is_some(), t.cgroup.or_else(exited_cgroup))
                    }
                    None => {
                        if counted {
                            self.per_task.count_unlisted(pid);
                        }
                        (false, exited_cgroup())
                    }
                };
                if let (true, Some(cg)) = (counted, cgroup) {
                    self.cgroups.moved(cg, reason);
                }
                if pid != 0 && waiting {
                    self.start_wait(pid, dst_cpu);
                }
            }
            EventKind::Stack(s) => self.migrations.describe_stack(s.id, &s.frames),
            // The model keeps the capacity in the one per-CPU table.
            EventKind::Capacity { .. } => {}
            EventKind::Task(ti) => {
                let crate::event::TaskInfo {
                    pid,
                    tgid,
                    comm,
                    exec,
                } = &**ti;
                self.set_identity(*pid, Some(*tgid), Some(comm));
                if *exec && pid == tgid {
                    self.latency.renamed(*tgid, comm);
                }
                if self.folded {
                    self.name_process(*pid, *tgid, comm);
                }
            }
            EventKind::Affinity { pid, cpus } => self.on_affinity(*pid, cpus),
            EventKind::Cgroup(c) => self.on_cgroup(c.pid, c.id, c.path.as_deref()),
            EventKind::Exit { pid, tgid } => {
                self.thread_names.remove(tgid);
                self.stop_wait(*pid);
                if let Some(t) = self.model.tasks_mut().ext_mut(*pid).map(std::mem::take) {
                    // Its moves of the open interval, and who it was, outlive its entry.
                    let comm = self.names.remove(pid);
                    self.per_task
                        .gone(*pid, t.migrations, t.tgid, comm.as_deref());
                    if self.folded && pid == tgid {
                        self.fold_exited(*pid, t.tgid, comm.clone(), t.cgroup);
                    }
                    if self.config.filter.filters_tasks() {
                        if self.exited.len() >= 4096 {
                            forget_exited(&mut self.exited, ev.ts_ns);
                        }
                        let who = Ident {
                            tgid: t.tgid,
                            comm,
                            cgroup: t.cgroup,
                        };
                        self.exited.insert(*pid, (who, ev.ts_ns));
                    }
                }
            }
            EventKind::Fold(f) => self.on_fold(f),
            EventKind::Balance(_) | EventKind::BalanceCall(_) => {
                self.counters.push(&self.topo, ev);
                self.run_counters.push(&self.topo, ev);
            }
            EventKind::Schedstat(s) => {
                self.run_counters.push(&self.topo, ev);
                self.schedstat[usize::from(s.end)] = Some((ts, (**s).clone()));
            }
            EventKind::Lost { count } => {
                self.lost += count;
                self.lost_total += count;
                *self.lost_by_cpu.entry(cpu).or_insert(0) += count;
            }
            // Balancer internals and NUMA ops belong to the model, RT push and pull calls to
            // validation; the kinds handled inline never reach this point.
            EventKind::BalanceSoftirq { .. }
            | EventKind::RtCall(_)
            | EventKind::Numa(_)
            | EventKind::Switch { .. }
            | EventKind::Wakeup { .. }
            | EventKind::NrRunning { .. }
            | EventKind::Pelt(_)
            | EventKind::Waking { .. }
            | EventKind::Clock => {}
        }
    }

    // Each task's entry is looked up once per event where the order of the updates allows:
    // switches and wakeups are most of the stream.
    fn on_switch(&mut self, ts: u64, cpu: u32, prev: Pid, prev_state: u32, next: Pid) {
        if self.folded {
            self.model.switched(cpu, next);
            self.switched_out(prev, prev_state);
            return self.folded_switch(cpu, next);
        }
        self.check_switch(cpu, prev);
        if prev != 0 {
            // Switched out here: if it was last seen elsewhere, it moved unseen. One lookup
            // of its entry for that and what follows.
            let preempted = prev_state == 0;
            let counted = preempted && self.task_matches(prev);
            let t = self.model.tasks_mut().seen_on(prev, cpu, preempted);
            match t {
                // Preempted: still runnable, now waiting on this CPU (runqlat re-enqueues it).
                Some(t) if preempted => {
                    t.enqueue_ts = Some(ts);
                    wait_on(&mut self.idle, t, prev, cpu, counted);
                }
                // It slept (or exits): it no longer waits; after its exit its entry goes.
                _ => {
                    if let Some(w) = t.and_then(|t| t.wait.take()) {
                        self.idle.remove_waiter(prev, w);
                    }
                    self.switched_out(prev, prev_state);
                }
            }
        }
        // One lookup of next's entry, for the model and for runqlat.
        let next_state = self
            .model
            .switched(cpu, next)
            .map(|t| (t.enqueue_ts.take(), t.tgid, t.cgroup, t.wait.take()));
        if let Some((enq, tgid, cgroup, wait)) = next_state {
            if let Some(w) = wait {
                self.idle.remove_waiter(next, w);
            }
            if let Some(enq) = enq {
                self.sample(cpu, next, (tgid, cgroup), ts.saturating_sub(enq));
            }
        }
        if (cpu as usize) < crate::cpuset::MAX_CPUS {
            self.idle.set_idle(cpu, next == 0);
        }
    }

    /// The switch-out of `prev` in `prev_state`: after its exit (TASK_DEAD) its entry and
    /// name go (an exiting task may run, and be named, again after `sched_process_exit`);
    /// its moves of the open interval, and who it was, stay for the interval's list.
    fn switched_out(&mut self, prev: Pid, prev_state: u32) {
        if prev_state & crate::event::TASK_DEAD == 0 {
            return;
        }
        if let Some(t) = self.model.tasks_mut().remove(prev) {
            let name = self.names.remove(&prev);
            self.per_task
                .gone(prev, t.migrations, t.tgid, name.as_deref());
        }
    }

    /// A wakeup of `pid` onto `target`: the model's part (`model`: a `Wakeup`, not a new
    /// task's) and runqlat's enqueue time with one lookup of its entry. Folded mode takes
    /// latency and waiters elsewhere.
    fn on_wakeup(&mut self, ts: u64, pid: Pid, target: u32, model: bool) {
        if pid == 0 || self.folded {
            if model {
                self.model.woken(ts, pid, target);
            }
            return;
        }
        let running = self
            .model
            .cpu(target as usize)
            .is_some_and(|c| c.current == Some(pid));
        let counted = running || self.task_matches(pid);
        let t = match model {
            true => match self.model.woken(ts, pid, target) {
                Some(t) => t,
                None => return,
            },
            false => self.model.tasks_mut().ext_entry(pid),
        };
        t.enqueue_ts = Some(ts);
        if running {
            // Woken before it got to sleep (ttwu_runnable): it runs, nobody waits.
            if let Some(w) = t.wait.take() {
                self.idle.remove_waiter(pid, w);
            }
        } else {
            wait_on(&mut self.idle, t, pid, target, counted);
        }
    }

    fn on_affinity(&mut self, pid: Pid, cpus: &CpuSet) {
        if pid == 0 {
            return;
        }
        let allowed = (!self.all_cpus.is_subset(cpus)).then(|| std::rc::Rc::new(*cpus));
        let t = self.model.tasks_mut().ext_entry(pid);
        t.allowed = allowed;
        if let Some(w) = t.wait {
            // Re-index so the idle accounting sees the new mask.
            self.start_wait(pid, w.cpu);
        }
    }

    /// Records what a Task or WakeupNew event says of a task.
    fn set_identity(&mut self, pid: Pid, tgid: Option<u32>, comm: Option<&str>) {
        if pid == 0 {
            return;
        }
        let t = self.model.tasks_mut().ext_entry(pid);
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
        self.recount_wait(pid, wait);
    }

    /// What the task filter knows of `pid` changed: a wait it has (`wait`) is counted again.
    fn recount_wait(&mut self, pid: Pid, wait: Option<super::idle::WaitSlot>) {
        if let Some(w) = wait {
            if self.config.filter.filters_tasks() && self.task_matches(pid) != w.counted() {
                self.start_wait(pid, w.cpu);
            }
        }
    }

    /// `pid` was announced in cgroup `id`, named `path` when the source could.
    fn on_cgroup(&mut self, pid: Pid, id: u64, path: Option<&str>) {
        let index = self.cgroups.announce(id, path);
        if pid == 0 {
            return;
        }
        let t = self.model.tasks_mut().ext_entry(pid);
        t.cgroup = Some(index);
        let wait = t.wait;
        self.recount_wait(pid, wait);
    }

    /// A new thread of `tgid` whose cgroup is not known yet is in its process's (threads of
    /// a process share its cgroup on the unified hierarchy) until announced.
    fn inherit_cgroup(&mut self, pid: Pid, tgid: Pid) {
        if pid == 0 || pid == tgid {
            return;
        }
        let Some(cg) = self.model.tasks().ext(tgid).and_then(|t| t.cgroup) else {
            return;
        };
        let t = self.model.tasks_mut().ext_entry(pid);
        if t.cgroup.is_none() {
            t.cgroup = Some(cg);
        }
    }

    pub(super) fn task_matches(&self, pid: Pid) -> bool {
        let f = &self.config.filter;
        if !f.filters_tasks() {
            return true;
        }
        let who = identity(self.model.tasks(), &self.names, &self.exited, self.now, pid);
        let cgroup = who.cgroup.and_then(|c| self.cgroups.path(c));
        f.matches_task(pid, who.tgid, who.comm, cgroup)
    }

    /// Marks `pid` waiting on `cpu`, moving it if it waited elsewhere.
    pub(super) fn start_wait(&mut self, pid: Pid, cpu: u32) {
        let counted = self.task_matches(pid);
        let t = self.model.tasks_mut().ext_entry(pid);
        wait_on(&mut self.idle, t, pid, cpu, counted);
    }

    pub(super) fn stop_wait(&mut self, pid: Pid) {
        let w = self
            .model
            .tasks_mut()
            .ext_mut(pid)
            .and_then(|t| t.wait.take());
        if let Some(w) = w {
            self.idle.remove_waiter(pid, w);
        }
    }

    /// One run-queue latency sample of `pid` (of process `tgid`, in the cgroup of index
    /// `cgroup`, as its entry says), which started running on `cpu`.
    fn sample(&mut self, cpu: u32, pid: Pid, who: (Option<u32>, Option<u32>), ns: u64) {
        let (mut tgid, mut cgroup) = who;
        if tgid.is_none() {
            // An exiting task run again after its entry went (it came back empty): who it
            // was, as the task filter that passed it knows it.
            if let Some((was, _)) = self.exited.get(&pid) {
                (tgid, cgroup) = (was.tgid, cgroup.or(was.cgroup));
            }
        }
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
        self.latency.record(cpu, tgid, cgroup, ns, name);
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
