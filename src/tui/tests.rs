//! Snapshot tests of every view on ratatui's test backend, at 80x24 and 132x40, fed from
//! the golden recording through the real file source and analyzer. Assertions compare the
//! screen with the snapshot's own figures, so they check what is drawn, not just that
//! something is.

use super::app::{App, Effect, SourceInfo, View};
use super::keymap::{Action, KEYS};
use super::term::Palette;
use super::views::{rate, us};
use super::{recording_info, state, views};
use crate::analyze::Snapshot;
use crate::cli::FilterArgs;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::path::PathBuf;

pub(super) const SIZES: [(u16, u16); 2] = [(80, 24), (132, 40)];

fn golden() -> (crate::record::Header, Vec<Snapshot>) {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/golden-v1.lbs");
    let (h, snaps, d) = crate::cmd::diff::analyze_file(
        &path,
        1_000_000_000,
        &FilterArgs::default(),
        &crate::cli::ModelArgs::default(),
    )
    .unwrap();
    assert!(d.is_clean());
    assert!(
        snaps.len() >= 3,
        "the golden recording spans several intervals"
    );
    (h, snaps)
}

/// The replay app over the recording at `rel` (from the crate root), at its first interval,
/// with the snapshots it holds.
pub(super) fn replay_app(rel: &str, view: View) -> (App, Vec<Snapshot>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    let src = crate::pipeline::Source::file(&path).unwrap();
    let (h, snaps, _) = crate::cmd::replay::analyze_recording(
        src,
        1_000_000_000,
        &FilterArgs::default(),
        &crate::cli::ModelArgs::default(),
    )
    .unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut info = recording_info(&name, &h);
    info.span_ns = snaps.last().unwrap().t_end_ns - snaps[0].t_start_ns;
    let mut app = App::new(
        h.topology.clone(),
        1_000_000_000,
        SourceInfo::Replay(info),
        h.clock_base_ns,
    );
    app.replace_history(snaps.clone(), None);
    app.view = view;
    (app, snaps)
}

/// The replay app over the golden recording, at its first interval.
fn golden_app(view: View) -> App {
    let (app, snaps) = replay_app("tests/fixtures/recordings/golden-v1.lbs", view);
    assert_eq!(snaps, golden().1, "the same analysis as report and diff");
    app
}

pub(super) fn render(app: &App, w: u16, h: u16) -> String {
    render_with(app, w, h, Palette { color: false }).0
}

fn render_with(app: &App, w: u16, h: u16, pal: Palette) -> (String, ratatui::buffer::Buffer) {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| views::draw(f, app, pal)).unwrap();
    let buf = t.backend().buffer().clone();
    let text = (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n");
    (text, buf)
}

pub(super) fn has(screen: &str, needle: &str) {
    assert!(screen.contains(needle), "'{needle}' on screen:\n{screen}");
}

#[test]
fn overview_shows_cpus_and_headline_figures() {
    let app = golden_app(View::Overview);
    let s = app.current().unwrap().clone();
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(&scr, "1 Overview");
        has(&scr, "lbscope replay golden-v1.lbs");
        has(
            &scr,
            &format!("migrations/s {}", rate(s.migrations.total, s.len_ns())),
        );
        has(
            &scr,
            &format!("p50 {}  p99 {}", us(s.runqlat_us.p50), us(s.runqlat_us.p99)),
        );
        let (lvl, span, fr) = state::headline_idle(&app.topo, &s).unwrap();
        has(&scr, &format!("{:.1}% ({lvl} {span})", fr * 100.0));
        has(&scr, &format!("lost events {}", s.lost_events));
        has(&scr, "host golden-host  kernel 6.8.0-golden  2023-11-14");
        has(&scr, "16 CPUs: smt llc numa");
        has(&scr, "tracepoints only");
        assert_eq!(s.cpus.len(), 16);
        for c in &s.cpus {
            let word = match c.idle {
                Some(true) => "idle",
                Some(false) => "run",
                None => "?",
            };
            has(&scr, &format!("cpu{:>4} {word}", c.cpu));
            if c.waiting > 0 {
                has(&scr, &format!("cpu{:>4} {word} +{}", c.cpu, c.waiting));
            }
        }
    }
}

