//! Idle-while-others-wait accounting: for every domain of every level, how long some CPU of
//! the span was idle while a task waited on another CPU of the span.
//!
//! Idle is the kernel's `idle_cpu()`: running the idle task with nothing queued. A CPU that
//! runs its idle task while a task waits on it (woken there, not switched in yet) is about to
//! run that task, so it cannot take another CPU's waiter; counting it idle made a stopped
//! vCPU of the lab's guests, with its own wakeup pending, a "missed pull" of tens of ms.
//!
//! Owns the waiter index (which tasks wait on which CPU, split by whether their affinity
//! allows every CPU) and the set of idle CPUs, both fed by the analyzer. In folded mode the
//! analyzer knows no task's wait: it sets each CPU's count of anonymous waiters instead
//! ([`IdleAccounting::set_queued`], from `nr_running`), which count as counted waiters
//! allowed everywhere (no task filter applies to them, and a pinned waiter cannot be told
//! from a movable one).
//!
//! A domain's status (none / movable / pinned) is piecewise constant: it is re-evaluated
//! after each event only for the domains containing a CPU the event touched, and the time
//! since the last change is credited to the old status when it changes or when an interval
//! closes. Each domain keeps counts of its idle CPUs, of its CPUs with a counted waiter and
//! of those with a waiter allowed everywhere, updated as CPUs change; they settle most
//! evaluations in a few comparisons, so a 256-CPU span costs no more than a 2-CPU one. Only
//! a span whose waiters are all restricted walks its waiting CPUs, and per-waiter affinity
//! checks run only there.
//!
//! Invariants: `waiting` holds exactly the CPUs with a counted waiter (a task or an
//! anonymous one); a domain's counters equal those of `idle`, `waiting` and the free
//! waiters (task or anonymous) over its span; every [`WaitSlot`] handed out is returned
//! exactly once through [`IdleAccounting::remove_waiter`].

use super::filter::Filter;
use super::snapshot::{fraction, IdleWhileWaiting};
use crate::cpuset::{CpuSet, MAX_CPUS};
use crate::event::Pid;
use crate::topology::Topology;
use std::rc::Rc;

/// Where and how a waiting task was indexed, so that it is removed exactly as it was added
/// even if its affinity or filter match changed since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitSlot {
    /// The CPU it waits on.
    pub cpu: u32,
    /// It counts for idle-while-waiting (it matched the task filter).
    counted: bool,
    /// Its affinity allows every CPU.
    free: bool,
}

impl WaitSlot {
    /// Whether the waiter counts for idle-while-waiting (it matched the task filter then).
    pub fn counted(&self) -> bool {
        self.counted
    }
}

/// Waiters of one CPU.
#[derive(Clone, Debug, Default)]
struct CpuWaiters {
    /// Every waiter, counted or not (for the CPU table).
    all: u32,
    /// Counted waiters allowed everywhere.
    free: u32,
    /// Anonymous waiters (folded mode): counted and allowed everywhere, not in `all`.
    anon: u32,
    /// Counted waiters with a restricted affinity, with that affinity (shared with the task's
    /// own state: a waiter costs no copy of a 1024-CPU mask).
    restricted: Vec<(Pid, Rc<CpuSet>)>,
}

impl CpuWaiters {
    /// A counted waiter allowed everywhere, task or anonymous.
    fn has_free(&self) -> bool {
        self.free > 0 || self.anon > 0
    }

    fn has_counted(&self) -> bool {
        self.has_free() || !self.restricted.is_empty()
    }
}

/// What a domain's span holds right now, as far as idle-while-others-wait goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitStatus {
    /// No CPU of the span is idle while another of its CPUs has a waiter.
    None,
    /// A CPU of the span is idle and a waiter elsewhere in the span could run there.
    Movable,
    /// A CPU of the span is idle, but every waiter elsewhere in the span is pinned away
    /// from the idle CPUs.
    Pinned,
}

