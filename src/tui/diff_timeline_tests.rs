//! Snapshot tests of `diff --tui`'s timeline on ratatui's test backend at 80x24 and 132x40,
//! over two lab recordings: each side's cells against that recording's own per-CPU table,
//! both sides at the same time from their starts, and the view's keys.

use super::app::{App, View};
use super::diff_timeline::DiffTimelines;
use super::keymap::Action;
use super::timeline::ZOOMS_NS;
use crate::analyze::Snapshot;
use crate::cli::{FilterArgs, ModelArgs};
use crate::diff::{RunMeta, RunSummary};
use std::path::PathBuf;

const SIZES: [(u16, u16); 2] = [(80, 24), (132, 40)];
const A: &str = "tests/fixtures/lab/6.1-4node-group-imbalance.lbs";
const B: &str = "tests/fixtures/lab/6.1-4node-overload.lbs";

/// The screen's lines (the TUI tests' renderer, without colours).
fn render(app: &App, w: u16, h: u16) -> Vec<String> {
    super::tests::render(app, w, h)
        .lines()
        .map(String::from)
        .collect()
}

/// The diff app over recordings `a` and `b` as `diff --tui` builds it, and each one's
/// snapshots.
fn diff_app(a: &str, b: &str) -> (App, [Vec<Snapshot>; 2]) {
    let (f, m) = (FilterArgs::default(), ModelArgs::default());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let load = |rel: &str| {
        let p = root.join(rel);
        let (h, snaps, _) = crate::cmd::diff::analyze_file(&p, 1_000_000_000, &f, &m).unwrap();
        (p, h, snaps)
    };
    let ((pa, ha, sa), (pb, _, sb)) = (load(a), load(b));
    let sum = |s: &[Snapshot], l: &str| RunSummary::from_snapshots(s, l, RunMeta::default());
    let d = crate::diff::diff(&sum(&sa, a), &sum(&sb, b));
    let mut app = App::for_diff(d, ha.topology.clone());
    let side = |name: &str, p: &PathBuf, s: &[Snapshot]| {
        crate::cmd::diff::side_timeline(name, p, s, 1_000_000_000, (&f, &m)).unwrap()
    };
    app.diff_timelines = Some(Box::new(DiffTimelines {
        sides: [side("baseline", &pa, &sa), side("new", &pb, &sb)],
        offset_ns: None,
    }));
    (app, [sa, sb])
}

/// The screen's lines of side `i` (0 baseline, 1 new): from its title to the next title.
fn side_of(scr: &[String], i: usize) -> Vec<String> {
    let at = |p: &str| scr.iter().position(|l| l.starts_with(p)).unwrap();
    let (a, b) = (at("baseline: "), at("new: "));
    if i == 0 {
        scr[a..b].to_vec()
    } else {
        scr[b..].to_vec()
    }
}

#[test]
fn tab_opens_the_timeline_and_each_side_s_cells_agree_with_its_cpu_table() {
    let (mut app, snaps) = diff_app(A, B);
    assert_eq!(app.view, View::Diff);
    app.handle(Action::NextView);
    assert_eq!(app.view, View::Timeline);
    app.tl.zoom = 0;
    let cell = ZOOMS_NS[0];
    let mut checked = [0; 2];
    for (i, side_snaps) in snaps.iter().enumerate() {
        let start = side_snaps[0].t_start_ns;
        for s in side_snaps.iter().filter(|s| !s.partial) {
            // The cursor's cell ends at this interval's end on this side.
            app.diff_timelines.as_mut().unwrap().offset_ns = Some(s.t_end_ns - 1 - start);
            for (w, h) in SIZES {
                let scr = render(&app, w, h);
                assert!(scr[1].contains("Timeline"), "{}", scr[1]);
                let lines = side_of(&scr, i);
                let tl = &app.diff_timelines.as_ref().unwrap().sides[i].timeline;
                for c in &s.cpus {
                    let (a, b) = (s.t_end_ns - cell, s.t_end_ns - 1);
                    if tl.state_at(c.cpu, a) != tl.state_at(c.cpu, b) || c.idle.is_none() {
                        continue;
                    }
                    let Some(line) = lines
                        .iter()
                        .find(|l| l.starts_with(&format!("cpu {} ", c.cpu)))
                    else {
                        continue; // scrolled out on a small screen
                    };
                    let g = line.trim_end().chars().last().unwrap();
                    let want = match (c.idle, c.waiting) {
                        (_, n) if n > 0 => char::from_digit(n.min(9), 10).unwrap(),
                        (Some(true), _) => '·',
                        _ => '█',
                    };
                    if matches!(g, '·' | '█' | '0'..='9') {
                        assert_eq!(g, want, "side {i} cpu {} at {}", c.cpu, s.t_end_ns);
                        checked[i] += 1;
                    }
                }
            }
        }
    }
    assert!(
        checked.iter().all(|&n| n >= 30),
        "cells checked: {checked:?}"
    );
    eprintln!("end-of-interval cells checked per side: {checked:?}");
}

