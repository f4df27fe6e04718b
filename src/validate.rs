//! Validation mode: the kernel's own balancer decisions (fentry mode, [`EventKind::Balance`])
//! set against the model's and the stack-derived migration reasons.
//!
//! [`Validator`] sees every event of a run (the pipeline's tee), puts them back in timestamp
//! order (the balancer's ring buffer and the tracepoints' one deliver independently), folds
//! them into its own [`Model`] and, at each busiest-group search the kernel reported, asks the
//! model the same question from the same CPU, domain and idle type: is the domain balanced,
//! and if not, which migration type. Each balancer migration is also paired with the
//! `detach_task` record of the same task shortly before it, and its stack-derived reason must
//! agree with the kernel's idle type.
//!
//! Pure: a function of the event stream only. Memory: the reorder window's events, one entry
//! per task detached but not yet migrated, and counters.

use crate::event::{Balance, CpuIdleType, Event, EventKind, MigrationType, Pid, Reason};
use crate::model::{BalancePass, GroupStats, Model, ModelConfig};
use crate::topology::Topology;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// How far before its migration a `detach_task` may be to pair with it: detach and
/// `set_task_cpu` are microseconds apart in the same balance pass.
pub const MATCH_WINDOW_NS: u64 = 10_000_000;

/// How long events wait to be put in order: longer than the gap between the two ring
/// buffers' deliveries of the same instant (up to about a second was seen in the lab's
/// 16-vCPU guests, where the consumer waits for the main buffer to fill).
pub const REORDER_WINDOW_NS: u64 = 2_000_000_000;

/// How far after a busiest-group search that found an imbalance a balancer migration into
/// the same destination may be to pair with it: the pass detaches right after the search.
pub const SEARCH_WINDOW_NS: u64 = 2_000_000;

/// Events held for ordering at most; past it the older half is folded early (and any later
/// event older than those counts as late).
const MAX_PENDING: usize = 1 << 20;

/// The agreement between stack reasons and `lb_env.idle`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReasonAgreement {
    /// Balancer migrations (periodic, nohz, newidle, active balance).
    pub balancer_migrations: u64,
    /// Of those, the ones paired with a kernel record (either way below).
    pub matched: u64,
    /// Paired with the `detach_task` record of the same task.
    pub matched_detach: u64,
    /// Paired with the latest search into the same destination CPU that found an
    /// imbalance (where detach_task is inlined into its caller, fentry sees few calls).
    pub matched_search: u64,
    /// Of the matched ones, those whose reason agrees with the idle type.
    pub agreeing: u64,
    /// Matched pairs by "stack reason/kernel idle type".
    pub pairs: BTreeMap<String, u64>,
}

impl ReasonAgreement {
    /// `agreeing / matched`, or `None` when nothing matched (no fentry mode).
    pub fn share(&self) -> Option<f64> {
        share(self.agreeing, self.matched)
    }
}

fn share(n: u64, of: u64) -> Option<f64> {
    (of > 0).then(|| n as f64 / of as f64)
}

/// Whether a stack reason is consistent with the idle type the balancer ran with: newidle
/// balance runs with CPU_NEWLY_IDLE; periodic and nohz balance with CPU_IDLE or CPU_NOT_IDLE;
/// active balance moves in the stopper, with the idle type of the pass that woke it (any).
pub fn agrees(reason: Reason, idle: CpuIdleType) -> bool {
    match reason {
        Reason::NewidleBalance => idle == CpuIdleType::NewlyIdle,
        Reason::PeriodicBalance | Reason::NohzIdleBalance => idle != CpuIdleType::NewlyIdle,
        _ => true,
    }
}

/// Pairs each balancer migration with the kernel's record of the pass that made it: the
/// `detach_task` of the same pid no more than [`MATCH_WINDOW_NS`] before, else the latest
/// search into the migration's destination that found an imbalance, no more than
/// [`SEARCH_WINDOW_NS`] before. Each record is used once; events must come in time order.
#[derive(Clone, Debug, Default)]
pub struct ReasonPairing {
    detached: HashMap<Pid, (u64, CpuIdleType)>,
    searched: HashMap<u32, (u64, CpuIdleType)>,
    /// The counts so far.
    pub agreement: ReasonAgreement,
}

