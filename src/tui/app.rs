//! The UI state, owned by the event loop: which view, selections, pause, the time cursor
//! over the snapshots received so far, the typed filter, and what is known of the source.
//! [`App::handle`] applies an action and says what the loop must do beyond redrawing
//! ([`Effect`]); views only read this state.
//!
//! Invariants: a live `history` holds at most [`HISTORY`] intervals, oldest first (a replay's
//! holds the whole recording); `cursor`, when set, indexes into it and the history holds
//! that interval whole (see `super::store`: past intervals are kept packed, their chart
//! figures apart); without a cursor the views show the newest snapshot. The history charts
//! draw the last `window` intervals' figures up to the one shown; a live change of interval
//! or filter keeps the intervals and adds a [`Mark`] (only marks within the history are
//! kept).

use super::diff_timeline::{self, DiffTimelines};
use super::history::{self, Mark, Series};
use super::keymap::Action;
use super::store::History;
use super::timeline::{self, TimelineUi};
use crate::analyze::timeline::Timeline;
use crate::analyze::Snapshot;
use crate::analyze::TaskMigrations;
use crate::diff::Diff;
use crate::topology::Topology;
use std::cell::Cell;

/// Intervals a live screen keeps for seeking back and for the history charts: the widest
/// chart window (10 minutes at the default interval), so memory is bounded by the window,
/// not by how long `top` runs. Each past interval is held packed with its chart figures
/// apart, a few KiB (`super::store`).
pub const HISTORY: usize = 600;
/// The refresh intervals `+`/`-` step through, in ms.
pub const INTERVALS_MS: &[u64] = &[250, 500, 1000, 2000, 5000, 10_000];
/// The replay speeds `[`/`]` step through.
pub const SPEEDS: &[f64] = &[0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0];

/// The views, in tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// CPUs and headline figures.
    Overview,
    /// The sched-domain tree.
    Domains,
    /// Run-queue latency histograms.
    Latency,
    /// Migrations by reason and level.
    Migrations,
    /// Findings and measured signals.
    Findings,
    /// Every key.
    Help,
    /// The comparison of two recordings (`diff --tui` only).
    Diff,
    /// The CPU timeline.
    Timeline,
    /// A finding on its timeline (Enter in the findings view).
    Explain,
}

impl View {
    /// The views reachable by tab and digits, in order.
    pub const TABS: [View; 7] = [
        View::Overview,
        View::Domains,
        View::Latency,
        View::Migrations,
        View::Findings,
        View::Help,
        View::Timeline,
    ];

    /// The tab title.
    pub fn title(self) -> &'static str {
        match self {
            View::Overview => "Overview",
            View::Domains => "Domains",
            View::Latency => "Latency",
            View::Migrations => "Migrations",
            View::Findings => "Findings",
            View::Help => "Help",
            View::Diff => "Diff",
            View::Timeline => "Timeline",
            View::Explain => "Finding",
        }
    }
}

/// Where the events come from, as shown on screen.
#[derive(Clone, Debug)]
pub enum SourceInfo {
    /// The live kernel.
    Live {
        /// "tracepoints only (tp_btf)" or "tracepoints with balancer hooks".
        probe_mode: String,
        /// The kernel folds run-queue latency (`--fold`): the name filter then narrows the
        /// process rows only.
        folded: bool,
    },
    /// A recording.
    Replay(RecordingInfo),
    /// Two recordings compared.
    Diff,
}

/// A recording's metadata, for the screen.
#[derive(Clone, Debug, Default)]
pub struct RecordingInfo {
    /// The file name as given.
    pub name: String,
    /// Host the recording was made on.
    pub hostname: String,
    /// Its kernel release.
    pub kernel: String,
    /// When it was made, "YYYY-MM-DD HH:MM UTC".
    pub date: String,
    /// "16 CPUs: smt llc numa".
    pub topology: String,
    /// Probe mode and attach kinds.
    pub probes: String,
    /// Recording time covered, ns (first to last snapshot end).
    pub span_ns: u64,
}

/// What the loop must do after an action, besides redrawing.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Nothing more.
    None,
    /// Leave.
    Quit,
    /// Rebuild the analysis with this interval and process-name filter.
    Reconfigure {
        /// Interval, ns.
        interval_ns: u64,
        /// Exact process name, or none.
        comm: Option<String>,
    },
}