#[test]
fn domains_show_the_tree_groups_and_idle_while_waiting() {
    let mut app = golden_app(View::Domains);
    let s = app.current().unwrap().clone();
    let rows = state::domains(&app.topo, Some(&s));
    assert_eq!(rows.len(), 8 + 2 + 1, "smt x8, llc x2, numa x1");
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(&scr, "smt (SMT)");
        has(&scr, "groups of smt 0-1");
        // The model's group type of the first group, in the kernel's name.
        let class = rows[0].groups[0]
            .class
            .clone()
            .expect("the model classifies groups");
        has(&scr, &class);
        if h >= 40 {
            // Every domain fits: each with its idle-while-waiting figure.
            for r in &rows {
                has(&scr, &format!("{:<14}", r.span.to_string()));
                has(&scr, &format!("{:>8.1}%", r.movable * 100.0));
            }
        }
    }
    // Down to the NUMA domain: its two groups are the LLCs.
    for _ in 0..10 {
        app.handle(Action::Down);
    }
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(&scr, "groups of numa 0-15");
        has(&scr, "0-7 ");
        has(&scr, "8-15 ");
        let numa = rows.last().unwrap();
        has(&scr, &format!("{:>8.1}%", numa.movable * 100.0));
        let g = &numa.groups[0];
        has(
            &scr,
            &format!(
                "{:<14} {:>5} {:>5} {:>5} {:>5}",
                "0-7",
                g.idle_cpus,
                g.known_cpus - g.idle_cpus,
                g.nr_running,
                g.waiting
            ),
        );
    }
}

#[test]
fn domains_show_the_balancers_counters_of_the_selected_level() {
    let (mut app, snaps) = replay_app(
        "tests/fixtures/lab/6.1-2s-smt-numa-active.lbs",
        View::Domains,
    );
    // The first interval holds the events stamped before the first one delivered (put back
    // in time order), no balancer call among them: the second has the calls.
    assert!(!snaps[0].balancer_counters.calls_recorded);
    app.set_cursor(Some(1));
    let s = app.current().unwrap();
    let c = &s.balancer_counters;
    assert!(c.calls_recorded, "{c:?}");
    let smt: Vec<_> = c.rows.iter().filter(|r| r.level == "smt").collect();
    assert!(!smt.is_empty(), "{c:?}");
    let line = state::level_counters(Some(s), "smt").unwrap();
    for r in smt {
        let n = &r.counts;
        let cell = format!(
            "{} {}/{}/{}/{}",
            r.idle, n.lb_count, n.lb_balanced, n.lb_failed, n.lb_gained
        );
        assert!(line.contains(&cell), "{cell} in {line}");
    }
    assert_eq!(state::level_counters(Some(s), "cluster"), None);
    // The first domain (an SMT pair) is selected: its level's counters above its groups.
    let scr = render(&app, 160, 40);
    has(&scr, "balancer at smt (calls/balanced/failed/gained)");
}

#[test]
fn latency_draws_the_log2_histogram_with_percentiles() {
    let mut app = golden_app(View::Latency);
    let s = app.current().unwrap().clone();
    let l = &s.runqlat_us;
    let peak = *l.log2_buckets.iter().max().unwrap();
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(&scr, "all tasks: run-queue latency");
        has(&scr, &format!("p99 {}", us(l.p99)));
        has(&scr, &format!("n={}", l.count));
        for (i, &c) in l.log2_buckets.iter().enumerate().filter(|(_, c)| **c > 0) {
            let lo = if i == 0 { 0 } else { 1u64 << i };
            has(&scr, &format!("{lo:>6} -> "));
            has(&scr, &format!(": {c:<7} |*"));
        }
        // The fullest slot's bar fills the bar width.
        let bar_w = (w as usize - 30).saturating_sub(30).clamp(4, 40);
        has(&scr, &format!("{peak:<7} |{}|", "*".repeat(bar_w)));
    }
    // Down the list: CPUs, then domains, then processes.
    app.handle(Action::Down);
    let cpu = &s.runqlat_by_cpu[0];
    let scr = render(&app, 80, 24);
    has(&scr, &format!("cpu {}: run-queue latency", cpu.cpu));
    has(&scr, &format!("n={}", cpu.latency.count));
    let proc_at = 1 + s.runqlat_by_cpu.len() + s.runqlat_by_domain.len();
    for _ in 1..proc_at {
        app.handle(Action::Down);
    }
    let p = &s.runqlat_by_process[0];
    let scr = render(&app, 132, 40);
    has(
        &scr,
        &format!(
            "{} {}: run-queue latency",
            p.tgid.unwrap(),
            p.comm.clone().unwrap()
        ),
    );
    has(&scr, &format!("p50 {}", us(p.latency.p50)));
}

