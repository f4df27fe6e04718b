//! `spin`: N busy-looping threads for a fixed time, optionally pinned.
//!
//! Reproduces run-queue overload: with `--threads 4 --pin 0` every thread is runnable on CPU 0
//! all the time while the other CPUs cannot take any of them, so idle-while-others-wait time and
//! run-queue latency on CPU 0 go to nearly 100%. Unpinned, it is plain CPU-bound load the
//! balancer has to spread evenly.
//!
//! With `--touch-mb`, every worker also writes all over one shared buffer that the main thread
//! first touched on the `--pin` CPUs: automatic NUMA balancing then sees one group of threads
//! sharing memory on that node and pulls them toward it, against the load balancer (the
//! uneven spread of a job's threads over nodes).
//!
//! With `--step-ms`, the workers are a bulk-synchronous job (an OpenMP loop, a build's
//! parallel phase): each step is a fixed amount of CPU time, then every worker waits at a
//! barrier for the others. A worker that shares its CPU with another task needs twice the wall
//! time for its step, and every other worker idles at the barrier meanwhile: the cost of a
//! job's thread left behind a busy CPU (the group-imbalance case) shows as fewer steps.
//!
//! Output: `ready pid=<PID> tids=<main>,<workers...>`, then
//! `done tids=<...> threads=<N> duration_ms=<D> elapsed_ms=<E> iters=<i1>,<i2>,... total_iters=<sum>`
//! where `iters` lists each worker's busy-loop iterations (one iteration is one step of an
//! arithmetic generator) in the order of the worker tids; with `--step-ms` the line ends with
//! `steps=<S> barrier_wait_ms=<w1>,<w2>,...`, the steps completed and each worker's time
//! blocked at the barrier.

mod common;

use anyhow::Result;
use clap::Parser;
use common::{Common, CpuList, Crew};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Run N busy-looping threads for a fixed time (CPU-bound load; pinned to one CPU, run-queue
/// overload on that CPU)
#[derive(Parser, Debug)]
#[command(
    after_help = "Prints `ready pid=<PID> tids=<main>,<workers>` once the threads exist, \
then `done tids=<...> threads=N duration_ms=D elapsed_ms=E iters=<per worker> total_iters=SUM`."
)]
struct Cli {
    /// Number of busy-looping worker threads
    #[arg(long, default_value_t = 2)]
    threads: usize,

    /// How long each worker spins, in milliseconds from the start
    #[arg(long, default_value_t = 2000)]
    duration_ms: u64,

    /// Pin every worker to these CPUs (cpulist, e.g. `0` or `0-1,3`); the main thread stays
    /// unpinned
    #[arg(long, value_name = "CPULIST")]
    pin: Option<CpuList>,

    /// With --pin: after this many milliseconds each worker lets itself run on every CPU
    /// (threads born on one node that the balancer must then spread: the NUMA spread case)
    #[arg(long, value_name = "MS", requires = "pin")]
    unpin_after_ms: Option<u64>,

    /// With --unpin-after-ms: every this many milliseconds from the start each worker pins
    /// itself back to --pin for --unpin-after-ms, then lets go again (a NUMA imbalance made
    /// again and again, for the balancer to undo each time)
    #[arg(long, value_name = "MS", requires = "unpin_after_ms")]
    repin_every_ms: Option<u64>,

    /// Nice values given to the workers in turn (comma-separated, e.g. `-5,0,5,10`): tasks of
    /// unequal weight, so that overloaded groups compare by load
    #[arg(long, value_name = "LIST", value_delimiter = ',', allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    nice: Vec<i32>,

    /// Every worker also writes across a shared buffer of this many MiB, first touched by the
    /// main thread on the --pin CPUs (so its pages live on their node)
    #[arg(long, value_name = "MIB")]
    touch_mb: Option<usize>,

    /// Bulk-synchronous job: each worker spins for this much of its own CPU time, then waits
    /// at a barrier for all the others, step after step, until the duration is over
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..),
          conflicts_with_all = ["unpin_after_ms", "touch_mb", "repin_every_ms"])]
    step_ms: Option<u64>,

    #[command(flatten)]
    common: Common,
}

/// The CPU time the calling thread has used.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A reusable barrier whose last arrival decides, for everyone, whether another step starts:
/// all workers leave a step together and agree on the number of steps.
struct Steps {
    state: Mutex<StepState>,
    turn: Condvar,
    parties: usize,
}

#[derive(Default)]
struct StepState {
    arrived: usize,
    generation: u64,
    stop: bool,
}

impl Steps {
    fn new(parties: usize) -> Self {
        Steps {
            state: Mutex::new(StepState::default()),
            turn: Condvar::new(),
            parties,
        }
    }

    /// Waits for every worker; true when another step follows.
    fn wait(&self, deadline: Instant) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.arrived += 1;
        if s.arrived == self.parties {
            s.arrived = 0;
            s.generation += 1;
            s.stop = Instant::now() >= deadline;
            self.turn.notify_all();
            return !s.stop;
        }
        let generation = s.generation;
        while s.generation == generation {
            s = self.turn.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        !s.stop
    }
}

