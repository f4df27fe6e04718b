//! The timeline view and a finding explained, in a tmux terminal over a lab recording (a
//! 4-node 6.1 kernel, balancer hooks on): every timeline key, Enter on a missed pull, the
//! evidence pane's scroll, Esc, a resize to 80x24, and a clean exit.

use super::tui::{bin, number_after as after, snapshots_of, Tmux};
use std::time::Duration;

const LAB: &str = "tests/fixtures/lab/6.1-4node-group-imbalance.lbs";

#[test]
fn replay_timeline_keys_and_a_finding_explained() {
    let snaps = snapshots_of(LAB);
    // The first interval with a missed pull, and its row in the findings list.
    let (interval, row) = snaps
        .iter()
        .enumerate()
        .find_map(|(i, s)| {
            let rows = lbscope::tui::state::findings(s)?;
            rows.iter()
                .position(|r| r.kind == "missed_pull")
                .map(|j| (i, j))
        })
        .expect("the recording has a missed pull");
    let t = Tmux::start(
        "timeline",
        &format!("{} replay {LAB} --speed 0.01", bin()),
        132,
        40,
    );
    t.wait_for(&["lbscope replay 6.1-4node"], Duration::from_secs(10));
    t.keys("7");
    let s = t.wait_for(
        &["cell 20 ms", "t (s)", "cpu 15", "cursor t="],
        Duration::from_secs(5),
    );
    assert!(s.contains("W wakeup F fork"), "the legend:\n{s}");
    // Zoom.
    t.keys("i");
    t.wait_for(&["cell 10 ms"], Duration::from_secs(3));
    t.keys("o");
    t.keys("o");
    let s = t.wait_for(&["cell 50 ms"], Duration::from_secs(3));
    let c0 = after(&s, "cursor t=");
    // Move the cursor: it pauses and moves by one cell, then by a page (40 cells).
    t.keys("Left");
    let s = t.wait_for(&["PAUSED"], Duration::from_secs(3));
    let c1 = after(&s, "cursor t=");
    assert!((c0 - c1 - 0.05).abs() < 0.051, "{c0} -> {c1}\n{s}");
    t.keys("L");
    let s = t.screen();
    let c2 = after(&s, "cursor t=");
    assert!(c2 > c1, "{c1} -> {c2}\n{s}");
    // Seek: the interval shown follows the cursor (the title's time is its end).
    t.keys("g");
    let s = t.screen();
    let (c3, shown) = (after(&s, "cursor t="), after(&s, "| t "));
    assert!(
        c3 < c2 && shown >= c3 && shown - 1.0 <= c3 + 0.05,
        "{c3} in {shown}\n{s}"
    );
    t.keys("G");
    // Rows per cpu (chosen, no longer "(auto)"), then per llc (4 rows), expand the first.
    t.keys("f");
    t.wait_for(&["per cpu  rows"], Duration::from_secs(3));
    t.keys("f");
    let s = t.wait_for(
        &["per llc, enter expands", "+llc 0-3", "+llc 12-15"],
        Duration::from_secs(3),
    );
    assert!(!s.contains("cpu 15 "), "{s}");
    t.keys("Enter");
    t.wait_for(&["-llc 0-3", " cpu 3 "], Duration::from_secs(3));
    // The missed pull, explained.
    t.keys("5");
    t.wait_for(&["findings of the balancer model"], Duration::from_secs(3));
    let s = t.screen();
    // The title's time is the shown interval's end, in seconds from the first's start.
    let shown = after(&s, "| t ").ceil() as usize - 1;
    for _ in interval..shown {
        t.keys("Left");
    }
    for _ in shown..interval {
        t.keys("Right");
    }
    for _ in 0..row {
        t.keys("j");
    }
    t.keys("Enter");
    let s = t.wait_for(
        &[
            "missed_pull",
            "rule: an idle CPU pulls",
            "the idle stretch",
            "evidence: missed_pull",
        ],
        Duration::from_secs(5),
    );
    assert!(s.contains("over the span idle"), "{s}");
    assert!(s.contains("the balancer's decisions for these CPUs"), "{s}");
    // The evidence pane scrolls.
    let first = s
        .lines()
        .find(|l| l.starts_with("found at t="))
        .expect("the pane's first line")
        .to_string();
    t.keys("j");
    assert!(!t.screen().contains(&first), "scrolled");
    t.keys("k");
    t.wait_for(&[&first], Duration::from_secs(3));
    t.keys("i");
    t.keys("l");
    // A small terminal: still drawn within its width.
    let _ = t
        .tmux()
        .args(["resize-window", "-t", "timeline", "-x", "80", "-y", "24"])
        .status();
    std::thread::sleep(Duration::from_millis(500));
    let s = t.wait_for(&["rule:", "esc back"], Duration::from_secs(3));
    assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
    t.keys("Escape");
    t.wait_for(&["findings of the balancer model"], Duration::from_secs(3));
    t.keys("7");
    let s = t.wait_for(&["-llc 0-3", "t (s)"], Duration::from_secs(3));
    assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
    t.quit_cleanly();
}
