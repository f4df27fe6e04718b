//! Snapshot tests of the timeline view and the finding explained on ratatui's test
//! backend, at 80x24, 132x40 and on a 256-CPU synthetic topology: cells are checked against
//! events whose states are known, and against a lab recording's own figures (the per-CPU
//! table of each interval, the model's idle stretch).

use super::app::{App, SourceInfo, View};
use super::keymap::Action;
use super::term::Palette;
use super::timeline::{rows, ZOOMS_NS};
use super::{recording_info, views};
use crate::analyze::tests::{analyzer, clock, migrate, switch, wakeup, LONG};
use crate::analyze::timeline::{CellKind, Timeline, WINDOW_NS};
use crate::analyze::Snapshot;
use crate::cli::{FilterArgs, ModelArgs};
use crate::event::{Event, Reason};
use crate::topology::{LevelKind, Topology};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::path::PathBuf;

const SIZES: [(u16, u16); 2] = [(80, 24), (132, 40)];
pub(super) const MS: u64 = 1_000_000;
/// Event times start here, so that every window has room before it.
pub(super) const T0: u64 = 1_000_000_000;

fn render(app: &App, w: u16, h: u16) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| views::draw(f, app, Palette { color: false }))
        .unwrap();
    let buf = t.backend().buffer().clone();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect()
}

/// The cells of the row labelled `label` (the text after the label column).
fn row_cells(screen: &[String], label: &str) -> Vec<char> {
    let line = screen
        .iter()
        .find(|l| l.starts_with(&format!("{label} ")))
        .unwrap_or_else(|| panic!("no row '{label}' on screen:\n{}", screen.join("\n")));
    let width = rows_label_width(screen);
    line.chars().skip(width).collect()
}

/// The label column's width: the grid starts after the longest label and a space.
fn rows_label_width(screen: &[String]) -> usize {
    screen
        .iter()
        .find(|l| l.starts_with("t (s)"))
        .map(|l| {
            let rest = &l["t (s)".len()..];
            "t (s)".len() + rest.chars().take_while(|c| *c == ' ').count()
        })
        .expect("the axis line")
}

/// An app over events built in code, its timeline and snapshots from the real analyzer.
pub(super) fn app_of(topo: Topology, events: &[Event]) -> App {
    let mut a = analyzer(topo.clone(), LONG);
    let mut tl = Timeline::new(topo.nr_cpus, WINDOW_NS);
    let mut snaps = Vec::new();
    for e in events {
        a.push(e, &mut snaps);
        tl.observe(e, &a);
    }
    snaps.extend(a.finish());
    let mut app = App::new(topo, LONG, SourceInfo::Replay(Default::default()), 0);
    app.replace_history(snaps, None);
    app.timeline = Some(tl);
    app.view = View::Timeline;
    app
}

/// CPU 0 runs 10 from 1 ms; 11 wakes onto it at 2 ms, 12 at 3 ms (2 waiting); 10 is
/// preempted by 11 at 5 ms (still 2: 10 and 12); 11 sleeps at 6 ms (1: 12); the periodic
/// balancer pulls 12 to CPU 1 at 7 ms; 10 sleeps at 9 ms. CPU 1 idles until 12 runs at
/// 7.5 ms.
pub(super) fn story(cpu1: u32) -> Vec<Event> {
    let t = |ms: f64| T0 + (ms * MS as f64) as u64;
    vec![
        switch(t(1.0), 0, 0, 0, 10),
        switch(t(1.0), cpu1, 0, 0, 20),
        switch(t(1.2), cpu1, 20, 1, 0),
        wakeup(t(2.0), 11, 0),
        wakeup(t(3.0), 12, 0),
        switch(t(5.0), 0, 10, 0, 11),
        switch(t(6.0), 0, 11, 1, 10),
        migrate(t(7.0), 12, 0, cpu1, Reason::PeriodicBalance),
        switch(t(7.5), cpu1, 0, 0, 12),
        switch(t(9.0), 0, 10, 1, 0),
        clock(t(20.0)),
    ]
}

