//! A synthetic source: a generated, self-consistent event stream for a large machine (by
//! default 256 CPUs in 2 NUMA nodes of 8 LLCs of SMT pairs), so that the analyzer, the report
//! and the TUI can be measured at scale on a small host.
//!
//! The stream is what a busy server produces: tasks wake (on their last CPU, or elsewhere with
//! a migration), run, sleep or get preempted; the balancer moves queued tasks between CPUs;
//! processes exit and new ones fork, reusing pids from a bounded range; PELT and nr_running
//! follow every change. Event time advances by `1e9 / rate` ns per event, so `rate` is the
//! simulated machine's event rate; pacing to the wall clock is optional (the TUI wants it,
//! a throughput measurement does not).
//!
//! Invariants: every task is in exactly one place (running on one CPU, queued on one CPU, or
//! asleep); `nr_running` events always carry the true queue length, so the stream is as
//! consistent as a kernel's. Deterministic for a given seed.

use super::{Batch, BatchPool, SourceMsg};
use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind, MigrateContext, OptU32, Pid, Reason, ReasonSource};
use crate::topology::{LevelKind, Topology};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to generate.
#[derive(Clone, Debug)]
pub struct SyntheticConfig {
    /// CPUs of the machine.
    pub cpus: usize,
    /// Tasks alive at any time (about).
    pub tasks: usize,
    /// Simulated events per second (event time).
    pub rate: u64,
    /// Stop after this many events (`None`: until stopped).
    pub events: Option<u64>,
    /// Send no faster than event time (for the TUI); otherwise as fast as generated.
    pub paced: bool,
    /// Seed of the generator.
    pub seed: u64,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            cpus: 256,
            tasks: 256 * 8,
            rate: 5_000_000,
            events: None,
            paced: false,
            seed: 1,
        }
    }
}

