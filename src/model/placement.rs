//! The findings the model judges as events arrive: missed_pull (from the idle stretches the
//! analyzer measures), busy_wakeup at a wakeup's placement, and a migration's bookkeeping
//! with harmful_migration and ping_pong. Part of [`Model`]'s state; reads its per-CPU and
//! per-task tables and writes only its finding log and task table.

use super::*;

impl<X: super::TaskExt> Model<X> {
    /// The missed_pull threshold of a domain at `level`, ns: `--missed-pull-ms` if given,
    /// else the longest the kernel's own rules let a movable task wait: a cache-hot task is
    /// refused until `cache_nice_tries` balance attempts failed, and an idle CPU's interval
    /// may have doubled to max_interval (twice the span weight in ms), so
    /// `2 × weight ms × (cache_nice_tries + 1)`; plus one scheduler tick at the slowest common
    /// rate (HZ=100, 10 ms), because a tickless idle CPU is only balanced once a busy CPU's
    /// tick kicks the nohz balancer (`nohz_balancer_kick`), and the tick rate is not in the
    /// event stream.
    pub fn missed_pull_ns(&self, level: usize, span: &CpuSet) -> u64 {
        // sd_init: 0 at SMT, 2 with SD_NUMA (not NODE, see domains::sd_numa), else 1.
        let tries = match self.topo.levels.get(level) {
            Some(l) if l.kind == LevelKind::Smt => 0,
            Some(l) if domains::sd_numa(l) => 2,
            _ => 1,
        };
        let ms = self
            .config
            .missed_pull_ms
            .unwrap_or(2 * span.len() as u64 * (tries + 1) + NOHZ_KICK_MS);
        ms.max(1) * 1_000_000
    }

    /// Records a missed_pull: the analyzer saw a CPU of this domain idle for at least
    /// [`Model::missed_pull_ns`] while a task allowed on it waited elsewhere in the domain.
    pub fn missed_pull(&mut self, s: &IdleStretch) {
        if self.log.counted_only(FindingKind::MissedPull) {
            return;
        }
        let key = self.topo.level_key(Some(s.level)).to_string();
        let limit = self.missed_pull_ns(s.level, &s.span);
        let idle_ms = s.now_ns.saturating_sub(s.since_ns) / 1_000_000;
        let text = format!(
            "CPU {} of {key} domain {} stayed idle {idle_ms} ms (limit {} ms) while tasks it \
             could run waited on CPU {}",
            s.idle,
            s.span,
            limit / 1_000_000,
            s.waiting
        );
        let evidence = [
            ("idle_cpus", json!(s.idle.to_string())),
            ("waiting_cpus", json!(s.waiting.to_string())),
            ("idle_ns", json!(s.now_ns.saturating_sub(s.since_ns))),
            ("limit_ns", json!(limit)),
            ("since_ns", json!(s.since_ns)),
        ];
        self.log.add(Finding {
            kind: FindingKind::MissedPull,
            t_ns: s.now_ns,
            level: Some(key),
            span: Some(s.span),
            cpus: s.idle.or(&s.waiting).iter().map(|c| c as u32).collect(),
            pids: s.pids.clone(),
            evidence: findings::evidence(evidence),
            text,
        });
    }

    /// busy_wakeup: `pid` queued on a CPU running another task while an idle CPU it is
    /// allowed on existed in the target's LLC.
    pub(super) fn check_wakeup(&mut self, t: u64, pid: Pid, target: u32) {
        let Some(level) = self.llc_level else {
            return;
        };
        if pid == 0
            || !self
                .cpus
                .get(target as usize)
                .is_some_and(|c| c.busy_with_other(pid))
        {
            return;
        }
        if let Some(&n) = self
            .topo
            .domain_index(level, target as usize)
            .and_then(|d| self.llc_idle.get(d))
        {
            // The target runs a task, so it is not among them: no other CPU of its LLC is
            // known idle.
            if n == 0 {
                return;
            }
        }
        let Some(span) = self.topo.domain_of(level, target as usize).map(|d| &d.span) else {
            return;
        };
        let mut idle = span.and(&self.known_idle);
        idle.remove(target as usize);
        if idle.is_empty() {
            return;
        }
        if let Some(a) = self.tasks.allowed(pid) {
            idle = idle.and(a);
            if idle.is_empty() {
                return;
            }
        }
        if self.log.counted_only(FindingKind::BusyWakeup) {
            return;
        }
        let idle: Vec<u32> = idle.iter().map(|c| c as u32).collect();
        let cur = self.cpus[target as usize].current.unwrap_or(0);
        let key = self.topo.level_key(Some(level)).to_string();
        let mut cpus = vec![target];
        cpus.extend(&idle);
        let evidence = [
            ("target_cpu", json!(target)),
            ("target_current_pid", json!(cur)),
            (
                "target_nr_running",
                json!(self.sample(target as usize).nr_running),
            ),
            ("idle_cpus", json!(idle)),
            ("prev_cpu", json!(self.tasks.cpu(pid))),
        ];
        self.log.add(Finding {
            kind: FindingKind::BusyWakeup,
            t_ns: t,
            level: Some(key.clone()),
            span: Some(*span),
            cpus,
            pids: vec![pid],
            evidence: findings::evidence(evidence),
            text: format!(
                "task {pid} woke onto CPU {target}, busy with task {cur}, while CPU {} of its \
                 {key} domain {span} was idle and allowed",
                idle[0]
            ),
        });
    }

    /// A `Migrate` at `t` of `pid` (not 0) from `src` to `dst` (another CPU), which crossed
    /// `level` (the topology's `crossed_level`, which a caller may have found already).
    pub fn migrated(
        &mut self,
        t: u64,
        pid: Pid,
        src: u32,
        dst: u32,
        reason: crate::event::Reason,
        level: Option<usize>,
    ) {
        self.wake_moved(pid, dst);
        if let Some(i) = level.and_then(|l| self.table.index(&self.topo, l, dst as usize)) {
            self.moves[i] += 1;
        }
        if reason.is_balancer() {
            if let Some(l) = level {
                self.check_harmful(t, pid, src, dst, l, reason);
            }
            if let Some(c) = self.cpu_mut(dst) {
                c.pending_in += 1;
            }
        }
        if let Some(back) = self
            .tasks
            .migrated(pid, src, dst, t, self.config.ping_pong_ns)
            .filter(|_| !self.log.counted_only(FindingKind::PingPong))
        {
            let key = self.topo.level_key(level).to_string();
            let evidence = [
                ("first_move_ns", json!(back.t_ns)),
                ("round_trip_ns", json!(t.saturating_sub(back.t_ns))),
                ("first_reason", json!(back.reason.name())),
                ("second_reason", json!(reason.name())),
                ("window_ns", json!(self.config.ping_pong_ns)),
            ];
            self.log.add(Finding {
                kind: FindingKind::PingPong,
                t_ns: t,
                level: Some(key),
                span: level.and_then(|l| self.topo.span(l, dst as usize)),
                cpus: vec![dst, src],
                pids: vec![pid],
                evidence: findings::evidence(evidence),
                text: format!(
                    "task {pid} moved CPU {dst} -> {src} ({}) and back -> {dst} ({}) within {} us",
                    back.reason.name(),
                    reason.name(),
                    t.saturating_sub(back.t_ns) / 1000
                ),
            });
        }
        self.tasks.moved(pid, src, dst, t, reason);
    }
}