#[test]
fn migration_reasons_are_never_cut() {
    let (mut app, snaps) = replay_app("tests/fixtures/lab/6.12-4node-active.lbs", View::Migrations);
    // The interval with the most balancer reasons at once.
    let s = snaps
        .iter()
        .max_by_key(|s| s.migrations.by_reason.values().filter(|n| **n > 0).count())
        .unwrap();
    app.replace_history(snaps.clone(), Some(s.t_end_ns));
    let names: Vec<&String> = s
        .migrations
        .by_reason
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(r, _)| r)
        .collect();
    assert!(
        names.iter().any(|r| r.len() > 15),
        "the interval has a long reason name: {names:?}"
    );
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        for r in &names {
            has(&scr, &format!("{r} "));
        }
    }
}

#[test]
fn latency_lists_cgroups_after_processes_with_their_own_figures() {
    // A lab recording whose tasks were announced with their cgroups.
    let (mut app, snaps) = replay_app("tests/fixtures/lab/6.1-4node-overload.lbs", View::Latency);
    let s = snaps
        .iter()
        .find(|s| !s.runqlat_by_cgroup.is_empty())
        .expect("an interval with per-cgroup latency")
        .clone();
    for _ in 0..snaps.len() {
        if app.current() == Some(&s) {
            break;
        }
        app.handle(Action::Right);
    }
    assert_eq!(app.current(), Some(&s), "seeking reaches the interval");
    let c = &s.runqlat_by_cgroup[0];
    let at = 1 + s.runqlat_by_cpu.len() + s.runqlat_by_domain.len() + s.runqlat_by_process.len();
    for _ in 0..at {
        app.handle(Action::Down);
    }
    let scr = render(&app, 132, 40);
    has(&scr, &format!("cgroup {}: run-queue latency", c.path));
    has(&scr, &format!("p99 {}", us(c.latency.p99)));
    has(
        &scr,
        &format!("max {}  n={}", us(c.latency.max), c.latency.count),
    );
    // Every figure whole at 80 columns too, none past the pane's edge.
    let narrow = render(&app, 80, 24);
    has(&narrow, &format!("p99 {}", us(c.latency.p99)));
    has(
        &narrow,
        &format!(
            "p99.9 {}  max {}  n={}",
            us(c.latency.p999),
            us(c.latency.max),
            c.latency.count
        ),
    );
    // Its row in the list, with its sample count.
    assert!(
        scr.lines().any(|l| l.contains(&format!("cg {}", c.path))
            && l.contains(&format!("{:>8}", c.latency.count))),
        "a row for {} with {} samples:\n{scr}",
        c.path,
        c.latency.count
    );
}

#[test]
fn migrations_show_the_reason_level_matrix_as_rates() {
    let app = golden_app(View::Migrations);
    let s = app.current().unwrap().clone();
    let m = &s.migrations;
    assert!(m.total > 0);
    // The reason column is as wide as the longest name shown (or its heading), plus one.
    let rw = m
        .by_reason
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(r, _)| r.len())
        .max()
        .unwrap_or(0)
        .max(14)
        + 1;
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(
            &scr,
            &format!(
                "{:<rw$}{:>8}{:>8}{:>8}{:>8}",
                "reason \\ level", "smt", "llc", "numa", "total"
            ),
        );
        for (r, &n) in m.by_reason.iter().filter(|(_, n)| **n > 0) {
            let cells = &m.matrix[r];
            let mut want = format!("{r:<rw$}");
            for lvl in ["smt", "llc", "numa"] {
                let c = cells.get(lvl).copied().unwrap_or(0);
                let cell = if c == 0 {
                    ".".into()
                } else {
                    rate(c, s.len_ns())
                };
                want.push_str(&format!("{cell:>8}"));
            }
            want.push_str(&format!("{:>8}", rate(n, s.len_ns())));
            has(&scr, &want);
        }
        has(&scr, &format!("{:>8}", rate(m.total, s.len_ns())));
        has(&scr, "unknown stacks");
        has(&scr, "most migrated tasks");
        let tasks = app.current_tasks();
        assert!(!tasks.is_empty(), "the golden interval moves tasks");
        let moved: u64 = tasks.iter().map(|t| t.count).sum();
        assert!(moved <= m.total);
        let t = &tasks[0];
        has(
            &scr,
            &format!(
                "{:>8} {:<16}",
                t.pid,
                t.comm.clone().unwrap_or_else(|| "?".into())
            ),
        );
        has(&scr, &format!("{:>8}/s", rate(t.count, s.len_ns())));
    }
}

