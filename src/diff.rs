//! "Before vs after": the comparison of two sides of recordings' analyses, one or more runs a
//! side, in the style of scheduler patch cover letters. For every figure: baseline, new, the
//! change in %, the 95% interval of the difference and whether the change is beyond the noise.
//!
//! Pure: [`diff_runs`] is a function of two sides of [`RunSummary`]s, each built from the
//! snapshots of one analyzer run over one recording ([`diff`] for one run a side). Figures are
//! computed from the whole run (every interval, the final partial one included): run-queue latency percentiles from the merged log2
//! histogram (see `bootstrap::log2_quantile_us` for the precision), migrations per second by
//! reason and by level crossed, idle-while-others-wait time per domain (domains matched by
//! level key and span), the balancer's own counters per second (module `balancer`), lost
//! events.
//!
//! Noise, several runs a side: runs are the unit; see [`runs`] (Welch's t over runs).
//!
//! Noise, one run a side: a bootstrap over intervals. Each run's full intervals are resampled with
//! replacement [`BOOTSTRAP_ITERATIONS`] times (its partial intervals kept in every
//! replicate), every figure recomputed, and the 2.5% and 97.5% quantiles of
//! new-replicate minus baseline-replicate give the interval of the difference. A change is
//! significant when that interval excludes 0 on the side of the change and the change is
//! not trivially small (see [`min_effect`]). Runs with fewer than [`MIN_FULL_INTERVALS`] full
//! intervals get no interval and nothing significant.
//!
//! Invariants: deterministic (a fixed-seed splitmix64, drawn in a fixed order);
//! `diff(a, a)` has zero change everywhere and nothing significant; every `f64` is rounded
//! to at most six decimals so that JSON round trips compare equal.

mod balancer;
mod bootstrap;
mod layout;
mod run;
pub mod runs;
pub mod stats;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_counters;
#[cfg(test)]
mod tests_runs;
mod warn;

pub use run::{DomainIdle, IntervalFigures, RunMeta, RunSummary};

use bootstrap::{bootstrap, quantile_sorted, SplitMix64};
use layout::Layout;
use serde::{Deserialize, Serialize};

/// Bootstrap replicates per run.
pub const BOOTSTRAP_ITERATIONS: usize = 1000;
/// Full intervals a run needs for a noise estimate.
pub const MIN_FULL_INTERVALS: usize = 3;
/// The warning for a run too short to estimate noise.
pub const TOO_FEW_INTERVALS: &str =
    "too few intervals to estimate noise: record longer or use a shorter -i";
/// "lbscope!" in ASCII: any constant would do, it only has to be fixed.
const SEED: u64 = 0x6c62_7363_6f70_6521;

/// The `section` of each [`DiffRow`].
pub mod section {
    /// The runs themselves: "duration_s", "intervals" (no noise estimate).
    pub const RUN: &str = "run";
    /// Run-queue latency, us: "p50", "p90", "p99", "p99.9", "max", and "samples" (a count).
    pub const RUNQLAT: &str = "runqlat_us";
    /// All migrations per second: "total".
    pub const MIGRATIONS: &str = "migrations_per_s";
    /// Migrations per second by reason name.
    pub const BY_REASON: &str = "migrations_per_s.by_reason";
    /// Migrations per second by level key crossed.
    pub const BY_LEVEL: &str = "migrations_per_s.by_level";
    /// Movable idle-while-others-wait time, % of the run, by domain ("llc 0-7").
    pub const IDLE_MOVABLE: &str = "idle_while_waiting.movable_pct";
    /// Pinned idle-while-others-wait time, % of the run, by domain.
    pub const IDLE_PINNED: &str = "idle_while_waiting.pinned_pct";
    /// The balancer's calls per second by level, idle type and schedstat counter
    /// ("llc idle lb_count"; lb_balanced, lb_failed, lb_gained, searches), from its
    /// recorded calls (balancer hooks): only when every run compared recorded them.
    pub const BALANCER_CALLS: &str = "balancer_per_s.calls";
    /// The imbalance the balancer found per second by level, idle type and migration type
    /// ("llc idle load"; util, task, misfit), from its recorded calls.
    pub const BALANCER_IMBALANCE: &str = "balancer_per_s.imbalance";
    /// Active balances per second: tasks the stopper pushed by level ("llc alb_pushed") and
    /// "stopper_runs", from its recorded calls.
    pub const BALANCER_ACTIVE: &str = "balancer_per_s.active";
    /// Balancer migrations per second by reason and level crossed ("newidle_balance
    /// llc"), from the migration tracepoint (every run).
    pub const BALANCER_GAINED: &str = "balancer_per_s.gained_by_migrations";
    /// Findings per second by kind ("missed_pull", "busy_wakeup", ...).
    pub const FINDINGS: &str = "findings_per_s";
    /// Events lost over the run: "total".
    pub const LOST: &str = "lost_events";
}

