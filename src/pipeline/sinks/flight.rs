//! The flight recorder sink (`serve --ring`, `record --ring`): every batch into a
//! [`Ring`] of the last seconds; at a [`Trigger`] (judged on each closed interval), SIGUSR1
//! or an HTTP request, the ring becomes an ordinary recording.
//!
//! Into a directory (`serve`): dumps are written by a thread of their own, so the pipeline
//! never waits for the disk, named `lbscope-<UTC time>-<trigger>.lbs`, mode 0600. A dump is
//! first written under a hidden temporary name and renamed when whole, so the directory never
//! holds half a dump, and it is kept only while the directory's dumps stay within their size
//! cap; at most `max_per_hour` are kept in any hour. A trigger that fired rests for the
//! ring's length, so its dumps do not overlap. Disk full, an unwritable directory or a cap
//! reached is logged and counted, and the pipeline goes on; no dump once written is removed.
//!
//! Into one file (`record --ring`): the ring is written at the first trigger (then the run
//! stops) or, when none fired, at the end.

use super::DumpCounters;
use crate::analyze::Snapshot;
use crate::event::Event;
use crate::flight::{Ring, RingLimits, Trigger};
use crate::pipeline::Sink;
use crate::record::{Header, Writer};
use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Where dumps go.
#[derive(Clone, Debug)]
pub enum Destination {
    /// Each dump a new file in `dir`, within the caps.
    Dir {
        dir: PathBuf,
        max_per_hour: u32,
        max_dir_bytes: u64,
    },
    /// One dump into this file, then the run stops.
    File(PathBuf),
}

/// Dump requests from outside the pipeline: SIGUSR1 and `POST /dump`.
#[derive(Clone, Debug, Default)]
pub struct DumpRequests {
    signal: Arc<AtomicBool>,
    http: Arc<AtomicBool>,
}

impl DumpRequests {
    /// Requests a dump on each SIGUSR1.
    pub fn on_sigusr1(&self) -> io::Result<()> {
        signal_hook::flag::register(signal_hook::consts::SIGUSR1, self.signal.clone()).map(|_| ())
    }

    /// Requests a dump (an HTTP POST).
    pub fn request_http(&self) {
        self.http.store(true, Ordering::Relaxed);
    }

    fn take(&self) -> Option<&'static str> {
        if self.signal.swap(false, Ordering::Relaxed) {
            Some("signal")
        } else if self.http.swap(false, Ordering::Relaxed) {
            Some("http")
        } else {
            None
        }
    }
}

/// A dump to write: the ring's prologue and batches, shared with the ring.
struct Job {
    /// What fired: a trigger's slug, several joined by `+` when they fired together.
    slug: String,
    why: String,
    prologue: Vec<Event>,
    batches: Vec<Arc<[Event]>>,
}

impl Job {
    /// Counts the dump under each trigger that fired it.
    fn count_written(&self, counters: &DumpCounters) {
        for slug in self.slug.split('+') {
            counters.written(slug);
        }
    }

    fn events(&self) -> u64 {
        self.prologue.len() as u64 + self.batches.iter().map(|b| b.len() as u64).sum::<u64>()
    }

    /// Writes the dump to `path` (created 0600), returning its size.
    fn write(&self, path: &Path, header: &Header) -> Result<u64, crate::record::RecordError> {
        let mut w = Writer::create(path, header)?;
        w.write_events(&self.prologue)?;
        for b in &self.batches {
            w.write_events(b)?;
        }
        Ok(w.finish()?.bytes)
    }
}

/// The flight recorder.
pub struct FlightRecorder {
    ring: Ring,
    span_ns: u64,
    header: Header,
    /// Each trigger with the event time it last fired.
    triggers: Vec<(Trigger, Option<u64>)>,
    requests: DumpRequests,
    counters: DumpCounters,
    out: Out,
}

enum Out {
    Dir {
        jobs: Option<SyncSender<Job>>,
        worker: Option<std::thread::JoinHandle<()>>,
        /// Jobs handed to the worker and not yet done.
        pending: Arc<AtomicUsize>,
    },
    File {
        path: PathBuf,
        stop: Arc<AtomicBool>,
        written: bool,
    },
}

