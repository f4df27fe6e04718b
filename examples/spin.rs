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
//! Output: `ready pid=<PID> tids=<main>,<workers...>`, then
//! `done tids=<...> threads=<N> duration_ms=<D> elapsed_ms=<E> iters=<i1>,<i2>,... total_iters=<sum>`
//! where `iters` lists each worker's busy-loop iterations (one iteration is one step of an
//! arithmetic generator) in the order of the worker tids.

mod common;

use anyhow::Result;
use clap::Parser;
use common::{Common, CpuList, Crew};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
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

    /// Every worker also writes across a shared buffer of this many MiB, first touched by the
    /// main thread on the --pin CPUs (so its pages live on their node)
    #[arg(long, value_name = "MIB")]
    touch_mb: Option<usize>,

    #[command(flatten)]
    common: Common,
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
    for w in 0..cli.threads {
        let all = all.clone();
        let buf = buf.clone();
        workers.push(crew.spawn(cli.pin.as_ref(), move |start: Instant| {
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
                iters += work(start + u);
                if let Err(e) = common::pin(0, &all) {
                    eprintln!("spin: {e:#}");
                }
            }
            iters + work(start + duration)
        })?);
    }
    let start = crew.start(cli.common.gate)?;
    let iters = workers
        .into_iter()
        .map(common::join)
        .collect::<Result<Vec<u64>>>()?;
    let elapsed = start.elapsed();
    let list: Vec<String> = iters.iter().map(|i| i.to_string()).collect();
    let summary = format!(
        "threads={} duration_ms={} elapsed_ms={} iters={} total_iters={}",
        cli.threads,
        cli.duration_ms,
        common::ms(elapsed),
        if list.is_empty() {
            "-".to_string()
        } else {
            list.join(",")
        },
        iters.iter().sum::<u64>()
    );
    common::finish(crew.tids(), &summary, cli.common.hold)
}
