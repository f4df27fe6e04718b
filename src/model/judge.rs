//! The findings judged from the model's state at a migration (harmful_migration) and at an
//! interval close (churn): the rules of each, with the numbers they keep as
//! evidence. Reads the model's per-CPU and per-task state; changes only its finding log.

use super::findings;
use super::stats::CAPACITY_SCALE;
use super::{DomainView, Finding, FindingKind, Model};
use crate::cpuset::CpuSet;
use crate::event::{Pid, Reason};
use serde_json::json;

impl<X: super::TaskExt> Model<X> {
    /// harmful_migration: the move widened the src/dst group imbalance (tasks per capacity), or
    /// left an idle allowed CPU on the task's own NUMA node.
    pub(super) fn check_harmful(
        &mut self,
        t: u64,
        pid: Pid,
        src: u32,
        dst: u32,
        level: usize,
        reason: Reason,
    ) {
        let Some(dom) = self.topo.domain_of(level, dst as usize) else {
            return;
        };
        let group = |c: u32| dom.groups.iter().find(|g| g.contains(c as usize)).copied();
        let (Some(gs), Some(gd)) = (group(src), group(dst)) else {
            return;
        };
        // Tasks per group as the balancer left them: moves of this batch already detached
        // but not yet attached count at their destination.
        let sum = |g: &CpuSet| {
            g.iter().fold((0u64, 0u64, 0u64), |(n, c, l), cpu| {
                let (nr, cap, load) = self.cpus.get(cpu).map_or((0, CAPACITY_SCALE, 0), |s| {
                    (s.nr_running() + s.pending_in, s.capacity(), s.load)
                });
                (n + u64::from(nr), c + cap, l + load)
            })
        };
        let ((ns, cs, ls), (nd, cd, ld)) = (sum(&gs), sum(&gd));
        // detach_task dequeues the task (sched_update_nr_running) before set_task_cpu fires
        // sched_migrate_task: the source's count already excludes it.
        let ns = ns + 1;
        let per_cap = |n: u64, c: u64| n * CAPACITY_SCALE * 1024 / c.max(1);
        let before = per_cap(ns, cs).abs_diff(per_cap(nd, cd));
        let after = per_cap(ns - 1, cs).abs_diff(per_cap(nd + 1, cd));
        // migrate_load balances load, not tasks: with PELT figures, a move is only harmful if
        // the load gap widens too, the task's load estimated as its source CPU's average.
        let src_s = self.sample(src as usize);
        let task_load = src_s.load_avg / u64::from(src_s.nr_running + 1);
        let load_gap = |a: u64, b: u64| {
            (a * CAPACITY_SCALE / cs.max(1)).abs_diff(b * CAPACITY_SCALE / cd.max(1))
        };
        let (load_before, load_after) = (
            load_gap(ls, ld),
            load_gap(ls.saturating_sub(task_load), ld + task_load),
        );
        let load_worse = ls + ld == 0 || load_after > load_before;
        let (sn, dn) = (
            self.topo.node_of(src as usize),
            self.topo.node_of(dst as usize),
        );
        let allowed = self.tasks.allowed(pid);
        let node_idle: Vec<u32> = match sn {
            Some(n) if sn != dn && self.known_idle(dst as usize) => self.topo.numa_nodes[n]
                .iter()
                .filter(|&c| c != src as usize && self.known_idle(c))
                .filter(|&c| allowed.is_none_or(|a| a.contains(c)))
                .map(|c| c as u32)
                .collect(),
            _ => Vec::new(),
        };
        let widened = after > before && load_worse;
        if !widened && node_idle.is_empty() {
            return;
        }
        // Most moves of a busy interval arrive after the detail list is full: count those
        // before formatting anything.
        if self.log.counted_only(FindingKind::HarmfulMigration) {
            return;
        }
        let key = self.topo.level_key(Some(level)).to_string();
        let text = if widened {
            format!(
                "{} moved task {pid} CPU {src} -> {dst} in {key} domain {}: group {gs} ({ns} \
                 tasks) vs {gd} ({nd} tasks) got more imbalanced",
                reason.name(),
                dom.span
            )
        } else {
            format!(
                "{} moved task {pid} CPU {src} -> idle CPU {dst} on another NUMA node while \
                 CPU {} of its own node was idle",
                reason.name(),
                node_idle[0]
            )
        };
        let evidence = [
            ("reason", json!(reason.name())),
            ("src_group", json!(gs.to_string())),
            ("dst_group", json!(gd.to_string())),
            ("src_group_nr_running", json!(ns)),
            ("dst_group_nr_running", json!(nd)),
            ("imbalance_before", json!(before)),
            ("imbalance_after", json!(after)),
            ("load_gap_before", json!(load_before)),
            ("load_gap_after", json!(load_after)),
            ("src_node_idle_cpus", json!(node_idle)),
        ];
        self.log.add(Finding {
            kind: FindingKind::HarmfulMigration,
            t_ns: t,
            level: Some(key),
            span: Some(dom.span),
            cpus: vec![src, dst],
            pids: vec![pid],
            evidence: findings::evidence(evidence),
            text,
        });
    }

    pub(super) fn churn(&mut self, t: u64, v: &DomainView, moves: u64, rate: u64, prev: u64) {
        let evidence = [
            ("migrations", json!(moves)),
            ("per_s", json!(rate)),
            ("threshold_per_s", json!(self.config.churn_per_s)),
            ("imbalance_before", json!(prev)),
            ("imbalance_after", json!(v.imbalance)),
            ("migration_type", json!(v.migration_type)),
        ];
        self.log.add(Finding {
            kind: FindingKind::Churn,
            t_ns: t,
            level: Some(v.level.clone()),
            span: Some(v.span),
            cpus: v.span.iter().map(|c| c as u32).collect(),
            pids: Vec::new(),
            evidence: findings::evidence(evidence),
            text: format!(
                "{} domain {} moved {rate} tasks/s while its imbalance went {prev} -> {}",
                v.level, v.span, v.imbalance
            ),
        });
    }
}