#[test]
fn the_same_run_on_both_sides_draws_the_same_grid_and_keys_move_both() {
    let (mut app, _) = diff_app(A, A);
    app.handle(Action::NextView);
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let (a, b) = (side_of(&scr, 0), side_of(&scr, 1));
        let grid = |v: &[String]| -> Vec<String> {
            v.iter()
                .filter(|l| l.starts_with("cpu "))
                .cloned()
                .collect()
        };
        // The lower half has the footer and legend below it: compare the rows both show.
        let (ga, gb) = (grid(&a), grid(&b));
        let n = ga.len().min(gb.len());
        assert!(n >= 4, "{n} rows");
        assert_eq!(ga[..n], gb[..n]);
    }
    // `l` moves the cursor one cell on: every row's cells shift one column left.
    let before = render(&app, 132, 40);
    app.handle(Action::Right);
    let after = render(&app, 132, 40);
    let row = |scr: &[String]| {
        side_of(scr, 0)
            .into_iter()
            .find(|l| l.starts_with("cpu 4 "))
    };
    let (rb, ra) = (row(&before).unwrap(), row(&after).unwrap());
    let (cb, ca): (Vec<char>, Vec<char>) = (rb.chars().collect(), ra.chars().collect());
    let w = "cpu 10 ".len();
    assert_eq!(cb[w + 1..], ca[w..ca.len() - 1], "\n{rb}\n{ra}");
    // Zoom keeps the cursor's time; G goes to the longer run's end.
    let d = app.diff_timelines.as_ref().unwrap();
    let at = d.offset(app.tl.cell_ns());
    app.handle(Action::ZoomOut);
    let d = app.diff_timelines.as_ref().unwrap();
    assert_eq!(d.offset(app.tl.cell_ns()), at);
    app.handle(Action::Newest);
    let d = app.diff_timelines.as_ref().unwrap();
    assert_eq!(d.offset(app.tl.cell_ns()), d.span_ns() - 1);
    // Tab goes back to the table.
    app.handle(Action::NextView);
    assert_eq!(app.view, View::Diff);
}

#[test]
fn a_shorter_run_says_the_cursor_is_past_its_end() {
    let (mut app, snaps) = diff_app(A, B);
    app.handle(Action::NextView);
    app.handle(Action::Newest);
    let len = |s: &[Snapshot]| s.last().unwrap().t_end_ns - s[0].t_start_ns;
    let (la, lb) = (len(&snaps[0]), len(&snaps[1]));
    assert_ne!(la, lb);
    let scr = render(&app, 132, 40);
    let short = usize::from(lb < la);
    assert!(
        side_of(&scr, short)[0].contains("past this run's end"),
        "{}",
        scr.join("\n")
    );
    assert!(!side_of(&scr, 1 - short)[0].contains("past this run's end"));
}

#[test]
fn two_hundred_fifty_six_cpus_fold_by_llc_on_both_sides() {
    use super::timeline_tests::{app_of, big, story, story_cpu0, MS, T0};
    // The timeline tests' story (CPU 0: 2 waiting from 3 to 5 ms, CPU 200 pulls at 7 ms)
    // on a 256-CPU topology, the same run on both sides.
    let single = app_of(big(), &story(200));
    let snaps: Vec<Snapshot> = (0..single.history.len())
        .map(|i| single.history.unpack(i).unwrap())
        .collect();
    let sum = |l: &str| RunSummary::from_snapshots(&snaps, l, RunMeta::default());
    let mut app = App::for_diff(crate::diff::diff(&sum("a"), &sum("b")), big());
    let start_ns = snaps[0].t_start_ns;
    let side = |label: &str| super::diff_timeline::DiffSide {
        label: label.into(),
        timeline: single.timeline.clone().unwrap(),
        topo: big(),
        start_ns,
        end_ns: snaps.last().unwrap().t_end_ns,
    };
    app.diff_timelines = Some(Box::new(DiffTimelines {
        sides: [side("baseline: a"), side("new: b")],
        offset_ns: Some(T0 + 4 * MS + MS / 2 - start_ns),
    }));
    app.handle(Action::NextView);
    app.tl.zoom = ZOOMS_NS.iter().position(|&z| z == MS).unwrap();
    // The cursor's cell and the two before it, in ms from the story's T0.
    let end = start_ns + (T0 + 4 * MS + MS / 2 - start_ns + 1).div_ceil(MS) * MS;
    let ms = |t: u64| (t as f64 - T0 as f64) / MS as f64;
    let want: Vec<char> = (0..3)
        .rev()
        .map(|k| story_cpu0(ms(end - (k + 1) * MS), ms(end - k * MS)))
        .collect();
    assert_eq!(want, ['1', '2', '2']);
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        assert!(scr.iter().all(|l| l.chars().count() <= w as usize));
        for i in 0..2 {
            let lines = side_of(&scr, i);
            assert!(lines[0].contains("of 16"), "{}", scr.join("\n"));
            let row = lines
                .iter()
                .find(|l| l.starts_with("+llc 0-15 "))
                .unwrap_or_else(|| panic!("side {i}:\n{}", scr.join("\n")));
            let cells: Vec<char> = row.trim_end().chars().collect();
            assert_eq!(cells[cells.len() - 3..], want[..], "side {i}: {row}");
        }
    }
}