#[test]
fn findings_list_and_evidence() {
    let mut app = golden_app(View::Findings);
    let s = app.current().unwrap().clone();
    let signals = state::measured_signals(&app.topo, &s);
    assert!(
        !signals.is_empty(),
        "the golden interval has idle-while-waiting"
    );
    let model = state::findings(&s).expect("the model is in the snapshot");
    let all: Vec<_> = model.iter().chain(signals.iter()).collect();
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(
            &scr,
            &format!("findings of the balancer model: {}", model.len()),
        );
        has(&scr, &format!("): {}", signals.len()));
        has(&scr, &all[0].place);
    }
    app.handle(Action::Down);
    assert_eq!(app.handle(Action::Enter), Effect::None);
    let scr = render(&app, 132, 40);
    has(&scr, &format!("evidence: {}", all[1].kind));
    if model.len() < 2 {
        has(&scr, "per-CPU state at the end of the interval");
    }
    app.handle(Action::Back);
    assert!(!render(&app, 80, 24).contains("evidence:"));
}

#[test]
fn help_lists_every_key() {
    let mut app = golden_app(View::Latency);
    app.handle(Action::Help);
    assert_eq!(app.view, View::Help);
    // Whole descriptions, wrapped under their column where the screen is narrow: the
    // screen's text with its runs of blanks (line ends and the wrapped lines' indent) made
    // one space holds each of them.
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let flat = words(&scr);
        for (k, what) in KEYS {
            has(&scr, k);
            has(&flat, &words(what));
        }
        let body: Vec<&str> = scr.lines().collect();
        assert!(
            body[2..body.len() - 1]
                .iter()
                .all(|l| l.trim_end().chars().count() < usize::from(w)),
            "nothing reaches the edge (cut) at {w} columns:\n{scr}"
        );
    }
    // Scrolled down row by row, the last legend line comes whole onto the narrowest screen.
    let last = crate::tui::views::timeline::LEGEND
        .last()
        .expect("a legend");
    let mut seen = false;
    for _ in 0..200 {
        app.handle(Action::Down);
        seen |= words(&render(&app, 80, 24)).contains(&words(last));
    }
    assert!(
        seen,
        "the legend's last line on screen:\n{}",
        render(&app, 80, 24)
    );
    // Down stops on the last page: the last line is on the screen's last row, and a single
    // Up brings back the row above the first in view.
    let bottom = render(&app, 80, 24);
    assert!(app.scroll < 200, "scroll stopped at {}", app.scroll);
    let rows: Vec<&str> = bottom.lines().collect();
    assert!(
        rows.iter()
            .rev()
            .take(3)
            .any(|l| words(l).contains(&words(last)) || words(last).ends_with(&words(l))),
        "the last line at the bottom:\n{bottom}"
    );
    let first = rows[2].to_string();
    app.handle(Action::Up);
    let up = render(&app, 80, 24);
    assert_ne!(up, bottom, "one Up moves the view");
    assert_eq!(up.lines().nth(3), Some(first.as_str()), "by one row:\n{up}");
    app.handle(Action::Help);
    assert_eq!(app.view, View::Latency, "? again goes back");
}

/// The golden recording compared with itself, as `a.lbs` and `b.lbs`.
fn golden_diff() -> (crate::record::Header, crate::diff::Diff) {
    let (h, a) = golden();
    let (_, b) = golden();
    let meta = crate::diff::RunMeta {
        kernel_release: h.kernel_release.clone(),
        hostname: h.hostname.clone(),
        topology_summary: "16 CPUs".into(),
        nr_cpus: 16,
    };
    let ra = crate::diff::RunSummary::from_snapshots(&a, "a.lbs", meta.clone());
    let rb = crate::diff::RunSummary::from_snapshots(&b, "b.lbs", meta);
    let d = crate::diff::diff(&ra, &rb);
    (h, d)
}

#[test]
fn diff_view_shows_rows_and_histograms_side_by_side() {
    let (h, d) = golden_diff();
    let hist = d.histograms.clone();
    let app = App::for_diff(d, h.topology.clone());
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(&scr, "baseline a.lbs   new b.lbs");
        has(&scr, "runqlat_us p50");
        has(&scr, "baseline | new");
        let peak = hist.baseline.iter().max().unwrap();
        has(&scr, &format!("{peak:>8} "));
        // Same run on both sides: every histogram line shows the count twice.
        for (i, c) in hist.baseline.iter().enumerate().filter(|(_, c)| **c > 0) {
            let lo = if i == 0 { 0 } else { 1u64 << i };
            let line = scr
                .lines()
                .find(|l| l.contains(&format!("{lo:>6}-")))
                .unwrap_or_else(|| panic!("slot {lo} on screen:\n{scr}"));
            assert_eq!(line.matches(&format!(" {c} ")).count(), 2, "{line}");
        }
    }
}

