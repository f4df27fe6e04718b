//! The history charts on ratatui's test backend, at 80x24, 132x40 and on a 256-CPU synthetic
//! machine: where a sparkline peaks is read off the screen (the axis line under a chart has
//! one `-` or `|` per column of the window, so a bar's column gives its interval) and compared
//! with the figures of the intervals fed in. The live feed's `+` is driven through the real
//! pipeline: the intervals before it stay on the chart, marked where the length changed.

use super::app::{App, Effect, SourceInfo, View};
use super::history::{self, Series};
use super::keymap::Action;
use super::run::{Feed, LiveFeed};
use super::tests::{has, render, replay_app, SIZES};
use crate::analyze::{Analyzer, AnalyzerConfig, Snapshot};
use crate::pipeline::Source;
use crate::source::synthetic::SyntheticConfig;

const DEMO: &str = "examples/demo.lbs";

/// A chart as drawn: its rows (label first), and which intervals of the window each column
/// of `per` characters from character `first` on stands for.
struct Drawn<'a> {
    rows: Vec<&'a str>,
    first: usize,
    per: usize,
    groups: Vec<Vec<usize>>,
}

/// The chart on `screen` whose title starts with "history: {title}", over `n` intervals: read
/// from its axis (one `-` or `|` per column, then " now") and its title (", K per column").
fn drawn<'a>(screen: &'a str, title: &str, n: usize) -> (Drawn<'a>, &'a str) {
    let lines: Vec<&str> = screen.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(&format!("history: {title}")))
        .unwrap_or_else(|| panic!("chart '{title}' on screen:\n{screen}"));
    let axis_at = lines[start + 1..]
        .iter()
        .position(|l| l.trim_end().ends_with(" now"))
        .map(|i| start + 1 + i)
        .unwrap_or_else(|| panic!("an axis under '{title}':\n{screen}"));
    let axis = lines[axis_at];
    let k: usize = lines[start]
        .split(" per column")
        .next()
        .filter(|_| lines[start].contains(" per column"))
        .and_then(|t| t.rsplit(' ').next())
        .map_or(1, |t| t.parse().unwrap());
    let chars: Vec<char> = axis.trim_end().chars().collect();
    let end = chars.len() - " now".len();
    let first = (0..end)
        .rev()
        .take_while(|&i| chars[i] == '-' || chars[i] == '|')
        .last()
        .expect("ticks on the axis");
    let idx: Vec<usize> = (0..n).collect();
    let mut groups: Vec<Vec<usize>> = idx.rchunks(k).map(|c| c.to_vec()).collect();
    groups.reverse();
    let width = end - first;
    assert_eq!(width % groups.len(), 0, "whole columns: {axis}");
    let d = Drawn {
        rows: lines[start + 1..axis_at].to_vec(),
        first,
        per: width / groups.len(),
        groups,
    };
    (d, axis)
}

impl Drawn<'_> {
    /// The row labelled `label`; with `upper`, the line above it (the bar tops of a row two
    /// lines high).
    fn row(&self, label: &str, upper: bool) -> &str {
        let i = self
            .rows
            .iter()
            .position(|l| l.starts_with(&format!("{label} ")))
            .unwrap_or_else(|| panic!("row '{label}' in {:#?}", self.rows));
        self.rows[if upper { i - 1 } else { i }]
    }

    /// The character at the start of column `j` on `line`.
    fn at(&self, line: &str, j: usize) -> char {
        line.chars().nth(self.first + j * self.per).unwrap_or(' ')
    }

    /// Checks that the column holding the largest of `values` is drawn full and that every
    /// full column's largest interval is within one eighth of it (the resolution).
    fn peaks_match(&self, line: &str, values: &[f64]) {
        let max = values.iter().copied().fold(0.0, f64::max);
        assert!(max > 0.0, "something to draw");
        let top = values.iter().position(|v| *v == max).unwrap();
        for (j, g) in self.groups.iter().enumerate() {
            let col_max = g.iter().map(|&i| values[i]).fold(0.0, f64::max);
            let full = self.at(line, j) == '█';
            if g.contains(&top) {
                assert!(
                    full,
                    "the highest interval {top} (column {j}) is full: {line}"
                );
            }
            if full {
                assert!(
                    col_max >= max * 15.0 / 16.0,
                    "column {j}: {col_max} of {max}"
                );
            }
        }
    }
}

