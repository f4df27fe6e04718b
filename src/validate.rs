//! Validation mode: the kernel's own balancer decisions (fentry mode, [`EventKind::Balance`])
//! set against the model's and the stack-derived migration reasons.
//!
//! [`Validator`] sees every event of a run (the pipeline's tee), puts them back in timestamp
//! order (the balancer's ring buffer and the tracepoints' one deliver independently; the
//! same [`Reorder`] as a recording's reader, over a longer window and by stamp), folds
//! them into its own [`Model`] and, at each busiest-group search the kernel reported, asks the
//! model the same question from the same CPU, domain and idle type: is the domain balanced,
//! and if not, which migration type ([`scores`] says what a constant answer would score
//! beside each figure). Where the search sent the run queues of the CPUs it was about to read
//! (`PeltInfo::at_search`), the model answers from those; a second model without them answers
//! the same searches from the tracepoints' records alone ([`Validation::sampled`]). Each
//! balancer migration is also paired with the kernel's record of its pass, whose facts name
//! its reason without the stack table ([`reasons`]), and each migration made inside the RT
//! class's own push or pull code with that call ([`rt`]).
//!
//! Pure: a function of the event stream only. Memory: two models, the reorder window's
//! events, one entry per task detached but not yet migrated, and counters.

use crate::event::{Balance, CpuIdleType, Event, EventKind, MigrationType};
use crate::model::stats::Decision;
use crate::model::{BalancePass, GroupStats, Model, ModelConfig};
use crate::reorder::Reorder;
use crate::topology::Topology;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

mod reasons;
mod rt;
mod scores;
mod stall;

pub use reasons::{
    hook_reason, HookReason, ReasonAgreement, ReasonCount, ReasonPairing, MATCH_WINDOW_NS,
    SEARCH_WINDOW_NS, STOPPER_WINDOW_NS,
};
use scores::share;
pub use scores::{BinaryScores, TypeCount, TypeScores};

/// How long events wait to be put in order: longer than the gap between the two ring
/// buffers' deliveries of the same instant (up to 3.2 s was seen in the lab's 16-vCPU guests
/// under TCG, where the recorder's thread waits its turn behind the guest's busy vCPUs; a run
/// whose balancer records came 3 s late judged them against a state 3 s on with a 2 s window:
/// 504 late events, LLC kappa 0.70 against 0.95-0.99 in the runs before).
pub const REORDER_WINDOW_NS: u64 = 8_000_000_000;

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
    /// Kernel migration type -> (pairs both imbalanced, of which the model's type agrees).
    #[serde(skip)]
    type_counts: BTreeMap<String, (u64, u64)>,
    /// Balanced / not balanced: recall, precision, kappa and the constant answers' scores
    /// (filled when validation finishes).
    pub scores: BinaryScores,
    /// Migration type agreement per kernel type, and the commonest type's share.
    pub types: TypeScores,
}

impl LevelAgreement {
    fn add(&mut self, kernel: &Balance, model: &crate::model::stats::Decision) {
        let model_balanced = model.imbalance == 0;
        self.decisions += 1;
        self.kernel_balanced += u64::from(kernel.balanced);
        self.model_balanced += u64::from(model_balanced);
        self.balanced_agree += u64::from(kernel.balanced == model_balanced);
        if !kernel.balanced && !model_balanced {
            let agree = model.migration_type == Some(kernel.migration_type);
            self.both_unbalanced += 1;
            self.type_agree += u64::from(agree);
            let c = self
                .type_counts
                .entry(kernel.migration_type.name().to_string())
                .or_default();
            c.0 += 1;
            c.1 += u64::from(agree);
        }
    }

