//! Stack-derived migration reasons judged by the balancer hooks: each balancer migration is
//! paired with the kernel's record of the pass that made it, and that record's own facts (the
//! idle type, and where the pass ran: the CPU's own pass, a nohz idle balance, the
//! active-balance stopper) name the reason without the stack table.
//!
//! Migrations made inside a call of the RT class's push or pull code ([`super::rt`]) pair
//! with that call, whose reason is `rt_push_pull`, whatever the stack table said.
//!
//! Pure: a function of the event stream (in time order). Memory: one entry per task detached
//! but not yet migrated, per destination CPU searched, per stopper running, per RT call
//! running.

use super::rt::RtCalls;
use super::scores::share;
use crate::event::{Balance, BalanceOrigin, CpuIdleType, Event, EventKind, Pid, Reason};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// How far before its migration a `detach_task` may be to pair with it: detach and
/// `set_task_cpu` are microseconds apart in the same balance pass, but a virtual CPU can be
/// held off by its host in between (15 ms seen in the lab, inside the stopper); the pid keeps
/// the match exact, as every detached task is moved.
pub const MATCH_WINDOW_NS: u64 = 100_000_000;

/// How far after a busiest-group search that found an imbalance a balancer migration into
/// the same destination may be to pair with it: the pass detaches right after the search.
pub const SEARCH_WINDOW_NS: u64 = 2_000_000;

/// How far after the active-balance stopper's entry its push may be: the stopper detaches
/// and attaches the task within the same call, but a virtual CPU can be held off by its host
/// meanwhile (as for [`MATCH_WINDOW_NS`]); the pair (source, destination) keeps it exact.
pub const STOPPER_WINDOW_NS: u64 = 100_000_000;

/// What the balancer hooks say made a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookReason {
    /// One reason, told apart by the hooks.
    Exact(Reason),
    /// The record has no origin (a recording made before origins were recorded, or a kernel
    /// without the origin hooks): a pass that was not newly idle, periodic or nohz.
    PeriodicOrNohz,
}

impl HookReason {
    /// The stable name: a reason's own, or "periodic_or_nohz".
    pub fn name(self) -> &'static str {
        match self {
            HookReason::Exact(r) => r.name(),
            HookReason::PeriodicOrNohz => "periodic_or_nohz",
        }
    }

    /// Whether a stack reason is this one.
    pub fn agrees(self, stack: Reason) -> bool {
        match self {
            HookReason::Exact(r) => r == stack,
            HookReason::PeriodicOrNohz => {
                matches!(stack, Reason::PeriodicBalance | Reason::NohzIdleBalance)
            }
        }
    }
}

/// The reason a balancer record's facts give: the stopper pushes (active balance); a pass
/// with CPU_NEWLY_IDLE is a newidle balance; a pass inside the softirq serving a nohz kick is
/// a nohz idle balance (the idle load balancer's own domains included, as the kernel balances
/// them in the same loop); any other pass is the CPU's periodic balance.
pub fn hook_reason(idle: CpuIdleType, origin: Option<BalanceOrigin>) -> HookReason {
    match (origin, idle) {
        (Some(BalanceOrigin::Stopper), _) => HookReason::Exact(Reason::ActiveBalance),
        (_, CpuIdleType::NewlyIdle) => HookReason::Exact(Reason::NewidleBalance),
        (Some(BalanceOrigin::NohzIdle), _) => HookReason::Exact(Reason::NohzIdleBalance),
        (Some(BalanceOrigin::Own), _) => HookReason::Exact(Reason::PeriodicBalance),
        (None, _) => HookReason::PeriodicOrNohz,
    }
}

/// Pairs of one hook reason.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReasonCount {
    /// Migrations the hooks gave this reason.
    pub pairs: u64,
    /// Of those, where the stack table gave the same.
    pub agreeing: u64,
    /// `agreeing / pairs`.
    pub agreement: Option<f64>,
}

/// The agreement between stack reasons and the balancer hooks.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReasonAgreement {
    /// Balancer migrations (periodic, nohz, newidle, active balance).
    pub balancer_migrations: u64,
    /// Of those, the ones paired with a kernel record (any way below); and the migrations
    /// paired with an RT push or pull call (`matched_rt`).
    pub matched: u64,
    /// Paired with the `detach_task` record of the same task.
    pub matched_detach: u64,
    /// Paired with the active-balance stopper's entry on its source CPU.
    pub matched_stopper: u64,
    /// Paired with the latest search into the same destination CPU that found an
    /// imbalance (where detach_task is inlined into its caller, fentry sees few calls).
    pub matched_search: u64,
    /// Migrations of any stack reason made inside a call of the RT class's push or pull code
    /// (the hooks' reason `rt_push_pull`); counted in `matched` too.
    pub matched_rt: u64,
    /// Of the matched ones, those whose stack reason is the hooks' reason.
    pub agreeing: u64,
    /// Matched pairs by "stack reason/hook reason".
    pub pairs: BTreeMap<String, u64>,
    /// Matched pairs by the hooks' reason, with the stack table's agreement on each.
    pub by_reason: BTreeMap<String, ReasonCount>,
    /// The commonest hook reason, and its share of the matched pairs: what a stack table
    /// answering it every time would score.
    pub constant_answer: Option<String>,
    /// See `constant_answer`.
    pub constant_agreement: Option<f64>,
}