fn rate(s: &Snapshot, n: u64) -> f64 {
    n as f64 * 1e9 / s.len_ns() as f64
}

/// The demo at its last interval, the whole recording in the window.
fn demo_at_end(view: View) -> (App, Vec<Snapshot>) {
    let (mut app, snaps) = replay_app(DEMO, view);
    app.window = history::fit_window(snaps.len());
    app.set_cursor(Some(snaps.len() - 1));
    (app, snaps)
}

#[test]
fn overview_sparklines_peak_at_the_busiest_intervals() {
    let (mut app, snaps) = demo_at_end(View::Overview);
    assert!(snaps.len() >= 15, "the demo spans its phases");
    let n = snaps.len();
    let migr: Vec<f64> = snaps.iter().map(|s| rate(s, s.migrations.total)).collect();
    let found: Vec<f64> = snaps
        .iter()
        .map(|s| history::findings_count(s) as f64)
        .collect();
    let p99: Vec<f64> = snaps.iter().map(|s| s.runqlat_us.p99).collect();
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let (d, _) = drawn(&scr, "summary", n);
        if w == 132 {
            assert!(
                d.per >= 2,
                "a 30-interval window is stretched on a wide screen"
            );
        }
        // Rows are two lines high on a tall screen: the bar tops are on the upper line.
        let tall = h >= 40;
        d.peaks_match(d.row("migrations/s", tall), &migr);
        d.peaks_match(d.row("findings", tall), &found);
        d.peaks_match(d.row("runqlat p99", tall), &p99);
        // The latest and the highest figure.
        let last = snaps.last().unwrap();
        let max = migr.iter().copied().fold(0.0, f64::max);
        let fig = |v: f64| super::views::history::figure(Some(v), history::Unit::PerSec);
        has(
            d.row("migrations/s", false),
            &format!("{} ^{}", fig(rate(last, last.migrations.total)), fig(max)),
        );
        assert!(scr.lines().all(|l| l.chars().count() <= w as usize));
    }
    // `s`: migrations by reason, one row per reason seen, each peaking where it does.
    app.handle(Action::SeriesNext);
    assert_eq!(app.series, Series::Migrations);
    let scr = render(&app, 132, 40);
    let (d, _) = drawn(&scr, "migrations/s by reason", n);
    for reason in [
        "periodic_balance",
        "wakeup",
        "newidle_balance",
        "nohz_idle_balance",
    ] {
        let v: Vec<f64> = snaps
            .iter()
            .map(|s| rate(s, s.migrations.by_reason[reason]))
            .collect();
        d.peaks_match(d.row(reason, true), &v);
    }
    app.handle(Action::SeriesPrev);
    assert_eq!(app.series, Series::Summary);
}

#[test]
fn domains_chart_follows_the_selected_domain() {
    let (mut app, snaps) = demo_at_end(View::Domains);
    // The NUMA domain: the last row of the tree (4 LLCs, then NUMA).
    for _ in 0..4 {
        app.handle(Action::Down);
    }
    let v: Vec<f64> = snaps
        .iter()
        .map(|s| {
            s.idle_while_waiting
                .iter()
                .find(|w| w.level == "numa")
                .map_or(0.0, |w| w.movable_fraction)
        })
        .collect();
    let imb: Vec<f64> = snaps
        .iter()
        .map(|s| {
            s.domains
                .iter()
                .find(|d| d.level == "numa")
                .unwrap()
                .imbalance as f64
        })
        .collect();
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let (d, _) = drawn(&scr, "numa 0-15", snaps.len());
        d.peaks_match(d.row("idle-wait", false), &v);
        d.peaks_match(d.row("imbalance", false), &imb);
        has(&scr, "groups of numa 0-15");
    }
}