impl FlightRecorder {
    /// A recorder keeping `limits` of events, dumping recordings headed `header` to `dest`
    /// when one of `triggers` fires or `requests` asks; `stop` is raised after a
    /// [`Destination::File`] dump. `counters` count dumps, skips and failures.
    pub fn new(
        limits: RingLimits,
        triggers: Vec<Trigger>,
        header: Header,
        dest: Destination,
        requests: DumpRequests,
        counters: DumpCounters,
        stop: Arc<AtomicBool>,
    ) -> io::Result<FlightRecorder> {
        let out = match dest {
            Destination::File(path) => Out::File {
                path,
                stop,
                written: false,
            },
            Destination::Dir {
                dir,
                max_per_hour,
                max_dir_bytes,
            } => {
                let (tx, rx) = sync_channel::<Job>(1);
                let pending = Arc::new(AtomicUsize::new(0));
                let done = pending.clone();
                let mut w = DirWriter {
                    dir,
                    max_per_hour,
                    max_dir_bytes,
                    header: header.clone(),
                    counters: counters.clone(),
                    kept: VecDeque::new(),
                };
                let worker = std::thread::Builder::new()
                    .name("lbscope-dump".into())
                    .spawn(move || {
                        for job in rx {
                            w.dump(&job);
                            done.fetch_sub(1, Ordering::Release);
                        }
                    })?;
                Out::Dir {
                    jobs: Some(tx),
                    worker: Some(worker),
                    pending,
                }
            }
        };
        Ok(FlightRecorder {
            ring: Ring::new(limits),
            span_ns: limits.span_ns,
            header,
            triggers: triggers.into_iter().map(|t| (t, None)).collect(),
            requests,
            counters,
            out,
        })
    }

