//! Folded mode (live `--fold`): the analyzer's handling of a source that folds run-queue
//! latency in the kernel and streams only what the rest of the analysis needs.
//!
//! The analyzer turns folded at its first [`EventKind::Fold`] (a folded source sends an empty
//! one before anything else) and stays so. From then on:
//! - latency comes only from `Fold` events: their per-CPU histograms feed the per-CPU (hence
//!   global and per-domain) figures, their per-process ones the per-process figures;
//! - switches (sent only at idle transitions) and wakeups (sent only while some CPU may be
//!   idle) make no latency sample and no per-task wait, so the task table holds only
//!   identities and affinities, dropped at exit;
//! - idle-while-others-wait counts anonymous waiters per CPU, derived from `nr_running` and
//!   the CPU's idleness (exact at the classes 0, 1 and 2+ the source always reports);
//! - the CPU table shows no running task but the idle one: between idle transitions the
//!   analyzer does not know which task runs;
//! - missed pulls reach the model without the waiting tasks' ids (none is known);
//! - a process's samples come in the `Fold` after the source turned their bank, which it does
//!   every half interval (100 to 500 ms), later still when the source drains late: an exited
//!   leader's identity is kept for the two `Fold`s with process histograms after its exit,
//!   which name and filter its last samples (the `Fold`s in between carry none).
//!
//! [`EventKind::Fold`]: crate::event::EventKind::Fold

use super::hist::LatHist;
use super::task::identity;
use super::Analyzer;
use crate::event::{Fold, Pid};

impl Analyzer {
    /// Whether the analyzer is in folded mode (it has seen a `Fold` event).
    pub fn is_folded(&self) -> bool {
        self.folded
    }

    /// Folded latency histograms dropped since the analysis started because they were
    /// inconsistent (their slots or buckets do not sum to their count, or do not fit).
    pub fn dropped_folds(&self) -> u64 {
        self.dropped_folds
    }

    /// Folds one `Fold` event, turning the analyzer folded first if it was not.
    // Out of line: rare, and large once inlined.
    #[inline(never)]
    pub(super) fn on_fold(&mut self, f: &Fold) {
        if !self.folded {
            self.enter_folded();
        }
        let filter = &self.config.filter;
        // Per-CPU histograms are taken as they are whatever the task filter: with `-p` the
        // kernel side keeps only that process's samples; a histogram cannot be split by task.
        for (cpu, fh) in f.by_cpu.iter() {
            if !LatHist::folded_ok(fh) {
                self.dropped_folds += 1;
            } else if filter.matches_cpu(cpu) {
                self.latency.merge_cpu(cpu, fh);
            }
        }
        // Only a Fold that read a retired per-process bank carries processes (with `-p` none
        // does: the per-CPU histograms are that process's).
        if f.by_tgid.is_empty() {
            return;
        }
        self.folds += 1;
        // Per-process histograms span every CPU: `--cpus` cannot narrow them.
        let every_task = filter.matches_every_task();
        for (tgid, fh) in f.by_tgid.iter() {
            if !LatHist::folded_ok(fh) {
                self.dropped_folds += 1;
                continue;
            }
            // A process already named this interval, with no task filter: nothing to look
            // up (a thousand processes' identities cost more than their histograms).
            if every_task && self.latency.merge_named_process(tgid, fh) {
                continue;
            }
            // The leader's name (an exited leader's within its grace, as the task filter
            // knows it), else a thread's.
            let who = identity(
                self.model.tasks(),
                &self.names,
                &self.exited,
                self.now,
                tgid,
            );
            let gone = self.fold_exited.get(&tgid).map(|(w, _)| w);
            let comm = who
                .comm
                .or_else(|| gone.and_then(|w| w.comm.as_deref()))
                .or_else(|| self.thread_names.get(&tgid).map(String::as_str));
            let cgroup = who
                .cgroup
                .or_else(|| gone.and_then(|w| w.cgroup))
                .and_then(|c| self.cgroups.path(c));
            if filter.matches_task(tgid, Some(tgid), comm, cgroup) {
                self.latency.merge_process(tgid, fh, comm);
            }
        }
        // This Fold was the second with processes since those exits: their samples are all in.
        let folds = self.folds;
        self.fold_exited.retain(|_, (_, at)| folds - *at < 2);
    }

    /// Process leader `pid` exited. Its samples can still come in the next two `Fold`
    /// events that carry processes: the bank it last ran in is read in the first or the second
    /// of them (src/source/live/fold.rs), however long the source took to drain. Its identity
    /// is kept until then, so that they are named and filtered as the live process was. With
    /// `-p` no `Fold` carries processes and nothing is kept.
    pub(super) fn fold_exited(
        &mut self,
        pid: Pid,
        tgid: Option<u32>,
        comm: Option<String>,
        cgroup: Option<u32>,
    ) {
        if self.config.filter.tgid.is_some() {
            return;
        }
        let who = super::task::Ident { tgid, comm, cgroup };
        self.fold_exited.insert(pid, (who, self.folds));
    }

    /// Turns the analyzer folded. A folded source sends nothing before its first `Fold`, but
    /// should anything have come before, its waits and enqueue times would never end: they
    /// go, and the CPUs' waiters are derived from `nr_running` from now on.
    fn enter_folded(&mut self) {
        self.folded = true;
        self.model.tasks_mut().notice_unseen(false);
        let pids: Vec<Pid> = self.model.tasks().exts().map(|(p, _)| p).collect();
        for pid in pids {
            if let Some(t) = self.model.tasks_mut().ext_mut(pid) {
                t.enqueue_ts = None;
                if let Some(w) = t.wait.take() {
                    self.idle.remove_waiter(pid, w);
                }
            }
        }
        for cpu in 0..self.model.cpus().count() {
            self.refresh_queued(cpu as u32);
        }
    }

    /// Remembers a thread's name for its process while the leader's is not known.
    pub(super) fn name_process(&mut self, pid: Pid, tgid: Pid, comm: &str) {
        if pid != tgid && !self.names.contains_key(&tgid) {
            self.thread_names
                .entry(tgid)
                .or_insert_with(|| comm.to_string());
        }
    }

    /// A switch in folded mode (an idle transition): only the CPU's idleness changes.
    pub(super) fn folded_switch(&mut self, cpu: u32, next: Pid) {
        if (cpu as usize) < crate::cpuset::MAX_CPUS {
            self.idle.set_idle(cpu, next == 0);
            self.refresh_queued(cpu);
        }
    }

    /// Re-derives the anonymous waiters of `cpu` for the idle accounting: the tasks queued
    /// there, `nr_running` less the running one (none when idle); none while either fact is
    /// unknown.
    pub(super) fn refresh_queued(&mut self, cpu: u32) {
        let Some(c) = self.model.cpu(cpu as usize) else {
            return;
        };
        let nr = c.nr_running.unwrap_or(0);
        let queued = match c.current {
            Some(0) => nr,
            Some(_) => nr.saturating_sub(1),
            None => 0,
        };
        self.idle.set_queued(cpu, queued);
    }
}
