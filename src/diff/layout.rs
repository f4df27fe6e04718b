//! The shared shape of the runs compared: which rows the diff has (reasons, levels and
//! domains of any run) and a dense vector of additive counts per interval laid out the same
//! way for every run, so that summing intervals and evaluating a row is index arithmetic.
//!
//! The balancer's counters (module `balancer`) follow the domains' slots, one slot per count
//! non-zero in some run.
//!
//! Invariant: every row is a function of a [`Dense`] sum of intervals only; a resample of
//! intervals therefore evaluates exactly like the whole run.

use super::balancer::{entries, BalKey};
use super::bootstrap::log2_quantile_us;
use super::run::{IntervalFigures, RunSummary};
use super::section;
use crate::analyze::{reason_names, LOG2_SLOTS};
use crate::cpuset::CpuSet;
use crate::model::FindingKind;
use std::collections::{BTreeSet, HashMap};

// Fixed slots of a dense vector; the run-dependent ones follow `LOG2 + LOG2_SLOTS`.
const LEN: usize = 0;
const ONE: usize = 1;
const COUNT: usize = 2;
const LOST: usize = 3;
const MIGR: usize = 4;
const LOG2: usize = 5;
/// Findings by kind, in [`FindingKind::ALL`] order.
const FINDINGS: usize = LOG2 + LOG2_SLOTS;
const FIXED: usize = FINDINGS + FindingKind::ALL.len();

/// Additive counts of a set of intervals, plus the largest latency among them.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Dense {
    pub sums: Vec<u64>,
    pub max_us: f64,
}

impl Dense {
    fn zero(width: usize) -> Dense {
        Dense {
            sums: vec![0; width],
            max_us: 0.0,
        }
    }

    /// Adds the intervals of `o`.
    pub fn add(&mut self, o: &Dense) {
        for (a, b) in self.sums.iter_mut().zip(&o.sums) {
            *a += b;
        }
        self.max_us = self.max_us.max(o.max_us);
    }
}

/// How a row is computed from a [`Dense`] sum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    /// Total length, seconds.
    DurationS,
    /// Number of intervals.
    Intervals,
    /// Run-queue latency at this permille, us.
    Quantile(u64),
    /// Exact largest run-queue latency, us.
    Max,
    /// A count summed over the run.
    Total(usize),
    /// A count per second of run.
    Rate(usize),
    /// Nanoseconds of a slot as a percentage of the run's length.
    Pct(usize),
}

impl Kind {
    /// The row's value for a sum of intervals.
    pub fn eval(self, d: &Dense) -> f64 {
        let len = d.sums[LEN];
        match self {
            Kind::DurationS => len as f64 / 1e9,
            Kind::Intervals => d.sums[ONE] as f64,
            Kind::Quantile(q) => log2_quantile_us(&d.sums[LOG2..FINDINGS], d.max_us, q),
            Kind::Max => d.max_us,
            Kind::Total(i) => d.sums[i] as f64,
            Kind::Rate(i) if len > 0 => d.sums[i] as f64 * 1e9 / len as f64,
            Kind::Pct(i) if len > 0 => d.sums[i] as f64 * 100.0 / len as f64,
            Kind::Rate(_) | Kind::Pct(_) => 0.0,
        }
    }

    /// Whether intervals vary in this figure: describes the run's shape otherwise (length,
    /// interval count), which has no noise to estimate.
    pub fn has_noise(self) -> bool {
        !matches!(self, Kind::DurationS | Kind::Intervals)
    }
}

/// One row of the diff.
#[derive(Clone, Debug)]
pub(super) struct RowDef {
    pub section: &'static str,
    pub metric: String,
    pub kind: Kind,
}

/// The rows and the dense layout shared by two runs.
#[derive(Debug)]
pub(super) struct Layout {
    reasons: Vec<String>,
    levels: Vec<String>,
    /// Domains present in every run, in the first baseline run's order.
    domains: Vec<(String, CpuSet)>,
    domain_index: HashMap<(String, CpuSet), usize>,
    /// Domains not in every run, by the side that has them (baseline, new), as "level span".
    pub only_in: [Vec<String>; 2],
    /// The balancer's counts with a row, in row order.
    balancer: Vec<BalKey>,
    balancer_index: HashMap<BalKey, usize>,
    /// Some runs recorded the balancer's calls and others not: the call counters are left
    /// out. Per side (baseline, new), whether all, some or none of its runs recorded them.
    pub calls_mixed: Option<[Calls; 2]>,
}

/// How many runs of a side recorded the balancer's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Calls {
    All,
    Some,
    None,
}

