//! sched_switch and sched_waking as Perfetto's compact ftrace format: per CPU, a batch of
//! events kept as columns (delta-encoded timestamps, next pid, prev state, comm indices into
//! the batch's own string table), written as one `FtraceEventBundle` packet when it holds
//! [`BATCH_EVENTS`] events and at the end.
//!
//! Invariants: within a CPU the timestamps written never decrease (an event stamped earlier
//! than the previous one of its CPU, possible when an interrupt's probe overtakes the one it
//! interrupted, is written at the previous time), so every delta is non-negative across
//! batches too; every comm index points into the batch's table; the columns of one kind have
//! equal lengths. Priorities are not recorded: 120 (nice 0) is written. Events of CPUs at or
//! past [`MAX_CPUS`] (only a damaged recording has them) are dropped: trace processor refuses
//! a whole trace holding a bundle of such a CPU.

use super::proto::Proto;
use crate::cpuset::MAX_CPUS;
use std::collections::HashMap;

/// Events per CPU batch before it is written.
pub const BATCH_EVENTS: usize = 1000;

/// The priority written for every task (the recording has none): nice 0.
const DEFAULT_PRIO: u64 = 120;

// Field numbers, from perfetto's protos/perfetto/trace/trace_packet.proto and
// protos/perfetto/trace/ftrace/ftrace_event_bundle.proto.
const PACKET_FTRACE_EVENTS: u32 = 1;
const PACKET_SEQUENCE_ID: u32 = 10;
const BUNDLE_CPU: u32 = 1;
const BUNDLE_LOST_EVENTS: u32 = 3;
const BUNDLE_COMPACT_SCHED: u32 = 4;
const CS_SWITCH_TIMESTAMP: u32 = 1;
const CS_SWITCH_PREV_STATE: u32 = 2;
const CS_SWITCH_NEXT_PID: u32 = 3;
const CS_SWITCH_NEXT_PRIO: u32 = 4;
const CS_INTERN_TABLE: u32 = 5;
const CS_SWITCH_NEXT_COMM_INDEX: u32 = 6;
const CS_WAKING_TIMESTAMP: u32 = 7;
const CS_WAKING_PID: u32 = 8;
const CS_WAKING_TARGET_CPU: u32 = 9;
const CS_WAKING_PRIO: u32 = 10;
const CS_WAKING_COMM_INDEX: u32 = 11;
const CS_WAKING_COMMON_FLAGS: u32 = 12;

/// The task-state bits of `task->__state` that matter here (include/linux/sched.h).
const TASK_UNINTERRUPTIBLE: u32 = 0x2;
const TASK_PARKED: u32 = 0x40;
use crate::event::TASK_DEAD;
const TASK_NOLOAD: u32 = 0x400;
const TASK_RTLOCK_WAIT: u32 = 0x1000;
const TASK_IDLE: u32 = TASK_UNINTERRUPTIBLE | TASK_NOLOAD;

/// `prev_state` as written to the trace, from the raw `task->__state` the probe read.
///
/// The kernel's sched_switch reports one bit, the highest of the state masked to its report
/// bits (R S D T t X Z P, idle as I). Trace processor decodes that bit by the kernel version
/// the trace names, and assumes the 4.4 layout when, as here, it names none; so the bit is
/// written in the 4.4 layout: S 0x1, D 0x2, T 0x4, t 0x8, X 0x10, Z 0x20, dead 0x40, parked
/// 0x200, idle 0x402 (D with no-load). 0 (running) stays 0: "R".
pub fn prev_state(raw: u32) -> u64 {
    if raw == 0 {
        return 0;
    }
    if raw & TASK_IDLE == TASK_IDLE {
        return u64::from(TASK_IDLE);
    }
    if raw & TASK_RTLOCK_WAIT != 0 {
        return u64::from(TASK_UNINTERRUPTIBLE);
    }
    let report = raw & (TASK_PARKED | 0x3f);
    if report != 0 {
        let top = 1u32 << (31 - report.leading_zeros());
        return if top == TASK_PARKED {
            0x200
        } else {
            u64::from(top)
        };
    }
    if raw & TASK_DEAD != 0 {
        return 0x40;
    }
    // A state with no report bit (not seen in practice): sleeping, not running.
    1
}

/// One CPU's open batch.
#[derive(Debug, Default)]
struct CpuBatch {
    /// Latest timestamp written for this CPU (the clamp of the module invariant).
    last_ts: u64,
    strings: Vec<String>,
    index: HashMap<String, u32>,
    switch_ts: Vec<u64>,
    switch_prev_state: Vec<u64>,
    switch_next_pid: Vec<u64>,
    switch_comm: Vec<u64>,
    waking_ts: Vec<u64>,
    waking_pid: Vec<u64>,
    waking_target_cpu: Vec<u64>,
    waking_comm: Vec<u64>,
    /// The source lost events of this CPU since the last batch.
    lost: bool,
}

impl CpuBatch {
    fn len(&self) -> usize {
        self.switch_ts.len() + self.waking_ts.len()
    }

    fn clamp(&mut self, ts: u64) -> u64 {
        self.last_ts = self.last_ts.max(ts);
        self.last_ts
    }

    fn intern(&mut self, comm: &str) -> u64 {
        if let Some(&i) = self.index.get(comm) {
            return u64::from(i);
        }
        let i = self.strings.len() as u32;
        self.strings.push(comm.to_string());
        self.index.insert(comm.to_string(), i);
        u64::from(i)
    }