    /// Hands the ring to the destination.
    fn dump(&mut self, slug: String, why: String) -> io::Result<()> {
        let job = Job {
            slug,
            why,
            prologue: self.ring.prologue(),
            batches: self.ring.batches(),
        };
        match &mut self.out {
            Out::Dir { jobs, pending, .. } => {
                let Some(tx) = jobs else { return Ok(()) };
                pending.fetch_add(1, Ordering::Acquire);
                match tx.try_send(job) {
                    Ok(()) => {}
                    Err(TrySendError::Full(job)) => {
                        pending.fetch_sub(1, Ordering::Release);
                        eprintln!(
                            "lbscope: dump on {} ({}) skipped: the previous dump is still being written",
                            job.slug, job.why
                        );
                        self.counters.skipped("busy");
                    }
                    Err(TrySendError::Disconnected(_)) => {
                        pending.fetch_sub(1, Ordering::Release);
                        self.counters.failed();
                    }
                }
            }
            Out::File {
                path,
                stop,
                written,
            } => {
                if *written {
                    return Ok(());
                }
                *written = true;
                let bytes = job.write(path, &self.header).map_err(io::Error::other)?;
                job.count_written(&self.counters);
                eprintln!(
                    "lbscope: wrote the last {:.1} s ({} events, {bytes} bytes) to {} on {}",
                    self.ring.span_ns() as f64 / 1e9,
                    job.events(),
                    path.display(),
                    job.why
                );
                stop.store(true, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Dumps handed to the writing thread and not yet written (0 into a file).
    pub fn pending(&self) -> usize {
        match &self.out {
            Out::Dir { pending, .. } => pending.load(Ordering::Acquire),
            Out::File { .. } => 0,
        }
    }

    fn take_request(&mut self) -> io::Result<()> {
        if let Some(slug) = self.requests.take() {
            let why = match slug {
                "signal" => "SIGUSR1".to_string(),
                _ => "POST /dump".to_string(),
            };
            self.dump(slug.into(), why)?;
        }
        Ok(())
    }
}

impl Sink for FlightRecorder {
    fn events(&mut self, batch: &[Event]) -> io::Result<()> {
        self.ring.push(batch);
        self.counters.ring(self.ring.bytes(), self.ring.span_ns());
        self.take_request()
    }

    fn snapshot(&mut self, s: &Snapshot) -> io::Result<()> {
        // Triggers that fire in the same interval share one dump.
        let span = self.span_ns;
        let mut slugs = Vec::new();
        let mut whys = Vec::new();
        for (t, last) in &mut self.triggers {
            if last.is_some_and(|at| s.t_end_ns < at.saturating_add(span)) {
                continue;
            }
            if let Some(why) = t.fired(s) {
                *last = Some(s.t_end_ns);
                if !slugs.contains(&t.slug()) {
                    slugs.push(t.slug());
                }
                whys.push(why);
            }
        }
        if !slugs.is_empty() {
            self.dump(slugs.join("+"), whys.join("; "))?;
        }
        self.take_request()
    }

    fn finish(&mut self) -> io::Result<()> {
        match &mut self.out {
            Out::Dir { jobs, worker, .. } => {
                // Dumps in progress are finished before the run ends.
                jobs.take();
                if let Some(w) = worker.take() {
                    let _ = w.join();
                }
                Ok(())
            }
            Out::File { written, .. } if !*written => {
                self.dump("end".into(), "the run's end".into())
            }
            Out::File { .. } => Ok(()),
        }
    }
}

/// Writes dumps into a directory, within its caps.
struct DirWriter {
    dir: PathBuf,
    max_per_hour: u32,
    max_dir_bytes: u64,
    header: Header,
    counters: DumpCounters,
    /// When each dump of the last hour was kept.
    kept: VecDeque<Instant>,
}

/// Dumps in a directory are the files named `lbscope-*.lbs`.
fn is_dump(name: &str) -> bool {
    name.starts_with("lbscope-") && name.ends_with(".lbs")
}

impl DirWriter {
    fn dump(&mut self, job: &Job) {
        let hour = Duration::from_secs(3600);
        while self.kept.front().is_some_and(|t| t.elapsed() >= hour) {
            self.kept.pop_front();
        }
        if self.kept.len() >= self.max_per_hour as usize {
            eprintln!(
                "lbscope: dump on {} skipped: {} dumps in the last hour (--max-dumps-per-hour)",
                job.why, self.max_per_hour
            );
            self.counters.skipped("hourly_cap");
            return;
        }
        let name = self.name(&job.slug);
        let tmp = self.dir.join(format!(".{name}.partial"));
        let bytes = match job.write(&tmp, &self.header) {
            Ok(b) => b,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                eprintln!("lbscope: dump on {} failed: {e}", job.why);
                self.counters.failed();
                return;
            }
        };
        let held = dir_bytes(&self.dir);
        if held.saturating_add(bytes) > self.max_dir_bytes {
            let _ = std::fs::remove_file(&tmp);
            eprintln!(
                "lbscope: dump on {} skipped: {} already holds {held} bytes of dumps and this one has {bytes} (--dump-dir-max-mb)",
                job.why,
                self.dir.display()
            );
            self.counters.skipped("dir_cap");
            return;
        }
        let path = self.dir.join(&name);
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            eprintln!(
                "lbscope: dump on {} failed: {}: {e}",
                job.why,
                path.display()
            );
            self.counters.failed();
            return;
        }
        self.kept.push_back(Instant::now());
        job.count_written(&self.counters);
        eprintln!(
            "lbscope: dump {} ({} events, {bytes} bytes) on {}",
            path.display(),
            job.events(),
            job.why
        );
    }

    /// `lbscope-20261125T083000Z-missed_pull.lbs` (`-missed_pull+p99` when both fired), with
    /// `-2`, `-3` ... when taken.
    fn name(&self, slug: &str) -> String {
        let stamp = utc_stamp(SystemTime::now());
        let mut name = format!("lbscope-{stamp}-{slug}.lbs");
        let mut n = 2;
        while self.dir.join(&name).exists() {
            name = format!("lbscope-{stamp}-{slug}-{n}.lbs");
            n += 1;
        }
        name
    }
}

/// Bytes of the dumps in `dir` (unreadable entries count 0).
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_dump))
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// `YYYYMMDDTHHMMSSZ` of `t` in UTC.
fn utc_stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let c = crate::civil::civil(secs);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

#[cfg(test)]
mod tests;
