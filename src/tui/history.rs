//! The series the history charts draw, computed from a run of snapshots (oldest first): one
//! value per interval and per row, `None` where the interval says nothing about it (no
//! latency sample, no model view). Pure: the views turn a [`Chart`] into sparklines.
//!
//! Rates are per second of each interval's own length, so intervals of different lengths
//! (after `+`/`-`) stay comparable on one chart; latency is in microseconds; idle-while-
//! others-wait in percent of the interval; the model's imbalance in its own unit (load,
//! utilization or tasks, by the domain's migration type); findings are counts per interval.
//!
//! Every chart reads only the fields [`chart_figures`] keeps, so a screen can hold past
//! intervals in that reduced form (see `super::store`) and draw the same charts.

use crate::analyze::{DomainLatency, LatencySummary, MigrationStats, Snapshot};
use crate::cpuset::CpuSet;
use crate::model::DomainView;
use crate::topology::Topology;
use std::collections::BTreeMap;

/// Chart windows `w`/`W` step through, in intervals.
pub const WINDOWS: &[usize] = &[30, 60, 120, 300, 600];
/// The window a live screen opens with.
pub const DEFAULT_WINDOW: usize = 120;

/// The window a replay opens with: the narrowest that holds the whole recording of `n`
/// intervals, up to the default (a short recording fills the chart).
pub fn fit_window(n: usize) -> usize {
    WINDOWS
        .iter()
        .copied()
        .find(|&w| w >= n)
        .unwrap_or(DEFAULT_WINDOW)
        .min(DEFAULT_WINDOW)
}

/// What the Overview's history chart shows (`s`/`S` step through them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Series {
    /// One row each: migrations/s, p99, idle-while-others-wait of the widest level, findings.
    Summary,
    /// Migrations per second: all, then each reason seen in the window.
    Migrations,
    /// Run-queue latency p50 and p99.
    Latency,
    /// Idle-while-others-wait per level (worst domain of the level), movable and pinned.
    IdleWait,
    /// The model's imbalance per level (largest domain of the level).
    Imbalance,
    /// Findings per interval: all, then by kind.
    Findings,
}

impl Series {
    /// Every series, in the order `s` steps through them.
    pub const ALL: [Series; 6] = [
        Series::Summary,
        Series::Migrations,
        Series::Latency,
        Series::IdleWait,
        Series::Imbalance,
        Series::Findings,
    ];

    /// The chart's title.
    pub fn title(self) -> &'static str {
        match self {
            Series::Summary => "summary",
            Series::Migrations => "migrations/s by reason",
            Series::Latency => "runqlat p50/p99",
            Series::IdleWait => "idle-wait % by level",
            Series::Imbalance => "imbalance by level",
            Series::Findings => "findings by kind",
        }
    }

    /// The next (or previous) series.
    pub fn step(self, forward: bool) -> Series {
        let i = Series::ALL.iter().position(|s| *s == self).unwrap_or(0);
        let n = Series::ALL.len();
        Series::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// How a row's values read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Per second.
    PerSec,
    /// Microseconds.
    Us,
    /// Percent.
    Pct,
    /// A plain count or quantity.
    Count,
}

/// One sparkline: a label and a value per interval of the window.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// "total", "wakeup", "numa movable", ...
    pub label: String,
    /// One value per interval, oldest first.
    pub values: Vec<Option<f64>>,
    /// How to print its figures.
    pub unit: Unit,
}

impl Row {
    /// The largest value, if any.
    pub fn max(&self) -> Option<f64> {
        self.values.iter().flatten().copied().reduce(f64::max)
    }
}

/// A chart: rows over the same intervals.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Its title.
    pub title: String,
    /// The rows, most telling first.
    pub rows: Vec<Row>,
}