/// One domain's accumulators.
#[derive(Clone, Debug)]
struct DomAcc {
    level: usize,
    span: CpuSet,
    status: WaitStatus,
    /// When `status` last changed or was last credited.
    since: u64,
    movable_ns: u64,
    pinned_ns: u64,
    /// When `status` last changed (not moved by interval closes).
    status_since: u64,
    /// This movable stretch was already reported overdue.
    flagged: bool,
    /// How long a movable stretch may last before it is overdue.
    limit_ns: u64,
    /// Idle CPUs of the span.
    n_idle: u32,
    /// CPUs of the span with a counted waiter.
    n_waiting: u32,
    /// CPUs of the span with a counted waiter allowed everywhere (task or anonymous).
    n_free: u32,
}

impl DomAcc {
    /// Credits the time since `since` to the current status.
    fn credit(&mut self, t: u64) {
        let d = t.saturating_sub(self.since);
        match self.status {
            WaitStatus::Movable => self.movable_ns += d,
            WaitStatus::Pinned => self.pinned_ns += d,
            WaitStatus::None => {}
        }
        self.since = self.since.max(t);
    }
}

/// The accounting state; see the module documentation.
#[derive(Clone, Debug)]
pub struct IdleAccounting {
    /// Every CPU of the topology: an affinity containing them all is "free".
    all_cpus: CpuSet,
    /// CPUs running their idle task.
    idle_task: CpuSet,
    /// CPUs running their idle task with no waiter of any kind: idle as `idle_cpu()` says.
    idle: CpuSet,
    /// CPUs with at least one counted waiter.
    waiting: CpuSet,
    cpus: Vec<CpuWaiters>,
    doms: Vec<DomAcc>,
    /// For each CPU, the indices in `doms` of every domain whose span contains it (NUMA spans
    /// overlap, so a CPU may be in several domains of one level).
    cpu_doms: Vec<Vec<u32>>,
    /// CPUs whose idleness, waiting, free waiters or restricted masks changed since the last
    /// `settle`: only their domains can have changed status.
    touched: Vec<u32>,
    /// Scratch list of domains to re-evaluate, kept to avoid an allocation per event.
    dom_scratch: Vec<u32>,
    /// Indices in `doms` of the domains whose status is movable.
    movable: Vec<u32>,
    /// No movable domain is overdue before this time.
    next_due: u64,
}

/// A domain that has been movable (an idle CPU, a task allowed on it waiting elsewhere in the
/// span) for longer than a limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overdue {
    /// Level index.
    pub level: usize,
    /// The span.
    pub span: CpuSet,
    /// When the movable stretch began.
    pub since: u64,
    /// Idle CPUs of the span now.
    pub idle: CpuSet,
    /// CPUs of the span with counted waiters now.
    pub waiting: CpuSet,
}

impl IdleAccounting {
    /// Accounting for every domain of `topo`, with no CPU idle and no waiter.
    /// `limit(level, span)`: how long a movable stretch of that domain may last before
    /// [`IdleAccounting::overdue`] reports it.
    pub fn new(topo: &Topology, limit: impl Fn(usize, &CpuSet) -> u64) -> IdleAccounting {
        let mut all_cpus = topo.online.or(&CpuSet::first_n(topo.nr_cpus));
        let mut doms = Vec::new();
        for (li, level) in topo.levels.iter().enumerate() {
            for d in &level.domains {
                all_cpus = all_cpus.or(&d.span);
                doms.push(DomAcc {
                    level: li,
                    span: d.span,
                    status: WaitStatus::None,
                    since: 0,
                    movable_ns: 0,
                    pinned_ns: 0,
                    status_since: 0,
                    flagged: false,
                    limit_ns: limit(li, &d.span),
                    n_idle: 0,
                    n_waiting: 0,
                    n_free: 0,
                });
            }
        }
        let n = all_cpus.iter().last().map_or(0, |c| c + 1);
        let mut cpu_doms = vec![Vec::new(); n];
        for (i, d) in doms.iter().enumerate() {
            for c in d.span.iter() {
                cpu_doms[c].push(i as u32);
            }
        }
        IdleAccounting {
            all_cpus,
            idle_task: CpuSet::new(),
            idle: CpuSet::new(),
            waiting: CpuSet::new(),
            cpus: vec![CpuWaiters::default(); n],
            doms,
            cpu_doms,
            touched: Vec::new(),
            dom_scratch: Vec::new(),
            movable: Vec::new(),
            next_due: 0,
        }
    }