/// What the story says CPU 0 held in `[a, b)` ms: the most waiting, else running or idle.
pub(super) fn story_cpu0(a: f64, b: f64) -> char {
    let pieces = [
        (1.0, 2.0, '█'),
        (2.0, 3.0, '1'),
        (3.0, 6.0, '2'),
        (6.0, 7.0, '1'),
        (7.0, 9.0, '█'),
        (9.0, 20.0, '·'),
    ];
    let over: Vec<char> = pieces
        .iter()
        .filter(|p| p.0 < b && p.1 > a)
        .map(|p| p.2)
        .collect();
    if let Some(d) = over.iter().filter(|c| c.is_ascii_digit()).max() {
        return *d;
    }
    match (over.contains(&'█'), over.contains(&'·')) {
        (true, true) => '▄',
        (true, false) => '█',
        (false, true) => '·',
        _ => ' ',
    }
}

#[test]
fn a_cell_says_running_with_2_waiting_exactly_where_the_events_say_so() {
    let mut app = app_of(Topology::synthetic_flat(2), &story(1));
    // 100 us per cell, cursor at 12 ms: the story fits.
    app.tl.zoom = ZOOMS_NS.iter().position(|&z| z == 100_000).unwrap();
    app.tl.at_ns = Some(T0 + 12 * MS);
    let cell = 100_000u64;
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let label_w = rows_label_width(&scr);
        let cols = w as usize - label_w;
        let end = T0 + 12 * MS + cell;
        let start = end - cols as u64 * cell;
        let cpu0 = row_cells(&scr, "cpu 0");
        let cpu1 = row_cells(&scr, "cpu 1");
        let mut twos = 0;
        for (i, &g) in cpu0.iter().enumerate() {
            let a = start + i as u64 * cell;
            let (am, bm) = (
                (a as f64 - T0 as f64) / MS as f64,
                (a as f64 + cell as f64 - T0 as f64) / MS as f64,
            );
            if a <= T0 + 7 * MS && T0 + 7 * MS < a + cell {
                // The pull is marked on both rows with its reason's letter.
                assert_eq!(g, 'p', "cpu 0 at {am} ms");
                assert_eq!(cpu1[i], 'P', "cpu 1 at {am} ms");
                continue;
            }
            assert_eq!(g, story_cpu0(am, bm), "cpu 0 at {am}-{bm} ms");
            twos += usize::from(g == '2');
        }
        // 3 ms to 6 ms at 100 us a cell, as far as the screen reaches back.
        let shown_from = (start.max(T0 + 3 * MS) - T0) / cell;
        assert_eq!(twos as u64, 60 - shown_from.min(60), "{}", scr.join("\n"));
        let all = scr.join("\n");
        assert!(all.contains("cursor t="), "{all}");
        assert!(all.contains("cell 100 us"), "{all}");
    }
    // The cursor line reads the selected row's last cell in words.
    app.tl.at_ns = Some(T0 + 4 * MS);
    let scr = render(&app, 132, 40).join("\n");
    assert!(scr.contains("cpu 0: 2 waiting at most"), "{scr}");
}

#[test]
fn zoom_scroll_and_seek_keys() {
    let mut app = app_of(Topology::synthetic_flat(2), &story(1));
    let z = app.tl.zoom;
    app.handle(Action::ZoomIn);
    assert_eq!(app.tl.zoom, z - 1);
    app.handle(Action::ZoomOut);
    app.handle(Action::ZoomOut);
    assert_eq!(app.tl.zoom, z + 1);
    app.tl.zoom = ZOOMS_NS.iter().position(|&z| z == 1_000_000).unwrap();
    let cell = app.tl.cell_ns();
    app.handle(Action::Newest);
    let t0 = super::timeline::focus_ns(&app).unwrap();
    app.handle(Action::Left);
    assert!(app.paused, "moving the cursor holds the screen");
    assert_eq!(app.tl.at_ns, Some(t0 - cell));
    app.handle(Action::PageForward);
    assert_eq!(app.tl.at_ns, Some(t0), "clamped to the newest time");
    app.tl.zoom = 0;
    app.handle(Action::Oldest);
    // The oldest time kept (the first switch, 1 ms) 40 cells of 10 us before the cursor.
    assert_eq!(app.tl.at_ns, Some(T0 + MS + 400_000));
    // Pause again resumes following.
    app.handle(Action::Pause);
    assert_eq!(app.tl.at_ns, None);
    app.handle(Action::Fold);
    assert_eq!(rows(&app.topo, &app.tl).len(), 2, "cpu rows");
}

