//! The event loop and its feeds. One loop owns the [`App`] and a [`Feed`]; between
//! redraws it polls the terminal for keys (with a timeout, so no input thread is needed) and
//! pumps the feed. The live feed owns the pipeline's source and driver and pumps them, the
//! app being its sink; the replay feed walks the snapshots of an analysed recording at the
//! chosen speed.
//! The screen is redrawn only when something changed (a snapshot, a key, a resize).
//! `+`/`-` and `/` reconfigure the live analyzer in place (`Analyzer::reconfigure`); the
//! snapshots received so far stay, with a mark where the settings changed.

use super::app::{App, Effect};
use super::term::{Guard, Palette};
use super::{keymap, timeline, views};
use crate::analyze::timeline::{Timeline, WINDOW_NS};
use crate::analyze::{Analyzer, Filter, Snapshot};
use crate::pipeline::{Driver, Sink, Source};
use crossterm::event::{self, Event};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the loop waits for a key before pumping the feed again, unless the feed says
/// otherwise ([`Feed::tick`]): a replay's steps at its highest speeds come this often.
const TICK: Duration = Duration::from_millis(100);
/// The live feed's longest wait: each wait that ends without a key costs a wakeup (about 40 us
/// of CPU on the 2-vCPU VM of the README: at ten a second, a quarter of what `top` costs on an
/// idle machine), and the collector sends its batches only every half interval.
const LIVE_TICK: Duration = Duration::from_millis(250);
/// Batches folded per pump at most, so keys stay responsive under a burst.
const MAX_BATCHES: usize = 64;

/// Where snapshots come from.
pub trait Feed {
    /// Moves whatever arrived into `app`; true when the screen must be redrawn.
    fn pump(&mut self, app: &mut App) -> bool;
    /// Restarts the analysis with another interval or process-name filter.
    fn reconfigure(&mut self, app: &mut App, interval_ns: u64, comm: Option<String>);
    /// Called once on the way out.
    fn stop(&mut self) {}
    /// How long the loop may wait for a key before pumping again.
    fn tick(&self) -> Duration {
        TICK
    }
}

/// Runs until `q`, Ctrl-C, or `stop` (SIGTERM). The terminal is restored by the guard's
/// owner, whatever happens here.
pub fn run(
    guard: &mut Guard,
    app: &mut App,
    feed: &mut dyn Feed,
    stop: &AtomicBool,
) -> io::Result<()> {
    let pal = Palette::from_env();
    let mut dirty = true;
    // A fault drill: the end-to-end tests make the TUI panic after its first screen to check
    // that the panic hook gives the terminal back.
    let drill = std::env::var_os("LBSCOPE_PANIC_DRILL").is_some();
    let result = loop {
        if stop.load(Ordering::SeqCst) {
            break Ok(());
        }
        if dirty {
            if let Err(e) = guard.term.draw(|f| views::draw(f, app, pal)) {
                break Err(e);
            }
            dirty = false;
            if drill {
                panic!("LBSCOPE_PANIC_DRILL: a panic on purpose, after the first screen");
            }
        }
        match event::poll(feed.tick()) {
            Ok(true) => match event::read() {
                Ok(Event::Key(k)) => {
                    let a = keymap::action(k, app.typing.is_some());
                    match app.handle(a) {
                        Effect::Quit => break Ok(()),
                        Effect::Reconfigure { interval_ns, comm } => {
                            feed.reconfigure(app, interval_ns, comm)
                        }
                        Effect::None => {}
                    }
                    dirty = true;
                }
                Ok(Event::Resize(..)) => {
                    let _ = guard.term.autoresize();
                    dirty = true;
                }
                Ok(_) => {}
                Err(e) => break Err(e),
            },
            Ok(false) => {}
            Err(e) => break Err(e),
        }
        dirty |= feed.pump(app);
    };
    feed.stop();
    result
}

/// The live kernel: the pipeline's driver pumped between redraws, the app a sink.
pub struct LiveFeed {
    src: Source,
    driver: Driver,
    cost: crate::selfcost::SelfCost,
}

impl LiveFeed {
    /// A feed of `src` into `analyzer`.
    pub fn new(src: Source, analyzer: Analyzer) -> Self {
        LiveFeed {
            src,
            driver: Driver::new(analyzer),
            cost: crate::selfcost::SelfCost::default(),
        }
    }
}

/// The app as a sink of the live pipeline.
struct AppSink<'a> {
    app: &'a mut App,
}

impl Sink for AppSink<'_> {
    fn per_event(&self) -> bool {
        self.app.timeline.is_some()
    }

    fn applied(&mut self, ev: &crate::event::Event, analyzer: &Analyzer) -> io::Result<()> {
        if let Some(tl) = self.app.timeline.as_mut() {
            tl.observe(ev, analyzer);
        }
        Ok(())
    }

    fn snapshot(&mut self, s: &Snapshot) -> io::Result<()> {
        self.app.push(s.clone());
        Ok(())
    }

    fn warning(&mut self, w: &str) {
        self.app.status = Some(w.to_string());
    }
}