    /// The waiter list of `cpu`, grown on demand; `None` past [`MAX_CPUS`].
    fn waiters_mut(&mut self, cpu: u32) -> Option<&mut CpuWaiters> {
        let c = cpu as usize;
        if c >= MAX_CPUS {
            return None;
        }
        if self.cpus.len() <= c {
            self.cpus.resize(c + 1, CpuWaiters::default());
        }
        Some(&mut self.cpus[c])
    }

    /// Adds (`up`) or removes one from the counter `field` of every domain holding `cpu`.
    fn count(&mut self, cpu: u32, field: fn(&mut DomAcc) -> &mut u32, up: bool) {
        let Some(ds) = self.cpu_doms.get(cpu as usize) else {
            return;
        };
        for &i in ds {
            let n = field(&mut self.doms[i as usize]);
            *n = if up { *n + 1 } else { *n - 1 };
        }
    }

    fn touch(&mut self, cpu: u32) {
        if !self.touched.contains(&cpu) {
            self.touched.push(cpu);
        }
    }

    /// Records whether `cpu` runs its idle task.
    pub fn set_idle(&mut self, cpu: u32, idle: bool) {
        // Nearly every switch leaves it as it was: a task follows a task.
        if self.idle_task.contains(cpu as usize) == idle {
            return;
        }
        if idle {
            self.idle_task.insert(cpu as usize);
        } else {
            self.idle_task.remove(cpu as usize);
        }
        self.refresh_idle(cpu);
    }

    /// Puts `cpu` in or out of `idle` after its idle task or its waiters changed.
    #[inline]
    fn refresh_idle(&mut self, cpu: u32) {
        let c = cpu as usize;
        let idle = self.idle_task.contains(c) && self.waiting_on(cpu) == 0;
        if self.idle.contains(c) != idle {
            if idle {
                self.idle.insert(c);
            } else {
                self.idle.remove(c);
            }
            self.count(cpu, |d| &mut d.n_idle, idle);
            self.touch(cpu);
        }
    }

    /// Indexes task `pid` as waiting on `cpu`. `counted`: it matches the task filter;
    /// `allowed`: its affinity (`None` = every CPU).
    pub fn add_waiter(
        &mut self,
        pid: Pid,
        cpu: u32,
        counted: bool,
        allowed: Option<&Rc<CpuSet>>,
    ) -> WaitSlot {
        let free = allowed.is_none_or(|a| self.all_cpus.is_subset(a));
        let slot = WaitSlot { cpu, counted, free };
        let Some(w) = self.waiters_mut(cpu) else {
            return slot;
        };
        w.all += 1;
        // Its first waiter takes an idle CPU out of `idle` (done last, after `w`'s uses).
        let first = w.all + w.anon == 1;
        if !counted {
            if first {
                self.refresh_idle(cpu);
            }
            return slot;
        }
        // The domains' statuses depend on which CPUs have free waiters, not on how many, and
        // on every restricted mask: only such a change needs them re-evaluated.
        let mut changed = true;
        match allowed {
            Some(a) if !free => w.restricted.push((pid, Rc::clone(a))),
            _ => {
                let had_free = w.has_free();
                w.free += 1;
                if !had_free {
                    self.count(cpu, |d| &mut d.n_free, true);
                } else {
                    changed = false;
                }
            }
        }
        if !self.waiting.contains(cpu as usize) {
            self.waiting.insert(cpu as usize);
            self.count(cpu, |d| &mut d.n_waiting, true);
            changed = true;
        }
        if changed {
            self.touch(cpu);
        }
        if first {
            self.refresh_idle(cpu);
        }
        slot
    }