/// The diff's table scrolls to its last row and no further: one Up after any number of Downs
/// moves it back at once.
#[test]
fn diff_scroll_stops_at_the_last_row() {
    let (h, d) = golden_diff();
    let last = d
        .rows
        .last()
        .map(super::views::diff::row_label)
        .expect("rows");
    let mut app = App::for_diff(d, h.topology.clone());
    let bottom = render(&app, 80, 24);
    for _ in 0..500 {
        app.handle(Action::Down);
    }
    let bottom_now = render(&app, 80, 24);
    assert_ne!(bottom, bottom_now, "the table scrolled");
    has(&bottom_now, &last.chars().take(25).collect::<String>());
    assert!(app.scroll < 500, "scroll stopped at {}", app.scroll);
    app.handle(Action::Up);
    assert_ne!(render(&app, 80, 24), bottom_now, "one Up moves the table");
}

#[test]
fn diff_view_of_several_runs_a_side_shows_means_and_pooled_histograms() {
    let (h, a) = golden();
    let meta = crate::diff::RunMeta {
        kernel_release: h.kernel_release.clone(),
        hostname: h.hostname.clone(),
        topology_summary: "16 CPUs".into(),
        nr_cpus: 16,
    };
    let run = |l: &str| crate::diff::RunSummary::from_snapshots(&a, l, meta.clone());
    let one = crate::diff::diff(&run("a.lbs"), &run("b.lbs"));
    let d = crate::diff::diff_runs(
        &[run("a1.lbs"), run("a2.lbs")],
        &[run("b1.lbs"), run("b2.lbs"), run("b3.lbs")],
    );
    let hist = d.histograms.clone();
    let app = App::for_diff(d, h.topology.clone());
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(&scr, "baseline 2 runs   new 3 runs: means of the runs");
        has(&scr, "runqlat_us p50");
        // Pooled: each slot holds its runs' counts summed (2 and 3 copies of one run).
        for (i, c) in one
            .histograms
            .baseline
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
        {
            assert_eq!(hist.baseline[i], 2 * c);
            assert_eq!(hist.new[i], 3 * c);
            let lo = if i == 0 { 0 } else { 1u64 << i };
            let line = scr
                .lines()
                .find(|l| l.contains(&format!("{lo:>6}-")))
                .unwrap_or_else(|| panic!("slot {lo} on screen:\n{scr}"));
            assert!(line.contains(&format!(" {} ", 3 * c)), "{line}");
        }
    }
}

#[test]
fn keys_switch_views_pause_and_reconfigure() {
    let mut app = golden_app(View::Overview);
    for (n, v) in View::TABS.iter().enumerate() {
        app.handle(Action::Goto(n as u8 + 1));
        assert_eq!(app.view, *v);
    }
    app.handle(Action::NextView);
    assert_eq!(app.view, View::Overview);
    // Replay: right seeks, step pauses and moves one interval.
    app.set_cursor(Some(0));
    app.handle(Action::Right);
    assert_eq!(app.position(), Some(1));
    app.handle(Action::Step);
    assert!(app.paused);
    assert_eq!(app.position(), Some(2));
    app.handle(Action::Left);
    assert_eq!(app.position(), Some(1));
    assert!(render(&app, 80, 24).contains("PAUSED"));
    assert_eq!(
        app.handle(Action::Slower),
        Effect::Reconfigure {
            interval_ns: 2_000_000_000,
            comm: None
        }
    );
    app.handle(Action::Filter);
    for c in "hackbench".chars() {
        app.handle(Action::Char(c));
    }
    assert!(render(&app, 80, 24).contains("filter process name: hackbench_"));
    assert_eq!(
        app.handle(Action::Enter),
        Effect::Reconfigure {
            interval_ns: 2_000_000_000,
            comm: Some("hackbench".into())
        }
    );
    app.handle(Action::SpeedUp);
    assert_eq!(app.speed, 2.0);
    assert_eq!(app.handle(Action::Quit), Effect::Quit);
}