    fn finish(&mut self) {
        self.scores = BinaryScores::new(
            self.decisions,
            self.decisions - self.kernel_balanced,
            self.decisions - self.model_balanced,
            self.both_unbalanced,
        );
        self.types = TypeScores::new(&self.type_counts);
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
    /// What turns the model's answer the kernel's way ([`crate::model::margin`]): the least
    /// change of the groups' PELT sums ("0.5%" to "5%"), else "one task" more or fewer on a
    /// group, else "neither"; "not tried" for a domain of more groups than tried.
    pub turned_by: String,
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
    /// Searches not judged because the model's answer changed while the kernel searched:
    /// the kernel reads the CPUs one after another, each at a moment between the search's
    /// entry and exit that no record gives, and the model answers differently from the state
    /// after some record in between, or at the exit, than from the state at the entry
    /// (recordings with search lengths only), by level key.
    pub raced: BTreeMap<String, u64>,
    /// Searches not judged because a CPU they read had stopped across them ([`stall`]: it made
    /// records up to just before, then none for 5 ms, and came back with a change of its run
    /// queue's length, which the kernel may have read long before its record's time), by
    /// level key.
    pub stalled: BTreeMap<String, u64>,
    /// Searches with that sign that were judged all the same, because the search sent the
    /// run queue of every CPU it read (the balancer hooks): the model read what the kernel
    /// read, whenever the stopped CPU's records came. By level key.
    pub stalled_judged: BTreeMap<String, u64>,
    /// `total.balanced_agree / total.decisions`.
    pub balanced_agreement: Option<f64>,
    /// `total.type_agree / total.both_unbalanced`.
    pub migration_type_agreement: Option<f64>,
    /// Active-balance stopper entries recorded (not searches; they pair active-balance
    /// migrations).
    pub stopper_entries: u64,
    /// Stack reasons against the reasons the balancer hooks give.
    pub reasons: ReasonAgreement,
    /// Disagreements by "level/idle type/kernel verdict" ("numa/idle/balanced": the kernel
    /// found that NUMA domain balanced from an idle CPU, the model did not).
    pub disagreements_by_kind: BTreeMap<String, u64>,
    /// Disagreements by level and by what turns the model's answer the kernel's way
    /// ([`crate::model::margin`]): "smt/1%" (the groups' PELT sums changed by 1%, not by
    /// 0.5%), "smt/one task" (a group's task count off by one), "smt/neither", "smt/not
    /// tried". The model reads PELT as sampled (at most every few ms per CPU) and counts a
    /// task being enqueued or dequeued one way; the kernel, at the search, may have read
    /// either otherwise.
    pub disagreement_margins: BTreeMap<String, u64>,
    /// The first [`MAX_DISAGREEMENTS`] disagreements with the model's groups.
    pub disagreements: Vec<Disagreement>,
    /// `reasons.agreeing / reasons.matched`.
    pub reason_agreement: Option<f64>,
    /// Run queues the kernel's searches sent (`PeltInfo::at_search`; 0 in a recording made
    /// before the balancer hooks sent them). The figures above read those at each search.
    pub pelt_at_search: u64,
    /// The same searches answered from the tracepoints' records alone, without the searches'
    /// run queues: what the model is worth without the balancer hooks (PELT samples come
    /// every few ms, or at once on a step; a stopped vCPU's records come late). Equal to the
    /// figures above when `pelt_at_search` is 0, but for the stalled searches judged here.
    pub sampled: SampledAgreement,
}

/// The model's balanced-or-not answers from the tracepoints' records alone
/// ([`Validation::sampled`]), on the searches judged above.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SampledAgreement {
    /// All levels.
    pub total: LevelAgreement,
    /// Per level key.
    pub per_level: BTreeMap<String, LevelAgreement>,
}

/// A search waiting for the model to reach its exit: its record, when it exited, and the
/// model's answer at its entry.
#[derive(Clone, Debug)]
struct OpenSearch {
    balance: Balance,
    t_ns: u64,
    end_ns: u64,
    start: Option<BalancePass>,
    /// The answer from the tracepoints' records alone (see [`Validator::sampled`]).
    sampled: Option<Decision>,
    /// The model answered otherwise after a record inside the search (a CPU flipping and
    /// back, as a search whose vCPU stopped for milliseconds can see): the kernel may have
    /// read either state.
    flipped: bool,
}

/// A search with the model's answer, waiting to be judged until the CPUs it read show
/// whether they had stopped: its record, its time, the answer, the answer from the
/// tracepoints' records alone, and whether the search sent the run queue of every CPU it read
/// (then a CPU that had stopped does not matter: the model read what the kernel read).
type Answered = (Balance, u64, BalancePass, Option<Decision>, bool);