/// 256 CPUs: SMT pairs, LLCs of 16, two packages (NUMA nodes) of 128.
pub(super) fn big() -> Topology {
    Topology::synthetic(
        &[
            (LevelKind::Smt, "SMT", 2),
            (LevelKind::Llc, "MC", 16),
            (LevelKind::Package, "PKG", 128),
            (LevelKind::Numa, "NUMA", 256),
        ],
        256,
    )
}

#[test]
fn two_hundred_fifty_six_cpus_fold_by_llc_and_expand() {
    // CPU 0's story played on CPU 37 instead (with CPU 200 as the puller).
    let evs: Vec<Event> = story(200)
        .into_iter()
        .map(|mut e| {
            if e.cpu == 0 {
                e.cpu = 37;
            }
            match &mut e.kind {
                crate::event::EventKind::Wakeup { target_cpu, .. } => *target_cpu = 37,
                crate::event::EventKind::Migrate(mi) => mi.src_cpu = 37,
                _ => {}
            }
            e
        })
        .collect();
    let mut app = app_of(big(), &evs);
    app.tl.zoom = ZOOMS_NS.iter().position(|&z| z == 1_000_000).unwrap();
    app.tl.at_ns = Some(T0 + 4 * MS + MS / 2);
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let all = scr.join("\n");
        assert!(all.contains("per llc (auto), enter expands"), "{all}");
        // 16 LLC rows; 80x24 shows as many as fit and says so.
        let shown = scr.iter().filter(|l| l.starts_with("+llc ")).count();
        assert!(shown >= 12, "{all}");
        assert!(all.contains(&format!("of {}", 16)), "{all}");
        let llc = row_cells(&scr, "+llc 32-47");
        // The last cell is [4 ms, 5 ms): CPU 37 had 2 waiting; the cell before [3, 4).
        assert_eq!(llc[llc.len() - 1], '2', "{all}");
        assert_eq!(llc[llc.len() - 2], '2', "{all}");
        assert_eq!(llc[llc.len() - 3], '1', "{all}");
        // An LLC with nothing known stays blank.
        assert!(row_cells(&scr, "+llc 64-79").iter().all(|c| *c == ' '));
    }
    // Expand the third LLC: its CPUs get rows, CPU 37 with its own figures.
    app.handle(Action::Down);
    app.handle(Action::Down);
    app.handle(Action::Enter);
    let r = rows(&app.topo, &app.tl);
    assert_eq!(r.len(), 16 + 16);
    let scr = render(&app, 132, 40);
    let cpu = row_cells(&scr, "-llc 32-47");
    assert_eq!(cpu[cpu.len() - 1], '2');
    let line = scr
        .iter()
        .find(|l| l.starts_with(" cpu 37 "))
        .expect("cpu 37 row");
    assert!(line.ends_with("122"), "{line}");
    assert!(scr
        .iter()
        .find(|l| l.starts_with(" cpu 36 "))
        .unwrap()
        .trim_end()
        .ends_with("cpu 36"));
    // Enter on a CPU of the group folds it again.
    app.handle(Action::Down);
    app.handle(Action::Enter);
    assert_eq!(rows(&app.topo, &app.tl).len(), 16);
    // Fold by node: two rows.
    app.handle(Action::Fold);
    app.handle(Action::Fold);
    app.handle(Action::Fold);
    let scr = render(&app, 80, 24).join("\n");
    assert!(
        scr.contains("+node 0-127") && scr.contains("+node 128-255"),
        "{scr}"
    );
}

/// The replay app over a lab recording with its whole timeline.
fn lab(rel: &str) -> (App, Vec<Snapshot>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    let open = || crate::pipeline::Source::file(&path).unwrap();
    let (f, m) = (FilterArgs::default(), ModelArgs::default());
    let (h, snaps, _) =
        crate::cmd::replay::analyze_recording(open(), 1_000_000_000, &f, &m).unwrap();
    let tl =
        crate::cmd::replay::timeline_of(open(), 1_000_000_000, (&f, &m), (0, u64::MAX)).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut app = App::new(
        h.topology.clone(),
        1_000_000_000,
        SourceInfo::Replay(recording_info(&name, &h)),
        h.clock_base_ns,
    );
    app.replace_history(snaps.clone(), None);
    app.timeline = Some(tl);
    (app, snaps)
}

const LAB: &str = "tests/fixtures/lab/6.1-4node-group-imbalance.lbs";