#[test]
fn live_pause_holds_the_screen_while_collecting() {
    let (h, snaps) = golden();
    let mut app = App::new(
        h.topology.clone(),
        1_000_000_000,
        SourceInfo::Live {
            probe_mode: "tracepoints only (tp_btf; 7 of 7 attached)".into(),
            folded: false,
        },
        0,
    );
    assert!(render(&app, 80, 24).contains("collecting the first interval"));
    app.push(snaps[0].clone());
    app.handle(Action::Pause);
    app.push(snaps[1].clone());
    assert_eq!(app.current(), Some(&snaps[0]), "paused: the screen holds");
    app.handle(Action::Pause);
    assert_eq!(app.current(), Some(&snaps[1]), "resumed: the newest");
    app.push(snaps[2].clone());
    app.handle(Action::Left);
    assert_eq!(app.current(), Some(&snaps[1]), "left: one interval back");
    has(&render(&app, 80, 24), "| 1 BACK");
    app.handle(Action::Right);
    assert_eq!(app.cursor(), None, "right at the newest: following again");
    let scr = render(&app, 80, 24);
    has(&scr, "lbscope top");
    has(&scr, "probes: tracepoints only (tp_btf; 7 of 7 attached)");
}

/// A live app over the golden recording's topology, probes by tracepoints only.
fn live_app(h: &crate::record::Header) -> App {
    App::new(
        h.topology.clone(),
        1_000_000_000,
        SourceInfo::Live {
            probe_mode: "tracepoints only".into(),
            folded: false,
        },
        0,
    )
}

/// Live `top` says its own CPU on the title line, before the clock, at every size; a
/// replay never does.
#[test]
fn live_title_shows_its_own_cpu() {
    let (h, snaps) = golden();
    let mut app = live_app(&h);
    app.push(snaps[0].clone());
    assert!(!render(&app, 80, 24).contains("self "), "not measured yet");
    app.self_cpu = Some(1.234);
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let title = scr.lines().next().unwrap().trim_end();
        assert!(
            title.contains("| self 1.2% | ") && title.ends_with(" UTC"),
            "{title}"
        );
    }
    let (mut replay, _) = replay_app(
        "tests/fixtures/lab/6.12-2s-smt-numa-mixed.lbs",
        View::Overview,
    );
    replay.self_cpu = Some(1.234);
    assert!(!render(&replay, 132, 40).contains("self 1.2%"));
}

/// Live `top` over a folding source says so on the title line at every size, and its name
/// filter says what it cannot narrow; a streaming one says neither.
#[test]
fn a_folded_live_title_says_folded_and_its_filter_what_it_leaves() {
    let (h, snaps) = golden();
    let mut app = live_app(&h);
    let filter = |app: &mut App| {
        app.handle(Action::Filter);
        app.handle(Action::Char('x'));
        app.handle(Action::Enter);
        app.status.clone().unwrap()
    };
    app.push(snaps[0].clone());
    assert!(!render(&app, 80, 24)
        .lines()
        .next()
        .unwrap()
        .contains("folded"));
    assert!(!filter(&mut app).contains("folded"));
    app.source = SourceInfo::Live {
        probe_mode: "tracepoints only".into(),
        folded: true,
    };
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let title = scr.lines().next().unwrap();
        assert!(title.contains("| folded |"), "{title}");
    }
    app.handle(Action::Filter);
    app.handle(Action::Backspace);
    app.handle(Action::Enter);
    let note = filter(&mut app);
    assert!(
        note.contains("per-CPU latency and idle-wait still count every task"),
        "{note}"
    );
}

#[test]
fn no_color_draws_without_colours() {
    let app = golden_app(View::Overview);
    let (_, plain) = render_with(&app, 80, 24, Palette { color: false });
    assert!(plain
        .content()
        .iter()
        .all(|c| c.fg == ratatui::style::Color::Reset));
    let (_, coloured) = render_with(&app, 80, 24, Palette { color: true });
    assert!(coloured
        .content()
        .iter()
        .any(|c| c.fg != ratatui::style::Color::Reset));
}

#[test]
fn tiny_terminal_does_not_panic() {
    for v in View::TABS {
        let app = golden_app(v);
        for (w, h) in [(20, 5), (1, 1), (80, 4)] {
            render(&app, w, h);
        }
    }
}