impl ReasonPairing {
    /// Folds one event.
    pub fn push(&mut self, e: &Event) {
        match &e.kind {
            EventKind::Balance(b) => match b.pid {
                Some(pid) => {
                    self.detached.insert(pid, (e.ts_ns, b.idle));
                }
                None if !b.balanced => {
                    self.searched.insert(b.dst_cpu, (e.ts_ns, b.idle));
                }
                None => {}
            },
            EventKind::Migrate {
                pid,
                dst_cpu,
                reason,
                ..
            } if reason.is_balancer() => {
                let within = |rec: Option<(u64, CpuIdleType)>, window: u64| {
                    rec.filter(|&(ts, _)| e.ts_ns >= ts && e.ts_ns - ts <= window)
                        .map(|(_, idle)| idle)
                };
                let r = &mut self.agreement;
                r.balancer_migrations += 1;
                let idle = if let Some(idle) = within(self.detached.remove(pid), MATCH_WINDOW_NS) {
                    r.matched_detach += 1;
                    idle
                } else if let Some(idle) =
                    within(self.searched.get(dst_cpu).copied(), SEARCH_WINDOW_NS)
                {
                    r.matched_search += 1;
                    idle
                } else {
                    return;
                };
                r.matched += 1;
                r.agreeing += u64::from(agrees(*reason, idle));
                let key = format!("{}/{}", reason.name(), idle.name());
                *r.pairs.entry(key).or_default() += 1;
            }
            EventKind::Exit { pid, .. } => {
                self.detached.remove(pid);
            }
            _ => {}
        }
    }
}

/// The model against the kernel at one domain level.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LevelAgreement {
    /// Busiest-group searches the kernel reported at this level.
    pub decisions: u64,
    /// Of those, where the model agrees on balanced / not balanced.
    pub balanced_agree: u64,
    /// The kernel found the domain balanced.
    pub kernel_balanced: u64,
    /// The model found the domain balanced.
    pub model_balanced: u64,
    /// Both found an imbalance.
    pub both_unbalanced: u64,
    /// Of those, where the migration types agree.
    pub type_agree: u64,
}

impl LevelAgreement {
    fn add(&mut self, kernel: &Balance, model: &crate::model::stats::Decision) {
        let model_balanced = model.imbalance == 0;
        self.decisions += 1;
        self.kernel_balanced += u64::from(kernel.balanced);
        self.model_balanced += u64::from(model_balanced);
        self.balanced_agree += u64::from(kernel.balanced == model_balanced);
        if !kernel.balanced && !model_balanced {
            self.both_unbalanced += 1;
            self.type_agree += u64::from(model.migration_type == Some(kernel.migration_type));
        }
    }
}

/// Disagreements kept with their evidence.
pub const MAX_DISAGREEMENTS: usize = 20;

/// One search where the model and the kernel disagree on balanced / not balanced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Disagreement {
    /// When (ns).
    pub t_ns: u64,
    /// The level key and the kernel's `sd->level`.
    pub level: String,
    /// `sd->level`.
    pub sd_level: u32,
    /// The pulling CPU and its idle type.
    pub dst_cpu: u32,
    /// `env->idle`.
    pub idle: CpuIdleType,
    /// The kernel's verdict: balanced, or its migration type and imbalance.
    pub kernel_balanced: bool,
    /// `env->migration_type` when not balanced.
    pub kernel_migration_type: Option<MigrationType>,
    /// `env->imbalance`.
    pub kernel_imbalance: u64,
    /// The model's imbalance and migration type.
    pub model_imbalance: u64,
    /// The model's migration type.
    pub model_migration_type: Option<MigrationType>,
    /// Every group as the model saw it.
    pub groups: Vec<GroupStats>,
    /// Index of the local group (the pulling CPU's).
    pub local_group: usize,
    /// The model's busiest group.
    pub busiest_group: Option<usize>,
}

/// Everything validation mode reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Validation {
    /// The model's rules.
    pub rules: String,
    /// Balance events in the run (busiest-group searches and detach_task records).
    pub balance_events: u64,
    /// Balance events by the kernel's `sd->level`.
    pub balance_events_per_sd_level: BTreeMap<u32, u64>,
    /// The model against the kernel's busiest-group searches, all levels.
    pub total: LevelAgreement,
    /// The same per level key ("smt", "llc", "numa", ...).
    pub per_level: BTreeMap<String, LevelAgreement>,
    /// Where both found an imbalance: "kernel type/model type" counts.
    pub migration_types: BTreeMap<String, u64>,
    /// Searches at a domain weight no level of the topology has around dst_cpu.
    pub unmapped: u64,
    /// Searches retried without the CPUs whose tasks were all pinned (not judged: the model
    /// sees the whole span).
    pub redo: u64,
    /// Events that arrived later than the reorder window allows (folded anyway).
    pub late: u64,
    /// `total.balanced_agree / total.decisions`.
    pub balanced_agreement: Option<f64>,
    /// `total.type_agree / total.both_unbalanced`.
    pub migration_type_agreement: Option<f64>,
    /// Stack reasons against the kernel's idle type.
    pub reasons: ReasonAgreement,
    /// Disagreements by "level/idle type/kernel verdict" ("numa/idle/balanced": the kernel
    /// found that NUMA domain balanced from an idle CPU, the model did not).
    pub disagreements_by_kind: BTreeMap<String, u64>,
    /// The first [`MAX_DISAGREEMENTS`] disagreements with the model's groups.
    pub disagreements: Vec<Disagreement>,
    /// `reasons.agreeing / reasons.matched`.
    pub reason_agreement: Option<f64>,
}