/// The comparison of two sides, one or more runs each.
#[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
pub struct Diff {
    /// The baseline's label (its runs' labels, comma-separated).
    pub baseline: String,
    /// The new side's label.
    pub new: String,
    /// The runs of each side, and how the noise was estimated.
    pub sides: Sides,
    /// What makes the comparison less trustworthy (different machines, lost events, runs
    /// too short to estimate noise, domains of one run only).
    pub warnings: Vec<String>,
    /// Every figure, in display order, grouped by section.
    pub rows: Vec<DiffRow>,
    /// The whole-run run-queue latency histograms.
    pub histograms: HistPair,
}

/// One figure of both runs.
#[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
pub struct DiffRow {
    /// Group of the row (see [`section`]).
    pub section: String,
    /// The figure within its section ("p50", "wakeup", "llc 0-7", ...).
    pub metric: String,
    /// Baseline value.
    pub baseline: f64,
    /// New value.
    pub new: f64,
    /// `(new - baseline) / baseline` in %; `None` when the baseline is 0.
    pub change_pct: Option<f64>,
    /// Lower end of the 95% interval of `new - baseline`; `None` without a noise estimate.
    pub ci_low: Option<f64>,
    /// Upper end of that interval.
    pub ci_high: Option<f64>,
    /// The interval excludes 0 and the change is not trivially small.
    pub significant: bool,
    /// Several runs a side: each run's value and the spread (absent with one run a side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<RowRuns>,
}

/// One row's values run by run, when a side has several runs: `baseline` and `new` of the
/// row are the means of these.
#[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
pub struct RowRuns {
    /// Each baseline run's whole-run value, in the order the runs were given.
    pub baseline: Vec<f64>,
    /// Each new run's value.
    pub new: Vec<f64>,
    /// Sample standard deviation of the baseline runs (0 with one run).
    pub baseline_sd: f64,
    /// Sample standard deviation of the new runs.
    pub new_sd: f64,
    /// Welch-Satterthwaite degrees of freedom of the interval; `None` without one.
    pub df: Option<f64>,
    /// Two-sided p-value of Welch's t test; `None` without an interval.
    pub p_value: Option<f64>,
}

/// How the interval of each row was estimated.
#[derive(Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// One run a side: bootstrap over each run's intervals.
    IntervalBootstrap,
    /// Two or more runs a side: Welch's t interval over runs.
    WelchOverRuns,
    /// No interval (runs too short, or one run against several).
    None,
}

/// The runs compared.
#[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
pub struct Sides {
    /// How the intervals were estimated.
    pub method: Method,
    /// The baseline's runs, in the order given.
    pub baseline: Vec<RunInfo>,
    /// The new side's runs.
    pub new: Vec<RunInfo>,
}

/// One run of a side: where and how long it was recorded.
#[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
pub struct RunInfo {
    /// Its label (usually the recording's path).
    pub label: String,
    /// Kernel, host and topology.
    #[serde(flatten)]
    pub meta: RunMeta,
    /// Length of the run, seconds.
    pub duration_s: f64,
}

