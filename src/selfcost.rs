//! lbscope's own cost: the CPU time of every thread of this process (the collector, the
//! analyzer, the drawing or the HTTP server), for `top`'s title line as a share of one core
//! over the last [`WINDOW`] seconds of wall time, and for `serve`'s metrics as a total. The run time comes from `/proc/self/task/*/schedstat`,
//! the scheduler's own nanosecond count (utime and stime count whole ticks, a tenth of the
//! figure at this size). The BPF programs are not in it: they run in the traced tasks and are
//! charged to them (`tests/bench/handlers` measures them). A running thread's count is
//! brought up to date at the scheduler's next tick or switch: the figure lags by at most a
//! tick of the thread that reads it.
//!
//! Memory: [`WINDOW`] + 1 samples.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

/// Seconds the share is averaged over: the collector drains every half interval, so a
/// window of one second would swing with how many drains fell in it.
pub const WINDOW: u32 = 5;

/// How often the process's run time is read.
const PERIOD: Duration = Duration::from_secs(1);

/// The run time of one thread in ns: the first field of its `schedstat`.
pub fn parse_schedstat(s: &str) -> Option<u64> {
    s.split_whitespace().next()?.parse().ok()
}

/// The run time of every thread of the process whose `task` directory is `dir`, in ns;
/// `None` when the directory cannot be read (no procfs, or schedstats not built in). A
/// thread that ends between the listing and its read is left out.
pub fn process_run_ns(dir: &Path) -> Option<u64> {
    let mut sum = 0u64;
    let mut any = false;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        if let Some(ns) = std::fs::read_to_string(e.path().join("schedstat"))
            .ok()
            .as_deref()
            .and_then(parse_schedstat)
        {
            sum = sum.saturating_add(ns);
            any = true;
        }
    }
    any.then_some(sum)
}

/// The kernel's unit for times in `/proc/PID/stat` (USER_HZ, 100 on every Linux ABI).
const USER_HZ: u64 = 100;

/// The CPU time of a whole process from its `/proc/PID/stat` text, in ns: utime + stime,
/// which (unlike the threads' `schedstat`) keep the time of threads that have ended, in
/// 10 ms units.
pub fn parse_stat_cpu_ns(stat: &str) -> Option<u64> {
    // The name (field 2) may hold spaces and parentheses: the fields after it start past
    // the last ')'. utime and stime are fields 14 and 15, the 12th and 13th after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((utime + stime) * (1_000_000_000 / USER_HZ))
}

/// This process's CPU time so far, every thread that ever ran in it (see
/// [`parse_stat_cpu_ns`]).
pub fn process_cpu_ns() -> Option<u64> {
    parse_stat_cpu_ns(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// Percent of one core: `cpu_ns` of run time over `wall` of wall time.
pub fn percent_of_core(cpu_ns: u64, wall: Duration) -> Option<f64> {
    let wall_ns = wall.as_nanos();
    (wall_ns > 0).then(|| cpu_ns as f64 * 100.0 / wall_ns as f64)
}

/// The samples of the window, and the share they give.
#[derive(Debug, Default)]
pub struct SelfCost {
    samples: VecDeque<(Instant, u64)>,
}

impl SelfCost {
    /// Takes a sample at `now` of `run_ns` (the process's run time so far) when [`PERIOD`]
    /// has passed since the last one; returns the share of one core over the window so far
    /// (from the oldest sample kept), once there are two samples (a [`PERIOD`] apart at least).
    pub fn add(&mut self, now: Instant, run_ns: u64) -> Option<f64> {
        if self
            .samples
            .back()
            .is_some_and(|(t, _)| now.saturating_duration_since(*t) < PERIOD)
        {
            return None;
        }
        self.samples.push_back((now, run_ns));
        while self.samples.len() > WINDOW as usize + 1 {
            self.samples.pop_front();
        }
        if self.samples.len() < 2 {
            return None;
        }
        let (t0, r0) = *self.samples.front()?;
        percent_of_core(run_ns.saturating_sub(r0), now.saturating_duration_since(t0))
    }

    /// Whether a sample is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.samples
            .back()
            .is_none_or(|(t, _)| now.saturating_duration_since(*t) >= PERIOD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_its_first_field() {
        assert_eq!(parse_schedstat("123456789 2000 17\n"), Some(123_456_789));
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat("x 1 2"), None);
    }

    #[test]
    fn stat_gives_utime_plus_stime_past_an_odd_name() {
        let line = "4242 (a) b (c) R 1 4242 4242 0 -1 4194560 100 0 0 0 250 37 0 0 20 0 3 0 \
                    999 1000 200 18446744073709551615";
        assert_eq!(parse_stat_cpu_ns(line), Some(287 * 10_000_000));
        assert_eq!(parse_stat_cpu_ns("4242 (x) R 1"), None);
        assert!(process_cpu_ns().is_some());
    }

    #[test]
    fn the_share_is_over_the_window_and_waits_for_a_second() {
        let t0 = Instant::now();
        let s = |secs: f64| t0 + Duration::from_secs_f64(secs);
        let mut c = SelfCost::default();
        assert_eq!(c.add(s(0.0), 1_000_000_000), None, "one sample: no share");
        assert!(!c.due(s(0.5)));
        assert_eq!(c.add(s(0.5), 1_005_000_000), None, "too soon: not taken");
        assert!(c.due(s(1.0)));
        // 10 ms of run time in 1 s: 1% of a core.
        let p = c.add(s(1.0), 1_010_000_000).unwrap();
        assert!((p - 1.0).abs() < 1e-9, "{p}");
        // Then 10 ms a second, and a burst of 90 ms.
        for (i, run_ms) in [1_020u64, 1_030, 1_040, 1_130].into_iter().enumerate() {
            assert!(c.add(s(2.0 + i as f64), run_ms * 1_000_000).is_some());
        }
        let p = c.add(s(6.0), 1_140_000_000).unwrap();
        // The window is the last 5 s: from the sample at 1.0 s (1,010 ms) to 1,140 ms.
        assert!((p - 130.0 / 5000.0 * 100.0).abs() < 1e-9, "{p}");
    }

    /// A busy child's run time by its threads' schedstat agrees with its utime + stime (the
    /// kernel's two counts, one exact and one in ticks) once it has run 200 ms.
    #[test]
    fn a_busy_process_run_time_by_both_counts() {
        if !Path::new("/proc/self/task").exists() {
            assert!(std::env::var_os("CI").is_none(), "no procfs in CI");
            return;
        }
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        let dir = format!("/proc/{}/task", child.id());
        let stat = format!("/proc/{}/stat", child.id());
        let deadline = Instant::now() + Duration::from_secs(30);
        let run = loop {
            let run = process_run_ns(Path::new(&dir)).expect("the child's schedstat");
            if run >= 200_000_000 || Instant::now() > deadline {
                break run;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let ticks = std::fs::read_to_string(&stat)
            .ok()
            .and_then(|s| parse_stat_cpu_ns(&s))
            .expect("the child's stat");
        let _ = child.kill();
        let _ = child.wait();
        assert!(run >= 200_000_000, "the child ran {run} ns in 30 s");
        let diff = run.abs_diff(ticks);
        assert!(
            diff <= 30_000_000 + run / 10,
            "schedstat {run} ns, utime+stime {ticks} ns"
        );
    }
}