/// The whole UI state.
#[derive(Clone, Debug)]
pub struct App {
    /// The current view.
    pub view: View,
    /// The view before help was opened.
    pub prev_view: View,
    /// The machine (or recording) topology.
    pub topo: Topology,
    /// The intervals kept, oldest first.
    pub history: History,
    /// The interval shown; `None` = the newest. Set through [`App::set_cursor`], which
    /// has the history hold that interval whole.
    cursor: Option<usize>,
    /// Pause: live keeps collecting but the screen holds; replay stops advancing.
    pub paused: bool,
    /// The analyzer's interval, ns.
    pub interval_ns: u64,
    /// The process-name filter in force.
    pub comm: Option<String>,
    /// Text being typed after `/`.
    pub typing: Option<String>,
    /// Selected row of the domains view.
    pub domain_sel: usize,
    /// Selected entry of the latency view (0 = all).
    pub latency_sel: usize,
    /// Selected finding.
    pub finding_sel: usize,
    /// Evidence of the selected finding is open.
    pub evidence_open: bool,
    /// Scroll of the diff and help views.
    pub scroll: usize,
    /// The most that scroll moves the view drawn last: its rows beyond one screen (the view
    /// sets it as it draws; Down stops there, so Up moves the view at once).
    pub scroll_max: Cell<usize>,
    /// Replay speed (recording seconds per wall second).
    pub speed: f64,
    /// Where events come from.
    pub source: SourceInfo,
    /// The last warning or notice, shown in the footer.
    pub status: Option<String>,
    /// The source ended (replay at its end, live source gone).
    pub ended: bool,
    /// Live: this process's own CPU over the last few seconds, percent of one core
    /// ([`crate::selfcost`]); `None` until measured, and for recordings.
    pub self_cpu: Option<f64>,
    /// The comparison shown by `diff --tui`.
    pub diff: Option<Box<Diff>>,
    /// Clock base of the recording or machine (monotonic + base = Unix ns).
    pub clock_base_ns: i64,
    /// The CPU timeline the pipeline fills (live: its window; replay: a clip of the
    /// recording); `None` where there is none (a diff).
    pub timeline: Option<Timeline>,
    /// The timeline view's and the finding explained's state.
    pub tl: TimelineUi,
    /// The Overview's history chart.
    pub series: Series,
    /// Intervals the history charts span (one of [`history::WINDOWS`]).
    pub window: usize,
    /// Live changes of interval or filter within the history, oldest first.
    pub marks: Vec<Mark>,
    /// `diff --tui`: both runs' snapshots (baseline, new), for their history charts.
    pub diff_runs: Option<Box<(Vec<Snapshot>, Vec<Snapshot>)>>,
    /// `diff --tui`: both runs on their CPU timelines (tab switches to them).
    pub diff_timelines: Option<Box<DiffTimelines>>,
}

impl App {
    /// A fresh state for a source.
    pub fn new(topo: Topology, interval_ns: u64, source: SourceInfo, clock_base_ns: i64) -> App {
        App {
            view: View::Overview,
            prev_view: View::Overview,
            topo,
            history: History::new(),
            cursor: None,
            paused: false,
            interval_ns,
            comm: None,
            typing: None,
            domain_sel: 0,
            latency_sel: 0,
            finding_sel: 0,
            evidence_open: false,
            scroll: 0,
            scroll_max: Cell::new(usize::MAX),
            speed: 1.0,
            source,
            status: None,
            ended: false,
            self_cpu: None,
            diff: None,
            clock_base_ns,
            timeline: None,
            tl: TimelineUi::default(),
            series: Series::Summary,
            window: history::DEFAULT_WINDOW,
            marks: Vec::new(),
            diff_runs: None,
            diff_timelines: None,
        }
    }

    /// A state showing a comparison.
    pub fn for_diff(d: Diff, topo: Topology) -> App {
        let mut a = App::new(topo, 1_000_000_000, SourceInfo::Diff, 0);
        a.view = View::Diff;
        a.prev_view = View::Diff;
        a.diff = Some(Box::new(d));
        a
    }

    /// The snapshot the views show, whole. (Should unpacking a past interval ever fail, its
    /// chart figures, with the other tables empty; the footer says so.)
    pub fn current(&self) -> Option<&Snapshot> {
        match self.cursor {
            Some(i) => self.history.whole(i).or_else(|| self.history.get(i)),
            None => self.history.newest(),
        }
    }

    /// The interval shown; `None` = the newest.
    pub fn cursor(&self) -> Option<usize> {
        self.cursor
    }

    /// Shows interval `c` (`None`: the newest), clamped to the history.
    pub fn set_cursor(&mut self, c: Option<usize>) {
        self.cursor = c.map(|i| i.min(self.history.len().saturating_sub(1)));
        if let Some(i) = self.cursor {
            if !self.history.is_empty() && !self.history.open(i) {
                self.status = Some("this interval's tables could not be read back".into());
            }
        }
    }

    /// Index of the shown snapshot.
    pub fn position(&self) -> Option<usize> {
        if self.history.is_empty() {
            return None;
        }
        Some(self.cursor.unwrap_or(self.history.len() - 1))
    }

    /// The most migrated tasks of the shown snapshot.
    pub fn current_tasks(&self) -> &[TaskMigrations] {
        self.current().map_or(&[], |s| &s.migrations_by_task[..])
    }