impl RunInfo {
    fn of(r: &RunSummary) -> RunInfo {
        RunInfo {
            label: r.label.clone(),
            meta: r.meta.clone(),
            duration_s: tidy(r.duration_ns() as f64 / 1e9),
        }
    }
}

/// runqlat's log2 histograms of both runs, padded to the same number of slots.
#[derive(Clone, Serialize, Deserialize, PartialEq, Debug, Default)]
pub struct HistPair {
    /// Baseline counts by slot (0-1, 2-3, 4-7, ... us).
    pub baseline: Vec<u64>,
    /// New counts by slot.
    pub new: Vec<u64>,
}

/// The smallest change worth calling significant in a section, as (fraction of the
/// baseline, absolute floor in the section's unit): the larger of the two applies. Changes
/// below are real perhaps, but too small to matter or within the figures' resolution
/// (runqlat's first slot is 0-1 us).
pub fn min_effect(section: &str) -> (f64, f64) {
    match section {
        section::RUNQLAT => (0.02, 1.0),
        section::MIGRATIONS | section::BY_REASON | section::BY_LEVEL => (0.02, 0.1),
        section::IDLE_MOVABLE | section::IDLE_PINNED => (0.02, 0.01),
        section::FINDINGS => (0.02, 0.1),
        section::BALANCER_CALLS
        | section::BALANCER_IMBALANCE
        | section::BALANCER_ACTIVE
        | section::BALANCER_GAINED => (0.02, 0.1),
        section::LOST => (0.0, 1.0),
        _ => (0.02, 0.0),
    }
}

/// Rounds to six decimals (integers beyond 1e9), so the value prints exactly in JSON.
fn tidy(x: f64) -> f64 {
    if !x.is_finite() {
        0.0
    } else if x.abs() < 1e9 {
        (x * 1e6).round() / 1e6
    } else {
        x.round()
    }
}

/// Compares two runs: `a` is the baseline, `b` the new one.
pub fn diff(a: &RunSummary, b: &RunSummary) -> Diff {
    diff_runs(std::slice::from_ref(a), std::slice::from_ref(b))
}

/// Compares two sides of one or more runs each: `a` the baseline's runs, `b` the new ones.
/// One run a side: the bootstrap over intervals. Two or more a side: runs are the unit, each
/// row's values are the means of the runs' whole-run figures and its interval Welch's (see
/// [`runs`]). One run against several: means, no interval (a warning says why). A side
/// without runs compares as empty, with a warning.
pub fn diff_runs(a: &[RunSummary], b: &[RunSummary]) -> Diff {
    let (ra, rb): (Vec<&RunSummary>, Vec<&RunSummary>) = (a.iter().collect(), b.iter().collect());
    let layout = Layout::new(&ra, &rb);
    let mut warnings = warn::warnings(a, b, &layout);
    let defs = layout.rows();
    let (method, rows) = if a.len() == 1 && b.len() == 1 {
        single(&a[0], &b[0], &layout, &defs, &mut warnings)
    } else {
        runs::compare(a, b, &layout, &defs, &mut warnings)
    };
    Diff {
        baseline: side_label(a),
        new: side_label(b),
        sides: Sides {
            method,
            baseline: a.iter().map(RunInfo::of).collect(),
            new: b.iter().map(RunInfo::of).collect(),
        },
        warnings,
        rows,
        histograms: hist_pair(a, b),
    }
}