    /// Removes a waiter added with [`IdleAccounting::add_waiter`].
    pub fn remove_waiter(&mut self, pid: Pid, slot: WaitSlot) {
        let Some(w) = self.waiters_mut(slot.cpu) else {
            return;
        };
        w.all = w.all.saturating_sub(1);
        // Its last waiter gone, a CPU in its idle task is idle again (done last).
        let emptied = w.all + w.anon == 0;
        if !slot.counted {
            if emptied {
                self.refresh_idle(slot.cpu);
            }
            return;
        }
        let (mut last_free, mut changed) = (false, false);
        if slot.free {
            let had_free = w.has_free();
            w.free = w.free.saturating_sub(1);
            last_free = had_free && !w.has_free();
        } else if let Some(i) = w.restricted.iter().position(|(p, _)| *p == pid) {
            w.restricted.swap_remove(i);
            changed = true;
        }
        let none_left = !w.has_counted();
        if last_free {
            self.count(slot.cpu, |d| &mut d.n_free, false);
            changed = true;
        }
        if none_left && self.waiting.contains(slot.cpu as usize) {
            self.waiting.remove(slot.cpu as usize);
            self.count(slot.cpu, |d| &mut d.n_waiting, false);
            changed = true;
        }
        if changed {
            self.touch(slot.cpu);
        }
        if emptied {
            self.refresh_idle(slot.cpu);
        }
    }

    /// Sets the number of anonymous waiters of `cpu` (folded mode: tasks queued there, known
    /// only by `nr_running`). They are counted and allowed everywhere, alongside any task
    /// added with [`IdleAccounting::add_waiter`].
    pub fn set_queued(&mut self, cpu: u32, n: u32) {
        let Some(w) = self.waiters_mut(cpu) else {
            return;
        };
        if w.anon == n {
            return;
        }
        let had_free = w.has_free();
        w.anon = n;
        let (has_free, has_counted) = (w.has_free(), w.has_counted());
        self.refresh_idle(cpu);
        // As for tasks, only whether the CPU has such waiters matters to the domains.
        let mut changed = false;
        if has_free != had_free {
            self.count(cpu, |d| &mut d.n_free, has_free);
            changed = true;
        }
        if has_counted != self.waiting.contains(cpu as usize) {
            if has_counted {
                self.waiting.insert(cpu as usize);
            } else {
                self.waiting.remove(cpu as usize);
            }
            self.count(cpu, |d| &mut d.n_waiting, has_counted);
            changed = true;
        }
        if changed {
            self.touch(cpu);
        }
    }

    /// Tasks seen waiting on `cpu` (counted or not), anonymous ones included.
    pub fn waiting_on(&self, cpu: u32) -> u32 {
        self.cpus.get(cpu as usize).map_or(0, |w| w.all + w.anon)
    }

    /// Re-evaluates the domains of the CPUs touched since the last call; a status change
    /// takes effect at `t`.
    #[inline]
    pub fn settle(&mut self, t: u64) {
        // Most events touch nothing: that check stays inline in the caller.
        if !self.touched.is_empty() {
            self.settle_touched(t);
        }
    }

    #[inline(never)]
    fn settle_touched(&mut self, t: u64) {
        if let [cpu] = self.touched[..] {
            // Nearly always one CPU: its domain list is already sorted and without repeats.
            self.touched.clear();
            let n = self.cpu_doms.get(cpu as usize).map_or(0, Vec::len);
            for k in 0..n {
                let i = self.cpu_doms[cpu as usize][k];
                self.settle_domain(i as usize, t);
            }
            return;
        }
        let mut dom_ids = std::mem::take(&mut self.dom_scratch);
        dom_ids.clear();
        for cpu in self.touched.drain(..) {
            if let Some(ds) = self.cpu_doms.get(cpu as usize) {
                dom_ids.extend_from_slice(ds);
            }
        }
        dom_ids.sort_unstable();
        dom_ids.dedup();
        for &i in &dom_ids {
            self.settle_domain(i as usize, t);
        }
        self.dom_scratch = dom_ids;
    }

