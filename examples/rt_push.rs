//! `rt_push`: SCHED_FIFO threads at several priorities that run and sleep in short bursts,
//! more of them than CPUs they may run on, beside plain CFS spinners.
//!
//! Reproduces the RT class's own balancing: when a higher-priority thread wakes on a CPU
//! where a lower one runs, the lower one is preempted and the kernel pushes it to a CPU
//! running lower-priority work (`push_rt_task`); when a CPU's RT thread goes to sleep, it
//! pulls a waiting one from an overloaded CPU (`pull_rt_task`, or with RT_PUSH_IPI an irq
//! work on that CPU pushes it: `rto_push_irq_work_func`). The CFS spinners keep the fair
//! balancer busy meanwhile, on the CPUs and the moments the RT threads leave free.
//!
//! Each RT thread's bursts are of a fixed length and its sleeps vary (a generator per
//! thread), so the threads drift apart and their wakeups meet in every order. Their duty
//! cycle (run / (run + sleep)) stays under the kernel's RT throttling share (95%) per CPU as
//! long as `--rt-threads * run / (run + mean sleep)` is below the CPUs they may use.
//!
//! Output: `ready pid=<PID> tids=<main>,<workers...>`, then
//! `done tids=<...> rt_threads=<N> cfs_threads=<M> duration_ms=<D> elapsed_ms=<E>
//! bursts=<b1>,<b2>,... total_bursts=<sum> cfs_iters=<sum>` where `bursts` lists each RT
//! thread's completed bursts in the order of their tids (the CFS spinners follow them in
//! `tids`).

mod common;

use anyhow::{Context, Result};
use clap::Parser;
use common::{Common, CpuList, Crew};
use std::time::{Duration, Instant};

/// Run SCHED_FIFO threads at several priorities in short bursts, more than their CPUs, beside
/// CFS spinners (the RT class pushes and pulls them; needs CAP_SYS_NICE)
#[derive(Parser, Debug)]
#[command(
    after_help = "Prints `ready pid=<PID> tids=<main>,<workers>` once the threads exist, \
then `done tids=<...> rt_threads=N cfs_threads=M duration_ms=D elapsed_ms=E \
bursts=<per RT thread> total_bursts=SUM cfs_iters=SUM`."
)]
struct Cli {
    /// SCHED_FIFO threads
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u16).range(1..))]
    rt_threads: u16,

    /// Their priorities, given in turn (comma-separated, 1-99)
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "10,20,30,40",
          value_parser = clap::value_parser!(i32).range(1..=99))]
    priorities: Vec<i32>,

    /// CPU time of each burst, microseconds
    #[arg(long, value_name = "US", default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(1..))]
    run_us: u64,

    /// Mean sleep between bursts, microseconds (each sleep is drawn between half and one and
    /// a half times it)
    #[arg(long, value_name = "US", default_value_t = 3000,
          value_parser = clap::value_parser!(u64).range(2..))]
    sleep_us: u64,

    /// Plain (SCHED_OTHER) busy-looping threads, unpinned
    #[arg(long, default_value_t = 0)]
    cfs_threads: usize,

    /// How long everything runs, in milliseconds from the start
    #[arg(long, default_value_t = 2000)]
    duration_ms: u64,

    /// Pin the RT threads to these CPUs (cpulist, e.g. `0-3`: more threads than CPUs keeps
    /// some of them waiting for a CPU, which is what the RT class balances)
    #[arg(long, value_name = "CPULIST")]
    pin: Option<CpuList>,

    #[command(flatten)]
    common: Common,
}

/// Makes the calling thread SCHED_FIFO at `prio`.
fn set_fifo(prio: i32) -> Result<()> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sched_setscheduler(2) on the calling thread (0) reads one sched_param through a
    // valid pointer.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
    if r != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("SCHED_FIFO priority {prio} (needs CAP_SYS_NICE)"));
    }
    Ok(())
}

/// One RT thread: bursts of `run`, sleeps drawn around `sleep`, until `until`; returns the
/// bursts completed.
fn bursts(seed: u64, run: Duration, sleep: Duration, until: Instant) -> u64 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut n = 0;
    while Instant::now() < until {
        common::spin_for(run);
        n += 1;
        x = common::spin_step(x);
        // Uniform in [sleep / 2, 3 * sleep / 2).
        let span = sleep.as_nanos() as u64;
        let ns = span / 2 + (x >> 11) % span.max(1);
        std::thread::sleep(Duration::from_nanos(ns));
    }
    n
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut crew = Crew::new(&cli.common.comm)?;
    let duration = Duration::from_millis(cli.duration_ms);
    let run = Duration::from_micros(cli.run_us);
    let sleep = Duration::from_micros(cli.sleep_us);
    let (tx, rx) = std::sync::mpsc::channel::<Result<()>>();
    let mut rt = Vec::with_capacity(usize::from(cli.rt_threads));
    for w in 0..usize::from(cli.rt_threads) {
        let prio = cli.priorities[w % cli.priorities.len()];
        let tx = tx.clone();
        rt.push(crew.spawn(cli.pin.as_ref(), move |start: Instant| {
            // The policy is set after the start, so the threads' creation runs as CFS.
            if let Err(e) = set_fifo(prio) {
                let _ = tx.send(Err(e));
                return 0;
            }
            let _ = tx.send(Ok(()));
            bursts(w as u64 + 1, run, sleep, start + duration)
        })?);
    }
    drop(tx);
    let mut cfs = Vec::with_capacity(cli.cfs_threads);
    for _ in 0..cli.cfs_threads {
        cfs.push(crew.spawn(None, move |start: Instant| {
            common::spin_until(start + duration)
        })?);
    }
    let start = crew.start(cli.common.gate)?;
    // A thread refused its policy: the run would not be the RT load it claims.
    for r in rx.iter() {
        r?;
    }
    let per: Vec<u64> = rt.into_iter().map(common::join).collect::<Result<_>>()?;
    let iters: u64 = cfs
        .into_iter()
        .map(common::join)
        .collect::<Result<Vec<u64>>>()?
        .iter()
        .sum();
    let list: Vec<String> = per.iter().map(u64::to_string).collect();
    let summary = format!(
        "rt_threads={} cfs_threads={} duration_ms={} elapsed_ms={} bursts={} total_bursts={} \
         cfs_iters={iters}",
        cli.rt_threads,
        cli.cfs_threads,
        cli.duration_ms,
        common::ms(start.elapsed()),
        list.join(","),
        per.iter().sum::<u64>(),
    );
    common::finish(crew.tids(), &summary, cli.common.hold)
}
