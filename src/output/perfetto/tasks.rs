//! What the trace says of tasks: the comm of every live pid (for the compact sched string
//! tables and the migration annotations) and `ProcessTree` packets that tie threads to their
//! process and name both, from the recording's `Task` events.
//!
//! Invariants: a pid's comm is dropped at its exit, so the table holds live tasks only; the
//! pending ProcessTree entries are written every [`TREE_BATCH`] tasks and at the end, each
//! packet stamped with the time of its first entry.

use super::proto::Proto;
use super::{MONOTONIC, TRACE_PACKET};
use crate::event::Pid;
use std::collections::HashMap;

/// Tasks per ProcessTree packet.
pub const TREE_BATCH: usize = 256;

// Field numbers, from perfetto's protos/perfetto/trace/trace_packet.proto and
// protos/perfetto/trace/ps/process_tree.proto.
const PACKET_TIMESTAMP: u32 = 8;
const PACKET_SEQUENCE_ID: u32 = 10;
const PACKET_CLOCK_ID: u32 = 58;
const PACKET_PROCESS_TREE: u32 = 2;
const TREE_PROCESSES: u32 = 1;
const TREE_THREADS: u32 = 2;
const PROCESS_PID: u32 = 1;
const PROCESS_CMDLINE: u32 = 3;
const PROCESS_CMDLINE_IS_COMM: u32 = 9;
const THREAD_TID: u32 = 1;
const THREAD_NAME: u32 = 2;
const THREAD_TGID: u32 = 3;

/// One task to declare.
#[derive(Debug)]
struct Entry {
    pid: Pid,
    tgid: Pid,
    comm: String,
}

/// The comm table and the pending ProcessTree entries.
#[derive(Debug)]
pub struct Tasks {
    seq: u32,
    comms: HashMap<Pid, String>,
    /// `swapper/N` for every CPU of the topology.
    swapper: Vec<String>,
    pending: Vec<Entry>,
    pending_since: u64,
}

impl Tasks {
    /// ProcessTree packets go on packet sequence `seq`; CPUs `0..nr_cpus` get their idle
    /// task's name.
    pub fn new(seq: u32, nr_cpus: usize) -> Tasks {
        Tasks {
            seq,
            comms: HashMap::new(),
            swapper: (0..nr_cpus).map(|c| format!("swapper/{c}")).collect(),
            pending: Vec::new(),
            pending_since: 0,
        }
    }

    /// The comm of `pid`: the idle task is `swapper/CPU` as the kernel names it, an unknown
    /// task "".
    pub fn comm(&self, pid: Pid, cpu: u32) -> &str {
        if pid == 0 {
            return self
                .swapper
                .get(cpu as usize)
                .map_or("swapper", String::as_str);
        }
        self.comms.get(&pid).map_or("", String::as_str)
    }

    /// A `Task` event: remembers the comm and queues the ProcessTree entry; writes the queue
    /// when it is full.
    pub fn task(&mut self, ts: u64, pid: Pid, tgid: Pid, comm: &str, out: &mut Vec<u8>) {
        if pid == 0 {
            return;
        }
        if self.comms.get(&pid).map(String::as_str) != Some(comm) {
            self.comms.insert(pid, comm.to_string());
        }
        if self.pending.is_empty() {
            self.pending_since = ts;
        }
        self.pending.push(Entry {
            pid,
            tgid,
            comm: comm.to_string(),
        });
        if self.pending.len() >= TREE_BATCH {
            self.flush(out);
        }
    }

    /// An exit: the pid's comm is no longer needed.
    pub fn exit(&mut self, pid: Pid) {
        self.comms.remove(&pid);
    }

    /// Writes the pending entries as one ProcessTree packet.
    pub fn flush(&mut self, out: &mut Vec<u8>) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        out.message(TRACE_PACKET, |p| {
            p.uint(PACKET_TIMESTAMP, self.pending_since);
            p.uint(PACKET_CLOCK_ID, MONOTONIC);
            p.message(PACKET_PROCESS_TREE, |t| {
                for e in pending.iter().filter(|e| e.pid == e.tgid) {
                    t.message(TREE_PROCESSES, |pr| {
                        pr.uint(PROCESS_PID, u64::from(e.pid));
                        pr.string(PROCESS_CMDLINE, &e.comm);
                        pr.uint(PROCESS_CMDLINE_IS_COMM, 1);
                    });
                }
                for e in &pending {
                    t.message(TREE_THREADS, |th| {
                        th.uint(THREAD_TID, u64::from(e.pid));
                        th.string(THREAD_NAME, &e.comm);
                        th.uint(THREAD_TGID, u64::from(e.tgid));
                    });
                }
            });
            p.uint(PACKET_SEQUENCE_ID, u64::from(self.seq));
        });
    }
}
