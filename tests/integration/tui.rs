//! The TUI as a new user meets it: `lbscope top` live in a tmux terminal while a workload
//! runs, `lbscope replay` over the golden recording, `top --demo` and `diff --tui`. Keys are
//! sent with `tmux send-keys`, the screen read with `tmux capture-pane`; after `q`, Ctrl-C
//! or SIGTERM the terminal must be back to normal (alternate screen left, cursor shown, the
//! shell's output visible).

use crate::common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A tmux session on a private server, running a shell.
pub(crate) struct Tmux {
    socket: String,
    name: String,
}

impl Tmux {
    pub(crate) fn tmux(&self) -> Command {
        let mut c = Command::new(require_tool("tmux", "tmux"));
        c.args(["-L", &self.socket]);
        c
    }

    /// A `w`x`h` terminal running `cmd` from a plain shell, followed by `echo EXITED-$?`.
    pub(crate) fn start(tag: &str, cmd: &str, w: u16, h: u16) -> Tmux {
        let t = Tmux {
            // A server per terminal: a server exiting after the last session must not race
            // the next test's start.
            socket: format!("lbscope-test-{}-{tag}", std::process::id()),
            name: tag.to_string(),
        };
        let ok = t
            .tmux()
            .args(["new-session", "-d", "-s", tag])
            .args(["-x", &w.to_string(), "-y", &h.to_string()])
            .args(["env", "PS1=$ ", "bash", "--norc", "--noprofile"])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux starts");
        let _ = t
            .tmux()
            .args(["set-option", "-t", tag, "status", "off"])
            .status();
        let _ = t
            .tmux()
            .args(["resize-window", "-t", tag])
            .args(["-x", &w.to_string(), "-y", &h.to_string()])
            .status();
        // Typed before bash printed its first prompt, the command would be echoed twice and
        // wrapped across lines.
        t.wait_prompt(false);
        t.keys_literal(&format!(
            "cd {} && {cmd}; echo EXITED-$?",
            env!("CARGO_MANIFEST_DIR")
        ));
        t.keys("Enter");
        t
    }

    /// Sends tmux key names ("q", "Enter", "Right", "C-c").
    pub(crate) fn keys(&self, k: &str) {
        let ok = self
            .tmux()
            .args(["send-keys", "-t", &self.name, k])
            .status()
            .unwrap()
            .success();
        assert!(ok, "send-keys {k}");
        std::thread::sleep(Duration::from_millis(300));
    }

    fn keys_literal(&self, text: &str) {
        let ok = self
            .tmux()
            .args(["send-keys", "-t", &self.name, "-l", text])
            .status()
            .unwrap()
            .success();
        assert!(ok, "send-keys -l");
    }