/// The part of a snapshot the charts of this module read, every other table left empty: its
/// times, migrations in all and by reason, run-queue latency's count and percentiles (overall
/// and per domain, without the histogram), idle-while-others-wait per domain, each domain's
/// imbalance (without its groups) and findings by kind. [`chart`] and [`domain_chart`] draw
/// the same over these as over the whole snapshots.
pub fn chart_figures(s: &Snapshot) -> Snapshot {
    let summary = |l: &LatencySummary| LatencySummary {
        log2_buckets: Vec::new(),
        ..*l
    };
    Snapshot {
        t_start_ns: s.t_start_ns,
        t_end_ns: s.t_end_ns,
        partial: s.partial,
        events: s.events,
        lost_events: s.lost_events,
        migrations: MigrationStats {
            total: s.migrations.total,
            by_reason: s.migrations.by_reason.clone(),
            ..MigrationStats::default()
        },
        runqlat_us: summary(&s.runqlat_us),
        runqlat_by_domain: s
            .runqlat_by_domain
            .iter()
            .map(|d| DomainLatency {
                level: d.level.clone(),
                span: d.span,
                latency: summary(&d.latency),
            })
            .collect(),
        idle_while_waiting: s.idle_while_waiting.clone(),
        domains: s
            .domains
            .iter()
            .map(|d| DomainView {
                level: d.level.clone(),
                span: d.span,
                imbalance_pct: d.imbalance_pct,
                imb_numa_nr: d.imb_numa_nr,
                local_group: d.local_group,
                busiest_group: d.busiest_group,
                imbalance: d.imbalance,
                migration_type: d.migration_type,
                groups: Vec::new(),
            })
            .collect(),
        findings_by_kind: s.findings_by_kind.clone(),
        ..Snapshot::default()
    }
}

fn per_sec(count: u64, s: &Snapshot) -> Option<f64> {
    let len = s.len_ns();
    (len > 0).then(|| count as f64 * 1e9 / len as f64)
}

fn row(label: &str, unit: Unit, snaps: &[&Snapshot], f: impl Fn(&Snapshot) -> Option<f64>) -> Row {
    Row {
        label: label.to_string(),
        values: snaps.iter().map(|s| f(s)).collect(),
        unit,
    }
}

/// Findings of an interval: every one counted by kind (the list itself is capped).
pub fn findings_count(s: &Snapshot) -> u64 {
    crate::tui::state::findings_counted(s).0
}

/// The worst movable (or pinned) idle-while-others-wait share of a level, percent.
fn level_idle(s: &Snapshot, level: &str, pinned: bool) -> Option<f64> {
    s.idle_while_waiting
        .iter()
        .filter(|w| w.level == level)
        .map(|w| {
            100.0
                * if pinned {
                    w.pinned_fraction
                } else {
                    w.movable_fraction
                }
        })
        .reduce(f64::max)
}

fn level_imbalance(s: &Snapshot, level: &str) -> Option<f64> {
    s.domains
        .iter()
        .filter(|d| d.level == level)
        .map(|d| d.imbalance as f64)
        .reduce(f64::max)
}

