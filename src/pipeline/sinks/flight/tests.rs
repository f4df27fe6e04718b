//! The flight recorder over a lab recording fed in live-sized batches: each trigger's dump
//! reads back as a recording holding the seconds before it and the finding that fired it;
//! caps, an unwritable directory and a busy writer are counted, never fatal.

use super::*;
use crate::analyze::{Analyzer, AnalyzerConfig};
use crate::record::Reader;

const S: u64 = 1_000_000_000;

fn fixture(name: &str) -> (Header, Vec<Event>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lab")
        .join(name);
    let mut r = Reader::open(&path).expect("fixture");
    let mut events = Vec::new();
    while let Some(c) = r.next_chunk() {
        events.extend(c);
    }
    (r.header().clone(), events)
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lbscope-flight-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn dir(d: &Path, per_hour: u32, max_bytes: u64) -> Destination {
    Destination::Dir {
        dir: d.to_path_buf(),
        max_per_hour: per_hour,
        max_dir_bytes: max_bytes,
    }
}

/// Runs `events` through an analyzer (`interval_ns`) and the recorder in batches of 512,
/// calling `between` after each batch and waiting for dumps in progress; returns the counters after `finish`.
fn run(
    header: &Header,
    events: &[Event],
    triggers: &[&str],
    dest: Destination,
    requests: DumpRequests,
    mut between: impl FnMut(usize, &DumpRequests),
) -> DumpCounters {
    let counters = DumpCounters::default();
    let mut fr = FlightRecorder::new(
        RingLimits {
            span_ns: S,
            max_bytes: 64 << 20,
        },
        triggers
            .iter()
            .map(|t| Trigger::parse(t).unwrap())
            .collect(),
        header.clone(),
        dest,
        requests.clone(),
        counters.clone(),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    let mut a = Analyzer::new(
        header.topology.clone(),
        AnalyzerConfig {
            interval_ns: S / 2,
            model: crate::cli::ModelArgs::default().config(&header.kernel_release),
            ..AnalyzerConfig::default()
        },
    );
    let mut snaps = Vec::new();
    for (i, batch) in events.chunks(512).enumerate() {
        fr.events(batch).unwrap();
        for e in batch {
            a.push(e, &mut snaps);
        }
        for s in snaps.drain(..) {
            fr.snapshot(&s).unwrap();
        }
        between(i, &requests);
        // Live, a dump takes a fraction of the ring's length in wall time; here the events
        // come as fast as memory gives them, so each batch waits for dumps in progress.
        while fr.pending() > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    fr.finish().unwrap();
    counters
}

fn dumps(d: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

fn read_back(p: &Path) -> (Vec<Event>, Vec<crate::analyze::Snapshot>) {
    let src = crate::pipeline::Source::file(p).expect("a dump opens as a recording");
    let (_, snaps, damage) =
        crate::cmd::replay::analyze_recording(src, S / 2, &Default::default(), &Default::default())
            .unwrap();
    assert!(damage.is_clean(), "{}: {damage:?}", p.display());
    let mut r = Reader::open(p).unwrap();
    let mut events = Vec::new();
    while let Some(c) = r.next_chunk() {
        events.extend(c);
    }
    (events, snaps)
}

#[test]
fn a_finding_trigger_dumps_the_second_before_it_with_the_finding_in_its_report() {
    let (h, events) = fixture("6.1-4node-group-imbalance.lbs");
    let d = scratch("finding");
    let c = run(
        &h,
        &events,
        &["missed_pull>=2/s"],
        dir(&d, 100, 1 << 30),
        DumpRequests::default(),
        |_, _| {},
    );
    let files = dumps(&d);
    assert!(
        !files.is_empty(),
        "the group-imbalance run raises missed pulls"
    );
    assert_eq!(c.written_count("missed_pull"), files.len() as u64);
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(is_dump(name) && name.contains("-missed_pull"), "{name}");
        let mode = std::os::unix::fs::PermissionsExt::mode(&f.metadata().unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600, "{name}");
        let (evs, snaps) = read_back(f);
        // The ring's second, plus at most the batch that closed the interval and the
        // prologue stamped at the ring's start.
        let first = evs.first().unwrap().ts_ns;
        let last = evs.last().unwrap().ts_ns;
        assert!(
            last - first <= S + S / 2,
            "{name}: spans {} ns",
            last - first
        );
        assert!(last - first >= S / 2, "{name}: spans {} ns", last - first);
        let found: u64 = snaps
            .iter()
            .map(|s| s.findings_by_kind.get("missed_pull").copied().unwrap_or(0))
            .sum();
        assert!(
            found >= 1,
            "{name}: its report holds the missed pull that fired it"
        );
        // Names come back although most tasks were announced before the ring's start.
        assert!(
            evs.iter()
                .filter(|e| matches!(e.kind, crate::event::EventKind::Task(_)))
                .count()
                > 5,
            "{name}: the prologue names the tasks"
        );
    }
    // Rest for the ring's length: no two dumps of one trigger within a second.
    assert!(files.len() as u64 <= (events.last().unwrap().ts_ns - events[0].ts_ns) / S + 1);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_latency_trigger_and_requests_each_dump() {
    let (h, events) = fixture("6.1-4node-group-imbalance.lbs");
    let d = scratch("latency");
    let c = run(
        &h,
        &events,
        &["p99>=10ms"],
        dir(&d, 100, 1 << 30),
        DumpRequests::default(),
        |i, r| {
            if i == 40 {
                r.request_http();
            }
        },
    );
    assert!(c.written_count("p99") >= 1, "p99 reaches 33 ms in this run");
    assert_eq!(c.written_count("http"), 1);
    let names: Vec<String> = dumps(&d)
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert!(names.iter().any(|n| n.ends_with("-http.lbs")), "{names:?}");
    for p in dumps(&d) {
        let (_, snaps) = read_back(&p);
        assert!(!snaps.is_empty());
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn caps_skip_dumps_and_keep_what_was_written() {
    let (h, events) = fixture("6.12-2s-smt-numa-wakeup-storm.lbs");
    // One a hour: the first kept, the rest counted.
    let d = scratch("hourly");
    let c = run(
        &h,
        &events,
        &["findings>=1/s"],
        dir(&d, 1, 1 << 30),
        DumpRequests::default(),
        |_, _| {},
    );
    assert_eq!(dumps(&d).len(), 1);
    assert!(c.skipped_count("hourly_cap") >= 1);
    let _ = std::fs::remove_dir_all(&d);
    // A directory cap below one dump's size: none kept, no partial file left, counted.
    let d = scratch("dircap");
    let c = run(
        &h,
        &events,
        &["findings>=1/s"],
        dir(&d, 100, 4096),
        DumpRequests::default(),
        |_, _| {},
    );
    assert!(dumps(&d).is_empty(), "{:?}", dumps(&d));
    assert!(c.skipped_count("dir_cap") >= 1);
    let _ = std::fs::remove_dir_all(&d);
    // A cap that holds exactly the first dump: the directory never exceeds it.
    let d = scratch("fit");
    run(
        &h,
        &events,
        &["findings>=1/s"],
        dir(&d, 100, 1 << 30),
        DumpRequests::default(),
        |_, _| {},
    );
    let first = dumps(&d)[0].metadata().unwrap().len();
    let _ = std::fs::remove_dir_all(&d);
    let d = scratch("fit");
    let c = run(
        &h,
        &events,
        &["findings>=1/s"],
        dir(&d, 100, first + first / 2),
        DumpRequests::default(),
        |_, _| {},
    );
    let held: u64 = dumps(&d).iter().map(|p| p.metadata().unwrap().len()).sum();
    assert!(held <= first + first / 2, "{held} bytes held");
    assert!(c.written_count("findings") >= 1 && c.skipped_count("dir_cap") >= 1);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_unwritable_directory_is_counted_and_the_run_goes_on() {
    let (h, events) = fixture("6.1-4node-group-imbalance.lbs");
    let d = scratch("gone");
    let gone = d.join("removed");
    std::fs::create_dir(&gone).unwrap();
    std::fs::remove_dir(&gone).unwrap();
    let mut batches = 0;
    let c = run(
        &h,
        &events,
        &["p99>=10ms"],
        dir(&gone, 100, 1 << 30),
        DumpRequests::default(),
        |_, _| batches += 1,
    );
    assert_eq!(
        batches,
        events.len().div_ceil(512),
        "every batch still went through"
    );
    assert!(c.failed_count() >= 1);
    assert_eq!(c.written_count("p99"), 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn into_one_file_at_the_first_trigger_or_at_the_end() {
    let (h, events) = fixture("6.1-4node-overload.lbs");
    let d = scratch("file");
    let out = d.join("ring.lbs");
    // Nothing fires: the last second at the end.
    let c = run(
        &h,
        &events,
        &[],
        Destination::File(out.clone()),
        DumpRequests::default(),
        |_, _| {},
    );
    assert_eq!(c.written_count("end"), 1);
    let (evs, _) = read_back(&out);
    assert_eq!(evs.last().unwrap().ts_ns, events.last().unwrap().ts_ns);
    assert!(evs.len() < events.len());
    // A request: written then, once.
    let c = run(
        &h,
        &events,
        &[],
        Destination::File(out.clone()),
        DumpRequests::default(),
        |i, r| {
            if i == 10 {
                r.request_http();
            }
        },
    );
    assert_eq!(c.written_count("http"), 1);
    assert_eq!(c.written_count("end"), 0);
    let (evs, _) = read_back(&out);
    assert!(evs.last().unwrap().ts_ns < events.last().unwrap().ts_ns);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn utc_stamps_name_the_civil_time() {
    let t = |s: u64| utc_stamp(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
    assert_eq!(t(0), "19700101T000000Z");
    assert_eq!(t(951_782_400), "20000229T000000Z");
    assert_eq!(t(1_795_638_645), "20261125T203045Z");
}