#[test]
fn a_lab_recording_s_cells_agree_with_each_interval_s_cpu_table() {
    let (mut app, snaps) = lab(LAB);
    app.view = View::Timeline;
    app.tl.zoom = 0;
    let cell = ZOOMS_NS[0];
    let (mut checked, mut waiting) = (0, 0);
    for s in snaps.iter().filter(|s| !s.partial) {
        // The last column ends at the interval's end.
        app.tl.at_ns = Some(s.t_end_ns - 1);
        for (w, h) in SIZES {
            let scr = render(&app, w, h);
            let tl = app.timeline.as_ref().unwrap();
            for c in &s.cpus {
                // Only cells in which nothing changed hold one state to compare.
                let before = tl.state_at(c.cpu, s.t_end_ns - cell);
                if before != tl.state_at(c.cpu, s.t_end_ns - 1) || c.idle.is_none() {
                    continue;
                }
                let Some(line) = scr
                    .iter()
                    .find(|l| l.starts_with(&format!("cpu {} ", c.cpu)))
                else {
                    continue; // scrolled out at 80x24
                };
                let g = line.chars().last().unwrap();
                let want = match (c.idle, c.waiting) {
                    (_, n) if n > 0 => char::from_digit(n.min(9), 10).unwrap(),
                    (Some(true), _) => '·',
                    _ => '█',
                };
                if matches!(g, '·' | '█' | '0'..='9') {
                    assert_eq!(g, want, "cpu {} at the end of {}", c.cpu, s.t_end_ns);
                    checked += 1;
                    waiting += usize::from(c.waiting > 0);
                }
            }
        }
    }
    assert!(checked >= 60, "{checked} cells checked");
    eprintln!("{checked} end-of-interval cells checked, {waiting} with tasks waiting");
}

/// Opens (Enter) the first finding `pick` accepts, from its interval's Findings list: the
/// finding and its row's span.
fn open_first(
    app: &mut App,
    snaps: &[Snapshot],
    pick: impl Fn(&crate::model::Finding) -> bool,
) -> (crate::model::Finding, (u64, u64)) {
    let (i, f) = snaps
        .iter()
        .enumerate()
        .find_map(|(i, s)| s.findings.iter().find(|f| pick(f)).map(|f| (i, f.clone())))
        .expect("the recording has such a finding");
    app.set_cursor(Some(i));
    app.view = View::Findings;
    let rows = views::finding_rows(app).1;
    let sel = rows
        .iter()
        .position(|r| r.kind == f.kind.name() && r.span_ns.1 == f.t_ns)
        .unwrap();
    let span = rows[sel].span_ns;
    for _ in 0..sel {
        app.handle(Action::Down);
    }
    app.handle(Action::Enter);
    (f, span)
}

#[test]
fn enter_on_a_missed_pull_shows_its_idle_stretch_and_esc_goes_back() {
    let (mut app, snaps) = lab(LAB);
    let (f, _) = open_first(&mut app, &snaps, |f| f.kind.name() == "missed_pull");
    assert_eq!(app.view, View::Explain);
    let since = f.evidence["since_ns"].as_u64().unwrap();
    let idle: Vec<usize> =
        crate::cpuset::CpuSet::parse_list(f.evidence["idle_cpus"].as_str().unwrap())
            .unwrap()
            .iter()
            .collect();
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let all = scr.join("\n");
        assert!(all.contains("rule: an idle CPU pulls"), "{all}");
        assert!(all.contains("= below: the idle stretch"), "{all}");
        // The grid: the idle CPU's row shows idle cells.
        let line = scr
            .iter()
            .find(|l| l.starts_with(&format!("cpu {} ", idle[0])))
            .expect("the idle CPU's row");
        let cells: String = line
            .chars()
            .filter(|c| "·█▄123456789+".contains(*c))
            .collect();
        assert!(cells.contains('·'), "{line}");
    }
    // The evidence pane: the idle stretch the timeline holds covers the model's.
    let e = app.tl.explain.clone().unwrap();
    let base = app.history[0].t_start_ns;
    let text = views_lines(&app, &e, base);
    let idle_line = text
        .iter()
        .find(|l| l.starts_with(&format!("  cpu {}: at the finding idle", idle[0])))
        .unwrap_or_else(|| panic!("{text:#?}"));
    assert!(idle_line.contains("over the span idle"), "{idle_line}");
    let tl = app.timeline.as_ref().unwrap();
    let stretch = tl
        .idle_stretches(idle[0] as u32, since - 1, f.t_ns)
        .into_iter()
        .find(|(a, b)| *a <= since && *b >= f.t_ns)
        .expect("the timeline's idle stretch covers the model's");
    assert!(stretch.1 - stretch.0 >= f.t_ns - since);
    for c in &f.cpus {
        let k = CellKind::of(&tl.cell(*c, since, f.t_ns));
        if idle.contains(&(*c as usize)) {
            assert_eq!(k, CellKind::Idle, "cpu {c}");
        } else {
            assert!(matches!(k, CellKind::Waiting(_)), "waiting cpu {c}: {k:?}");
        }
    }
    assert!(text.iter().any(|l| l.starts_with("tasks it names:")));
    assert!(text
        .iter()
        .any(|l| l.starts_with("the balancer's decisions")));
    // The pane scrolls; Esc goes back to the list.
    app.handle(Action::Down);
    assert_eq!(app.tl.explain.as_ref().unwrap().scroll, 1);
    app.handle(Action::Back);
    assert_eq!(app.view, View::Findings);
    assert!(app.tl.explain.is_none());
}

