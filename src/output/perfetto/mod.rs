//! Perfetto export: a recording's events as a Perfetto `Trace` (a stream of `TracePacket`s)
//! that ui.perfetto.dev and trace processor open.
//!
//! What goes where:
//! - sched_switch and sched_waking become per-CPU `FtraceEventBundle`s in the compact sched
//!   format (`sched`), so the UI draws CPU tracks, thread states and wakeup edges as for a
//!   trace taken with Perfetto itself. A waking is written at the `Waking` event, on the CPU
//!   that ran it, with the task's previous CPU as target CPU: that is what the kernel's own
//!   sched_waking reports (it fires before placement). Where the recording has a `Wakeup`
//!   with no `Waking` before it (the probe was missing, or the event lost), the `Wakeup` is
//!   written as the waking instead, with its placement CPU; a `WakeupNew` is written as a
//!   waking too (the kernel has no sched_waking for a new task; this makes the child show as
//!   runnable until it first runs).
//! - `Task` events become `ProcessTree` packets (thread names, thread-to-process links) and
//!   the comm strings of the compact events (`tasks`).
//! - Migrations become instant events named by reason, one track per destination CPU, with
//!   pid, comm, CPUs, level crossed and how the reason was found; a `WakeupNew` placed away
//!   from its parent's CPU is a "fork" migration, as the analyzer counts it (`tracks`).
//! - Counter tracks: each CPU's nr_running, and each domain's idle-while-others-wait status
//!   as the analyzer computes it (0 none, 1 pinned waiters only, 2 a movable waiter): the
//!   writer is handed the pipeline's [`Analyzer`] after each event (a per-event sink) and
//!   reads its status after each event that can change it, writing a sample only on change.
//!
//! Clocks: event times are CLOCK_MONOTONIC. Ftrace bundles are read as BOOTTIME, track
//! events carry clock id MONOTONIC, and a `ClockSnapshot` first in the file declares both
//! equal at the first event (REALTIME = monotonic + the recording's clock base), so the two
//! line up and the UI can show wall-clock time. Packets are written in arrival order;
//! trace processor sorts them.

mod proto;
mod sched;
mod tasks;
#[cfg(test)]
mod tests;
mod tracks;

use crate::analyze::{Analyzer, AnalyzerConfig, WaitStatus};
use crate::event::{Event, EventKind, Pid, Reason, ReasonSource};
use crate::topology::Topology;
use proto::Proto;
use sched::CompactSched;
use std::collections::HashSet;
use std::io::{self, Write};
use tasks::Tasks;
use tracks::{Migration, Tracks};

/// `Trace.packet`, the one field of the file's top-level message.
const TRACE_PACKET: u32 = 1;
/// `BuiltinClock` ids.
const REALTIME: u64 = 1;
const MONOTONIC: u64 = 3;
const BOOTTIME: u64 = 6;
/// Packet sequences: track events, descriptors, process trees and the clock snapshot on one;
/// ftrace bundles on the other, as a tracing service would write them.
const SEQ_TRACKS: u32 = 1;
const SEQ_FTRACE: u32 = 2;
/// `TracePacket.sequence_flags`: SEQ_INCREMENTAL_STATE_CLEARED, on the first packet.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
/// Encoded bytes held before they go to the writer.
const FLUSH_BYTES: usize = 1 << 16;

// Field numbers, from perfetto's protos/perfetto/trace/trace_packet.proto and
// protos/perfetto/trace/clock_snapshot.proto.
const PACKET_CLOCK_SNAPSHOT: u32 = 6;
const PACKET_TIMESTAMP: u32 = 8;
const PACKET_SEQUENCE_ID: u32 = 10;
const PACKET_SEQUENCE_FLAGS: u32 = 13;
const SNAPSHOT_CLOCKS: u32 = 1;
const CLOCK_ID: u32 = 1;
const CLOCK_TIMESTAMP: u32 = 2;

/// The analyzer whose per-event state the writer draws (no filter: every domain).
pub fn analyzer(topo: &Topology) -> Analyzer {
    Analyzer::new(topo.clone(), AnalyzerConfig::default())
}

/// Writes events as a Perfetto trace. Feed every event in recording order, then call
/// [`PerfettoWriter::finish`]: batches still open are written only then.
pub struct PerfettoWriter<W: Write> {
    w: W,
    /// Encoded packets not yet written to `w`.
    out: Vec<u8>,
    clock_base_ns: i64,
    started: bool,
    topo: Topology,
    sched: CompactSched,
    tasks: Tasks,
    tracks: Tracks,
    /// Tasks with a waking written and no wakeup seen since.
    waking: HashSet<Pid>,
}

impl<W: Write> PerfettoWriter<W> {
    /// A writer onto `w` for a recording of a machine with topology `topo`, whose clock base
    /// (Unix-epoch ns minus monotonic ns) is `clock_base_ns`.
    pub fn new(w: W, topo: &Topology, clock_base_ns: i64) -> io::Result<Self> {
        Ok(PerfettoWriter {
            w,
            out: Vec::with_capacity(FLUSH_BYTES * 2),
            clock_base_ns,
            started: false,
            topo: topo.clone(),
            sched: CompactSched::new(SEQ_FTRACE),
            tasks: Tasks::new(SEQ_TRACKS, topo.nr_cpus),
            tracks: Tracks::new(SEQ_TRACKS),
            waking: HashSet::new(),
        })
    }