/// Labels of a map's keys that are non-zero somewhere in the window, largest total first.
fn seen_keys<'a>(
    snaps: &[&'a Snapshot],
    map: impl Fn(&'a Snapshot) -> &'a BTreeMap<String, u64>,
) -> Vec<String> {
    let mut total: BTreeMap<&str, u64> = BTreeMap::new();
    for s in snaps {
        for (k, v) in map(s) {
            *total.entry(k.as_str()).or_default() += v;
        }
    }
    let mut keys: Vec<(&str, u64)> = total.into_iter().filter(|(_, v)| *v > 0).collect();
    keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    keys.into_iter().map(|(k, _)| k.to_string()).collect()
}

/// The Overview's chart of `series` over `snaps` (oldest first).
pub fn chart(series: Series, topo: &Topology, snaps: &[&Snapshot]) -> Chart {
    let mut rows = Vec::new();
    match series {
        Series::Summary => {
            rows.push(row("migrations/s", Unit::PerSec, snaps, |s| {
                per_sec(s.migrations.total, s)
            }));
            rows.push(row("runqlat p99", Unit::Us, snaps, |s| {
                (s.runqlat_us.count > 0).then_some(s.runqlat_us.p99)
            }));
            if let Some(top) = topo.levels.last() {
                let label = format!("idle-wait {}", top.key);
                rows.push(row(&label, Unit::Pct, snaps, |s| {
                    level_idle(s, &top.key, false)
                }));
            }
            rows.push(row("findings", Unit::Count, snaps, |s| {
                Some(findings_count(s) as f64)
            }));
        }
        Series::Migrations => {
            rows.push(row("all", Unit::PerSec, snaps, |s| {
                per_sec(s.migrations.total, s)
            }));
            for r in seen_keys(snaps, |s| &s.migrations.by_reason) {
                rows.push(row(&r, Unit::PerSec, snaps, |s| {
                    per_sec(s.migrations.by_reason.get(&r).copied().unwrap_or(0), s)
                }));
            }
        }
        Series::Latency => {
            rows.push(row("p50", Unit::Us, snaps, |s| {
                (s.runqlat_us.count > 0).then_some(s.runqlat_us.p50)
            }));
            rows.push(row("p99", Unit::Us, snaps, |s| {
                (s.runqlat_us.count > 0).then_some(s.runqlat_us.p99)
            }));
        }
        Series::IdleWait => {
            // The widest level first: the one the balancer finds hardest to even out.
            for l in topo.levels.iter().rev() {
                for (pinned, what) in [(false, "movable"), (true, "pinned")] {
                    let label = format!("{} {what}", l.key);
                    rows.push(row(&label, Unit::Pct, snaps, |s| {
                        level_idle(s, &l.key, pinned)
                    }));
                }
            }
        }
        Series::Imbalance => {
            for l in topo.levels.iter().rev() {
                rows.push(row(&l.key, Unit::Count, snaps, |s| {
                    level_imbalance(s, &l.key)
                }));
            }
        }
        Series::Findings => {
            rows.push(row("all", Unit::Count, snaps, |s| {
                Some(findings_count(s) as f64)
            }));
            for k in seen_keys(snaps, |s| &s.findings_by_kind) {
                rows.push(row(&k, Unit::Count, snaps, |s| {
                    Some(s.findings_by_kind.get(&k).copied().unwrap_or(0) as f64)
                }));
            }
        }
    }
    Chart {
        title: series.title().to_string(),
        rows,
    }
}

/// The Domains view's chart of one domain: its idle-while-others-wait (movable, pinned),
/// the p99 of tasks started in its span, and the model's imbalance.
pub fn domain_chart(level: &str, span: &CpuSet, snaps: &[&Snapshot]) -> Chart {
    let iww = |s: &Snapshot, pinned: bool| {
        s.idle_while_waiting
            .iter()
            .find(|w| w.level == level && w.span == *span)
            .map(|w| {
                100.0
                    * if pinned {
                        w.pinned_fraction
                    } else {
                        w.movable_fraction
                    }
            })
    };
    Chart {
        title: format!("{level} {span}"),
        rows: vec![
            row("idle-wait", Unit::Pct, snaps, |s| iww(s, false)),
            row("pinned", Unit::Pct, snaps, |s| iww(s, true)),
            row("p99", Unit::Us, snaps, |s| {
                s.runqlat_by_domain
                    .iter()
                    .find(|l| l.level == level && l.span == *span)
                    .filter(|l| l.latency.count > 0)
                    .map(|l| l.latency.p99)
            }),
            row("imbalance", Unit::Count, snaps, |s| {
                s.domains
                    .iter()
                    .find(|d| d.level == level && d.span == *span)
                    .map(|d| d.imbalance as f64)
            }),
        ],
    }
}

/// A change of the analysis (`+`/`-`, `/`) on a live screen: intervals starting at or after
/// `t_ns` were analysed with the new settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// The latest event time when the change was made, ns.
    pub t_ns: u64,
    /// What changed: "interval 2.0 s", "filter comm=make".
    pub what: String,
}

/// For each interval of `snaps`, whether a [`Mark`] falls between the end of the interval
/// before it and its start (for the first, at its start): the intervals that begin with
/// new settings.
pub fn marked(snaps: &[&Snapshot], marks: &[Mark]) -> Vec<bool> {
    let mut prev_end = None;
    snaps
        .iter()
        .map(|s| {
            let lo = prev_end.unwrap_or(s.t_start_ns);
            prev_end = Some(s.t_end_ns);
            marks.iter().any(|m| m.t_ns >= lo && m.t_ns <= s.t_start_ns)
        })
        .collect()
}