    /// Forgets every snapshot (the analysis restarted).
    pub fn clear_history(&mut self) {
        self.history.clear();
        self.cursor = None;
        self.marks.clear();
    }

    /// The snapshots the history charts draw: the last `window` up to the one shown, oldest
    /// first.
    pub fn window_snaps(&self) -> Vec<&Snapshot> {
        // The chart figures: every chart reads only them (`history::chart_figures`).
        let Some(pos) = self.position() else {
            return Vec::new();
        };
        let start = (pos + 1).saturating_sub(self.window);
        self.history.range(start..=pos).collect()
    }

    /// Notes that the analysis goes on with the interval and filter now set, from event time
    /// `t_ns` (a live `+`/`-` or `/`): the snapshots before stay, the charts mark the change.
    pub fn mark_change(&mut self, t_ns: u64) {
        let mut what = format!(
            "every {}",
            super::views::secs(self.interval_ns as f64 / 1e9)
        );
        if let Some(c) = &self.comm {
            what.push_str(&format!(", comm={c}"));
        }
        self.marks.push(Mark { t_ns, what });
    }

    /// Adds a snapshot from the analyzer. A paused live screen keeps showing its snapshot.
    pub fn push(&mut self, s: Snapshot) {
        let mut cursor = self.cursor;
        if self.paused && cursor.is_none() && !self.history.is_empty() {
            cursor = Some(self.history.len() - 1);
        }
        self.history.reserve_total(HISTORY);
        if self.history.len() >= HISTORY {
            self.history.pop_front();
            cursor = cursor.map(|c| c.saturating_sub(1));
            let first = self.history.front().map_or(0, |f| f.t_start_ns);
            self.marks.retain(|m| m.t_ns >= first);
        }
        self.history.push(s);
        if cursor.is_some() {
            self.set_cursor(cursor);
        }
    }

    /// Replaces the snapshots (a replay re-analysed), keeping the cursor near `t_ns`.
    pub fn replace_history(&mut self, snaps: Vec<Snapshot>, t_ns: Option<u64>) {
        // Every interval was analysed again with the settings now in force: nothing to mark.
        self.marks.clear();
        self.history = snaps.into();
        let cursor = if self.history.is_empty() {
            None
        } else {
            let i = t_ns.map_or(0, |t| {
                self.history
                    .iter()
                    .position(|s| s.t_end_ns >= t)
                    .unwrap_or(self.history.len() - 1)
            });
            Some(i)
        };
        self.set_cursor(cursor);
    }

    /// Moves the time cursor by `delta` snapshots; moving past the newest in live mode
    /// follows the newest again.
    pub fn seek(&mut self, delta: i64, follow_newest: bool) {
        self.tl.at_ns = None;
        let Some(pos) = self.position() else { return };
        let last = self.history.len() - 1;
        let to = (pos as i64 + delta).clamp(0, last as i64) as usize;
        self.set_cursor(if to == last && follow_newest && !self.paused {
            None
        } else {
            Some(to)
        });
    }

    fn step_interval(&self, up: bool) -> u64 {
        let ms = self.interval_ns / 1_000_000;
        let next = if up {
            INTERVALS_MS.iter().find(|&&m| m > ms).copied()
        } else {
            INTERVALS_MS.iter().rev().find(|&&m| m < ms).copied()
        };
        next.map_or(self.interval_ns, |m| m * 1_000_000)
    }

    fn step_speed(&mut self, up: bool) {
        let next = if up {
            SPEEDS.iter().find(|&&s| s > self.speed)
        } else {
            SPEEDS.iter().rev().find(|&&s| s < self.speed)
        };
        if let Some(&s) = next {
            self.speed = s;
        }
        self.status = Some(format!("speed {}x", self.speed));
    }

    fn is_live(&self) -> bool {
        matches!(self.source, SourceInfo::Live { .. })
    }

    fn move_sel(&mut self, down: bool) {
        let sel = match self.view {
            View::Domains => &mut self.domain_sel,
            View::Latency => &mut self.latency_sel,
            View::Findings => &mut self.finding_sel,
            View::Help | View::Diff => &mut self.scroll,
            _ => return,
        };
        *sel = if down {
            sel.saturating_add(1)
        } else {
            sel.saturating_sub(1)
        };
        if matches!(self.view, View::Help | View::Diff) {
            self.scroll = self.scroll.min(self.scroll_max.get());
        }
        if self.view == View::Findings {
            self.evidence_open = false;
        }
    }