#[test]
fn probe_mode_and_dates() {
    assert_eq!(super::utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
    assert_eq!(super::utc_date(0), "1970-01-01 00:00 UTC");
    let p = |v: &[(&str, &str)]| {
        crate::pipeline::Probes::from_header(
            &v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>(),
        )
        .mode()
    };
    assert_eq!(
        p(&[("sched_switch", "tp_btf"), ("pelt_cfs_tp", "missing")]),
        "tracepoints only (tp_btf; 1 of 2 attached)"
    );
    // Left out because nothing in the run reads it (sched_waking without a recording).
    assert_eq!(
        p(&[("sched_switch", "tp_btf"), ("sched_waking", "not needed")]),
        "tracepoints only (tp_btf; 1 of 1 attached)"
    );
    assert!(p(&[
        ("sched_switch", "raw_tp"),
        ("fentry/sched_balance_rq", "loads")
    ])
    .starts_with("tracepoints with balancer hooks (raw_tp"));
}

/// The replay app over a lab recording (6.1, 4 NUMA nodes of 4 CPUs, fentry mode).
fn lab_app(view: View) -> App {
    replay_app("tests/fixtures/lab/6.1-4node-wakeup-storm.lbs", view).0
}

#[test]
fn a_four_node_lab_recording_shows_each_node_as_a_numa_group() {
    let mut app = lab_app(View::Overview);
    let scr = render(&app, 132, 40);
    has(&scr, "kernel 6.1.0-56-amd64");
    has(&scr, "16 CPUs: llc numa");
    app.view = View::Domains;
    let s = app.current().unwrap().clone();
    let rows = state::domains(&app.topo, Some(&s));
    assert_eq!(rows.len(), 4 + 1, "an LLC per node, one NUMA domain");
    for _ in 0..4 {
        app.handle(Action::Down);
    }
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        has(&scr, "groups of numa 0-15");
        for node in ["0-3 ", "4-7 ", "8-11 ", "12-15 "] {
            has(&scr, node);
        }
        // The model classifies each node in the kernel's names.
        let class = rows[4].groups[0].class.clone().expect("a group type");
        has(&scr, &class);
    }
}

/// A recording's metadata is never cut at the screen's edge: at 80 columns the probes go on
/// a line of their own (the demo's say which of its 19 balancer hooks attached), and on a
/// wide screen they share the topology's line.
#[test]
fn replay_metadata_breaks_lines_instead_of_cutting_them() {
    let (app, _) = replay_app("examples/demo.lbs", View::Overview);
    let SourceInfo::Replay(r) = &app.source else {
        panic!("a replay app");
    };
    let probes = format!("probes: {}", r.probes);
    let topology = format!("topology {}", r.topology);
    assert!(
        topology.len() + 2 + probes.len() > 80,
        "the demo's line is wider than 80 columns: {topology}  {probes}"
    );
    let narrow = render(&app, 80, 24);
    let rows: Vec<&str> = narrow.lines().map(str::trim_end).collect();
    assert!(rows.contains(&topology.as_str()), "{narrow}");
    assert!(rows.contains(&probes.as_str()), "{narrow}");
    let wide = render(&app, 160, 40);
    has(&wide, &format!("{topology}  {probes}"));
}

/// At 80 columns a finding's row keeps its kind and place columns as narrow as the
/// interval's own, so its sentence starts where they end, and a sentence cut at the edge
/// says so with `…`; at 256 columns it is whole.
#[test]
fn findings_rows_fit_the_width_and_mark_a_cut() {
    let (mut app, _) = replay_app("examples/demo.lbs", View::Findings);
    let s = app.current().unwrap().clone();
    let mut all = state::findings(&s).unwrap_or_default();
    all.extend(state::measured_signals(&app.topo, &s));
    let first = all
        .first()
        .expect("the demo's first interval has a finding");
    let kw = all.iter().map(|r| r.kind.len()).max().unwrap();
    let pw = all.iter().map(|r| r.place.len()).max().unwrap();
    let row = format!(
        "{:<kw$}  {:<pw$}  {}",
        first.kind, first.place, first.summary
    );
    assert!(
        row.len() > 80,
        "the demo's first finding is wider than 80: {row}"
    );
    let narrow = render(&app, 80, 24);
    let cut: String = row.chars().take(79).collect();
    has(&narrow, &format!("{cut}…"));
    has(&render(&app, 256, 40), &row);
    app.handle(Action::Enter);
    has(&render(&app, 80, 24), "evidence:");
}

/// A comparison's warning wraps under the table's width instead of running past it (whole
/// while the table keeps five rows in view), and the table's rows stay in view.
#[test]
fn diff_warnings_wrap_instead_of_running_past_the_edge() {
    let (h, mut d) = golden_diff();
    let warning = "runs differ in length (3.2 s vs 18.2 s): compare rates and percentiles, \
                   not totals (samples, lost events)";
    d.warnings.push(warning.into());
    d.warnings.push("one more warning".into());
    let app = App::for_diff(d, h.topology.clone());
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        // From 130 columns the table is a pane of 78 beside the histograms.
        let pane = if w >= 130 { 78 } else { usize::from(w) };
        let table: Vec<String> = scr
            .lines()
            .map(|l| l.chars().take(pane).collect::<String>())
            .collect();
        let text = words(&table.join("\n"));
        has(&text, &format!("warning: {warning}"));
        // In the order `diff` prints them.
        let (first, second) = (
            text.find("warning: runs differ"),
            text.find("warning: one more"),
        );
        assert!(
            first < second && first.is_some(),
            "warnings out of order:\n{scr}"
        );
        has(&scr, "runqlat_us p50");
        for l in &table {
            let l = l.trim_end();
            assert!(
                l.chars().count() < pane || l.ends_with('…') || !l.contains("warning"),
                "'{l}' reaches the edge of the table at {w} columns:\n{scr}"
            );
        }
    }
}

