//! `wakeup_storm`: schbench-like message/worker wakeups with wakeup-latency percentiles.
//!
//! Reproduces the latency-sensitive pattern schbench measures, the one behind reports like "p99
//! wakeup latency went from 256 us to 12 ms on the new kernel": each of `--message-threads`
//! threads wakes its `--workers` worker threads at once (FUTEX_WAKE, one futex per worker); every
//! worker notes how long it took from the wake call to it running (CLOCK_MONOTONIC), "thinks" by
//! spinning `--think-us`, and goes back to sleep. When the last worker of a round is done it
//! wakes its message thread, which (after `--interval-us`) starts the next round. With more
//! workers than CPUs the wakees queue behind busy CPUs, and where the balancer leaves tasks
//! waiting while other CPUs idle the tail latencies show it.
//!
//! Output: `ready pid=<PID> tids=<main>,<message1>,<its workers...>,<message2>,...`, then a
//! schbench-style block
//!
//! ```text
//! Wakeup Latencies percentiles (usec) runtime 2 (s) (7996 total samples)
//!           50.0th: 12         (4012 samples)
//!           90.0th: 31         (3189 samples)
//!         * 99.0th: 77         (716 samples)
//!           99.9th: 403        (71 samples)
//!           min=2, max=1290
//! ```
//!
//! (each line's sample count is the number of samples above the previous percentile up to this
//! one), then `done tids=<...> message_threads=<M> workers=<N> rounds=<total> samples=<S>
//! p50_us=.. p90_us=.. p99_us=.. p999_us=.. min_us=.. max_us=.. elapsed_ms=<E>`.

mod common;

use anyhow::{Context, Result};
use clap::Parser;
use common::{Common, CpuList, Crew};
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// schbench-like wakeups: message threads wake groups of workers, which measure their wakeup
/// latency, spin a while and sleep again; prints wakeup latency percentiles
#[derive(Parser, Debug)]
#[command(
    after_help = "Prints `ready pid=<PID> tids=<main>,<message1>,<its workers>,...` once \
the threads exist, then a `Wakeup Latencies percentiles (usec)` block (p50, p90, p99, p99.9, \
min, max) and `done tids=<...> message_threads=M workers=N rounds=R samples=S p50_us=.. \
p90_us=.. p99_us=.. p999_us=.. min_us=.. max_us=.. elapsed_ms=E`."
)]
struct Cli {
    /// Number of message threads, each with its own group of workers
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    message_threads: u32,

    /// Worker threads per message thread
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    workers: u32,

    /// Think time of a worker after each wakeup: busy-spinning, in microseconds
    #[arg(long, default_value_t = 1000)]
    think_us: u64,

    /// Sleep of a message thread between the end of a round and the next wake-up, in
    /// microseconds (0: wake the group again at once)
    #[arg(long, default_value_t = 0)]
    interval_us: u64,

    /// How long the message threads keep starting rounds, in milliseconds from the start
    #[arg(long, default_value_t = 2000)]
    duration_ms: u64,

    /// Pin every message and worker thread to these CPUs (cpulist, e.g. `0-1`)
    #[arg(long, value_name = "CPULIST")]
    pin: Option<CpuList>,

    #[command(flatten)]
    common: Common,
}

/// The futex word of a worker.
const SLEEP: u32 = 0;
const RUN: u32 = 1;
const EXIT: u32 = 2;

fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a live, aligned 32-bit atomic for the duration of the call; the kernel
    // only reads it. A null timeout means no timeout. Errors (EAGAIN when the word already
    // changed, EINTR) just make the caller look at the word again.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

fn futex_wake(word: &AtomicU32, n: i32) -> io::Result<()> {
    // SAFETY: `word` is a live, aligned 32-bit atomic; FUTEX_WAKE does not access memory
    // beyond looking up waiters on that address.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// CLOCK_MONOTONIC in nanoseconds (the clock of the kernel's trace timestamps too).
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What a message thread shares with one of its workers.
#[derive(Default)]
struct Slot {
    /// SLEEP, RUN or EXIT; the worker futex-waits on it.
    state: AtomicU32,
    /// CLOCK_MONOTONIC (ns) just before the message thread's wake call.
    woken_at: AtomicU64,
}

/// One message thread's group.
struct Group {
    slots: Vec<Slot>,
    /// Workers still busy with the current round; the message thread futex-waits on it.
    pending: AtomicU32,
}

fn worker(group: &Group, me: usize, think: Duration) -> Vec<u64> {
    let slot = &group.slots[me];
    let mut latencies = Vec::new();
    loop {
        let mut state = slot.state.load(Ordering::Acquire);
        while state == SLEEP {
            futex_wait(&slot.state, SLEEP);
            state = slot.state.load(Ordering::Acquire);
        }
        if state == EXIT {
            return latencies;
        }
        let woken_at = slot.woken_at.load(Ordering::Relaxed);
        latencies.push(now_ns().saturating_sub(woken_at));
        common::spin_for(think);
        slot.state.store(SLEEP, Ordering::Release);
        if group.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Last of the round: wake the message thread. A failed wake can only be a bug in
            // the arguments; the message thread would then hang, so fail loudly.
            futex_wake(&group.pending, 1).expect("FUTEX_WAKE of the message thread");
        }
    }
}

