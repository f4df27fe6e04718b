//! `mixed`: CPU-bound threads sharing the machine with IO-bound-like threads.
//!
//! Reproduces a mixed load: `--cpu-threads` threads spin all the time, while `--io-threads`
//! threads repeatedly do a short burst of work (`--burst-us`) and then sleep (`nanosleep` of
//! `--sleep-us`), the way threads waiting on IO do. The sleepers wake up often and find their
//! CPU taken by a spinner, so wakeup placement (select_idle_sibling), wakeup preemption and the
//! balancer's classification of groups with many short-running tasks all come into play. The
//! IO threads measure how late each sleep ends (the time past the requested `--sleep-us`), a
//! rough wakeup-to-run latency.
//!
//! Output: `ready pid=<PID> tids=<main>,<cpu threads...>,<io threads...>`, then
//! `done tids=<...> cpu_threads=<N> io_threads=<M> elapsed_ms=<E> cpu_iters=<per thread>
//! io_cycles=<per thread> io_late_avg_us=<A> io_late_max_us=<X>`.

mod common;

use anyhow::Result;
use clap::Parser;
use common::{Common, CpuList, Crew};
use std::time::{Duration, Instant};

/// Run CPU-bound threads alongside threads that alternate short bursts of work and sleeps
/// (mixed CPU-bound and IO-bound load)
#[derive(Parser, Debug)]
#[command(
    after_help = "Prints `ready pid=<PID> tids=<main>,<cpu threads>,<io threads>` once the \
threads exist, then `done tids=<...> cpu_threads=N io_threads=M elapsed_ms=E cpu_iters=<per \
thread> io_cycles=<per thread> io_late_avg_us=A io_late_max_us=X` (late: how long a sleep \
lasted past --sleep-us)."
)]
struct Cli {
    /// Number of CPU-bound (always spinning) threads
    #[arg(long, default_value_t = 2)]
    cpu_threads: usize,

    /// Number of IO-bound-like threads (burst of work, then sleep, repeatedly)
    #[arg(long, default_value_t = 2)]
    io_threads: usize,

    /// Length of an IO thread's burst of work, in microseconds of busy spinning
    #[arg(long, default_value_t = 100)]
    burst_us: u64,

    /// Sleep of an IO thread after each burst (nanosleep), in microseconds
    #[arg(long, default_value_t = 1000)]
    sleep_us: u64,

    /// How long the load runs, in milliseconds from the start
    #[arg(long, default_value_t = 2000)]
    duration_ms: u64,

    /// Pin every worker thread to these CPUs (cpulist, e.g. `0-1`)
    #[arg(long, value_name = "CPULIST")]
    pin: Option<CpuList>,

    /// Pin the CPU-bound threads to these CPUs instead (cpulist)
    #[arg(long, value_name = "CPULIST")]
    cpu_pin: Option<CpuList>,

    /// Pin the IO threads to these CPUs instead (cpulist)
    #[arg(long, value_name = "CPULIST")]
    io_pin: Option<CpuList>,

    #[command(flatten)]
    common: Common,
}

/// What one IO thread did.
#[derive(Default)]
struct IoStats {
    cycles: u64,
    late_sum: Duration,
    late_max: Duration,
}

fn io_thread(deadline: Instant, burst: Duration, sleep: Duration) -> IoStats {
    let mut st = IoStats::default();
    while Instant::now() < deadline {
        common::spin_for(burst);
        let t0 = Instant::now();
        std::thread::sleep(sleep);
        let late = t0.elapsed().saturating_sub(sleep);
        st.late_sum += late;
        st.late_max = st.late_max.max(late);
        st.cycles += 1;
    }
    st
}

fn list<T: ToString>(v: &[T]) -> String {
    if v.is_empty() {
        return "-".to_string();
    }
    let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    s.join(",")
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut crew = Crew::new(&cli.common.comm)?;
    let duration = Duration::from_millis(cli.duration_ms);
    let burst = Duration::from_micros(cli.burst_us);
    let sleep = Duration::from_micros(cli.sleep_us);

    let cpu_pin = cli.cpu_pin.as_ref().or(cli.pin.as_ref());
    let mut cpu = Vec::with_capacity(cli.cpu_threads);
    for _ in 0..cli.cpu_threads {
        cpu.push(crew.spawn(cpu_pin, move |start: Instant| {
            common::spin_until(start + duration)
        })?);
    }
    let io_pin = cli.io_pin.as_ref().or(cli.pin.as_ref());
    let mut io = Vec::with_capacity(cli.io_threads);
    for _ in 0..cli.io_threads {
        io.push(crew.spawn(io_pin, move |start: Instant| {
            io_thread(start + duration, burst, sleep)
        })?);
    }

    let start = crew.start(cli.common.gate)?;
    let cpu_iters = cpu
        .into_iter()
        .map(common::join)
        .collect::<Result<Vec<u64>>>()?;
    let io_stats = io
        .into_iter()
        .map(common::join)
        .collect::<Result<Vec<IoStats>>>()?;
    let elapsed = start.elapsed();

    let cycles: Vec<u64> = io_stats.iter().map(|s| s.cycles).collect();
    let total_cycles: u64 = cycles.iter().sum();
    let late_sum: Duration = io_stats.iter().map(|s| s.late_sum).sum();
    let late_max = io_stats
        .iter()
        .map(|s| s.late_max)
        .max()
        .unwrap_or_default();
    let late_avg_us = if total_cycles == 0 {
        0.0
    } else {
        late_sum.as_secs_f64() * 1e6 / total_cycles as f64
    };
    let summary = format!(
        "cpu_threads={} io_threads={} elapsed_ms={} cpu_iters={} io_cycles={} \
         io_late_avg_us={:.1} io_late_max_us={}",
        cli.cpu_threads,
        cli.io_threads,
        common::ms(elapsed),
        list(&cpu_iters),
        list(&cycles),
        late_avg_us,
        late_max.as_micros()
    );
    common::finish(crew.tids(), &summary, cli.common.hold)
}
