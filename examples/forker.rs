//! `forker`: many short-lived child processes (or threads) that spin briefly and exit.
//!
//! Reproduces fork/exec-style churn: every child is a new task the scheduler has to place
//! (`sched_wakeup_new`, the fork balance path of select_task_rq), runs `--spin-us` on a CPU and
//! exits (`sched_process_exit`), at most `--parallel` at a time. With `--threads-mode` the
//! children are threads of this process instead of processes (clone of a thread, same
//! placement path). Children inherit the process's comm and, with `--pin`, its CPU affinity.
//!
//! Output: `ready pid=<PID> tids=<main>` (children are created after the start), then
//! `done tids=<main> mode=<fork|threads> count=<N> parallel=<K> spin_us=<S> elapsed_ms=<E>
//! failed=0` plus `children=<pid,...>` with `--list-children`.

mod common;

use anyhow::{bail, Context, Result};
use clap::Parser;
use common::{Common, CpuList, Crew};
use std::collections::VecDeque;
use std::io;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// Create many short-lived child processes (or threads) that spin briefly and exit (fork
/// placements and exits)
#[derive(Parser, Debug)]
#[command(
    after_help = "Prints `ready pid=<PID> tids=<main>` before the first child, then \
`done tids=<main> mode=fork|threads count=N parallel=K spin_us=S elapsed_ms=E failed=F` \
(and `children=<pid/tid list>` with --list-children) once every child has been reaped."
)]
struct Cli {
    /// Number of children (processes, or threads with --threads-mode) to create in all
    #[arg(long, default_value_t = 100)]
    count: u64,

    /// Create threads of this process instead of forked child processes
    #[arg(long)]
    threads_mode: bool,

    /// How long each child busy-spins before exiting, in microseconds
    #[arg(long, default_value_t = 1000)]
    spin_us: u64,

    /// Most children alive at once; when reached, the oldest (threads) or any (processes) is
    /// waited for before creating the next
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    parallel: u64,

    /// Pin the main thread to these CPUs (cpulist); children inherit the affinity, so their
    /// placement at fork is confined to them too
    #[arg(long, value_name = "CPULIST")]
    pin: Option<CpuList>,

    /// Add `children=<pid,...>` (process ids, or thread ids with --threads-mode) to the done line
    #[arg(long)]
    list_children: bool,

    #[command(flatten)]
    common: Common,
}

/// Waits for any child process; returns whether it exited with status 0.
fn reap_one() -> Result<bool> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid, writable c_int; waitpid has no other preconditions.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid > 0 {
            return Ok(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e).context("waitpid");
        }
    }
}

/// Forks `count` children that spin and `_exit(0)`; returns their pids and how many failed.
fn run_processes(cli: &Cli, spin: Duration) -> Result<(Vec<i32>, u64)> {
    let mut pids = Vec::with_capacity(cli.count as usize);
    let mut alive = 0u64;
    let mut failed = 0u64;
    for _ in 0..cli.count {
        if alive == cli.parallel {
            failed += u64::from(!reap_one()?);
            alive -= 1;
        }
        // Nothing may sit in stdout's buffer, or the child's copy could be written twice.
        // (Every line is flushed as it is written; this is belt and braces.)
        io::Write::flush(&mut io::stdout()).context("flushing stdout")?;
        // SAFETY: this process has a single thread (forker creates no threads in fork mode),
        // so the child may run any code; it only spins and then calls _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            common::spin_for(spin);
            // SAFETY: _exit ends the child at once, without running the parent's atexit
            // handlers or flushing its copies of the parent's buffers.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            let e = io::Error::last_os_error();
            while alive > 0 {
                reap_one()?;
                alive -= 1;
            }
            return Err(e).context("fork");
        }
        pids.push(pid);
        alive += 1;
    }
    while alive > 0 {
        failed += u64::from(!reap_one()?);
        alive -= 1;
    }
    Ok((pids, failed))
}

/// Spawns `count` threads that spin and return; returns their tids and how many panicked.
fn run_threads(cli: &Cli, comm: &str, spin: Duration) -> Result<(Vec<i32>, u64)> {
    let mut tids = Vec::with_capacity(cli.count as usize);
    let mut alive: VecDeque<JoinHandle<i32>> = VecDeque::new();
    let mut failed = 0u64;
    let mut join = |h: JoinHandle<i32>, tids: &mut Vec<i32>| match h.join() {
        Ok(tid) => tids.push(tid),
        Err(_) => failed += 1,
    };
    for _ in 0..cli.count {
        if alive.len() as u64 == cli.parallel {
            if let Some(h) = alive.pop_front() {
                join(h, &mut tids);
            }
        }
        // A new thread starts with its creator's comm, which Crew::new set; naming it also
        // makes std's thread name agree.
        let h = thread::Builder::new()
            .name(comm.to_string())
            .spawn(move || {
                common::spin_for(spin);
                common::gettid()
            })
            .context("spawning a child thread")?;
        alive.push_back(h);
    }
    while let Some(h) = alive.pop_front() {
        join(h, &mut tids);
    }
    Ok((tids, failed))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let crew = Crew::new(&cli.common.comm)?;
    if let Some(cpus) = &cli.pin {
        common::pin(0, cpus)?;
    }
    let spin = Duration::from_micros(cli.spin_us);

    let start = crew.start(cli.common.gate)?;
    let (children, failed) = if cli.threads_mode {
        run_threads(&cli, crew.comm(), spin)?
    } else {
        run_processes(&cli, spin)?
    };
    let elapsed = start.elapsed();

    let mut summary = format!(
        "mode={} count={} parallel={} spin_us={} elapsed_ms={} failed={}",
        if cli.threads_mode { "threads" } else { "fork" },
        cli.count,
        cli.parallel,
        cli.spin_us,
        common::ms(elapsed),
        failed
    );
    if cli.list_children {
        summary.push_str(" children=");
        summary.push_str(&common::join_tids(&children));
    }
    common::finish(crew.tids(), &summary, cli.common.hold)?;
    if failed > 0 {
        bail!("{failed} children did not exit cleanly");
    }
    Ok(())
}