/// A side's name: its run's label, or its runs' labels.
fn side_label(runs: &[RunSummary]) -> String {
    runs.iter()
        .map(|r| r.label.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One run a side: every figure of the whole runs, the interval by bootstrap over intervals.
fn single(
    a: &RunSummary,
    b: &RunSummary,
    layout: &Layout,
    rows: &[layout::RowDef],
    warnings: &mut Vec<String>,
) -> (Method, Vec<DiffRow>) {
    let split = |r: &RunSummary| {
        let mut all = layout.zero();
        let mut partial = layout.zero();
        let mut full = Vec::new();
        for iv in &r.intervals {
            let d = layout.dense(iv);
            all.add(&d);
            if iv.partial {
                partial.add(&d);
            } else {
                full.push(d);
            }
        }
        (all, partial, full)
    };
    let (all_a, part_a, full_a) = split(a);
    let (all_b, part_b, full_b) = split(b);

    let mut enough = true;
    for (run, full) in [("baseline", &full_a), ("new", &full_b)] {
        if full.len() < MIN_FULL_INTERVALS {
            enough = false;
            warnings.push(format!(
                "the {run} run has {} full interval{}: {TOO_FEW_INTERVALS}",
                full.len(),
                if full.len() == 1 { "" } else { "s" }
            ));
        }
    }
    let replicates = enough.then(|| {
        let mut rng = SplitMix64::new(SEED);
        let ra = bootstrap(&part_a, &full_a, rows, BOOTSTRAP_ITERATIONS, &mut rng);
        let rb = bootstrap(&part_b, &full_b, rows, BOOTSTRAP_ITERATIONS, &mut rng);
        (ra, rb)
    });

    let rows = rows
        .iter()
        .enumerate()
        .map(|(k, def)| {
            let base = tidy(def.kind.eval(&all_a));
            let new = tidy(def.kind.eval(&all_b));
            let ci = match &replicates {
                Some((ra, rb)) if def.kind.has_noise() => Some(interval(&ra[k], &rb[k])),
                _ => None,
            };
            row(def, base, new, ci, None)
        })
        .collect();
    let method = if enough {
        Method::IntervalBootstrap
    } else {
        Method::None
    };
    (method, rows)
}

/// A row from its two values, the interval of their difference and the runs' values.
fn row(
    def: &layout::RowDef,
    base: f64,
    new: f64,
    ci: Option<(f64, f64)>,
    runs: Option<RowRuns>,
) -> DiffRow {
    let change_pct = (base != 0.0).then(|| tidy((new - base) / base.abs() * 100.0));
    let significant = ci.is_some_and(|ci| beyond_noise(def.section, base, new, ci));
    DiffRow {
        section: def.section.to_string(),
        metric: def.metric.clone(),
        baseline: base,
        new,
        change_pct,
        ci_low: ci.map(|c| tidy(c.0)),
        ci_high: ci.map(|c| tidy(c.1)),
        significant,
        runs,
    }
}

/// The 95% interval of `new - baseline` from paired-by-iteration replicates (the two runs
/// were resampled independently, so pairing by iteration is one independent draw).
fn interval(ra: &[f64], rb: &[f64]) -> (f64, f64) {
    let mut d: Vec<f64> = rb.iter().zip(ra).map(|(y, x)| y - x).collect();
    if d.is_empty() {
        return (0.0, 0.0);
    }
    d.sort_by(f64::total_cmp);
    (quantile_sorted(&d, 0.025), quantile_sorted(&d, 0.975))
}

/// The interval excludes 0 on the side of the change, and the change is not trivially small.
fn beyond_noise(section: &str, base: f64, new: f64, (lo, hi): (f64, f64)) -> bool {
    let d = new - base;
    let (rel, abs) = min_effect(section);
    let excludes = (d > 0.0 && lo > 0.0) || (d < 0.0 && hi < 0.0);
    excludes && d.abs() >= (rel * base.abs()).max(abs)
}

/// The runqlat histograms of each side, its runs' histograms summed.
fn hist_pair(a: &[RunSummary], b: &[RunSummary]) -> HistPair {
    let pooled = |runs: &[RunSummary]| {
        let mut h: Vec<u64> = Vec::new();
        for r in runs {
            let rh = r.runqlat_log2();
            if h.len() < rh.len() {
                h.resize(rh.len(), 0);
            }
            h.iter_mut().zip(&rh).for_each(|(x, y)| *x += y);
        }
        h
    };
    let (mut ha, mut hb) = (pooled(a), pooled(b));
    let n = ha.len().max(hb.len());
    ha.resize(n, 0);
    hb.resize(n, 0);
    HistPair {
        baseline: ha,
        new: hb,
    }
}