    fn typed(&mut self, a: Action) -> Effect {
        let Some(text) = self.typing.as_mut() else {
            return Effect::None;
        };
        match a {
            Action::Char(c) if text.len() < 15 => text.push(c),
            Action::Backspace => {
                text.pop();
            }
            Action::Back => self.typing = None,
            Action::Enter => {
                let t = self.typing.take().unwrap_or_default();
                let comm = (!t.is_empty()).then_some(t);
                if comm == self.comm {
                    return Effect::None;
                }
                self.comm = comm.clone();
                let folded = matches!(self.source, SourceInfo::Live { folded: true, .. });
                self.status = Some(match &comm {
                    Some(c) if folded => format!(
                        "filter: tasks named '{c}' (analysis restarted; folded: per-CPU latency and idle-wait still count every task)"
                    ),
                    Some(c) => format!("filter: tasks named '{c}' (analysis restarted)"),
                    None => "filter cleared (analysis restarted)".into(),
                });
                return Effect::Reconfigure {
                    interval_ns: self.interval_ns,
                    comm,
                };
            }
            _ => {}
        }
        Effect::None
    }

    /// Applies one action.
    pub fn handle(&mut self, a: Action) -> Effect {
        if self.typing.is_some() && a != Action::Quit {
            return self.typed(a);
        }
        let diff = self.diff.is_some();
        if self.view == View::Explain && timeline::handle_explain(self, a) {
            return Effect::None;
        }
        if self.view == View::Timeline && diff && diff_timeline::handle(self, a) {
            return Effect::None;
        }
        if self.view == View::Timeline && !diff && timeline::handle(self, a) {
            return Effect::None;
        }
        match a {
            Action::Quit => return Effect::Quit,
            // diff --tui: the table and the timeline, where the runs could be read again.
            Action::NextView | Action::PrevView if diff && self.diff_timelines.is_some() => {
                self.view = if self.view == View::Diff {
                    View::Timeline
                } else {
                    View::Diff
                };
            }
            Action::NextView | Action::PrevView if !diff => {
                let i = View::TABS.iter().position(|v| *v == self.view).unwrap_or(0);
                let n = View::TABS.len();
                let j = if a == Action::NextView {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.view = View::TABS[j];
            }
            Action::Goto(n) if !diff => {
                if let Some(v) = View::TABS.get(usize::from(n).saturating_sub(1)) {
                    self.view = *v;
                }
            }
            Action::Help => {
                if self.view == View::Help {
                    self.view = self.prev_view;
                } else {
                    self.prev_view = self.view;
                    self.view = View::Help;
                    self.scroll = 0;
                }
            }
            Action::Up => self.move_sel(false),
            Action::Down => self.move_sel(true),
            Action::Left => self.seek(-1, self.is_live()),
            Action::Right => self.seek(1, self.is_live()),
            Action::Enter if self.view == View::Findings => {
                let rows = super::views::finding_rows(self).1;
                if let Some(f) = rows.get(self.finding_sel.min(rows.len().saturating_sub(1))) {
                    timeline::explain(self, f.clone());
                }
            }
            Action::Back => {
                self.evidence_open = false;
                if self.view == View::Help || self.view == View::Explain {
                    self.view = self.prev_view;
                }
            }
            Action::Pause => {
                self.paused = !self.paused;
                if !self.paused {
                    // Resuming follows the shown interval again in the timeline too.
                    self.tl.at_ns = None;
                }
                if self.paused {
                    self.set_cursor(self.position());
                } else if self.is_live() {
                    self.set_cursor(None);
                }
                self.status = Some(if self.paused { "paused" } else { "resumed" }.into());
            }
            Action::Step => {
                self.paused = true;
                self.seek(1, false);
            }
            Action::Slower | Action::Faster if !diff => {
                let ns = self.step_interval(a == Action::Slower);
                if ns != self.interval_ns {
                    self.interval_ns = ns;
                    self.status = Some(format!(
                        "interval {:.2} s (analysis restarted)",
                        ns as f64 / 1e9
                    ));
                    return Effect::Reconfigure {
                        interval_ns: ns,
                        comm: self.comm.clone(),
                    };
                }
            }
            Action::SpeedDown | Action::SpeedUp if matches!(self.source, SourceInfo::Replay(_)) => {
                self.step_speed(a == Action::SpeedUp);
            }
            Action::Filter if !diff => {
                self.typing = Some(self.comm.clone().unwrap_or_default());
            }
            Action::SeriesNext | Action::SeriesPrev if self.view != View::Help => {
                self.series = self.series.step(a == Action::SeriesNext);
                self.status = Some(format!("history: {}", self.series.title()));
            }
            Action::WindowLonger | Action::WindowShorter => {
                let w = history::WINDOWS;
                let next = if a == Action::WindowLonger {
                    w.iter().find(|&&n| n > self.window)
                } else {
                    w.iter().rev().find(|&&n| n < self.window)
                };
                if let Some(&n) = next {
                    self.window = n;
                }
                self.status = Some(format!("history window: {} intervals", self.window));
            }
            _ => {}
        }
        Effect::None
    }
}