/// The Overview's migrations line names the busiest reasons, up to five, only as many as fit
/// whole: at 80 columns five long names do not all fit, and none is cut.
#[test]
fn overview_reasons_fit_whole() {
    let (h, mut snaps) = golden();
    for (i, r) in [
        "periodic_balance",
        "newidle_balance",
        "active_balance",
        "numa_balancing",
        "nohz_balance",
    ]
    .iter()
    .enumerate()
    {
        snaps[0]
            .migrations
            .by_reason
            .insert((*r).to_string(), 1000 * (10 - i as u64));
    }
    let mut app = live_app(&h);
    app.push(snaps[0].clone());
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let line = scr
            .lines()
            .find(|l| l.starts_with("migrations/s "))
            .expect("the migrations line");
        assert!(line.trim_end().chars().count() < usize::from(w), "{line}");
        let shown: Vec<&str> = line.trim_end().split("  ").skip(1).map(str::trim).collect();
        assert!(!shown.is_empty(), "{line}");
        for part in &shown {
            let (name, figure) = part.rsplit_once(' ').expect(part);
            assert!(
                snaps[0].migrations.by_reason.contains_key(name),
                "{part} in {line}"
            );
            assert!(figure.parse::<f64>().is_ok(), "{part} in {line}");
        }
        // The widest screen has room for all five.
        assert_eq!(shown.len() == 5, w >= 132, "{line}");
    }
}

/// A long recording name gives way on the title line: at 80 columns the name is cut with `…`
/// and the position, interval and clock stay whole; at 132 the name is whole.
#[test]
fn title_line_cuts_the_name_not_the_clock() {
    let (app, _) = replay_app(
        "tests/fixtures/lab/6.12-2s-smt-numa-mixed.lbs",
        View::Overview,
    );
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let title = scr.lines().next().unwrap().trim_end();
        assert!(title.chars().count() <= usize::from(w), "{title}");
        assert!(
            title.contains("| every 1.0 s |") && title.ends_with(" UTC"),
            "{title}"
        );
        let whole = title.contains("lbscope replay 6.12-2s-smt-numa-mixed.lbs | t ");
        assert_eq!(whole, w >= 132, "{title}");
        if !whole {
            assert!(
                title.starts_with("lbscope replay 6.12-") && title.contains("… | t "),
                "{title}"
            );
        }
    }
}

/// An interval with more findings than it lists (`--max-findings 1` over the demo recording)
/// says how many it had and that it lists the first: in the Overview, the Findings view and
/// the history's findings series alike.
#[test]
fn findings_beyond_the_list_are_counted_not_hidden() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/demo.lbs");
    let model = crate::cli::ModelArgs {
        max_findings: 1,
        ..Default::default()
    };
    let (h, snaps, _) =
        crate::cmd::diff::analyze_file(&path, 1_000_000_000, &FilterArgs::default(), &model)
            .unwrap();
    let (i, all) = snaps
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s.findings_by_kind.values().sum::<u64>()))
        .find(|&(i, n)| n > snaps[i].findings.len() as u64)
        .expect("an interval of the demo has more than one finding");
    assert_eq!(
        snaps[i].findings.len(),
        1,
        "the list is capped at --max-findings"
    );
    assert_eq!(state::findings_counted(&snaps[i]), (all, 1));
    let mut app = App::new(
        h.topology.clone(),
        1_000_000_000,
        SourceInfo::Replay(recording_info("demo.lbs", &h)),
        h.clock_base_ns,
    );
    app.replace_history(snaps.clone(), None);
    app.set_cursor(Some(i));
    for view in [View::Overview, View::Findings] {
        app.view = view;
        for (w, ht) in SIZES {
            let scr = render(&app, w, ht);
            let want = match view {
                View::Overview => format!("findings {all}, the first 1 listed"),
                _ => format!("findings of the balancer model: {all}, the first 1 listed"),
            };
            has(&scr, &want);
        }
    }
    assert_eq!(super::history::findings_count(&snaps[i]), all);
}