    pub(crate) fn screen(&self) -> String {
        let o = self
            .tmux()
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// tmux's view of the pane: `#{alternate_on} #{cursor_flag}`.
    fn modes(&self) -> String {
        let o = self
            .tmux()
            .args(["display-message", "-p", "-t", &self.name])
            .arg("#{alternate_on} #{cursor_flag}")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// The screen once the shell printed the exit status (a line starting `EXITED-`, not
    /// the command line that contains it) and its next prompt.
    fn wait_exit(&self) -> String {
        self.wait_prompt(true)
    }

    /// The screen once its last line is the shell's prompt (tmux drops the prompt's
    /// trailing blank) and, if `exited`, a line starting `EXITED-` precedes it.
    fn wait_prompt(&self, exited: bool) -> String {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.screen();
            let last = s.lines().map(str::trim_end).rfind(|l| !l.is_empty());
            let status = s.lines().any(|l| l.starts_with("EXITED-"));
            if last == Some("$") && (status || !exited) {
                return s;
            }
            if Instant::now() > end {
                let what = if exited {
                    "exit status and prompt"
                } else {
                    "first prompt"
                };
                panic!("no {what} within 10 s:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The screen once it contains every needle.
    pub(crate) fn wait_for(&self, needles: &[&str], timeout: Duration) -> String {
        let end = Instant::now() + timeout;
        loop {
            let s = self.screen();
            if needles.iter().all(|n| s.contains(n)) {
                return s;
            }
            if Instant::now() > end {
                panic!("{needles:?} not on screen within {timeout:?}:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `key` (q or C-c), then the terminal is back to the shell: normal screen, cursor
    /// visible, exit 0.
    fn quit_cleanly_with(&self, key: &str) {
        self.keys(key);
        let s = self.wait_exit();
        assert!(s.lines().any(|l| l == "EXITED-0"), "exit status 0:\n{s}");
        assert_eq!(self.modes(), "0 1", "alternate screen left, cursor shown");
        // The command line typed before the TUI is on screen again, and the prompt after.
        assert!(
            s.contains("; echo EXITED-$?"),
            "the shell's screen is back:\n{s}"
        );
        assert!(s.lines().any(|l| l.starts_with("$ cd ")), "a prompt:\n{s}");
    }
}

impl Tmux {
    pub(crate) fn quit_cleanly(&self) {
        self.quit_cleanly_with("q");
    }

    /// The pid of the program the pane's shell runs.
    fn child_pid(&self) -> u32 {
        let o = self
            .tmux()
            .args(["display-message", "-p", "-t", &self.name, "#{pane_pid}"])
            .output()
            .unwrap();
        let shell = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .expect("the shell runs lbscope")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self
            .tmux()
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
    }
}

pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_lbscope")
}

/// The number after `key` on the first line holding it.
pub(crate) fn number_after(screen: &str, key: &str) -> f64 {
    let line = screen
        .lines()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("'{key}' on screen:\n{screen}"));
    let rest = &line[line.find(key).unwrap() + key.len()..];
    let num: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    num.parse()
        .unwrap_or_else(|_| panic!("a number after '{key}' in: {line}"))
}

#[test]
fn top_live_shows_every_view_and_quits_cleanly() {
    let Some(_g) = live_guard() else { return };
    let comm = format!("lbstui{}", std::process::id() % 100_000);
    let load = Reaped::spawn(
        example("mixed")
            .args(["--cpu-threads", "2", "--io-threads", "2"])
            .args(["--duration-ms", "40000", "--comm", &comm])
            .stdout(Stdio::null()),
    );
    // Streaming, whatever the load's switch rate: the running task and the filter on every
    // figure are what this test checks.
    let t = Tmux::start("top", &format!("{} top --fold off", bin()), 100, 30);
    // Overview: live figures once the first interval closed.
    let s = t.wait_for(
        &["runqlat p50", "probes: tracepoints"],
        Duration::from_secs(15),
    );
    assert!(s.contains("lbscope top"), "{s}");
    assert!(!s.contains("| folded"), "--fold off streams:\n{s}");
    // Under the mixed load a woken task always waits some microseconds before it runs (the
    // wakeup itself takes that long), and never seconds at the median.
    let p50 = number_after(&s, "runqlat p50 ");
    assert!(
        p50 > 0.0 && p50 < 1_000_000.0,
        "runqlat p50 {p50} us:
{s}"
    );
    let s = t.wait_for(&["samples)"], Duration::from_secs(5));
    let samples = s
        .lines()
        .find(|l| l.contains("samples)"))
        .and_then(|l| l.rsplit('(').next())
        .and_then(|x| x.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap();
    assert!(samples > 0, "run-queue latency samples under load:\n{s}");
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let n_cpus = lbscope::cpuset::CpuSet::parse_list(cpus.trim())
        .unwrap()
        .len();
    let cells = s.matches("cpu ").count();
    assert!(cells >= n_cpus.min(20), "a cell per CPU ({n_cpus}):\n{s}");
    assert!(s.contains(" run"), "a running CPU under load:\n{s}");

    t.keys("2");
    let s = t.wait_for(&["level", "idle-wait", "groups of"], Duration::from_secs(3));
    assert!(
        ["has_spare", "fully_busy", "overloaded"]
            .iter()
            .any(|c| s.contains(c)),
        "the model's group types: {s}"
    );

    t.keys("3");
    let s = t.wait_for(
        &["all tasks: run-queue latency", "n="],
        Duration::from_secs(3),
    );
    assert!(number_after(&s, "n=") > 0.0, "{s}");
    assert!(s.contains("|*"), "histogram bars:\n{s}");
    assert!(s.contains(&comm), "the workload in the process list:\n{s}");

    // Filter by the workload's name: the analysis restarts on its tasks only.
    t.keys("/");
    t.keys_literal(&comm);
    t.keys("Enter");
    let s = t.wait_for(&[&format!("comm={comm}")], Duration::from_secs(3));
    assert!(s.contains("analysis restarted"), "{s}");
    // The intervals before the filter stay in the history (and on screen) until the first
    // filtered one closes.
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let s = t.wait_for(
            &["all tasks: run-queue latency", &format!(" {comm}")],
            Duration::from_secs(5),
        );
        if !s.contains(" lbscope ") {
            break;
        }
        assert!(Instant::now() < end, "only the workload's tasks:\n{s}");
        std::thread::sleep(Duration::from_millis(200));
    }

    t.keys("4");
    t.wait_for(
        &[
            "migrations/s:",
            "reason \\ level",
            "most migrated tasks",
            "unknown stacks",
        ],
        Duration::from_secs(3),
    );
    t.keys("5");
    t.wait_for(
        &["findings of the balancer model", "measured signals"],
        Duration::from_secs(3),
    );
    t.keys("?");
    t.wait_for(
        &["keys", "q  ctrl-c", "filter by process name"],
        Duration::from_secs(3),
    );
    t.keys("6");
    t.wait_for(&["q  ctrl-c"], Duration::from_secs(3));

    // Pause holds the screen while collection goes on.
    t.keys("1");
    t.keys("p");
    let held = t.wait_for(&["PAUSED"], Duration::from_secs(3));
    let clock = |s: &str| {
        s.lines().next().and_then(|l| {
            l.split(" | ")
                .find(|x| x.ends_with("UTC"))
                .map(str::to_string)
        })
    };
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(clock(&t.screen()), clock(&held), "paused: same interval");
    t.keys("p");
    std::thread::sleep(Duration::from_millis(2500));
    let s = t.screen();
    assert!(!s.contains("PAUSED"), "{s}");
    assert_ne!(clock(&s), clock(&held), "resumed: newer intervals");

    // The title's own CPU against the kernel's run time of every thread of the process, over
    // 6 s that end where the screen's 5 s window ends (give or take the second between
    // samples and the drains' bursts, hence a factor of two).
    let pid = t.child_pid();
    let a = lbscope::selfcost::process_run_ns(Path::new(&format!("/proc/{pid}/task")));
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(6));
    let b = lbscope::selfcost::process_run_ns(Path::new(&format!("/proc/{pid}/task")));
    let s = t.screen();
    let (Some(a), Some(b)) = (a, b) else {
        panic!("no /proc/{pid}/task/*/schedstat: the kernel has no schedstats");
    };
    let measured = lbscope::selfcost::percent_of_core(b - a, t0.elapsed()).unwrap();
    let shown = number_after(&s, "| self ");
    assert!(
        shown > 0.0 && shown >= measured / 2.0 - 0.3 && shown <= measured * 2.0 + 0.3,
        "self {shown}% on screen, {measured:.2}% by /proc/{pid}/task/*/schedstat:\n{s}"
    );

    t.quit_cleanly();
    drop(load);
}

/// On a machine switching tens of thousands of times a second (two ping-pong pairs with 100 us
/// of think time: about 40,000 here), plain `top` (`--fold auto`)
/// folds latency in the kernel: its title says so, its footer says the rate it measured, and
/// the latency view still lists the busy process from the kernel's per-process histograms.
#[test]
fn top_folds_by_itself_on_a_busy_machine() {
    let Some(_g) = live_guard() else { return };
    let comm = format!("lbsfold{}", std::process::id() % 100_000);
    let load = Reaped::spawn(
        example("pingpong")
            .args(["--pairs", "2", "--sleep-us", "100", "--rounds", "100000000"])
            .args(["--comm", &comm])
            .stdout(Stdio::null()),
    );
    std::thread::sleep(Duration::from_millis(500));
    let t = Tmux::start("top", &format!("{} top", bin()), 100, 30);
    let s = t.wait_for(
        &["| folded", "switches/s as top started"],
        Duration::from_secs(15),
    );
    let rate = number_after(&s, "folded: ");
    assert!(
        rate > 10_000.0,
        "folded above 10,000 switches/s, at {rate}:\n{s}"
    );
    t.keys("3");
    let s = t.wait_for(
        &["all tasks: run-queue latency", "n=", &format!(" {comm}")],
        Duration::from_secs(5),
    );
    assert!(number_after(&s, "n=") > 0.0, "{s}");
    t.quit_cleanly();
    drop(load);
}

/// The 1 s intervals of a recording of the repository (`rel` from its root), as `replay`
/// analyses it without a filter.
pub(crate) fn snapshots_of(rel: &str) -> Vec<lbscope::analyze::Snapshot> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let (_, snaps, _) = lbscope::cmd::diff::analyze_file(
        &path,
        1_000_000_000,
        &lbscope::cli::FilterArgs::default(),
        &lbscope::cli::ModelArgs::default(),
    )
    .unwrap();
    snaps
}

#[test]
fn replay_walks_the_golden_recording() {
    let golden = "tests/fixtures/recordings/golden-v1.lbs";
    let snaps = snapshots_of(golden);
    let us = lbscope::tui::views::us;
    // Slow enough that the first interval stays on screen while it is checked.
    let t = Tmux::start(
        "replay",
        &format!("{} replay {golden} --speed 0.01", bin()),
        100,
        30,
    );
    let s = t.wait_for(
        &["lbscope replay", "host golden-host", "kernel 6.8.0-golden"],
        Duration::from_secs(10),
    );
    assert!(s.contains("16 CPUs: smt llc numa"), "{s}");
    assert!(s.contains("probes: tracepoints only"), "{s}");
    assert!(s.contains("t 1.0/3.2 s 0.01x"), "time cursor:\n{s}");
    for cpu in 0..16 {
        assert!(s.contains(&format!("cpu{cpu:>4} ")), "cpu {cpu}:\n{s}");
    }
    let first = &snaps[0].runqlat_us;
    assert!(
        s.contains(&format!("p50 {}  p99 {}", us(first.p50), us(first.p99))),
        "the first interval's figures:\n{s}"
    );
    // Seek forward: the second interval's figures.
    t.keys("p");
    t.keys("Right");
    let second = &snaps[1].runqlat_us;
    let s = t.wait_for(
        &["t 2.0/3.2 s", &format!("p99 {}", us(second.p99))],
        Duration::from_secs(3),
    );
    assert!(s.contains("PAUSED"), "{s}");
    t.keys("3");
    t.wait_for(
        &[&format!("n={}", second.count), "|*"],
        Duration::from_secs(3),
    );
    t.keys("n");
    t.wait_for(&["t 3.0/3.2 s"], Duration::from_secs(3));
    t.keys("Left");
    t.wait_for(&["t 2.0/3.2 s"], Duration::from_secs(3));
    t.keys("]");
    t.wait_for(&["0.25x"], Duration::from_secs(3));
    t.keys("+");
    t.wait_for(
        &["every 2.0 s", "analysis restarted"],
        Duration::from_secs(3),
    );
    // A smaller terminal: everything still fits, footer included.
    let _ = t
        .tmux()
        .args(["resize-window", "-t", "replay", "-x", "80", "-y", "24"])
        .status();
    std::thread::sleep(Duration::from_millis(500));
    let s = t.wait_for(&["1 Overview", "q quit"], Duration::from_secs(3));
    assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
    t.quit_cleanly();
}

#[test]
fn replay_of_a_damaged_recording_exits_3_like_report() {
    let golden = format!(
        "{}/tests/fixtures/recordings/golden-v1.lbs",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&golden).unwrap();
    let cut = std::env::temp_dir().join(format!("lbscope-cut-{}.lbs", std::process::id()));
    // Cut in the middle of the last chunk: the file ends inside it.
    std::fs::write(&cut, &bytes[..bytes.len() - 200]).unwrap();
    let report = crate::common::lbscope()
        .arg("report")
        .arg(&cut)
        .output()
        .unwrap();
    assert_eq!(report.status.code(), Some(3), "report's exit for damage");
    let t = Tmux::start(
        "damaged",
        &format!("{} replay {} --speed 0.01", bin(), cut.display()),
        120,
        30,
    );
    t.wait_for(&["damaged recording"], Duration::from_secs(10));
    t.keys("q");
    let s = t.wait_exit();
    assert!(s.lines().any(|l| l == "EXITED-3"), "replay exits 3:\n{s}");
    assert!(s.contains("damaged recording:"), "and says why:\n{s}");
    assert_eq!(t.modes(), "0 1", "alternate screen left, cursor shown");
    let _ = std::fs::remove_file(&cut);
}

#[test]
fn a_panic_gives_the_terminal_back() {
    let t = Tmux::start(
        "panic",
        &format!(
            "LBSCOPE_PANIC_DRILL=1 RUST_BACKTRACE=0 {} top --demo",
            bin()
        ),
        200,
        30,
    );
    let s = t.wait_exit();
    assert!(
        s.lines()
            .any(|l| l.starts_with("EXITED-") && l != "EXITED-0"),
        "a panic is a failure:\n{s}"
    );
    // The whole message, its first line included: nothing moved the cursor back over it.
    assert!(
        s.contains("thread 'main'") && s.contains("a panic on purpose"),
        "the message is readable:\n{s}"
    );
    assert_eq!(t.modes(), "0 1", "alternate screen left, cursor shown");
    assert!(
        s.contains("; echo EXITED-$?"),
        "the shell's screen is back:\n{s}"
    );
}

#[test]
fn demo_and_diff_tui() {
    let t = Tmux::start("demo", &format!("{} top --demo", bin()), 100, 30);
    let s = t.wait_for(
        &["demo (examples/demo.lbs)", "recording: host", "runqlat p50"],
        Duration::from_secs(10),
    );
    assert!(s.contains("cpu   0"), "{s}");
    // The demo: a 4-node lab guest, with the history chart over its intervals.
    assert!(s.contains("kernel 6.1.0-56-amd64"), "{s}");
    assert!(s.contains("16 CPUs: llc numa"), "{s}");
    t.wait_for(
        &["history: summary", "migrations/s ", "findings ", " now"],
        Duration::from_secs(5),
    );
    t.keys("s");
    t.wait_for(
        &["history: migrations/s by reason", "of 30 intervals"],
        Duration::from_secs(3),
    );
    t.keys("w");
    t.wait_for(
        &["of 60 intervals", "history window: 60"],
        Duration::from_secs(3),
    );
    t.keys("2");
    t.wait_for(
        &["history: llc 0-3", "idle-wait ", "imbalance "],
        Duration::from_secs(3),
    );
    // Smaller: the chart and the footer still fit in 80 columns.
    let _ = t
        .tmux()
        .args(["resize-window", "-t", "demo", "-x", "80", "-y", "24"])
        .status();
    t.keys("1");
    let s = t.wait_for(
        &["history: migrations/s by reason", "q quit"],
        Duration::from_secs(3),
    );
    assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
    // Back to the width the shell's command line was typed at, so that the screen checked
    // after the exit shows it on one line.
    let _ = t
        .tmux()
        .args(["resize-window", "-t", "demo", "-x", "100", "-y", "30"])
        .status();
    t.wait_for(&["history: migrations/s by reason"], Duration::from_secs(3));
    t.quit_cleanly_with("C-c");
    let golden = "tests/fixtures/recordings/golden-v1.lbs";
    let t = Tmux::start(
        "diff",
        &format!("{} diff {golden} {golden} --tui", bin()),
        140,
        40,
    );
    let s = t.wait_for(
        &["runqlat_us p50", "baseline | new", "+0.0%"],
        Duration::from_secs(10),
    );
    assert!(s.contains("golden-v1.lbs"), "{s}");
    t.keys("j");
    // Tab: both runs on their CPU timelines, one above the other; the cursor moves both.
    t.keys("Tab");
    let s = t.wait_for(
        &[
            "baseline: golden-v1.lbs",
            "new: golden-v1.lbs",
            "cursor 0.800 s",
        ],
        Duration::from_secs(5),
    );
    assert!(s.contains("tab table"), "{s}");
    t.keys("L");
    t.wait_for(&["cursor 1.600 s"], Duration::from_secs(3));
    t.keys("Tab");
    t.wait_for(&["runqlat_us p50"], Duration::from_secs(3));
    // SIGTERM (a service manager, `kill`): the terminal is restored all the same.
    let pid = t.child_pid();
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -TERM {pid}");
    let s = t.wait_exit();
    assert!(s.lines().any(|l| l == "EXITED-0"), "SIGTERM exits 0:\n{s}");
    assert_eq!(t.modes(), "0 1", "alternate screen left, cursor shown");
}