impl Calls {
    fn of(runs: &[&RunSummary]) -> Calls {
        let n = runs.iter().filter(|r| r.calls_recorded()).count();
        match n {
            0 => Calls::None,
            n if n == runs.len() => Calls::All,
            _ => Calls::Some,
        }
    }
}

/// The balancer's counts non-zero in some interval of some run, in row order: all of them
/// when every run recorded the balancer's calls, else those counted from migrations only.
fn balancer_keys(runs: &[&RunSummary], with_calls: bool, levels: &[String]) -> Vec<BalKey> {
    let mut seen: Vec<BalKey> = Vec::new();
    let mut index: std::collections::HashSet<BalKey> = std::collections::HashSet::new();
    for r in runs {
        for iv in &r.intervals {
            for (k, v) in entries(&iv.balancer) {
                if v != 0 && (with_calls || !k.needs_calls()) && !index.contains(&k) {
                    index.insert(k.clone());
                    seen.push(k);
                }
            }
        }
    }
    seen.sort_by_cached_key(|k| k.order(levels));
    seen
}

/// Keys of `maps` with a non-zero count in some interval, ordered by `order` first, the rest
/// alphabetically.
fn keys_in_order<'a>(
    runs: &[&'a RunSummary],
    get: impl Fn(&'a IntervalFigures) -> &'a std::collections::BTreeMap<String, u64>,
    order: &[String],
) -> Vec<String> {
    let mut seen = BTreeSet::new();
    for r in runs {
        for iv in &r.intervals {
            for (k, v) in get(iv) {
                if *v != 0 {
                    seen.insert(k.clone());
                }
            }
        }
    }
    let mut out: Vec<String> = order
        .iter()
        .filter(|k| seen.contains(*k))
        .cloned()
        .collect();
    out.extend(seen.into_iter().filter(|k| !order.contains(k)));
    out
}

/// Domains of a run in first-seen order.
fn domains_of(r: &RunSummary) -> Vec<(String, CpuSet)> {
    let mut out: Vec<(String, CpuSet)> = Vec::new();
    for iv in &r.intervals {
        for d in &iv.idle {
            let k = (d.level.clone(), d.span);
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
}

/// "llc 0-7".
pub(super) fn domain_name(level: &str, span: &CpuSet) -> String {
    format!("{level} {span}")
}

impl Layout {
    /// The rows the runs of two sides share (one run a side in the plain comparison).
    /// Domains compared are those of every run, in the first baseline run's order; the
    /// others are listed in `only_in` by the side that saw them.
    pub fn new(a: &[&RunSummary], b: &[&RunSummary]) -> Layout {
        let all: Vec<&RunSummary> = a.iter().chain(b).copied().collect();
        let reason_order: Vec<String> = reason_names().map(str::to_string).collect();
        let reasons = keys_in_order(&all, |iv| &iv.by_reason, &reason_order);
        let mut level_order: Vec<String> = Vec::new();
        for r in &all {
            for l in &r.level_order {
                if !level_order.contains(l) {
                    level_order.push(l.clone());
                }
            }
        }
        let levels = keys_in_order(&all, |iv| &iv.by_level, &level_order);
        let per_run: Vec<Vec<(String, CpuSet)>> = all.iter().map(|r| domains_of(r)).collect();
        let domains: Vec<(String, CpuSet)> = per_run
            .first()
            .map(|first| {
                first
                    .iter()
                    .filter(|d| per_run.iter().all(|p| p.contains(d)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let only = |side: &[Vec<(String, CpuSet)>]| {
            let mut out: Vec<String> = Vec::new();
            for (l, s) in side.iter().flatten() {
                let name = domain_name(l, s);
                if !domains.contains(&(l.clone(), *s)) && !out.contains(&name) {
                    out.push(name);
                }
            }
            out
        };
        let only_in = [only(&per_run[..a.len()]), only(&per_run[a.len()..])];
        let domain_index = domains
            .iter()
            .enumerate()
            .map(|(i, d)| (d.clone(), i))
            .collect();
        let calls = [Calls::of(a), Calls::of(b)];
        let with_calls = !all.is_empty() && calls.iter().all(|c| *c == Calls::All);
        let any_calls = calls.iter().any(|c| *c != Calls::None);
        let balancer = balancer_keys(&all, with_calls, &level_order);
        let balancer_index = balancer
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), i))
            .collect();
        Layout {
            reasons,
            levels,
            domains,
            domain_index,
            only_in,
            balancer,
            balancer_index,
            calls_mixed: (any_calls && !with_calls).then_some(calls),
        }
    }

    fn reason_at(&self, i: usize) -> usize {
        FIXED + i
    }

    fn level_at(&self, i: usize) -> usize {
        FIXED + self.reasons.len() + i
    }

    fn movable_at(&self, i: usize) -> usize {
        FIXED + self.reasons.len() + self.levels.len() + i
    }

    fn pinned_at(&self, i: usize) -> usize {
        self.movable_at(self.domains.len()) + i
    }

    fn balancer_at(&self, i: usize) -> usize {
        self.pinned_at(self.domains.len()) + i
    }

    fn width(&self) -> usize {
        self.balancer_at(self.balancer.len())
    }

    /// An empty sum.
    pub fn zero(&self) -> Dense {
        Dense::zero(self.width())
    }

    /// One interval in this layout. Counts outside the layout (a reason zero in both runs,
    /// a domain of one run only) are dropped: no row reads them.
    pub fn dense(&self, iv: &IntervalFigures) -> Dense {
        let mut d = self.zero();
        d.sums[LEN] = iv.len_ns;
        d.sums[ONE] = 1;
        d.sums[COUNT] = iv.runqlat_count;
        d.sums[LOST] = iv.lost_events;
        d.sums[MIGR] = iv.migrations_total;
        for (i, c) in iv.runqlat_log2.iter().take(LOG2_SLOTS).enumerate() {
            d.sums[LOG2 + i] = *c;
        }
        // Slots past the last (another version's wider histogram) belong to the catch-all.
        d.sums[FINDINGS - 1] += iv.runqlat_log2.iter().skip(LOG2_SLOTS).sum::<u64>();
        for (i, k) in FindingKind::ALL.iter().enumerate() {
            d.sums[FINDINGS + i] = iv.findings_by_kind.get(k.name()).copied().unwrap_or(0);
        }
        d.max_us = iv.runqlat_max_us;
        for (i, r) in self.reasons.iter().enumerate() {
            d.sums[self.reason_at(i)] = iv.by_reason.get(r).copied().unwrap_or(0);
        }
        for (i, l) in self.levels.iter().enumerate() {
            d.sums[self.level_at(i)] = iv.by_level.get(l).copied().unwrap_or(0);
        }
        for dom in &iv.idle {
            if let Some(&i) = self.domain_index.get(&(dom.level.clone(), dom.span)) {
                d.sums[self.movable_at(i)] += dom.movable_ns;
                d.sums[self.pinned_at(i)] += dom.pinned_ns;
            }
        }
        if !self.balancer.is_empty() {
            for (k, v) in entries(&iv.balancer) {
                if let Some(&i) = self.balancer_index.get(&k) {
                    d.sums[self.balancer_at(i)] += v;
                }
            }
        }
        d
    }

    /// Every row, in display order.
    pub fn rows(&self) -> Vec<RowDef> {
        let mut rows = Vec::new();
        let mut row = |section: &'static str, metric: &str, kind: Kind| {
            rows.push(RowDef {
                section,
                metric: metric.to_string(),
                kind,
            })
        };
        row(section::RUN, "duration_s", Kind::DurationS);
        row(section::RUN, "intervals", Kind::Intervals);
        for (name, q) in [("p50", 500), ("p90", 900), ("p99", 990), ("p99.9", 999)] {
            row(section::RUNQLAT, name, Kind::Quantile(q));
        }
        row(section::RUNQLAT, "max", Kind::Max);
        row(section::RUNQLAT, "samples", Kind::Total(COUNT));
        row(section::MIGRATIONS, "total", Kind::Rate(MIGR));
        for (i, r) in self.reasons.iter().enumerate() {
            row(section::BY_REASON, r, Kind::Rate(self.reason_at(i)));
        }
        for (i, l) in self.levels.iter().enumerate() {
            row(section::BY_LEVEL, l, Kind::Rate(self.level_at(i)));
        }
        for (i, (l, s)) in self.domains.iter().enumerate() {
            row(
                section::IDLE_MOVABLE,
                &domain_name(l, s),
                Kind::Pct(self.movable_at(i)),
            );
        }
        for (i, (l, s)) in self.domains.iter().enumerate() {
            row(
                section::IDLE_PINNED,
                &domain_name(l, s),
                Kind::Pct(self.pinned_at(i)),
            );
        }
        for (i, k) in self.balancer.iter().enumerate() {
            row(k.section(), &k.metric(), Kind::Rate(self.balancer_at(i)));
        }
        for (i, k) in FindingKind::ALL.iter().enumerate() {
            row(section::FINDINGS, k.name(), Kind::Rate(FINDINGS + i));
        }
        row(section::LOST, "total", Kind::Total(LOST));
        rows
    }
}
