//! The kept intervals: every past interval reads back whole, only two are held whole, the
//! charts draw the same from the figures as from the whole snapshots, and what a live screen
//! retains stops growing once its history is full, however many intervals follow.

use super::app::{App, SourceInfo, View};
use super::history::{self, Series};
use super::keymap::Action;
use super::store::History;
use super::tests::replay_app;
use crate::analyze::Snapshot;
use crate::topology::Topology;

const RECORDINGS: &[&str] = &[
    "examples/demo.lbs",
    "tests/fixtures/recordings/golden-v1.lbs",
    "tests/fixtures/lab/6.1-4node-wakeup-storm.lbs",
    "tests/fixtures/lab/6.1-4node-group-imbalance.lbs",
    "tests/fixtures/lab/6.12-2s-smt-numa-mixed.lbs",
    "tests/fixtures/lab/6.12-4node-active.lbs",
];

fn snaps_of(rel: &str) -> (Topology, Vec<Snapshot>) {
    let (app, snaps) = replay_app(rel, View::Overview);
    (app.topo, snaps)
}

#[test]
fn every_past_interval_reads_back_whole() {
    for rel in RECORDINGS {
        let (_, snaps) = snaps_of(rel);
        let mut h = History::from(snaps.clone());
        assert_eq!(h.len(), snaps.len());
        assert_eq!(h.held_whole(), 1, "{rel}: the newest alone");
        assert_eq!(h.newest(), snaps.last());
        for (i, s) in snaps.iter().enumerate() {
            assert_eq!(h.unpack(i).as_ref(), Some(s), "{rel}: interval {i}");
            assert_eq!(h.get(i), Some(&history::chart_figures(s)));
            assert!(h.open(i));
            assert_eq!(h.whole(i), Some(s), "{rel}: interval {i} opened");
            assert!(h.held_whole() <= 2);
            if i + 2 < snaps.len() {
                assert_eq!(h.whole(i + 1), None, "only the one opened is whole");
            }
        }
    }
}

#[test]
fn the_charts_draw_the_same_from_the_figures() {
    for rel in RECORDINGS {
        let (topo, snaps) = snaps_of(rel);
        let whole: Vec<&Snapshot> = snaps.iter().collect();
        let figures: Vec<Snapshot> = snaps.iter().map(history::chart_figures).collect();
        let figures: Vec<&Snapshot> = figures.iter().collect();
        for series in Series::ALL {
            assert_eq!(
                history::chart(series, &topo, &figures),
                history::chart(series, &topo, &whole),
                "{rel}: {series:?}"
            );
        }
        for level in &topo.levels {
            for d in &level.domains {
                assert_eq!(
                    history::domain_chart(&level.key, &d.span, &figures),
                    history::domain_chart(&level.key, &d.span, &whole),
                    "{rel}: {} {}",
                    level.key,
                    d.span
                );
            }
        }
    }
}

/// A live screen at 1 s intervals over `topo`.
fn live_app(topo: Topology) -> App {
    App::new(
        topo,
        1_000_000_000,
        SourceInfo::Live {
            probe_mode: "test".into(),
            folded: false,
        },
        0,
    )
}

/// `s` moved to start `shift` ns later.
fn shifted(s: &Snapshot, shift: u64) -> Snapshot {
    let mut s = s.clone();
    s.t_start_ns += shift;
    s.t_end_ns += shift;
    s
}

