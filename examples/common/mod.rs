//! Shared pieces of the workload generators in `examples/` (not an example itself: Cargo only
//! discovers `examples/*.rs` and `examples/*/main.rs`).
//!
//! Every generator follows the same protocol on stdout/stdin, so that live tests and benchmarks
//! can drive any of them the same way:
//!
//! - `--comm NAME` names the process and every thread NAME (at most 15 bytes, the kernel's
//!   `TASK_COMM_LEN` less the NUL), so a tracer can select the workload's threads by comm.
//! - Once every thread exists and is blocked on the start gate, the program prints
//!   `ready pid=<PID> tids=<main tid>,<worker tids...>` and flushes. With `--gate` it then waits
//!   for a line on stdin (or stdin closing) before opening the gate; without it the gate opens at
//!   once.
//! - When the work is over and all workers are joined it prints
//!   `done tids=<...> <key=value ...>`; with `--hold` it then waits for a line on stdin (or stdin
//!   closing) before exiting.

// Each example uses a different subset of these helpers.
#![allow(dead_code)]

use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::fmt;
use std::io::{self, BufRead, Write};
use std::os::unix::thread::JoinHandleExt;
use std::str::FromStr;
use std::sync::{mpsc, Arc, Condvar, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Longest comm the kernel keeps (`TASK_COMM_LEN` is 16 including the NUL).
pub const COMM_MAX: usize = 15;

/// The options every generator shares; flattened into each program's own `Cli`.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Name (comm) given to the process and to every thread, at most 15 bytes, so that
    /// tracers can select the workload's threads by comm
    #[arg(long, value_name = "NAME", default_value_t = default_comm(), value_parser = parse_comm)]
    pub comm: String,

    /// Once all threads exist and are blocked, print the ready line and wait for a line on
    /// stdin (or stdin closing) before starting the work. Without it the work starts at once
    /// (the ready line is printed all the same)
    #[arg(long)]
    pub gate: bool,

    /// After the done line, keep the process alive until a line is read on stdin or stdin
    /// closes (so a tracer can be stopped while the process still exists)
    #[arg(long)]
    pub hold: bool,
}

/// The program's name with `_` turned into `-` (`wakeup_storm` -> `wakeup-storm`).
fn default_comm() -> String {
    env!("CARGO_BIN_NAME").replace('_', "-")
}

fn parse_comm(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("the name must not be empty".into());
    }
    if s.len() > COMM_MAX {
        return Err(format!(
            "the name is {} bytes long; the kernel keeps at most {COMM_MAX}",
            s.len()
        ));
    }
    if s.contains('\0') {
        return Err("the name must not contain a NUL byte".into());
    }
    Ok(s.to_string())
}

/// The calling thread's kernel thread id.
pub fn gettid() -> i32 {
    // SAFETY: gettid(2) has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Sets the calling thread's comm (for the main thread this is also the process name shown in
/// `/proc/<pid>/comm`).
pub fn set_current_comm(name: &str) -> Result<()> {
    let c = CString::new(name).context("comm contains a NUL byte")?;
    // SAFETY: PR_SET_NAME reads a NUL-terminated string from the pointer in arg2 (at most 16
    // bytes, copied by the kernel); `c` is NUL-terminated and lives across the call.
    let rc = unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error()).context("prctl(PR_SET_NAME)");
    }
    Ok(())
}

/// Sets the comm of another thread of this process.
fn set_thread_comm<T>(handle: &JoinHandle<T>, name: &str) -> Result<()> {
    let c = CString::new(name).context("comm contains a NUL byte")?;
    // SAFETY: the pthread_t comes from a JoinHandle that is not joined or detached yet, so it
    // names a live thread; `c` is NUL-terminated, at most 15 bytes, and lives across the call.
    let rc = unsafe { libc::pthread_setname_np(handle.as_pthread_t(), c.as_ptr()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc)).context("pthread_setname_np");
    }
    Ok(())
}

/// A set of CPUs given as a Linux cpulist: `0`, `0-3`, `0,2,4-7`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }
}

impl FromStr for CpuList {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let setsize = libc::CPU_SETSIZE as usize;
        let num = |t: &str| -> Result<usize, String> {
            let n: usize = t
                .trim()
                .parse()
                .map_err(|_| format!("`{t}` is not a CPU number"))?;
            if n >= setsize {
                return Err(format!("CPU {n} is beyond CPU_SETSIZE ({setsize})"));
            }
            Ok(n)
        };
        let mut cpus = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(format!("empty item in cpulist `{s}`"));
            }
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b {
                        return Err(format!("range `{part}` goes backwards"));
                    }
                    cpus.extend(a..=b);
                }
                None => cpus.push(num(part)?),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList(cpus))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s: Vec<String> = self.0.iter().map(|c| c.to_string()).collect();
        f.write_str(&s.join(","))
    }
}

/// Restricts thread `tid` (0: the calling thread) to `cpus` with sched_setaffinity(2).
pub fn pin(tid: i32, cpus: &CpuList) -> Result<()> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.cpus() {
        // SAFETY: `set` is a valid cpu_set_t and `cpu` < CPU_SETSIZE (checked when parsing).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is an initialised cpu_set_t and the size passed is its size.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error())
            .with_context(|| format!("sched_setaffinity(tid {tid}, CPUs {cpus})"));
    }
    Ok(())
}