    /// Adds one event, which `analyzer` (made by [`analyzer`]) has just
    /// applied.
    pub fn write(&mut self, ev: &Event, analyzer: &Analyzer) -> io::Result<()> {
        if !self.started {
            self.started = true;
            self.clock_snapshot(ev.ts_ns);
        }
        let (ts, cpu) = (ev.ts_ns, ev.cpu);
        match &ev.kind {
            EventKind::Switch {
                prev_state,
                next_pid,
                ..
            } => {
                let comm = self.tasks.comm(*next_pid, cpu);
                self.sched.switch(ts, cpu, *prev_state, (*next_pid, comm));
                self.sched.flush_full(cpu, &mut self.out);
            }
            EventKind::Waking { pid, prev_cpu } => {
                self.waking.insert(*pid);
                self.waking(ev, *pid, *prev_cpu);
            }
            // A wakeup consumes the waking written before it; one with none stands in for it.
            EventKind::Wakeup { pid, target_cpu } if !self.waking.remove(pid) => {
                self.waking(ev, *pid, *target_cpu);
            }
            EventKind::WakeupNew {
                pid, target_cpu, ..
            } => {
                self.waking(ev, *pid, *target_cpu);
                if *target_cpu != cpu {
                    self.migration(
                        ts,
                        (*pid, cpu, *target_cpu),
                        Reason::Fork,
                        "wakeup_new",
                        None,
                    );
                }
            }
            EventKind::Migrate(mi) if mi.src_cpu != mi.dst_cpu => {
                let source = match mi.source {
                    ReasonSource::Stack => "stack",
                    ReasonSource::Context => "context",
                    ReasonSource::TaskState => "task_state",
                };
                let m = (mi.pid, mi.src_cpu, mi.dst_cpu);
                self.migration(ts, m, mi.reason, source, mi.stack_id);
            }
            EventKind::NrRunning {
                rq_cpu, nr_running, ..
            } => {
                self.tracks
                    .nr_running(ts, u32::from(*rq_cpu), *nr_running, &mut self.out);
            }
            EventKind::Task(ti) => self
                .tasks
                .task(ts, ti.pid, ti.tgid, &ti.comm, &mut self.out),
            EventKind::Exit { pid, .. } => {
                self.tasks.exit(*pid);
                self.waking.remove(pid);
            }
            EventKind::Lost { .. } => self.sched.lost(cpu),
            _ => {}
        }
        if changes_waiting(&ev.kind) {
            self.idle_waiting_counters(analyzer);
        }
        if self.out.len() >= FLUSH_BYTES {
            self.w.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }

    /// Writes what is still batched, flushes, and hands the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        self.sched.flush_all(&mut self.out);
        self.tasks.flush(&mut self.out);
        self.w.write_all(&self.out)?;
        self.w.flush()?;
        Ok(self.w)
    }

    fn waking(&mut self, ev: &Event, pid: Pid, target_cpu: u32) {
        let comm = self.tasks.comm(pid, target_cpu);
        self.sched.waking(ev.ts_ns, ev.cpu, pid, comm, target_cpu);
        self.sched.flush_full(ev.cpu, &mut self.out);
    }

    /// A migration instant; `m` is (pid, src_cpu, dst_cpu).
    fn migration(
        &mut self,
        ts: u64,
        m: (Pid, u32, u32),
        reason: Reason,
        source: &'static str,
        stack_id: Option<u32>,
    ) {
        let (pid, src_cpu, dst_cpu) = m;
        let topo = &self.topo;
        let level = topo.crossed_level(src_cpu as usize, dst_cpu as usize);
        let m = Migration {
            ts,
            pid,
            comm: self.tasks.comm(pid, dst_cpu),
            src_cpu,
            dst_cpu,
            reason: reason.name(),
            level: topo.level_key(level),
            source,
            stack_id,
        };
        self.tracks.migration(&m, &mut self.out);
    }

    /// Samples every domain whose idle-while-waiting status changed.
    fn idle_waiting_counters(&mut self, analyzer: &Analyzer) {
        let ts = analyzer.now_ns();
        let topo = &self.topo;
        for (i, (level, span, status)) in analyzer.idle_waiting_status().enumerate() {
            let value = match status {
                WaitStatus::None => 0,
                WaitStatus::Pinned => 1,
                WaitStatus::Movable => 2,
            };
            let name = || format!("{} {span}", topo.level_key(Some(level)));
            self.tracks
                .idle_waiting(ts, i as u32, value, name, &mut self.out);
        }
    }

    /// The clock snapshot that starts the file: BOOTTIME = MONOTONIC = `t`, REALTIME =
    /// `t` + clock base.
    fn clock_snapshot(&mut self, t: u64) {
        let real = (i128::from(t) + i128::from(self.clock_base_ns)).clamp(0, u64::MAX.into());
        let clocks = [(BOOTTIME, t), (MONOTONIC, t), (REALTIME, real as u64)];
        self.out.message(TRACE_PACKET, |p| {
            p.uint(PACKET_TIMESTAMP, t);
            p.message(PACKET_CLOCK_SNAPSHOT, |s| {
                for (id, ts) in clocks {
                    s.message(SNAPSHOT_CLOCKS, |c| {
                        c.uint(CLOCK_ID, id);
                        c.uint(CLOCK_TIMESTAMP, ts);
                    });
                }
            });
            p.uint(PACKET_SEQUENCE_ID, u64::from(SEQ_TRACKS));
            p.uint(PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
        });
    }
}

/// Whether an event of this kind can change a domain's idle-while-waiting status (which
/// CPUs are idle, who waits where, or a waiter's affinity).
fn changes_waiting(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Switch { .. }
            | EventKind::Wakeup { .. }
            | EventKind::WakeupNew { .. }
            | EventKind::Migrate(_)
            | EventKind::Affinity { .. }
            | EventKind::Exit { .. }
    )
}