/// One story per finding: over the demo recording (a TCG guest whose vCPUs deliver up to 0.9 s
/// late), every busy wakeup's target CPU runs a task on the timeline at the finding's time and
/// the CPUs it names idle are idle there; every missed pull's idle CPUs are idle, with nothing
/// queued, when it comes due. Replayed as delivered, the first busy wakeup's CPU 2 was drawn idle.
#[test]
fn every_demo_finding_s_cpus_are_drawn_as_its_sentence_says() {
    let (app, snaps) = lab("examples/demo.lbs");
    let tl = app.timeline.as_ref().unwrap();
    let (mut busy, mut pulls) = (0, 0);
    for f in snaps.iter().flat_map(|s| &s.findings) {
        match f.kind.name() {
            "busy_wakeup" => {
                let target = f.evidence["target_cpu"].as_u64().unwrap() as u32;
                let st = tl.state_at(target, f.t_ns);
                assert!(
                    st.is_some_and(|s| s.running),
                    "{}: target cpu {target} at {}: {st:?}",
                    f.text,
                    f.t_ns
                );
                for c in f.evidence["idle_cpus"].as_array().unwrap() {
                    let c = c.as_u64().unwrap() as u32;
                    let st = tl.state_at(c, f.t_ns);
                    assert!(
                        st.is_some_and(|s| !s.running),
                        "{}: idle cpu {c} at {}: {st:?}",
                        f.text,
                        f.t_ns
                    );
                }
                busy += 1;
            }
            "missed_pull" => {
                // The CPUs idle when the stretch came due (others may have been idle before).
                let idle = f.evidence["idle_cpus"].as_str().unwrap();
                for c in crate::cpuset::CpuSet::parse_list(idle).unwrap().iter() {
                    let st = tl.state_at(c as u32, f.t_ns);
                    assert!(
                        st.is_some_and(|s| !s.running && s.waiting == 0),
                        "{}: idle cpu {c} at {}: {st:?}",
                        f.text,
                        f.t_ns
                    );
                }
                pulls += 1;
            }
            _ => {}
        }
    }
    assert!(
        busy >= 100 && pulls >= 50,
        "{busy} busy wakeups, {pulls} missed pulls"
    );
    eprintln!("{busy} busy wakeups and {pulls} missed pulls drawn as they say");
}

/// An uneven spread opens on the time it held (`held_ms` before it), not on a 0 ms span.
#[test]
fn an_uneven_spread_opens_on_the_time_it_held() {
    let (mut app, snaps) = lab("examples/demo.lbs");
    let (f, span) = open_first(&mut app, &snaps, |f| {
        f.kind.name() == "uneven_spread" && f.evidence["held_ms"].as_u64() > Some(0)
    });
    let held = f.evidence["held_ms"].as_u64().unwrap() * 1_000_000;
    assert_eq!(span, (f.t_ns - held, f.t_ns));
    let all = render(&app, 100, 30).join("\n");
    assert!(all.contains("(= below: the time it held)"), "{all}");
    let ms = format!("({:.1} ms)", held as f64 / 1e6);
    assert!(all.contains(&ms), "{ms}: {all}");
}

