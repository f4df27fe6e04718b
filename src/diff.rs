//! "Before vs after": the comparison of two recordings' analyses, in the style of scheduler
//! patch cover letters. For every figure: baseline, new, the change in %, the 95% interval of
//! the difference and whether the change is beyond the noise.
//!
//! Pure: [`diff`] is a function of two [`RunSummary`]s, each built from the snapshots of one
//! analyzer run over one recording. Figures are computed from the whole run (every interval,
//! the final partial one included): run-queue latency percentiles from the merged log2
//! histogram (see `bootstrap::log2_quantile_us` for the precision), migrations per second by
//! reason and by level crossed, idle-while-others-wait time per domain (domains matched by
//! level key and span), lost events.
//!
//! Noise: a bootstrap over intervals. Each run's full intervals are resampled with
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

mod bootstrap;
mod layout;
mod run;
#[cfg(test)]
mod tests;

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
/// Runs whose lengths differ by more than this fraction get a warning about totals.
const LENGTH_TOLERANCE: f64 = 0.10;
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
    /// Findings per second by kind ("missed_pull", "busy_wakeup", ...).
    pub const FINDINGS: &str = "findings_per_s";
    /// Events lost over the run: "total".
    pub const LOST: &str = "lost_events";
}

/// The comparison of two runs.
#[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
pub struct Diff {
    /// The baseline's label.
    pub baseline: String,
    /// The new run's label.
    pub new: String,
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

fn meta_warnings(a: &RunSummary, b: &RunSummary) -> Vec<String> {
    let mut w = Vec::new();
    let mut differs = |what: &str, x: &str, y: &str| {
        if x != y {
            w.push(format!(
                "different {what}: \"{x}\" (baseline) vs \"{y}\" (new)"
            ));
        }
    };
    let (ma, mb) = (&a.meta, &b.meta);
    differs("kernel release", &ma.kernel_release, &mb.kernel_release);
    differs("host", &ma.hostname, &mb.hostname);
    differs(
        "CPU count",
        &ma.nr_cpus.to_string(),
        &mb.nr_cpus.to_string(),
    );
    differs("topology", &ma.topology_summary, &mb.topology_summary);
    w
}

/// At most this many domain names are listed in one warning.
const LIST_DOMAINS: usize = 8;

fn domain_warning(run: &str, names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let mut list = names[..names.len().min(LIST_DOMAINS)].join(", ");
    if names.len() > LIST_DOMAINS {
        list.push_str(&format!(" and {} more", names.len() - LIST_DOMAINS));
    }
    Some(format!(
        "domains only in the {run} run, not compared: {list}"
    ))
}

/// Compares two runs: `a` is the baseline, `b` the new one.
pub fn diff(a: &RunSummary, b: &RunSummary) -> Diff {
    let mut warnings = meta_warnings(a, b);
    let layout = Layout::new(a, b);
    for (run, names) in ["baseline", "new"].iter().zip(&layout.only_in) {
        warnings.extend(domain_warning(run, names));
    }
    for (run, r) in [("baseline", a), ("new", b)] {
        if r.intervals.is_empty() {
            warnings.push(format!(
                "the {run} run has no intervals: nothing was recorded"
            ));
        }
        let lost = r.lost_events();
        if lost > 0 {
            warnings.push(format!(
                "the {run} run lost {lost} events: its figures may be incomplete"
            ));
        }
    }
    let (la, lb) = (a.duration_ns() as f64, b.duration_ns() as f64);
    if (la - lb).abs() > LENGTH_TOLERANCE * la.max(lb) {
        warnings.push(format!(
            "runs differ in length ({:.1} s vs {:.1} s): compare rates and percentiles, not \
             totals (samples, lost events)",
            la / 1e9,
            lb / 1e9
        ));
    }

    let rows = layout.rows();
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
        let ra = bootstrap(&part_a, &full_a, &rows, BOOTSTRAP_ITERATIONS, &mut rng);
        let rb = bootstrap(&part_b, &full_b, &rows, BOOTSTRAP_ITERATIONS, &mut rng);
        (ra, rb)
    });

    let rows = rows
        .iter()
        .enumerate()
        .map(|(k, def)| {
            let base = tidy(def.kind.eval(&all_a));
            let new = tidy(def.kind.eval(&all_b));
            let change_pct = (base != 0.0).then(|| tidy((new - base) / base.abs() * 100.0));
            let ci = match &replicates {
                Some((ra, rb)) if def.kind.has_noise() => Some(interval(&ra[k], &rb[k])),
                _ => None,
            };
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
            }
        })
        .collect();

    Diff {
        baseline: a.label.clone(),
        new: b.label.clone(),
        warnings,
        rows,
        histograms: hist_pair(a, b),
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

fn hist_pair(a: &RunSummary, b: &RunSummary) -> HistPair {
    let (mut ha, mut hb) = (a.runqlat_log2(), b.runqlat_log2());
    let n = ha.len().max(hb.len());
    ha.resize(n, 0);
    hb.resize(n, 0);
    HistPair {
        baseline: ha,
        new: hb,
    }
}
