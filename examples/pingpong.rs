//! `pingpong`: pairs of threads bouncing a one-byte token through pipes, optionally against
//! busy-looping threads.
//!
//! Reproduces the wakeup-heavy situation of `perf bench sched pipe`: every round is two
//! synchronous wakeups (ping wakes pong, pong wakes ping). With two or more pairs, or with
//! `--spinners` competing for the CPUs, the wakee often lands on another CPU than the waker,
//! wakeups preempt running spinners, and the periodic and newidle balancers migrate the pair
//! threads around, so on a 2-CPU machine wakeups, cross-CPU wakeups, preemption and
//! load-balancer migrations all happen within a second.
//!
//! Output: `ready pid=<PID> tids=<main>,<ping1>,<pong1>,...,<spinners...>`, then
//! `done tids=<...> pairs=<N> rounds=<R> rounds_done=<total> elapsed_ms=<E> pairs_elapsed_ms=<P>
//! rtt_avg_us=<A> spinners=<M> spin_iters=<S>`: `elapsed_ms` runs from the start to the end of
//! everything, `pairs_elapsed_ms` to the end of the last pair, `rtt_avg_us` is the mean round
//! trip (think time excluded).

mod common;

use anyhow::{bail, Context, Result};
use clap::Parser;
use common::{Common, CpuList, Crew};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Bounce a token between pairs of threads through pipes (wakeups, cross-CPU wakeups,
/// preemption and migrations), optionally against busy-looping threads
#[derive(Parser, Debug)]
#[command(
    after_help = "Each round, the ping thread (after --sleep-us of think time) writes one \
byte to its pong thread's pipe and waits for it to come back on a second pipe. Prints \
`ready pid=<PID> tids=<main>,<ping1>,<pong1>,...,<spinners>` once the threads exist, then \
`done tids=<...> pairs=N rounds=R rounds_done=TOTAL elapsed_ms=E pairs_elapsed_ms=P \
rtt_avg_us=A spinners=M spin_iters=S`."
)]
struct Cli {
    /// Number of ping/pong thread pairs
    #[arg(long, default_value_t = 1)]
    pairs: usize,

    /// Round trips each pair does (ping -> pong -> ping is one round)
    #[arg(long, default_value_t = 10_000)]
    rounds: u64,

    /// Think time of the ping thread before each round, in microseconds (sleeping, 0: none)
    #[arg(long, default_value_t = 0)]
    sleep_us: u64,

    /// Number of busy-looping threads running alongside the pairs
    #[arg(long, default_value_t = 0)]
    spinners: usize,

    /// How long the spinners spin, in milliseconds from the start (the pairs stop after
    /// --rounds, independently of this)
    #[arg(long, default_value_t = 2000)]
    duration_ms: u64,

    /// Pin every worker thread (pairs and spinners) to these CPUs (cpulist, e.g. `0-1`)
    #[arg(long, value_name = "CPULIST")]
    pin: Option<CpuList>,

    /// Pin the spinners to these CPUs instead (cpulist), e.g. to load one CPU only
    #[arg(long, value_name = "CPULIST")]
    spinner_pin: Option<CpuList>,

    #[command(flatten)]
    common: Common,
}

/// A pipe as (read end, write end), both close-on-exec.
fn pipe() -> Result<(File, File)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a writable array of two c_ints, as pipe2(2) requires.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc != 0 {
        return Err(io::Error::last_os_error()).context("pipe2");
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((File::from(r), File::from(w)))
}

/// The ping side: `rounds` round trips; returns the rounds done and the summed round-trip time
/// (from writing the token to reading it back, think time excluded).
fn ping(
    mut to_pong: File,
    mut from_pong: File,
    rounds: u64,
    think: Duration,
) -> Result<(u64, Duration)> {
    let mut rtt = Duration::ZERO;
    let mut token = [0u8; 1];
    for round in 0..rounds {
        if !think.is_zero() {
            std::thread::sleep(think);
        }
        token[0] = round as u8;
        let t0 = Instant::now();
        to_pong
            .write_all(&token)
            .context("ping: writing the token")?;
        from_pong
            .read_exact(&mut token)
            .context("ping: reading the token back")?;
        if token[0] != round as u8 {
            bail!("ping: token {} came back as {}", round as u8, token[0]);
        }
        rtt += t0.elapsed();
    }
    // Dropping `to_pong` here closes it: the pong thread reads end-of-file and stops.
    Ok((rounds, rtt))
}

/// The pong side: echoes the token until the ping side closes its pipe; returns the rounds.
fn pong(mut from_ping: File, mut to_ping: File) -> Result<u64> {
    let mut token = [0u8; 1];
    let mut rounds = 0;
    loop {
        match from_ping.read(&mut token) {
            Ok(0) => return Ok(rounds),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("pong: reading the token"),
        }
        to_ping
            .write_all(&token)
            .context("pong: writing the token back")?;
        rounds += 1;
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut crew = Crew::new(&cli.common.comm)?;
    let think = Duration::from_micros(cli.sleep_us);
    let rounds = cli.rounds;

    let mut pairs = Vec::with_capacity(cli.pairs);
    for _ in 0..cli.pairs {
        let (ping_rx, pong_tx) = pipe()?; // pong -> ping
        let (pong_rx, ping_tx) = pipe()?; // ping -> pong
        let p = crew.spawn(cli.pin.as_ref(), move |_start: Instant| {
            ping(ping_tx, ping_rx, rounds, think)
        })?;
        let q = crew.spawn(cli.pin.as_ref(), move |_start: Instant| {
            pong(pong_rx, pong_tx)
        })?;
        pairs.push((p, q));
    }

    let spin_for = Duration::from_millis(cli.duration_ms);
    let spinner_pin = cli.spinner_pin.as_ref().or(cli.pin.as_ref());
    let mut spinners = Vec::with_capacity(cli.spinners);
    for _ in 0..cli.spinners {
        spinners.push(crew.spawn(spinner_pin, move |start: Instant| {
            common::spin_until(start + spin_for)
        })?);
    }

    let start = crew.start(cli.common.gate)?;

    let mut rounds_done = 0u64;
    let mut rtt_sum = Duration::ZERO;
    for (p, q) in pairs {
        let (done, rtt) = common::join(p)??;
        let echoed = common::join(q)??;
        if echoed != done {
            bail!("pong echoed {echoed} rounds but ping did {done}");
        }
        rounds_done += done;
        rtt_sum += rtt;
    }
    let pairs_elapsed = start.elapsed();
    let mut spin_iters = 0u64;
    for s in spinners {
        spin_iters += common::join(s)?;
    }
    let elapsed = start.elapsed();

    let rtt_avg_us = if rounds_done == 0 {
        0.0
    } else {
        rtt_sum.as_secs_f64() * 1e6 / rounds_done as f64
    };
    let summary = format!(
        "pairs={} rounds={} rounds_done={} elapsed_ms={} pairs_elapsed_ms={} rtt_avg_us={:.2} \
         spinners={} spin_iters={}",
        cli.pairs,
        cli.rounds,
        rounds_done,
        common::ms(elapsed),
        common::ms(pairs_elapsed),
        rtt_avg_us,
        cli.spinners,
        spin_iters
    );
    common::finish(crew.tids(), &summary, cli.common.hold)
}