    /// Re-evaluates domain `i`; a status change takes effect at `t`.
    #[inline]
    fn settle_domain(&mut self, i: usize, t: u64) {
        let status = self.evaluate(&self.doms[i]);
        let d = &mut self.doms[i];
        if status != d.status {
            d.credit(t);
            if status == WaitStatus::Movable {
                self.movable.push(i as u32);
                self.next_due = self.next_due.min(t.saturating_add(d.limit_ns));
            } else if d.status == WaitStatus::Movable {
                self.movable.retain(|&m| m as usize != i);
            }
            d.status = status;
            d.since = t;
            d.status_since = t;
            d.flagged = false;
        }
    }

    /// The status of a domain's span now. The counters answer most cases; only restricted
    /// waiters need their masks read.
    fn evaluate(&self, d: &DomAcc) -> WaitStatus {
        if d.n_idle == 0 || d.n_waiting == 0 {
            return WaitStatus::None;
        }
        // An idle CPU has no waiter of its own, so every waiter of the span is elsewhere.
        if d.n_free > 0 {
            return WaitStatus::Movable;
        }
        let idle = self.idle.and(&d.span);
        for j in self.waiting.and(&d.span).iter() {
            if self.cpus[j]
                .restricted
                .iter()
                .any(|(_, a)| a.intersects(&idle))
            {
                return WaitStatus::Movable;
            }
        }
        WaitStatus::Pinned
    }

    /// Every domain's status as of the last [`IdleAccounting::settle`], in topology order
    /// (levels bottom-up, then domains): `(level index, span, status)`.
    pub fn statuses(&self) -> impl Iterator<Item = (usize, &CpuSet, WaitStatus)> + '_ {
        self.doms.iter().map(|d| (d.level, &d.span, d.status))
    }

    /// Credits every domain up to `t` (an interval boundary or the end of a partial one).
    pub fn flush(&mut self, t: u64) {
        for d in &mut self.doms {
            d.credit(t);
        }
    }

    /// The movable domains whose stretch has lasted at least its domain's limit at `t` and was
    /// not reported yet; each stretch is reported once. Runs after every event: it scans only
    /// once the earliest deadline has come.
    #[inline]
    pub fn overdue(&mut self, t: u64) -> Vec<Overdue> {
        // Nearly always nothing is due: that check stays inline in the caller.
        if t < self.next_due {
            return Vec::new();
        }
        self.overdue_scan(t)
    }

    #[inline(never)]
    fn overdue_scan(&mut self, t: u64) -> Vec<Overdue> {
        let mut out = Vec::new();
        let mut next_due = u64::MAX;
        for &i in &self.movable {
            let d = &mut self.doms[i as usize];
            if d.flagged {
                continue;
            }
            let due = d.status_since.saturating_add(d.limit_ns);
            if t < due {
                next_due = next_due.min(due);
                continue;
            }
            d.flagged = true;
            out.push(Overdue {
                level: d.level,
                span: d.span,
                since: d.status_since,
                idle: self.idle.and(&d.span),
                waiting: self.waiting.and(&d.span),
            });
        }
        self.next_due = next_due;
        out
    }

    /// Restarts every domain's clock at `t` without crediting (a new analysis start).
    pub fn restart(&mut self, t: u64) {
        for d in &mut self.doms {
            d.since = t;
            d.status_since = t;
        }
        self.next_due = 0;
    }

    /// The figures since the last call, for an interval of `len` ns, then zeroes them. Call
    /// [`IdleAccounting::flush`] at the interval end first.
    pub fn take(&mut self, len: u64, topo: &Topology, filter: &Filter) -> Vec<IdleWhileWaiting> {
        let mut out = Vec::new();
        for d in &mut self.doms {
            let (movable_ns, pinned_ns) = (d.movable_ns, d.pinned_ns);
            d.movable_ns = 0;
            d.pinned_ns = 0;
            if !filter.matches_span(&d.span) {
                continue;
            }
            out.push(IdleWhileWaiting {
                level: topo.level_key(Some(d.level)).to_string(),
                span: d.span,
                movable_ns,
                pinned_ns,
                movable_fraction: fraction(movable_ns, len),
                pinned_fraction: fraction(pinned_ns, len),
            });
        }
        out
    }
}