#[test]
fn a_full_live_history_retains_the_same_however_long_the_run() {
    // The lab's wakeup storm (16 CPUs, 4 nodes, findings with their evidence in every
    // interval), its intervals fed again and again as a live screen receives them.
    let (topo, snaps) = snaps_of("tests/fixtures/lab/6.1-4node-wakeup-storm.lbs");
    let mut app = live_app(topo);
    let span = snaps.last().unwrap().t_end_ns - snaps[0].t_start_ns;
    let mut n = 0;
    let mut feed = |app: &mut App, count: usize| {
        for _ in 0..count {
            let round = (n / snaps.len()) as u64;
            app.push(shifted(&snaps[n % snaps.len()], round * span));
            n += 1;
        }
    };
    // One whole cycle of the recording per measurement, so that each measures the same
    // intervals: the history full, then after three and ten times as many intervals.
    let cycles = super::app::HISTORY.div_ceil(snaps.len());
    feed(&mut app, cycles * snaps.len());
    let full = app.history.retained_bytes();
    feed(&mut app, 2 * cycles * snaps.len());
    let later = app.history.retained_bytes();
    feed(&mut app, 7 * cycles * snaps.len());
    let much_later = app.history.retained_bytes();
    assert_eq!(app.history.len(), super::app::HISTORY);
    assert_eq!(app.history.held_whole(), 1);
    // The same intervals but for their times, whose digits pack a few bytes apart.
    for n in [later, much_later] {
        assert!(
            n.abs_diff(full) <= full / 1000,
            "bounded by the window: {n} B, {full} B full"
        );
    }
    // About 9 KiB an interval of this 16-CPU machine (a packed snapshot of 4 KiB, chart
    // figures of 4 KiB: five domains), less than half the snapshots' JSON text, itself far
    // smaller than their heap.
    assert!(full <= super::app::HISTORY * 12 * 1024, "{full} B");
    let json: usize = snaps
        .iter()
        .map(|s| serde_json::to_vec(s).unwrap().len())
        .sum::<usize>()
        * super::app::HISTORY
        / snaps.len();
    assert!(
        full * 2 < json,
        "retained {full} B, the snapshots' JSON {json} B"
    );
}

#[test]
fn a_paused_screen_keeps_its_interval_whole_as_the_history_moves_on() {
    let (topo, snaps) = snaps_of("tests/fixtures/lab/6.1-4node-wakeup-storm.lbs");
    let mut app = live_app(topo);
    let span = snaps.last().unwrap().t_end_ns - snaps[0].t_start_ns;
    let nth = |n: usize| shifted(&snaps[n % snaps.len()], (n / snaps.len()) as u64 * span);
    for n in 0..super::app::HISTORY {
        app.push(nth(n));
    }
    // Back to the oldest but one, paused: the screen holds it as the history drops older ones.
    app.handle(Action::Pause);
    for _ in 0..super::app::HISTORY - 2 {
        app.handle(Action::Left);
    }
    assert_eq!(app.position(), Some(1));
    assert_eq!(app.current(), Some(&nth(1)));
    app.push(nth(super::app::HISTORY));
    assert_eq!(app.position(), Some(0));
    assert_eq!(app.current(), Some(&nth(1)), "the same interval, whole");
    // Its interval dropped too: the screen shows the oldest kept, whole.
    app.push(nth(super::app::HISTORY + 1));
    assert_eq!(app.current(), Some(&nth(2)));
    assert!(app.history.held_whole() <= 2);
    app.handle(Action::Right);
    assert_eq!(app.current(), Some(&nth(3)), "seeking unpacks the next");
    assert!(app.status.as_deref() != Some("this interval's tables could not be read back"));
}

#[test]
fn packing_reuses_its_buffers() {
    for rel in RECORDINGS {
        let (_, snaps) = snaps_of(rel);
        let mut h = History::new();
        for s in &snaps {
            h.push(s.clone());
        }
        let most = snaps
            .iter()
            .map(|s| serde_json::to_vec(s).unwrap().len())
            .max()
            .unwrap();
        let first = h.packing_bytes();
        assert!(first >= most, "{rel}: {first} bytes for JSON of {most}");
        for s in &snaps {
            h.push(s.clone());
        }
        assert_eq!(
            h.packing_bytes(),
            first,
            "{rel}: a second pass grew nothing"
        );
        for i in 0..h.len() - 1 {
            assert_eq!(
                h.unpack(i).as_ref(),
                Some(&snaps[i % snaps.len()]),
                "{rel}: {i}"
            );
        }
    }
}