/// Validation mode's state; see the module documentation.
#[derive(Clone, Debug)]
pub struct Validator {
    model: Model,
    /// The same model without the run queues the searches sent (`PeltInfo::at_search`): it
    /// has what it has without the balancer hooks, and its answers are scored beside the
    /// model's ([`Validation::sampled`]).
    sampled: Model,
    pairing: ReasonPairing,
    /// Searches with a length (a few at a time: one per CPU searching), until the model is
    /// folded past their exit.
    open: VecDeque<OpenSearch>,
    /// Answered searches held until the CPUs they read made their next records.
    stalls: stall::StallWatch<Answered>,
    /// Events waiting to be put in order (by their stamps, over [`REORDER_WINDOW_NS`]), and
    /// those it released, to be folded.
    order: Reorder,
    ready: Vec<Event>,
    /// The newest timestamp folded.
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
            model: Model::new(topo, config.clone()),
            sampled: Model::new(topo, config),
            pairing: ReasonPairing::default(),
            open: VecDeque::new(),
            stalls: stall::StallWatch::default(),
            order: Reorder::by_stamp(REORDER_WINDOW_NS),
            ready: Vec::new(),
            folded_ns: 0,
            out,
        }
    }

    /// Takes a batch of events in delivery order.
    pub fn push(&mut self, batch: &[Event]) {
        let mut ready = std::mem::take(&mut self.ready);
        for e in batch {
            self.order.push(e.clone(), &mut ready);
        }
        for e in ready.drain(..) {
            self.fold(&e);
        }
        self.ready = ready;
    }

    /// Folds what is left and returns the figures.
    pub fn finish(mut self) -> Validation {
        let mut ready = std::mem::take(&mut self.ready);
        self.order.finish(&mut ready);
        for e in &ready {
            self.fold(e);
        }
        self.close_searches(u64::MAX);
        for (a, stalled) in self.stalls.finish() {
            self.settle(a, stalled);
        }
        let mut out = self.out;
        out.balanced_agreement = share(out.total.balanced_agree, out.total.decisions);
        out.migration_type_agreement = share(out.total.type_agree, out.total.both_unbalanced);
        out.total.finish();
        for l in out.per_level.values_mut() {
            l.finish();
        }
        out.sampled.total.finish();
        for l in out.sampled.per_level.values_mut() {
            l.finish();
        }
        out.reasons = self.pairing.agreement;
        out.reasons.finish();
        out.reason_agreement = out.reasons.share();
        out
    }

    fn fold(&mut self, e: &Event) {
        self.close_searches(e.ts_ns);
        for (a, stalled) in self.stalls.saw(e) {
            self.settle(a, stalled);
        }
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
            if b.is_stopper_entry() {
                self.out.stopper_entries += 1;
            } else if b.pid.is_none() {
                self.search(e.ts_ns, b);
            }
        }
        self.pairing.push(e);
        match &e.kind {
            EventKind::Pelt(p) if p.at_search.is_some() => self.out.pelt_at_search += 1,
            _ => self.sampled.push(e),
        }
        self.model.push(e);
        self.watch_open_searches(e);
    }

    /// A search's record at its entry: judged now, or, when its length is known, once the
    /// model has seen the state at its exit too.
    fn search(&mut self, ts: u64, b: &Balance) {
        if b.redo {
            self.out.redo += 1;
            return;
        }
        // The kernel refreshes the local group's capacity first (a no-op when the model saw
        // this search already).
        self.model
            .balance_search(ts, b.dst_cpu, b.sd_weight, b.idle);
        self.sampled
            .balance_search(ts, b.dst_cpu, b.sd_weight, b.idle);
        let start = self
            .model
            .decide_at_search(ts, b.dst_cpu, b.sd_weight, b.idle);
        let sampled = self
            .sampled
            .decide_at(b.dst_cpu, b.sd_weight, b.idle)
            .map(|p| p.decision);
        match b.search_ns.filter(|&ns| ns > 0) {
            Some(ns) => self.open.push_back(OpenSearch {
                balance: b.clone(),
                t_ns: ts,
                end_ns: ts + u64::from(ns),
                start,
                sampled,
                flipped: false,
            }),
            None => self.judge(b.clone(), ts, start, sampled),
        }
    }

    /// Closes the open searches that exited before `now`: where the model answers alike from
    /// the state at both ends, that answer is judged; otherwise the search raced.
    fn close_searches(&mut self, now: u64) {
        // Searches on different CPUs overlap: each closes at its own exit.
        while let Some(i) = self.open.iter().position(|o| o.end_ns < now) {
            let Some(o) = self.open.remove(i) else {
                break;
            };
            let b = &o.balance;
            let end = self
                .model
                .decide_at_search(o.t_ns, b.dst_cpu, b.sd_weight, b.idle);
            if !o.flipped && same_answer(&o.start, &end) {
                self.judge(o.balance, o.t_ns, o.start, o.sampled);
            } else if let Some(s) = &o.start {
                let key = self.model.level_key(s.level).to_string();
                *self.out.raced.entry(key).or_default() += 1;
            }
        }
    }

    /// After a record that may change what a search reads, notes each open search whose
    /// answer it changed: the kernel may have read the CPUs at that moment, and the state at
    /// the exit alone does not show a CPU that changed and changed back. The state is the
    /// newest known at the record's time (a run queue another search sent meanwhile counts).
    fn watch_open_searches(&mut self, e: &Event) {
        let changes_cpus = matches!(
            e.kind,
            EventKind::Switch { .. }
                | EventKind::Wakeup { .. }
                | EventKind::WakeupNew { .. }
                | EventKind::NrRunning { .. }
                | EventKind::Pelt(_)
                | EventKind::Migrate(_)
                | EventKind::Capacity { .. }
                | EventKind::Exit { .. }
        );
        if !changes_cpus {
            return;
        }
        for o in self
            .open
            .iter_mut()
            .filter(|o| !o.flipped && o.start.is_some())
        {
            let b = &o.balance;
            let now = self
                .model
                .decide_at_search(e.ts_ns, b.dst_cpu, b.sd_weight, b.idle);
            o.flipped = !same_answer(&o.start, &now);
        }
    }

    /// A search the model answered (`pass`): judged once the CPUs it read show they had not
    /// stopped across it.
    fn judge(
        &mut self,
        b: Balance,
        t_ns: u64,
        pass: Option<BalancePass>,
        sampled: Option<Decision>,
    ) {
        let Some(pass) = pass else {
            self.out.unmapped += 1;
            return;
        };
        let span: Vec<u32> = pass
            .groups
            .iter()
            .flat_map(|g| g.cpus.iter().map(|c| c as u32))
            .collect();
        let dst = b.dst_cpu;
        let sent = self.model.search_sent_all(span.iter().copied());
        if let Some(a) =
            self.stalls
                .hold((b, t_ns, pass, sampled, sent), t_ns, dst, span.into_iter())
        {
            self.settle(a, false);
        }
    }

    /// A held search whose CPUs showed whether they had stopped: set aside if one had, else
    /// scored.
    fn settle(&mut self, (b, t_ns, pass, sampled, sent): Answered, stalled: bool) {
        if stalled {
            let key = self.model.level_key(pass.level).to_string();
            if !sent {
                *self.out.stalled.entry(key).or_default() += 1;
                return;
            }
            *self.out.stalled_judged.entry(key).or_default() += 1;
        }
        if let Some(d) = &sampled {
            let key = self.model.level_key(pass.level).to_string();
            self.out.sampled.total.add(&b, d);
            self.out
                .sampled
                .per_level
                .entry(key)
                .or_default()
                .add(&b, d);
        }
        self.score(&b, t_ns, pass);
    }

    fn score(&mut self, b: &Balance, t_ns: u64, pass: BalancePass) {
        let d = &pass.decision;
        self.out.total.add(b, d);
        let key = self.model.level_key(pass.level).to_string();
        self.out.per_level.entry(key.clone()).or_default().add(b, d);
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
        let dst_idle = b.idle != CpuIdleType::NotIdle;
        let turned_by = self.model.turned_by(&pass, b.dst_cpu, dst_idle).name();
        let bucket = format!("{key}/{turned_by}");
        *self.out.disagreement_margins.entry(bucket).or_default() += 1;
        if self.out.disagreements.len() >= MAX_DISAGREEMENTS {
            return;
        }
        let (d, groups) = (pass.decision, pass.groups);
        self.out.disagreements.push(Disagreement {
            t_ns,
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
            local_group: pass.local,
            busiest_group: d.busiest,
            turned_by,
        });
    }
}

/// Whether two of the model's answers to one search agree: both balanced, or both imbalanced
/// with the same migration type (no answer at one end counts as agreeing).
fn same_answer(a: &Option<BalancePass>, b: &Option<BalancePass>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            let (a, b) = (&a.decision, &b.decision);
            (a.imbalance == 0) == (b.imbalance == 0)
                && (a.imbalance == 0 || a.migration_type == b.migration_type)
        }
        _ => true,
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