#[test]
fn the_window_keys_and_the_cursor_bound_the_chart() {
    let (mut app, snaps) = demo_at_end(View::Overview);
    assert_eq!(app.window, 30, "a replay opens on the window that holds it");
    app.handle(Action::WindowLonger);
    assert_eq!(app.window, 60);
    app.handle(Action::WindowShorter);
    app.handle(Action::WindowShorter);
    assert_eq!(app.window, 30, "30 is the narrowest");
    // Seeking back: the chart ends at the interval shown.
    app.set_cursor(Some(5));
    assert_eq!(app.window_snaps().len(), 6);
    assert_eq!(*app.window_snaps()[5], history::chart_figures(&snaps[5]));
    let scr = render(&app, 80, 24);
    has(&scr, "6 of 30 intervals");
    let (d, _) = drawn(&scr, "summary", 6);
    let migr: Vec<f64> = snaps[..6]
        .iter()
        .map(|s| rate(s, s.migrations.total))
        .collect();
    d.peaks_match(d.row("migrations/s", false), &migr);
}

/// A live app fed by the synthetic machine through the real pipeline.
fn synthetic_feed(cpus: usize, events: u64, interval_ns: u64, rate: u64) -> (App, LiveFeed) {
    let src = Source::synthetic(SyntheticConfig {
        cpus,
        tasks: cpus * 4,
        rate,
        events: Some(events),
        ..SyntheticConfig::default()
    });
    let topo = src.topology().clone();
    let analyzer = Analyzer::new(
        topo.clone(),
        AnalyzerConfig {
            interval_ns,
            ..AnalyzerConfig::default()
        },
    );
    let app = App::new(
        topo,
        interval_ns,
        SourceInfo::Live {
            probe_mode: "synthetic".into(),
            folded: false,
        },
        0,
    );
    (app, LiveFeed::new(src, analyzer))
}

fn pump_until(app: &mut App, feed: &mut LiveFeed, done: impl Fn(&App) -> bool) {
    let t0 = std::time::Instant::now();
    while !done(app) && !app.ended {
        feed.pump(app);
        assert!(t0.elapsed().as_secs() < 60, "the synthetic run ends");
    }
}

#[test]
fn a_live_interval_change_keeps_the_earlier_intervals_on_the_chart() {
    let (mut app, mut feed) = synthetic_feed(16, 3_000_000, 250_000_000, 250_000);
    pump_until(&mut app, &mut feed, |a| a.history.len() >= 3);
    let before: Vec<Snapshot> = app.history.iter().cloned().collect();
    match app.handle(Action::Slower) {
        Effect::Reconfigure { interval_ns, comm } => {
            assert_eq!(interval_ns, 500_000_000);
            feed.reconfigure(&mut app, interval_ns, comm);
        }
        e => panic!("+ reconfigures, got {e:?}"),
    }
    pump_until(&mut app, &mut feed, |_| false);
    let all: Vec<&Snapshot> = app.history.iter().collect();
    assert!(all.len() > before.len() + 2, "{} intervals", all.len());
    for (a, b) in before.iter().zip(&all) {
        assert_eq!(a, *b, "an interval from before `+` is still there");
    }
    assert!(before.iter().all(|s| s.len_ns() == 250_000_000));
    let after = &all[before.len()..];
    assert!(after[..after.len() - 1]
        .iter()
        .all(|s| s.len_ns() == 500_000_000));
    assert_eq!(app.marks.len(), 1);
    assert_eq!(app.marks[0].what, "every 500 ms");
    // Exactly the first interval after `+` is marked.
    let marked = history::marked(&all, &app.marks);
    let at: Vec<usize> = (0..all.len()).filter(|&i| marked[i]).collect();
    assert_eq!(at, vec![before.len()], "marked intervals");
    let migr: Vec<f64> = all.iter().map(|s| rate(s, s.migrations.total)).collect();
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let (d, axis) = drawn(&scr, "summary", all.len());
        let bars: Vec<usize> = (0..d.groups.len())
            .filter(|&j| d.at(axis, j) == '|')
            .flat_map(|j| d.groups[j].clone())
            .collect();
        assert!(
            bars.contains(&before.len()),
            "the mark on the axis:\n{axis}"
        );
        assert_eq!(
            axis.matches('|').count(),
            d.per,
            "one column marked:\n{axis}"
        );
        has(&scr, "| = changed (every 500 ms)");
        // Rates per second of each interval's own length: the busiest interval is full.
        d.peaks_match(d.row("migrations/s", h >= 40), &migr);
    }
}