impl Feed for LiveFeed {
    fn pump(&mut self, app: &mut App) -> bool {
        let mut sink = AppSink { app };
        let p = match self.driver.pump(&self.src, &mut [&mut sink], MAX_BATCHES) {
            Ok(p) => p,
            Err(e) => {
                app.status = Some(format!("the pipeline failed: {e}"));
                return true;
            }
        };
        let mut changed = p.changed;
        let now = std::time::Instant::now();
        if self.cost.due(now) {
            let dir = std::path::Path::new("/proc/self/task");
            if let Some(share) =
                crate::selfcost::process_run_ns(dir).and_then(|run_ns| self.cost.add(now, run_ns))
            {
                app.self_cpu = Some(share);
            }
        }
        if p.ended && !app.ended {
            app.ended = true;
            app.status = Some("the source ended".into());
            changed = true;
        }
        changed
    }

    fn reconfigure(&mut self, app: &mut App, interval_ns: u64, comm: Option<String>) {
        let Some(a) = self.driver.analyzer_mut() else {
            return;
        };
        // The earlier snapshots stay on the charts and for seeking: each carries its own
        // length, and the mark says where the settings changed. The interval open now is
        // dropped by the analyzer; the next starts at its latest event time.
        app.mark_change(a.now_ns());
        let filter = Filter {
            comm,
            ..a.config().filter.clone()
        };
        a.reconfigure(interval_ns, filter);
    }

    fn stop(&mut self) {
        self.src.stop();
    }

    /// A quarter of the interval, at most [`LIVE_TICK`]: an interval's snapshot is on screen
    /// at most that long after the batch that closes it arrived.
    fn tick(&self) -> Duration {
        let interval = self
            .driver
            .analyzer()
            .map_or(1_000_000_000, |a| a.config().interval_ns);
        Duration::from_nanos(interval / 4).clamp(Duration::from_millis(10), LIVE_TICK)
    }
}

/// A feed with nothing to feed: what the screen shows was computed before it opened (a
/// diff).
pub struct NoFeed;

impl Feed for NoFeed {
    fn pump(&mut self, _app: &mut App) -> bool {
        false
    }
    fn reconfigure(&mut self, _app: &mut App, _ns: u64, _comm: Option<String>) {}
}

/// A recording: every snapshot computed up front, shown one by one at the replay speed.
/// `F` re-runs the analysis with a new interval and filter (`+`/`-` and `/`).
pub struct ReplayFeed<'a, F> {
    reanalyze: F,
    last: Instant,
    retimeline: Option<Retimeline<'a>>,
}

/// Builds the timeline of a recording's clip `[lo, hi)`, and the clip the app's holds.
pub struct Retimeline<'a> {
    /// Reads the recording again for the clip.
    pub build: Box<dyn FnMut(u64, u64) -> Result<Timeline, String> + 'a>,
    /// The span the app's timeline covers (`(0, u64::MAX)`: all of it).
    pub covered: (u64, u64),
}

impl<'a, F> ReplayFeed<'a, F>
where
    F: FnMut(u64, Option<String>) -> Result<Vec<Snapshot>, String>,
{
    /// A feed that advances the cursor of an app whose history holds the whole recording.
    pub fn new(reanalyze: F) -> Self {
        ReplayFeed {
            reanalyze,
            last: Instant::now(),
            retimeline: None,
        }
    }

    /// Moves the app's timeline clip with the screen.
    pub fn with_timeline(mut self, r: Retimeline<'a>) -> Self {
        self.retimeline = Some(r);
        self
    }

    /// Rebuilds the timeline when the screen needs a time its clip lacks; true if it did.
    fn follow_clip(&mut self, app: &mut App) -> bool {
        let (Some(r), Some(want)) = (self.retimeline.as_mut(), timeline::wanted_ns(app)) else {
            return false;
        };
        let margin = WINDOW_NS / 4;
        let (lo, hi) = r.covered;
        if (lo == 0 || want >= lo.saturating_add(margin))
            && (hi == u64::MAX || want.saturating_add(margin) < hi)
        {
            return false;
        }
        let clip = (want.saturating_sub(WINDOW_NS / 2), want + WINDOW_NS / 2);
        let first = app.history.front().map_or(0, |s| s.t_start_ns);
        let last = app.history.back().map_or(u64::MAX, |s| s.t_end_ns);
        r.covered = (
            if clip.0 <= first { 0 } else { clip.0 },
            if clip.1 >= last { u64::MAX } else { clip.1 },
        );
        match (r.build)(clip.0, clip.1) {
            Ok(tl) => app.timeline = Some(tl),
            Err(e) => app.status = Some(e),
        }
        true
    }
}

impl<F> Feed for ReplayFeed<'_, F>
where
    F: FnMut(u64, Option<String>) -> Result<Vec<Snapshot>, String>,
{
    fn pump(&mut self, app: &mut App) -> bool {
        if self.follow_clip(app) {
            return true;
        }
        let Some(pos) = app.position() else {
            return false;
        };
        let at_end = pos + 1 >= app.history.len();
        if app.ended != at_end {
            app.ended = at_end;
            return true;
        }
        if app.paused || at_end {
            self.last = Instant::now();
            return false;
        }
        let len = app.history[pos].len_ns().max(1) as f64;
        let due = Duration::from_secs_f64(len / 1e9 / app.speed.max(0.01));
        if self.last.elapsed() < due {
            return false;
        }
        self.last = Instant::now();
        app.set_cursor(Some(pos + 1));
        true
    }

    fn reconfigure(&mut self, app: &mut App, interval_ns: u64, comm: Option<String>) {
        let t = app.current().map(|s| s.t_end_ns);
        match (self.reanalyze)(interval_ns, comm) {
            Ok(snaps) => app.replace_history(snaps, t),
            Err(e) => app.status = Some(e),
        }
    }
}