/// Validation mode's state; see the module documentation.
#[derive(Clone, Debug)]
pub struct Validator {
    model: Model,
    pairing: ReasonPairing,
    /// Events waiting to be put in order.
    pending: Vec<Event>,
    /// The newest timestamp seen, and the newest folded.
    newest_ns: u64,
    folded_ns: u64,
    out: Validation,
}

impl Validator {
    /// A validator for a run on `topo` with the model's `config`.
    pub fn new(topo: &Topology, config: ModelConfig) -> Validator {
        let out = Validation {
            rules: config.rules.name().to_string(),
            ..Validation::default()
        };
        Validator {
            model: Model::new(topo, config),
            pairing: ReasonPairing::default(),
            pending: Vec::new(),
            newest_ns: 0,
            folded_ns: 0,
            out,
        }
    }

    /// Takes a batch of events in delivery order.
    pub fn push(&mut self, batch: &[Event]) {
        for e in batch {
            self.newest_ns = self.newest_ns.max(e.ts_ns);
        }
        self.pending.extend_from_slice(batch);
        let cut = self.newest_ns.saturating_sub(REORDER_WINDOW_NS);
        let full = self.pending.len() > MAX_PENDING;
        if full || self.pending.first().is_some_and(|e| e.ts_ns <= cut) {
            self.pending.sort_by_key(|e| e.ts_ns);
            let n = if full {
                self.pending.len() / 2
            } else {
                self.pending.partition_point(|e| e.ts_ns <= cut)
            };
            let ready: Vec<Event> = self.pending.drain(..n).collect();
            for e in &ready {
                self.fold(e);
            }
        }
    }

    /// Folds what is left and returns the figures.
    pub fn finish(mut self) -> Validation {
        self.pending.sort_by_key(|e| e.ts_ns);
        for e in std::mem::take(&mut self.pending) {
            self.fold(&e);
        }
        let mut out = self.out;
        out.balanced_agreement = share(out.total.balanced_agree, out.total.decisions);
        out.migration_type_agreement = share(out.total.type_agree, out.total.both_unbalanced);
        out.reasons = self.pairing.agreement;
        out.reason_agreement = out.reasons.share();
        out
    }

    fn fold(&mut self, e: &Event) {
        if e.ts_ns < self.folded_ns {
            self.out.late += 1;
        }
        self.folded_ns = self.folded_ns.max(e.ts_ns);
        if let EventKind::Balance(b) = &e.kind {
            self.out.balance_events += 1;
            *self
                .out
                .balance_events_per_sd_level
                .entry(b.level)
                .or_default() += 1;
            if b.pid.is_none() {
                self.judge(b);
            }
        }
        self.pairing.push(e);
        self.model.push(e);
    }

    fn judge(&mut self, b: &Balance) {
        if b.redo {
            self.out.redo += 1;
            return;
        }
        let Some(BalancePass {
            level,
            local,
            groups,
            decision: d,
        }) = self.model.decide_at(b.dst_cpu, b.sd_weight, b.idle)
        else {
            self.out.unmapped += 1;
            return;
        };
        self.out.total.add(b, &d);
        let key = self.model.level_key(level).to_string();
        self.out
            .per_level
            .entry(key.clone())
            .or_default()
            .add(b, &d);
        let model_balanced = d.imbalance == 0;
        if !b.balanced && !model_balanced {
            let k = format!(
                "{}/{}",
                type_name(Some(b.migration_type)),
                type_name(d.migration_type)
            );
            *self.out.migration_types.entry(k).or_default() += 1;
        }
        if b.balanced == model_balanced {
            return;
        }
        let verdict = if b.balanced { "balanced" } else { "imbalanced" };
        let k = format!("{key}/{}/{verdict}", b.idle.name());
        *self.out.disagreements_by_kind.entry(k).or_default() += 1;
        if self.out.disagreements.len() >= MAX_DISAGREEMENTS {
            return;
        }
        self.out.disagreements.push(Disagreement {
            t_ns: self.folded_ns,
            level: key,
            sd_level: b.level,
            dst_cpu: b.dst_cpu,
            idle: b.idle,
            kernel_balanced: b.balanced,
            kernel_migration_type: (!b.balanced).then_some(b.migration_type),
            kernel_imbalance: b.imbalance,
            model_imbalance: d.imbalance,
            model_migration_type: d.migration_type,
            groups,
            local_group: local,
            busiest_group: d.busiest,
        });
    }
}

fn type_name(t: Option<MigrationType>) -> &'static str {
    t.map_or("none", MigrationType::name)
}

/// Validation of a whole event list (tests and tools): [`Validator`] over one batch.
pub fn validate(topo: &Topology, config: ModelConfig, events: &[Event]) -> Validation {
    let mut v = Validator::new(topo, config);
    v.push(events);
    v.finish()
}

#[cfg(test)]
mod tests;