#[test]
fn history_on_a_256_cpu_machine() {
    // 10 ms intervals: 200 of them, more than an 80-column chart has columns.
    let (mut app, mut feed) = synthetic_feed(256, 2_000_000, 10_000_000, 1_000_000);
    pump_until(&mut app, &mut feed, |_| false);
    let all: Vec<Snapshot> = app.history.iter().cloned().collect();
    assert!(all.len() >= 100, "{} intervals", all.len());
    app.window = 300;
    for _ in 0..3 {
        app.handle(Action::SeriesNext);
    }
    assert_eq!(app.series, Series::IdleWait);
    let worst = |s: &Snapshot, level: &str| {
        s.idle_while_waiting
            .iter()
            .filter(|w| w.level == level)
            .map(|w| w.movable_fraction * 100.0)
            .fold(0.0, f64::max)
    };
    for (w, h) in SIZES.into_iter().chain([(256, 80)]) {
        let scr = render(&app, w, h);
        assert!(scr.lines().all(|l| l.chars().count() <= w as usize));
        let (d, _) = drawn(&scr, "idle-wait % by level", all.len());
        if w == 80 {
            assert!(
                d.groups.last().unwrap().len() > 1,
                "intervals share columns at 80 columns:\n{scr}"
            );
        }
        for level in ["numa", "llc", "smt"] {
            let v: Vec<f64> = all.iter().map(|s| worst(s, level)).collect();
            let label = format!("{level} movable");
            if v.iter().any(|x| *x > 0.0) {
                d.peaks_match(d.row(&label, h >= 40), &v);
            }
            let max = v.iter().copied().fold(0.0, f64::max);
            has(d.row(&label, false), &format!("^{max:.1}%"));
        }
        // Below the chart, the CPU grid says how many CPUs did not fit.
        if w < 256 {
            has(&scr, "more CPUs: enlarge the window");
        } else {
            has(&scr, "cpu 255 ");
        }
    }
}

#[test]
fn diff_draws_both_runs_row_by_row_on_one_scale() {
    let (app, snaps) = demo_at_end(View::Overview);
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lab/6.1-4node-overload.lbs");
    let (_, other, _) = crate::cmd::diff::analyze_file(
        &path,
        1_000_000_000,
        &crate::cli::FilterArgs::default(),
        &crate::cli::ModelArgs::default(),
    )
    .unwrap();
    let meta = crate::diff::RunMeta {
        kernel_release: "6.1".into(),
        hostname: "lab".into(),
        topology_summary: "16 CPUs".into(),
        nr_cpus: 16,
    };
    let a = crate::diff::RunSummary::from_snapshots(&snaps, "demo.lbs", meta.clone());
    let b = crate::diff::RunSummary::from_snapshots(&other, "overload.lbs", meta);
    let mut d = App::for_diff(crate::diff::diff(&a, &b), app.topo.clone());
    d.diff_runs = Some(Box::new((snaps.clone(), other.clone())));
    let migr =
        |v: &[Snapshot]| -> Vec<f64> { v.iter().map(|s| rate(s, s.migrations.total)).collect() };
    let (ma, mb) = (migr(&snaps), migr(&other));
    let top = ma.iter().chain(&mb).copied().fold(0.0, f64::max);
    for (w, h) in SIZES {
        let scr = render(&d, w, h);
        let line = |label: &str| {
            scr.lines()
                .find(|l| l.starts_with(label))
                .unwrap_or_else(|| panic!("'{label}' on screen:\n{scr}"))
        };
        let (la, lb) = (line("A migrations/s "), line("B migrations/s "));
        // One scale: only the run holding the higher peak reaches a full bar.
        let a_top = ma.iter().copied().fold(0.0, f64::max);
        assert_eq!(la.contains('█'), a_top >= top * 15.0 / 16.0, "{la}");
        let b_top = mb.iter().copied().fold(0.0, f64::max);
        assert_eq!(lb.contains('█'), b_top >= top * 15.0 / 16.0, "{lb}");
        let fig = |v: f64| super::views::history::figure(Some(v), history::Unit::PerSec);
        has(la, &format!("^{}", fig(a_top)));
        has(lb, &format!("^{}", fig(b_top)));
        has(&scr, "baseline (A) and new (B)");
    }
}