/// One worker of the bulk-synchronous job: (iterations, steps, time blocked at the barrier).
fn stepped(steps: &Steps, step: Duration, until: Instant) -> (u64, u64, Duration) {
    let (mut iters, mut done, mut blocked) = (0u64, 0u64, Duration::ZERO);
    loop {
        let end = thread_cpu_time() + step;
        let mut x = 1u64;
        while thread_cpu_time() < end {
            for _ in 0..256 {
                x = common::spin_step(x);
            }
            iters += 256;
        }
        done += 1;
        let t = Instant::now();
        let more = steps.wait(until);
        blocked += t.elapsed();
        if !more {
            return (iters, done, blocked);
        }
    }
}

/// One pass over `buf` from offset `seed`: one write per 4 KiB page, so every page is touched
/// on every pass.
fn touch(buf: &[AtomicU64], seed: usize) -> u64 {
    const PER_PAGE: usize = 4096 / 8;
    let mut i = seed % PER_PAGE;
    let mut n = 0;
    while i < buf.len() {
        buf[i].fetch_add(1, Ordering::Relaxed);
        i += PER_PAGE;
        n += 1;
    }
    n
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut crew = Crew::new(&cli.common.comm)?;
    let duration = Duration::from_millis(cli.duration_ms);
    let mut workers = Vec::with_capacity(cli.threads);
    let unpin = cli.unpin_after_ms.map(Duration::from_millis);
    // Every CPU a cpu_set_t can name: the kernel keeps the allowed ones.
    let all: CpuList = format!("0-{}", libc::CPU_SETSIZE - 1)
        .parse()
        .map_err(anyhow::Error::msg)?;
    // The shared buffer is first touched (so placed) while the main thread runs on --pin.
    let buf: Arc<Vec<AtomicU64>> = Arc::new(match (cli.touch_mb, cli.pin.as_ref()) {
        (Some(mb), pin) => {
            if let Some(p) = pin {
                common::pin(0, p)?;
            }
            let v: Vec<AtomicU64> = (0..mb << 17).map(|i| AtomicU64::new(i as u64)).collect();
            common::pin(0, &all)?;
            v
        }
        (None, _) => Vec::new(),
    });
    let steps = Arc::new(Steps::new(cli.threads));
    let step = cli.step_ms.map(Duration::from_millis);
    let cycle = cli.repin_every_ms.map(Duration::from_millis);
    if let (Some(c), Some(u)) = (cycle, unpin) {
        if c <= u {
            anyhow::bail!("--repin-every-ms must be longer than --unpin-after-ms");
        }
    }
    for w in 0..cli.threads {
        let all = all.clone();
        let buf = buf.clone();
        let steps = steps.clone();
        let pin = cli.pin.clone();
        let nice = (!cli.nice.is_empty()).then(|| cli.nice[w % cli.nice.len()]);
        workers.push(crew.spawn(cli.pin.as_ref(), move |start: Instant| {
            if let Some(n) = nice {
                // SAFETY: setpriority(2) on this thread's own id; no memory is passed.
                let r = unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, common::gettid() as libc::id_t, n)
                };
                if r != 0 {
                    eprintln!("spin: nice {n}: {}", std::io::Error::last_os_error());
                }
            }
            if let Some(step) = step {
                return stepped(&steps, step, start + duration);
            }
            let mut iters = 0;
            let work = |until: Instant| {
                if buf.is_empty() {
                    return common::spin_until(until);
                }
                let mut n = 0;
                while Instant::now() < until {
                    n += touch(&buf, w + n as usize);
                }
                n
            };
            if let Some(u) = unpin.filter(|u| *u < duration) {
                let mut at = Duration::ZERO;
                loop {
                    iters += work(start + (at + u).min(duration));
                    if let Err(e) = common::pin(0, &all) {
                        eprintln!("spin: {e:#}");
                    }
                    let Some(c) = cycle.filter(|c| at + *c + u < duration) else {
                        break;
                    };
                    at += c;
                    iters += work(start + at);
                    if let Some(p) = &pin {
                        if let Err(e) = common::pin(0, p) {
                            eprintln!("spin: {e:#}");
                        }
                    }
                }
            }
            (iters + work(start + duration), 0, Duration::ZERO)
        })?);
    }
    let start = crew.start(cli.common.gate)?;
    let iters = workers
        .into_iter()
        .map(common::join)
        .collect::<Result<Vec<(u64, u64, Duration)>>>()?;
    let elapsed = start.elapsed();
    let list: Vec<String> = iters.iter().map(|i| i.0.to_string()).collect();
    let mut summary = format!(
        "threads={} duration_ms={} elapsed_ms={} iters={} total_iters={}",
        cli.threads,
        cli.duration_ms,
        common::ms(elapsed),
        if list.is_empty() {
            "-".to_string()
        } else {
            list.join(",")
        },
        iters.iter().map(|i| i.0).sum::<u64>()
    );
    if cli.step_ms.is_some() {
        let waits: Vec<String> = iters.iter().map(|i| common::ms(i.2)).collect();
        summary.push_str(&format!(
            " steps={} barrier_wait_ms={}",
            iters.first().map_or(0, |i| i.1),
            waits.join(",")
        ));
    }
    common::finish(crew.tids(), &summary, cli.common.hold)
}