/// A round trip's rule names what moved the task: "the balancer" only when both moves were
/// the balancer's; a balancer move undone by a wakeup names both reasons instead (the model
/// finds round trips in any two moves, and the demo holds both kinds).
#[test]
fn a_round_trip_s_rule_names_what_moved_the_task() {
    for (first, second, balancer) in [
        ("periodic_balance", "periodic_balance", true),
        ("periodic_balance", "wakeup", false),
    ] {
        let (mut app, snaps) = lab("examples/demo.lbs");
        let (f, _) = open_first(&mut app, &snaps, |f| {
            f.kind.name() == "ping_pong"
                && f.evidence["first_reason"] == first
                && f.evidence["second_reason"] == second
        });
        for (w, h) in SIZES {
            let all = render(&app, w, h).join(" ");
            // Wrapped lines joined: compare the words.
            let words = all.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(
                words.contains("rule: a task the balancer moves stays moved"),
                balancer,
                "{}: {words}",
                f.text
            );
            let named = if balancer {
                format!("(by {first}, then {second})")
            } else {
                format!("went A -> B ({first}) -> A ({second})")
            };
            assert!(words.contains(&named), "{named}: {words}");
        }
    }
}

fn views_lines(app: &App, e: &super::timeline::Explain, base: u64) -> Vec<String> {
    let (end, cell) = views::explain_window(e, 100);
    views::explain_lines(app.timeline.as_ref(), e, (end - 100 * cell, end), base)
}

/// The header and the cursor line wrap at their spaces instead of running past the screen's
/// edge: at 80 columns the header (no balancer decisions in this story) and a cursor line
/// naming the pull take two lines each, whole or with the cut marked, and the grid keeps
/// its rows; at 132 columns each is one line.
#[test]
fn header_and_cursor_line_wrap_at_80_columns() {
    // Two more moves in the cell of the periodic pull of task 12 at 7 ms: the cursor line
    // names all three.
    let mut events = story(1);
    let at = events.iter().position(|e| e.ts_ns == T0 + 7 * MS).unwrap() + 1;
    events.insert(
        at,
        migrate(T0 + 7 * MS + 20_000, 31, 0, 1, Reason::ActiveBalance),
    );
    events.insert(
        at,
        migrate(T0 + 7 * MS + 10_000, 30, 0, 1, Reason::NewidleBalance),
    );
    let mut app = app_of(Topology::synthetic_flat(2), &events);
    app.tl.zoom = ZOOMS_NS.iter().position(|&z| z == 100_000).unwrap();
    app.tl.at_ns = Some(T0 + 7 * MS);
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    for (w, h) in SIZES {
        let scr = render(&app, w, h);
        let all = scr.join("\n");
        let flat = words(&all);
        assert!(flat.contains("(no balancer decisions recorded)"), "{all}");
        let head: Vec<&String> = scr
            .iter()
            .skip(2)
            .take_while(|l| !l.starts_with("cpu "))
            .collect();
        let at = scr
            .iter()
            .position(|l| l.starts_with("cursor t="))
            .expect(&all);
        let cursor: Vec<&String> = scr[at..]
            .iter()
            .take_while(|l| !l.starts_with('·') && !l.starts_with("cell:"))
            .collect();
        assert!(flat.contains("12 0>1 periodic_balance"), "{all}");
        assert_eq!(cursor.len(), if w < 100 { 2 } else { 1 }, "{all}");
        for l in head.iter().chain(&cursor) {
            let l = l.trim_end();
            assert!(
                l.chars().count() < usize::from(w) || l.ends_with('…'),
                "'{l}' reaches the edge at {w} columns:\n{all}"
            );
        }
        assert_eq!(head.len(), if w < 100 { 2 } else { 1 }, "{all}");
        // Both CPUs' rows are on screen.
        assert!(scr.iter().any(|l| l.starts_with("cpu 0 ")), "{all}");
        assert!(scr.iter().any(|l| l.starts_with("cpu 1 ")), "{all}");
    }
}