    /// Appends the batch as one TracePacket to `out` and empties it.
    fn write(&mut self, cpu: u32, seq: u32, out: &mut Vec<u8>) {
        delta_encode(&mut self.switch_ts);
        delta_encode(&mut self.waking_ts);
        let switch_prio = vec![DEFAULT_PRIO; self.switch_ts.len()];
        let waking_prio = vec![DEFAULT_PRIO; self.waking_ts.len()];
        let waking_flags = vec![0; self.waking_ts.len()];
        out.message(1, |p| {
            p.message(PACKET_FTRACE_EVENTS, |b| {
                b.uint(BUNDLE_CPU, u64::from(cpu));
                if self.lost {
                    b.uint(BUNDLE_LOST_EVENTS, 1);
                }
                b.message(BUNDLE_COMPACT_SCHED, |c| {
                    for s in &self.strings {
                        c.string(CS_INTERN_TABLE, s);
                    }
                    c.packed(CS_SWITCH_TIMESTAMP, &self.switch_ts);
                    c.packed(CS_SWITCH_PREV_STATE, &self.switch_prev_state);
                    c.packed(CS_SWITCH_NEXT_PID, &self.switch_next_pid);
                    c.packed(CS_SWITCH_NEXT_PRIO, &switch_prio);
                    c.packed(CS_SWITCH_NEXT_COMM_INDEX, &self.switch_comm);
                    c.packed(CS_WAKING_TIMESTAMP, &self.waking_ts);
                    c.packed(CS_WAKING_PID, &self.waking_pid);
                    c.packed(CS_WAKING_TARGET_CPU, &self.waking_target_cpu);
                    c.packed(CS_WAKING_PRIO, &waking_prio);
                    c.packed(CS_WAKING_COMM_INDEX, &self.waking_comm);
                    c.packed(CS_WAKING_COMMON_FLAGS, &waking_flags);
                });
            });
            p.uint(PACKET_SEQUENCE_ID, u64::from(seq));
        });
        let last_ts = self.last_ts;
        *self = CpuBatch {
            last_ts,
            ..CpuBatch::default()
        };
    }
}

/// Replaces absolute timestamps (non-decreasing) by the first one then successive deltas.
fn delta_encode(ts: &mut [u64]) {
    let mut prev = 0;
    for t in ts {
        let abs = *t;
        *t = abs - prev;
        prev = abs;
    }
}

/// The open batches of every CPU.
#[derive(Debug)]
pub struct CompactSched {
    /// The trusted packet sequence id the bundles are written on.
    seq: u32,
    cpus: Vec<CpuBatch>,
}

impl CompactSched {
    /// Batches written on packet sequence `seq`.
    pub fn new(seq: u32) -> CompactSched {
        CompactSched {
            seq,
            cpus: Vec::new(),
        }
    }

    /// The batch of `cpu`, grown on demand; `None` past [`MAX_CPUS`].
    fn cpu(&mut self, cpu: u32) -> Option<&mut CpuBatch> {
        let c = cpu as usize;
        if c >= MAX_CPUS {
            return None;
        }
        if self.cpus.len() <= c {
            self.cpus.resize_with(c + 1, CpuBatch::default);
        }
        Some(&mut self.cpus[c])
    }

    /// A sched_switch on `cpu` to `next_pid`, named `next_comm`; `raw_prev_state` is the
    /// previous task's `__state`.
    pub fn switch(&mut self, ts: u64, cpu: u32, raw_prev_state: u32, next: (u32, &str)) {
        let Some(b) = self.cpu(cpu) else { return };
        let ts = b.clamp(ts);
        let comm = b.intern(next.1);
        b.switch_ts.push(ts);
        b.switch_prev_state.push(prev_state(raw_prev_state));
        b.switch_next_pid.push(u64::from(next.0));
        b.switch_comm.push(comm);
    }

    /// A sched_waking executed on `cpu` of task `pid` named `comm`, reported with
    /// `target_cpu`.
    pub fn waking(&mut self, ts: u64, cpu: u32, pid: u32, comm: &str, target_cpu: u32) {
        let Some(b) = self.cpu(cpu) else { return };
        let ts = b.clamp(ts);
        let comm = b.intern(comm);
        b.waking_ts.push(ts);
        b.waking_pid.push(u64::from(pid));
        b.waking_target_cpu.push(u64::from(target_cpu));
        b.waking_comm.push(comm);
    }

    /// Marks `cpu`'s next bundle as following lost events.
    pub fn lost(&mut self, cpu: u32) {
        if let Some(b) = self.cpu(cpu) {
            b.lost = true;
        }
    }

    /// Writes `cpu`'s batch if it is full.
    pub fn flush_full(&mut self, cpu: u32, out: &mut Vec<u8>) {
        let seq = self.seq;
        if let Some(b) = self.cpus.get_mut(cpu as usize) {
            if b.len() >= BATCH_EVENTS {
                b.write(cpu, seq, out);
            }
        }
    }

    /// Writes every non-empty batch.
    pub fn flush_all(&mut self, out: &mut Vec<u8>) {
        let seq = self.seq;
        for (cpu, b) in self.cpus.iter_mut().enumerate() {
            if b.len() > 0 || b.lost {
                b.write(cpu as u32, seq, out);
            }
        }
    }
}
