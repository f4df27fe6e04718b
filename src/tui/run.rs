//! The event loop and its feeds. One loop owns the [`App`] and a [`Feed`]; between
//! redraws it polls the terminal for keys (with a timeout, so no input thread is needed) and
//! pumps the feed. The live feed owns the [`Analyzer`] and drains the source channel into
//! it; the replay feed walks the snapshots of an analysed recording at the chosen speed.
//! The screen is redrawn only when something changed (a snapshot, a key, a resize).
//! A restarted live analysis is first told what the source sent only once (`carry`).

use super::app::{App, Effect};
use super::carry::Carry;
use super::tally::{Analysed, Tally};
use super::term::{Guard, Palette};
use super::{keymap, views};
use crate::analyze::{Analyzer, AnalyzerConfig, Filter, Snapshot};
use crate::source::SourceMsg;
use crossterm::event::{self, Event};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

/// How long the loop waits for a key before pumping the feed again.
const TICK: Duration = Duration::from_millis(100);
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
        match event::poll(TICK) {
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

/// The live kernel: the source channel folded into an analyzer owned here.
pub struct LiveFeed<'a> {
    /// The source's channel.
    pub rx: &'a Receiver<SourceMsg>,
    /// The analysis.
    pub analyzer: Analyzer,
    /// Asks the source to stop.
    pub request_stop: &'a mut dyn FnMut(),
    snaps: Vec<Snapshot>,
    carry: Carry,
    tally: Tally,
}

impl<'a> LiveFeed<'a> {
    /// A feed over `rx` into `analyzer`.
    pub fn new(
        rx: &'a Receiver<SourceMsg>,
        analyzer: Analyzer,
        request_stop: &'a mut dyn FnMut(),
    ) -> Self {
        LiveFeed {
            tally: Tally::new(analyzer.config().filter.clone()),
            rx,
            analyzer,
            request_stop,
            snaps: Vec::new(),
            carry: Carry::default(),
        }
    }
}

impl Feed for LiveFeed<'_> {
    fn pump(&mut self, app: &mut App) -> bool {
        let mut changed = false;
        for _ in 0..MAX_BATCHES {
            match self.rx.try_recv() {
                Ok(SourceMsg::Batch(evs)) => {
                    for ev in evs.iter() {
                        self.carry.observe(ev);
                        self.tally.observe(ev);
                        self.analyzer.push(ev, &mut self.snaps);
                    }
                }
                Ok(SourceMsg::Warning(w)) => {
                    app.status = Some(w);
                    changed = true;
                }
                Ok(SourceMsg::End) | Err(TryRecvError::Disconnected) => {
                    if !app.ended {
                        app.ended = true;
                        app.status = Some("the source ended".into());
                        changed = true;
                    }
                    break;
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        for s in self.snaps.drain(..) {
            let top = self.tally.close(&s);
            app.push_with(s, top);
            changed = true;
        }
        changed
    }

    fn reconfigure(&mut self, app: &mut App, interval_ns: u64, comm: Option<String>) {
        // Snapshots of the old configuration would mix with the new ones: start afresh.
        app.clear_history();
        let cfg = self.analyzer.config();
        let filter = Filter {
            comm,
            ..cfg.filter.clone()
        };
        let mut fresh = Analyzer::new(
            self.analyzer.topology().clone(),
            AnalyzerConfig {
                interval_ns,
                filter,
                model: cfg.model.clone(),
            },
        );
        self.carry.replay_into(&mut fresh, self.analyzer.now_ns());
        self.tally.set_filter(fresh.config().filter.clone());
        self.analyzer = fresh;
    }

    fn stop(&mut self) {
        (self.request_stop)();
    }
}

/// A recording: every snapshot computed up front, shown one by one at the replay speed.
/// `F` re-runs the analysis with a new interval and filter (`+`/`-` and `/`).
pub struct ReplayFeed<F> {
    reanalyze: F,
    last: Instant,
}

impl<F> ReplayFeed<F>
where
    F: FnMut(u64, Option<String>) -> Result<Analysed, String>,
{
    /// A feed that advances the cursor of an app whose history holds the whole recording.
    pub fn new(reanalyze: F) -> Self {
        ReplayFeed {
            reanalyze,
            last: Instant::now(),
        }
    }
}

impl<F> Feed for ReplayFeed<F>
where
    F: FnMut(u64, Option<String>) -> Result<Analysed, String>,
{
    fn pump(&mut self, app: &mut App) -> bool {
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
        app.cursor = Some(pos + 1);
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