/// The machine the stream runs on: SMT pairs and LLCs of 16 CPUs; from 32 CPUs on, each LLC
/// is a NUMA node, all under one NUMA level spanning the machine.
pub fn topology(cpus: usize) -> Topology {
    let mut levels = vec![(LevelKind::Smt, "SMT", 2), (LevelKind::Llc, "MC", 16)];
    if cpus >= 32 {
        levels.push((LevelKind::Numa, "NUMA", cpus));
    }
    Topology::synthetic(&levels, cpus.max(2))
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// Pids are reused from this range, as a kernel with a small pid_max would.
const PID_BASE: Pid = 1000;

/// The generator: the machine's state and the next event time.
pub struct Generator {
    cpus: usize,
    rng: Rng,
    ts: u64,
    step_ns: u64,
    current: Vec<Pid>,
    queues: Vec<VecDeque<Pid>>,
    last_cpu: Vec<u32>,
    asleep: Vec<Pid>,
    /// Exited pids, reused oldest first.
    free_pids: VecDeque<Pid>,
    pid_span: Pid,
    out: Vec<Event>,
    /// Where the next batch's vector comes from: those of the batches sent pooled come back.
    pool: Arc<BatchPool>,
}

impl Generator {
    /// A machine with every task asleep and every CPU idle at time 1 s.
    pub fn new(cfg: &SyntheticConfig) -> Generator {
        let cpus = cfg.cpus.max(2);
        let tasks = cfg.tasks.max(cpus);
        let pid_span = (tasks * 2) as Pid;
        let mut g = Generator {
            cpus,
            rng: Rng(cfg.seed | 1),
            ts: 1_000_000_000,
            step_ns: (1_000_000_000 / cfg.rate.max(1)).max(1),
            current: vec![0; cpus],
            queues: vec![VecDeque::new(); cpus],
            last_cpu: vec![0; pid_span as usize],
            asleep: Vec::with_capacity(tasks),
            free_pids: (tasks as Pid..pid_span)
                .rev()
                .map(|i| PID_BASE + i)
                .collect(),
            pid_span,
            out: Vec::new(),
            pool: BatchPool::new(),
        };
        for i in 0..tasks as Pid {
            let pid = PID_BASE + i;
            g.last_cpu[i as usize] = (i as usize % cpus) as u32;
            g.asleep.push(pid);
            g.emit(0, Self::task_event(pid));
        }
        g
    }

    fn task_event(pid: Pid) -> EventKind {
        let tgid = PID_BASE + (pid - PID_BASE) / 8 * 8;
        EventKind::Task(Box::new(crate::event::TaskInfo {
            pid,
            tgid,
            comm: format!("job{}", tgid % 100),
            exec: false,
        }))
    }

    fn emit(&mut self, cpu: usize, kind: EventKind) {
        self.out.push(Event {
            ts_ns: self.ts,
            cpu: cpu as u32,
            kind,
        });
    }

    fn nr_running(&mut self, cpu: usize) {
        let n = self.queues[cpu].len() as u32 + u32::from(self.current[cpu] != 0);
        self.emit(
            cpu,
            EventKind::NrRunning {
                rq_cpu: cpu as u16,
                nr_running: n,
                util_est: OptU32::NONE,
                cfs_h_nr_running: OptU32::NONE,
            },
        );
    }

    fn slot(&self, pid: Pid) -> usize {
        (pid - PID_BASE) as usize
    }

    /// A context switch on `cpu`: the current task sleeps or is preempted, the next queued
    /// task (or idle) runs.
    fn switch(&mut self, cpu: usize) {
        let prev = self.current[cpu];
        let mut prev_state = 0;
        if prev != 0 {
            if self.rng.below(2) == 0 {
                prev_state = 1;
                self.asleep.push(prev);
            } else {
                self.queues[cpu].push_back(prev);
            }
        }
        let next = self.queues[cpu].pop_front().unwrap_or(0);
        self.current[cpu] = next;
        if next != 0 {
            let s = self.slot(next);
            self.last_cpu[s] = cpu as u32;
        }
        self.emit(
            cpu,
            EventKind::Switch {
                prev_pid: prev,
                prev_state,
                next_pid: next,
            },
        );
        self.nr_running(cpu);
    }

    /// A sleeping task wakes, mostly on its last CPU, sometimes on another one of its LLC.
    fn wakeup(&mut self) {
        if self.asleep.is_empty() {
            return;
        }
        let i = self.rng.below(self.asleep.len());
        let pid = self.asleep.swap_remove(i);
        let prev_cpu = self.last_cpu[self.slot(pid)] as usize;
        let waker = self.rng.below(self.cpus);
        let target = if self.rng.below(8) == 0 {
            prev_cpu / 16 * 16 + self.rng.below(16.min(self.cpus))
        } else {
            prev_cpu
        }
        .min(self.cpus - 1);
        self.emit(
            waker,
            EventKind::Waking {
                pid,
                prev_cpu: prev_cpu as u32,
            },
        );
        if target != prev_cpu {
            self.migrate(waker, pid, prev_cpu, target, Reason::Wakeup);
        }
        self.queues[target].push_back(pid);
        self.emit(
            waker,
            EventKind::Wakeup {
                pid,
                target_cpu: target as u32,
            },
        );
        self.nr_running(target);
    }

    fn migrate(&mut self, on: usize, pid: Pid, src: usize, dst: usize, reason: Reason) {
        let s = self.slot(pid);
        self.last_cpu[s] = dst as u32;
        self.emit(
            on,
            EventKind::Migrate(Box::new(crate::event::MigrateInfo {
                pid,
                src_cpu: src as u32,
                dst_cpu: dst as u32,
                reason,
                source: ReasonSource::Context,
                stack_id: None,
                ctx: MigrateContext::default(),
            })),
        );
    }

    /// The balancer on an idle-ish CPU pulls a queued task from a random busy CPU.
    fn balance(&mut self) {
        let src = self.rng.below(self.cpus);
        let dst = self.rng.below(self.cpus);
        if src == dst {
            return;
        }
        let Some(pid) = self.queues[src].pop_back() else {
            return;
        };
        self.migrate(dst, pid, src, dst, Reason::PeriodicBalance);
        self.queues[dst].push_back(pid);
        self.nr_running(src);
        self.nr_running(dst);
    }

    /// A sleeping task exits and a new one forks on a random CPU, taking a free pid (pids are
    /// reused, as on a real machine).
    fn churn(&mut self) {
        if self.asleep.is_empty() {
            return;
        }
        let i = self.rng.below(self.asleep.len());
        let old = self.asleep.swap_remove(i);
        let cpu = self.rng.below(self.cpus);
        self.emit(
            cpu,
            EventKind::Exit {
                pid: old,
                tgid: old,
            },
        );
        self.free_pids.push_front(old);
        let Some(pid) = self.free_pids.pop_back() else {
            return;
        };
        debug_assert!(pid < PID_BASE + self.pid_span);
        self.emit(cpu, Self::task_event(pid));
        if self.rng.below(4) == 0 {
            let cpus: CpuSet = [cpu].into_iter().collect();
            self.emit(
                cpu,
                EventKind::Affinity {
                    pid,
                    cpus: Box::new(cpus),
                },
            );
        }
        let s = self.slot(pid);
        self.last_cpu[s] = cpu as u32;
        self.queues[cpu].push_back(pid);
        self.emit(
            cpu,
            EventKind::WakeupNew {
                pid,
                tgid: PID_BASE + (pid - PID_BASE) / 8 * 8,
                target_cpu: cpu as u32,
            },
        );
        self.nr_running(cpu);
    }

    fn pelt(&mut self) {
        let cpu = self.rng.below(self.cpus);
        let n = (self.queues[cpu].len() + usize::from(self.current[cpu] != 0)) as u64;
        self.emit(
            cpu,
            EventKind::Pelt(Box::new(crate::event::PeltInfo {
                rq_cpu: cpu as u32,
                load_avg: n * 1024,
                runnable_avg: n * 1024,
                util_avg: (n * 512).min(1024),
                util_est: Some((n * 512).min(1024)),
                at_search: None,
            })),
        );
    }

    /// Generates at least `n` more events (a step may produce a few), ending with a clock tick.
    pub fn batch(&mut self, n: usize) -> Vec<Event> {
        while self.out.len() < n {
            self.ts += self.step_ns;
            match self.rng.below(100) {
                0..=44 => {
                    let cpu = self.rng.below(self.cpus);
                    self.switch(cpu);
                }
                45..=79 => self.wakeup(),
                80..=83 => self.balance(),
                84 => self.churn(),
                _ => self.pelt(),
            }
        }
        self.emit(0, EventKind::Clock);
        // The next batch gets room for a whole batch up front: growing it by doubling copied
        // every event several times over.
        let next = self.pool.take(n + 16);
        std::mem::replace(&mut self.out, next)
    }

    /// The event time reached.
    pub fn now_ns(&self) -> u64 {
        self.ts
    }
}

/// A running synthetic source: a thread feeding the channel until stopped or done.
pub struct SyntheticSource {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<u64>>,
}

impl SyntheticSource {
    /// Starts generating into `tx`: a bounded channel, so that an unpaced generator waits for
    /// the consumer instead of queueing without limit.
    pub fn start(cfg: SyntheticConfig, tx: SyncSender<SourceMsg>) -> SyntheticSource {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut g = Generator::new(&cfg);
            let pool = Arc::clone(&g.pool);
            let t0 = g.now_ns();
            let started = Instant::now();
            let mut sent = 0u64;
            while !flag.load(Ordering::Relaxed) && cfg.events.is_none_or(|n| sent < n) {
                let b = g.batch(4096);
                sent += b.len() as u64;
                if cfg.paced {
                    let due = Duration::from_nanos(g.now_ns() - t0);
                    if let Some(wait) = due.checked_sub(started.elapsed()) {
                        std::thread::sleep(wait);
                    }
                }
                if tx.send(SourceMsg::Batch(Batch::pooled(b, &pool))).is_err() {
                    break;
                }
            }
            let _ = tx.send(SourceMsg::End);
            sent
        });
        SyntheticSource {
            stop,
            handle: Some(handle),
        }
    }

    /// Asks the generator to stop; it then sends `End`.
    pub fn stop_async(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Waits for the generator; returns the events it sent.
    pub fn join(mut self) -> u64 {
        self.handle.take().and_then(|h| h.join().ok()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_consistent_and_reuses_pids() {
        let cfg = SyntheticConfig {
            cpus: 64,
            tasks: 256,
            ..SyntheticConfig::default()
        };
        let mut g = Generator::new(&cfg);
        let mut seen_exit = std::collections::HashSet::new();
        let mut reused = 0;
        let mut last_ts = 0;
        for _ in 0..200 {
            for e in g.batch(1000) {
                assert!(e.ts_ns >= last_ts);
                last_ts = e.ts_ns;
                assert!((e.cpu as usize) < 64);
                match e.kind {
                    EventKind::Exit { pid, .. } => {
                        seen_exit.insert(pid);
                    }
                    EventKind::WakeupNew { pid, .. } if seen_exit.contains(&pid) => reused += 1,
                    _ => {}
                }
            }
        }
        assert!(reused > 0, "pids come back");
        // Every task is in exactly one place.
        let mut all: Vec<Pid> = g.asleep.clone();
        all.extend(g.current.iter().filter(|&&p| p != 0));
        for q in &g.queues {
            all.extend(q.iter());
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "no task in two places");
        assert_eq!(n, 256, "tasks are conserved");
    }

    #[test]
    fn analyzer_memory_is_bounded_by_tasks_not_time() {
        use crate::analyze::{Analyzer, AnalyzerConfig};
        let cfg = SyntheticConfig {
            cpus: 256,
            tasks: 2048,
            ..SyntheticConfig::default()
        };
        let mut g = Generator::new(&cfg);
        let mut a = Analyzer::new(
            topology(256),
            AnalyzerConfig {
                interval_ns: 100_000_000,
                ..AnalyzerConfig::default()
            },
        );
        let mut snaps = Vec::new();
        let mut tracked = Vec::new();
        for round in 0..6 {
            for _ in 0..100 {
                for e in g.batch(5000) {
                    a.push(&e, &mut snaps);
                }
            }
            snaps.clear();
            if round > 0 {
                tracked.push(a.tracked_tasks());
            }
        }
        // 2048 tasks at most (pids are reused within 4096); flat from round to round.
        assert!(tracked.iter().all(|&t| t <= 4096), "{tracked:?}");
        let (lo, hi) = (tracked.iter().min().unwrap(), tracked.iter().max().unwrap());
        assert!(hi - lo <= hi / 10, "flat: {tracked:?}");
    }
}
