//! The driver over real sources: the count, a stop request, the pump, per-event sinks, and
//! batches reaching sinks before (and beyond) the analyzer.

use super::*;
use crate::analyze::{AnalyzerConfig, Snapshot};
use crate::event::{Event, EventKind};
use crate::pipeline::sinks::History;
use crate::source::synthetic::SyntheticConfig;
use std::path::PathBuf;

/// Counts what a sink is handed.
#[derive(Default)]
struct Seen {
    events: u64,
    applied: u64,
    snapshots: u64,
    finished: bool,
    per_event: bool,
}

impl Sink for Seen {
    fn events(&mut self, batch: &[Event]) -> io::Result<()> {
        self.events += batch.len() as u64;
        Ok(())
    }
    fn per_event(&self) -> bool {
        self.per_event
    }
    fn applied(&mut self, _ev: &Event, _a: &Analyzer) -> io::Result<()> {
        self.applied += 1;
        Ok(())
    }
    fn snapshot(&mut self, _s: &Snapshot) -> io::Result<()> {
        self.snapshots += 1;
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        self.finished = true;
        Ok(())
    }
}

fn synthetic(events: u64) -> Source {
    Source::synthetic(SyntheticConfig {
        cpus: 8,
        tasks: 64,
        rate: 1_000_000,
        events: Some(events),
        ..SyntheticConfig::default()
    })
}

fn analyzer(src: &Source, interval_ns: u64) -> Analyzer {
    Analyzer::new(
        src.topology().clone(),
        AnalyzerConfig {
            interval_ns,
            ..AnalyzerConfig::default()
        },
    )
}

fn golden() -> Source {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/golden-v1.lbs");
    Source::file(&p).expect("the golden recording opens")
}

#[test]
fn a_run_delivers_every_interval_and_the_partial_one_then_finishes() {
    let src = synthetic(200_000);
    let mut d = Driver::new(analyzer(&src, 10_000_000));
    let (mut seen, mut hist) = (Seen::default(), History::default());
    let ended = d.run(&src, &mut [&mut seen, &mut hist], &AtomicBool::new(false));
    assert_eq!(ended.unwrap(), Ended::SourceEnded);
    assert_eq!(seen.events, src.finish().generated);
    assert!(seen.finished);
    assert_eq!(seen.snapshots, hist.0.len() as u64);
    assert!(hist.0.len() >= 3, "{} intervals", hist.0.len());
    assert!(
        hist.0.last().unwrap().partial,
        "the partial interval closes the run"
    );
    let total: u64 = hist.0.iter().map(|s| s.events).sum();
    assert!(total > 0 && total <= seen.events);
}

#[test]
fn the_count_stops_the_analysis_but_not_the_sinks_that_read_events() {
    let src = synthetic(300_000);
    let mut d = Driver::new(analyzer(&src, 5_000_000)).count(Some(2));
    let mut seen = Seen::default();
    let ended = d
        .run(&src, &mut [&mut seen], &AtomicBool::new(false))
        .unwrap();
    assert_eq!(ended, Ended::Count);
    assert_eq!(seen.snapshots, 2);
    assert_eq!(d.delivered(), 2);
    // The source was asked to stop; what it had sent still reached the event sinks.
    let generated = src.finish().generated;
    assert_eq!(seen.events, generated);
}

/// Raises the stop flag once it has seen events (Ctrl-C during a run).
struct StopAfterFirst<'a>(&'a AtomicBool);

impl Sink for StopAfterFirst<'_> {
    fn events(&mut self, _batch: &[Event]) -> io::Result<()> {
        self.0.store(true, Ordering::SeqCst);
        Ok(())
    }
}

#[test]
fn a_stop_request_drains_the_source_and_flushes_the_partial_interval() {
    let src = synthetic(u64::MAX);
    let mut d = Driver::new(analyzer(&src, u64::MAX / 4));
    let (stop, mut hist, mut seen) = (AtomicBool::new(false), History::default(), Seen::default());
    let mut stopper = StopAfterFirst(&stop);
    let ended = d
        .run(&src, &mut [&mut stopper, &mut hist, &mut seen], &stop)
        .unwrap();
    assert_eq!(ended, Ended::Stopped);
    assert_eq!(hist.0.len(), 1, "only the partial interval");
    assert!(hist.0[0].partial);
    // Everything the generator sent before it saw the request reached the sinks.
    assert_eq!(seen.events, src.finish().generated);
    // The analyzer folded them all (its count leaves out each batch's closing clock tick).
    assert!(hist.0[0].events > 0 && hist.0[0].events <= seen.events);
}

#[test]
fn pump_takes_what_arrived_and_says_when_the_source_ended() {
    // The same recording run and pumped: the pump gives every full interval, no partial one.
    let src = golden();
    let mut run = History::default();
    Driver::new(analyzer(&src, 1_000_000_000))
        .run(&src, &mut [&mut run], &AtomicBool::new(false))
        .unwrap();
    let src = golden();
    let mut d = Driver::new(analyzer(&src, 1_000_000_000));
    let mut pumped = History::default();
    let mut ended = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let p = d.pump(&src, &mut [&mut pumped], 4).unwrap();
        if p.ended {
            ended = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(ended, "the source ended");
    assert_eq!(pumped.0.len() + 1, run.0.len());
    assert_eq!(pumped.0[..], run.0[..run.0.len() - 1]);
}

#[test]
fn per_event_sinks_see_every_event_after_the_analyzer() {
    let src = golden();
    let mut d = Driver::new(analyzer(&src, 1_000_000_000));
    let (mut each, mut batch) = (
        Seen {
            per_event: true,
            ..Seen::default()
        },
        Seen::default(),
    );
    d.run(&src, &mut [&mut each, &mut batch], &AtomicBool::new(false))
        .unwrap();
    assert!(each.events > 100);
    assert_eq!(each.applied, each.events);
    assert_eq!(
        batch.applied, 0,
        "a sink that did not ask is not called per event"
    );
}

#[test]
fn without_an_analyzer_only_event_sinks_run_and_losses_are_counted() {
    let src = golden();
    let mut d = Driver::without_analyzer();
    let mut seen = Seen::default();
    let mut lost = 0;
    struct Lost<'a>(&'a mut u64);
    impl Sink for Lost<'_> {
        fn events(&mut self, batch: &[Event]) -> io::Result<()> {
            for e in batch {
                if let EventKind::Lost { count } = e.kind {
                    *self.0 += count;
                }
            }
            Ok(())
        }
    }
    d.run(
        &src,
        &mut [&mut seen, &mut Lost(&mut lost)],
        &AtomicBool::new(false),
    )
    .unwrap();
    assert!(seen.events > 100);
    assert_eq!(seen.snapshots, 0);
    assert_eq!(d.lost_events(), lost);
}