fn message(group: &Group, deadline: Instant, interval: Duration) -> Result<u64> {
    let n = group.slots.len() as u32;
    let mut rounds = 0;
    while Instant::now() < deadline {
        group.pending.store(n, Ordering::Release);
        for slot in &group.slots {
            slot.woken_at.store(now_ns(), Ordering::Relaxed);
            slot.state.store(RUN, Ordering::Release);
            futex_wake(&slot.state, 1).context("FUTEX_WAKE of a worker")?;
        }
        loop {
            let left = group.pending.load(Ordering::Acquire);
            if left == 0 {
                break;
            }
            futex_wait(&group.pending, left);
        }
        rounds += 1;
        if !interval.is_zero() {
            std::thread::sleep(interval);
        }
    }
    for slot in &group.slots {
        slot.state.store(EXIT, Ordering::Release);
        futex_wake(&slot.state, 1).context("FUTEX_WAKE of a worker")?;
    }
    Ok(rounds)
}

/// The sample at percentile `p` (0..=100) of sorted `v` (nearest rank).
fn percentile_index(len: usize, p: f64) -> usize {
    let rank = (p / 100.0 * len as f64).ceil() as usize;
    rank.clamp(1, len) - 1
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut crew = Crew::new(&cli.common.comm)?;
    let think = Duration::from_micros(cli.think_us);
    let interval = Duration::from_micros(cli.interval_us);
    let duration = Duration::from_millis(cli.duration_ms);

    let mut messages = Vec::new();
    let mut workers = Vec::new();
    for _ in 0..cli.message_threads {
        let group = Arc::new(Group {
            slots: (0..cli.workers).map(|_| Slot::default()).collect(),
            pending: AtomicU32::new(0),
        });
        let g = Arc::clone(&group);
        messages.push(crew.spawn(cli.pin.as_ref(), move |start: Instant| {
            message(&g, start + duration, interval)
        })?);
        for me in 0..cli.workers as usize {
            let g = Arc::clone(&group);
            workers.push(crew.spawn(cli.pin.as_ref(), move |_start: Instant| {
                worker(&g, me, think)
            })?);
        }
    }

    let start = crew.start(cli.common.gate)?;
    let mut rounds = 0;
    for m in messages {
        rounds += common::join(m)??;
    }
    let mut lat = Vec::new();
    for w in workers {
        lat.extend(common::join(w)?);
    }
    let elapsed = start.elapsed();
    lat.sort_unstable();

    let us = |ns: u64| ns / 1000;
    let pcts = [
        (50.0, "50.0th"),
        (90.0, "90.0th"),
        (99.0, "99.0th"),
        (99.9, "99.9th"),
    ];
    let mut values = Vec::new();
    common::say(&format!(
        "Wakeup Latencies percentiles (usec) runtime {} (s) ({} total samples)",
        elapsed.as_secs(),
        lat.len()
    ))?;
    let mut prev = 0usize;
    for (p, label) in pcts {
        let (v, count) = if lat.is_empty() {
            (0, 0)
        } else {
            let i = percentile_index(lat.len(), p);
            let n = (i + 1).saturating_sub(prev);
            prev = prev.max(i + 1);
            (us(lat[i]), n)
        };
        values.push(v);
        let star = if p == 99.0 { '*' } else { ' ' };
        common::say(&format!("\t{star} {label}: {v:<10} ({count} samples)"))?;
    }
    let (min, max) = (
        lat.first().copied().map_or(0, us),
        lat.last().copied().map_or(0, us),
    );
    common::say(&format!("\t  min={min}, max={max}"))?;

    let summary = format!(
        "message_threads={} workers={} rounds={} samples={} p50_us={} p90_us={} p99_us={} \
         p999_us={} min_us={} max_us={} elapsed_ms={}",
        cli.message_threads,
        cli.workers,
        rounds,
        lat.len(),
        values[0],
        values[1],
        values[2],
        values[3],
        min,
        max,
        common::ms(elapsed)
    );
    common::finish(crew.tids(), &summary, cli.common.hold)
}