impl ReasonAgreement {
    /// `agreeing / matched`, or `None` when nothing matched (no fentry mode).
    pub fn share(&self) -> Option<f64> {
        share(self.agreeing, self.matched)
    }

    /// Counts one matched pair: the stack's reason against the hooks'.
    fn count(&mut self, stack: Reason, hook: HookReason) {
        self.matched += 1;
        let ok = hook.agrees(stack);
        self.agreeing += u64::from(ok);
        let key = format!("{}/{}", stack.name(), hook.name());
        *self.pairs.entry(key).or_default() += 1;
        let c = self.by_reason.entry(hook.name().to_string()).or_default();
        c.pairs += 1;
        c.agreeing += u64::from(ok);
    }

    /// Fills the per-reason shares and the constant answer.
    pub fn finish(&mut self) {
        for c in self.by_reason.values_mut() {
            c.agreement = share(c.agreeing, c.pairs);
        }
        let top = self
            .by_reason
            .iter()
            .max_by(|a, b| a.1.pairs.cmp(&b.1.pairs).then(b.0.cmp(a.0)));
        self.constant_answer = top.map(|(k, _)| k.clone());
        self.constant_agreement = top.and_then(|(_, c)| share(c.pairs, self.matched));
    }
}

/// A kernel record waiting for its migration: when, and the reason its facts give.
type Pending = (u64, HookReason);

/// Pairs each balancer migration with the kernel's record of the pass that made it: the
/// `detach_task` of the same pid no more than [`MATCH_WINDOW_NS`] before, else the
/// active-balance stopper's entry on the same source for the same destination no more than
/// [`STOPPER_WINDOW_NS`] before, else the latest search into the migration's destination
/// that found an imbalance, no more than [`SEARCH_WINDOW_NS`] before. Each detach and
/// stopper record is used once; events must come in time order.
#[derive(Clone, Debug, Default)]
pub struct ReasonPairing {
    detached: HashMap<Pid, Pending>,
    searched: HashMap<u32, Pending>,
    stoppers: HashMap<(u32, u32), u64>,
    rt: RtCalls,
    /// The counts so far.
    pub agreement: ReasonAgreement,
}

impl ReasonPairing {
    /// Folds one event.
    pub fn push(&mut self, e: &Event) {
        match &e.kind {
            EventKind::Balance(b) => self.record(e.ts_ns, b),
            EventKind::RtCall(c) => self.rt.push(e.cpu, e.ts_ns, c),
            EventKind::Migrate(m)
                if self
                    .rt
                    .inside(e.cpu, e.ts_ns, m.src_cpu, m.dst_cpu)
                    .is_some() =>
            {
                self.agreement.matched_rt += 1;
                self.agreement
                    .count(m.reason, HookReason::Exact(Reason::RtPushPull));
            }
            EventKind::Migrate(m) if m.reason.is_balancer() => {
                let crate::event::MigrateInfo {
                    pid,
                    src_cpu,
                    dst_cpu,
                    reason,
                    ..
                } = &**m;
                let within = |rec: Option<Pending>, window: u64| {
                    rec.filter(|&(ts, _)| e.ts_ns >= ts && e.ts_ns - ts <= window)
                        .map(|(_, r)| r)
                };
                let r = &mut self.agreement;
                r.balancer_migrations += 1;
                let stopper = self
                    .stoppers
                    .get(&(*src_cpu, *dst_cpu))
                    .map(|&ts| (ts, HookReason::Exact(Reason::ActiveBalance)));
                let hook = if let Some(h) = within(self.detached.remove(pid), MATCH_WINDOW_NS) {
                    r.matched_detach += 1;
                    h
                } else if let Some(h) = within(stopper, STOPPER_WINDOW_NS) {
                    self.stoppers.remove(&(*src_cpu, *dst_cpu));
                    r.matched_stopper += 1;
                    h
                } else if let Some(h) =
                    within(self.searched.get(dst_cpu).copied(), SEARCH_WINDOW_NS)
                {
                    r.matched_search += 1;
                    h
                } else {
                    return;
                };
                r.count(*reason, hook);
            }
            EventKind::Exit { pid, .. } => {
                self.detached.remove(pid);
            }
            _ => {}
        }
    }

    fn record(&mut self, ts: u64, b: &Balance) {
        let hook = hook_reason(b.idle, b.origin);
        if b.is_stopper_entry() {
            self.stoppers.insert((b.src_cpu, b.dst_cpu), ts);
            return;
        }
        match b.pid {
            Some(pid) => {
                self.detached.insert(pid, (ts, hook));
            }
            None if !b.balanced => {
                self.searched.insert(b.dst_cpu, (ts, hook));
            }
            None => {}
        }
    }
}