/// From a source that folds in the kernel (`--fold`), the timeline takes a CPU's waiting
/// count from its `nr_running` (the tasks queued beside the running one) and its header and
/// a finding's evidence say that counts above 2 are samples; a streamed run says nothing.
#[test]
fn a_folded_source_s_waiting_counts_are_marked_as_samples() {
    use crate::analyze::tests::nr;
    use crate::event::EventKind;
    let t = |ms: u64| T0 + ms * MS;
    let fold = Event {
        ts_ns: t(0),
        cpu: 0,
        kind: EventKind::Fold(Box::default()),
    };
    let events = vec![
        fold,
        switch(t(1), 0, 0, 0, 10),
        switch(t(1), 1, 0, 0, 20),
        nr(t(1), 0, 1),
        nr(t(1), 1, 1),
        nr(t(2), 0, 4),
        nr(t(4), 0, 1),
        clock(t(20)),
    ];
    let mut app = app_of(Topology::synthetic_flat(2), &events);
    app.tl.zoom = ZOOMS_NS.iter().position(|&z| z == 100_000).unwrap();
    let note = "--fold: waiting above 2 sampled each ms";
    for (w, h) in SIZES {
        app.tl.at_ns = Some(t(3));
        let scr = render(&app, w, h).join("\n");
        // The header wraps at its spaces: the note may span two lines.
        let words = scr.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(note), "{scr}");
        assert!(scr.contains("cpu 0: 3 waiting at most"), "{scr}");
        app.tl.at_ns = Some(t(5));
        let scr = render(&app, w, h).join("\n");
        assert!(scr.contains("cpu 0: running"), "{scr}");
    }
    let streamed = app_of(Topology::synthetic_flat(2), &story(1));
    assert!(!render(&streamed, 132, 40).join("\n").contains(note));
}

/// The full legend shows from the width where each of its lines fits beside the free last
/// column, and then whole (its first line once ran one column past a 120-column screen, its
/// closing parenthesis cut unmarked); narrower screens get the one-line legend.
#[test]
fn the_legend_is_whole_or_short() {
    use crate::tui::views::timeline::legend_lines;
    let app = app_of(Topology::synthetic_flat(2), &story(1));
    for w in [80, 100, 117, 118, 120, 132] {
        let scr = render(&app, w, 40);
        match legend_lines(3, w) {
            Some(lines) => {
                for l in lines {
                    assert!(l.chars().count() < usize::from(w), "{l}");
                    assert!(scr.iter().any(|r| r.trim_end() == *l), "{w}: {scr:#?}");
                }
            }
            None => assert!(
                scr.iter().any(|r| r.contains("(? legend)")),
                "{w}: {scr:#?}"
            ),
        }
    }
    assert!(
        legend_lines(3, 120).is_some(),
        "the full legend fits 120 columns"
    );
    assert!(legend_lines(3, 117).is_none());
}

#[test]
fn the_axis_gives_as_many_decimals_as_a_cell_needs() {
    use views::timeline::rel_axis;
    let base = 1_000_000_000;
    // 20 ms cells: to the hundredth of a second, no trailing digits beyond it.
    assert_eq!(rel_axis(base + 8_120_000_000, base, 20_000_000), "8.12");
    // 100 us cells: to the ten-thousandth.
    assert_eq!(rel_axis(base + 8_120_400_000, base, 100_000), "8.1204");
    // 20 us cells and 2 s cells.
    assert_eq!(rel_axis(base + 8_120_420_000, base, 20_000), "8.12042");
    assert_eq!(rel_axis(base + 8_000_000_000, base, 2_000_000_000), "8.0");
    // Before the origin, and a zero cell, stay readable.
    assert_eq!(rel_axis(0, base, 20_000_000), "0.00");
    assert_eq!(rel_axis(base + 1, base, 0), "0.000000001");
}

#[test]
fn the_newest_cell_says_how_much_of_it_is_known() {
    // The story up to 5.4 ms: the cell of 5-6 ms is known for its first 400 us only.
    let mut ev: Vec<Event> = story(1).into_iter().take(6).collect();
    ev.push(clock(T0 + 5 * MS + 400_000));
    let mut app = app_of(Topology::synthetic_flat(2), &ev);
    app.tl.zoom = ZOOMS_NS.iter().position(|&z| z == MS).unwrap();
    app.tl.at_ns = Some(T0 + 5 * MS);
    let scr = render(&app, 132, 40).join("\n");
    assert!(
        scr.contains("cpu 0: 2 waiting at most, running 100% of the 400 us known"),
        "{scr}"
    );
    // A cell known to its end says so of the whole time.
    app.tl.at_ns = Some(T0 + 4 * MS);
    let scr = render(&app, 132, 40).join("\n");
    assert!(scr.contains("running 100% of the time"), "{scr}");
}