/// The start gate: workers block on it (condition variable, no spinning) until it opens, and
/// all get the same start instant.
#[derive(Default)]
struct Gate {
    start: Mutex<Option<Instant>>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) -> Instant {
        let mut start = self.start.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(t) = *start {
                return t;
            }
            start = self
                .opened
                .wait(start)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn open(&self) -> Instant {
        let now = Instant::now();
        *self.start.lock().unwrap_or_else(PoisonError::into_inner) = Some(now);
        self.opened.notify_all();
        now
    }
}

/// The main thread and the workers it creates before the start.
pub struct Crew {
    comm: String,
    gate: Arc<Gate>,
    tids: Vec<i32>,
}

impl Crew {
    /// Names the calling (main) thread, and so the process, `comm`.
    pub fn new(comm: &str) -> Result<Self> {
        set_current_comm(comm)?;
        Ok(Crew {
            comm: comm.to_string(),
            gate: Arc::default(),
            tids: vec![gettid()],
        })
    }

    pub fn comm(&self) -> &str {
        &self.comm
    }

    /// Tids of the main thread and of every worker spawned so far, in spawn order.
    pub fn tids(&self) -> &[i32] {
        &self.tids
    }

    /// Creates a worker named after the crew, pinned to `pin` if given. It blocks on the start
    /// gate and then runs `work(start)`, `start` being the instant the gate opened. Returns once
    /// the thread exists, is named and pinned.
    pub fn spawn<T, F>(&mut self, pin_to: Option<&CpuList>, work: F) -> Result<JoinHandle<T>>
    where
        T: Send + 'static,
        F: FnOnce(Instant) -> T + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        let gate = Arc::clone(&self.gate);
        let handle = thread::Builder::new()
            .name(self.comm.clone())
            .spawn(move || {
                // The receiver waits for this; it cannot be gone before it got it.
                let _ = tx.send(gettid());
                let start = gate.wait();
                work(start)
            })
            .context("spawning a worker thread")?;
        let tid = rx.recv().context("worker thread died before starting")?;
        set_thread_comm(&handle, &self.comm)?;
        if let Some(cpus) = pin_to {
            pin(tid, cpus)?;
        }
        self.tids.push(tid);
        Ok(handle)
    }

    /// Prints the ready line; with `gate`, waits for a line on stdin (or EOF); then opens the
    /// gate and returns the start instant.
    pub fn start(&self, gate: bool) -> Result<Instant> {
        say(&format!(
            "ready pid={} tids={}",
            std::process::id(),
            join_tids(&self.tids)
        ))?;
        if gate {
            wait_stdin_line().context("reading the gate line from stdin")?;
        }
        Ok(self.gate.open())
    }
}

/// `1,2,3`.
pub fn join_tids(tids: &[i32]) -> String {
    let s: Vec<String> = tids.iter().map(|t| t.to_string()).collect();
    s.join(",")
}

/// Writes one line to stdout and flushes it.
pub fn say(line: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .context("writing to stdout")
}

/// Blocks until a line (or EOF) is read from stdin. Stdin's buffer is process-wide, so two
/// lines sent at once serve the gate and then `--hold`.
pub fn wait_stdin_line() -> io::Result<()> {
    let mut buf = Vec::new();
    io::stdin().lock().read_until(b'\n', &mut buf)?;
    Ok(())
}

/// Prints `done tids=<tids> <summary>`; with `hold`, then waits for a line on stdin (or EOF).
pub fn finish(tids: &[i32], summary: &str, hold: bool) -> Result<()> {
    say(&format!("done tids={} {summary}", join_tids(tids)))?;
    if hold {
        wait_stdin_line().context("reading the hold line from stdin")?;
    }
    Ok(())
}

/// Joins a worker, turning a panic into an error.
pub fn join<T>(handle: JoinHandle<T>) -> Result<T> {
    match handle.join() {
        Ok(v) => Ok(v),
        Err(_) => bail!("a worker thread panicked"),
    }
}

/// One unit of busy work: a step of a linear congruential generator the optimiser cannot drop.
#[inline]
pub fn spin_step(x: u64) -> u64 {
    std::hint::black_box(
        x.wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407),
    )
}

/// How many `spin_step`s run between two looks at the clock in [`spin_until`].
pub const STEPS_PER_CHECK: u64 = 1024;

/// Busy-loops until `deadline` (wall clock); returns the number of `spin_step`s done.
pub fn spin_until(deadline: Instant) -> u64 {
    let mut x = 1u64;
    let mut steps = 0u64;
    while Instant::now() < deadline {
        for _ in 0..STEPS_PER_CHECK {
            x = spin_step(x);
        }
        steps += STEPS_PER_CHECK;
    }
    steps
}

/// Busy-loops for `d` of wall-clock time, looking at the clock after every step (for short
/// bursts, where precision matters more than throughput).
pub fn spin_for(d: Duration) {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        x = spin_step(x);
    }
}

/// Milliseconds with three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}
