//! Perfetto track events: migrations as instant events on one track per destination CPU,
//! and counter tracks for each CPU's `nr_running` and each domain's idle-while-others-wait
//! status. Tracks are grouped under three parent tracks and declared (a `TrackDescriptor`
//! packet) just before their first event, so every event's track is declared earlier in the
//! file and tracks that never get an event do not clutter the view.
//!
//! Invariants: a counter sample is written only when the value differs from the last one
//! written on its track (a track starts at "nothing written": 0 for idle-while-waiting,
//! which is never written first); track uuids are fixed by what they show (group, CPU or
//! domain index), so they are unique within a trace.

use super::proto::Proto;
use super::{MONOTONIC, TRACE_PACKET};
use crate::cpuset::MAX_CPUS;
use std::collections::HashSet;

// Field numbers, from perfetto's protos/perfetto/trace/trace_packet.proto and
// protos/perfetto/trace/track_event/{track_event,track_descriptor,counter_descriptor,
// debug_annotation}.proto.
const PACKET_TIMESTAMP: u32 = 8;
const PACKET_SEQUENCE_ID: u32 = 10;
const PACKET_TRACK_EVENT: u32 = 11;
const PACKET_CLOCK_ID: u32 = 58;
const PACKET_TRACK_DESCRIPTOR: u32 = 60;
const DESC_UUID: u32 = 1;
const DESC_NAME: u32 = 2;
const DESC_PARENT_UUID: u32 = 5;
const DESC_COUNTER: u32 = 8;
const DESC_CHILD_ORDERING: u32 = 11;
const DESC_SIBLING_ORDER_RANK: u32 = 12;
const DESC_DESCRIPTION: u32 = 14;
const ORDERING_EXPLICIT: u64 = 3;
const EVENT_ANNOTATIONS: u32 = 4;
const EVENT_TYPE: u32 = 9;
const EVENT_TRACK_UUID: u32 = 11;
const EVENT_NAME: u32 = 23;
const EVENT_COUNTER_VALUE: u32 = 30;
const TYPE_INSTANT: u64 = 3;
const TYPE_COUNTER: u64 = 4;
const ANNOTATION_INT: u32 = 4;
const ANNOTATION_STRING: u32 = 6;
const ANNOTATION_NAME: u32 = 10;

/// The parent tracks.
const GROUP_MIGRATIONS: u64 = 1;
const GROUP_NR_RUNNING: u64 = 2;
const GROUP_IDLE_WAITING: u64 = 3;

/// Uuids of per-CPU and per-domain tracks: the group above bit 16 and the index (a CPU, or a
/// domain number) below, so that the uuid every counter sample carries stays a three-byte
/// varint; an index past 16 bits (not seen on real machines) moves the group above bit 32.
fn child_uuid(group: u64, index: u32) -> u64 {
    if index < 1 << 16 {
        group << 16 | u64::from(index)
    } else {
        group << 32 | u64::from(index)
    }
}

/// What the idle-while-waiting counters' values mean.
pub const IDLE_WAITING_DESCRIPTION: &str = "Idle while others wait, the analyzer's status of \
    this domain: 0 no CPU idle while a task waits elsewhere in the span, 1 a CPU idle while \
    only tasks pinned away from it wait, 2 a CPU idle while a task that could run there waits";

/// A migration, as one instant event.
#[derive(Debug)]
pub struct Migration<'a> {
    /// When it happened.
    pub ts: u64,
    /// The task.
    pub pid: u32,
    /// Its comm ("" when unknown).
    pub comm: &'a str,
    /// From.
    pub src_cpu: u32,
    /// To: the track it is drawn on.
    pub dst_cpu: u32,
    /// The event name: the reason's stable name.
    pub reason: &'static str,
    /// The topology level crossed ("unknown" when none).
    pub level: &'a str,
    /// How the reason was found.
    pub source: &'static str,
    /// The kernel stack it came from, if known.
    pub stack_id: Option<u32>,
}

/// One track to declare.
struct Track {
    uuid: u64,
    parent: Option<u64>,
    name: String,
    counter: bool,
    description: Option<&'static str>,
    /// Rank among its siblings (the CPU or domain index).
    rank: Option<u32>,
}

/// Declared tracks and the last value written on each counter.
#[derive(Debug)]
pub struct Tracks {
    seq: u32,
    declared: HashSet<u64>,
    nr_running: Vec<Option<u32>>,
    idle_waiting: Vec<u8>,
}

impl Tracks {
    /// Tracks written on packet sequence `seq`.
    pub fn new(seq: u32) -> Tracks {
        Tracks {
            seq,
            declared: HashSet::new(),
            nr_running: Vec::new(),
            idle_waiting: Vec::new(),
        }
    }

    /// Writes the descriptor of `t` (and of its group) unless already written.
    fn declare(&mut self, t: Track, out: &mut Vec<u8>) {
        if self.declared.contains(&t.uuid) {
            return;
        }
        if let Some(parent) = t.parent {
            let name = match parent {
                GROUP_MIGRATIONS => "Migrations (by destination CPU)",
                GROUP_NR_RUNNING => "nr_running",
                _ => "Idle while others wait",
            };
            let group = Track {
                uuid: parent,
                parent: None,
                name: name.to_string(),
                counter: false,
                description: (parent == GROUP_IDLE_WAITING).then_some(IDLE_WAITING_DESCRIPTION),
                rank: None,
            };
            self.declare(group, out);
        }
        let seq = self.seq;
        out.message(TRACE_PACKET, |p| {
            p.message(PACKET_TRACK_DESCRIPTOR, |d| {
                d.uint(DESC_UUID, t.uuid);
                if let Some(parent) = t.parent {
                    d.uint(DESC_PARENT_UUID, parent);
                }
                d.string(DESC_NAME, &t.name);
                if let Some(text) = t.description {
                    d.string(DESC_DESCRIPTION, text);
                }
                if t.counter {
                    d.message(DESC_COUNTER, |_| {});
                }
                if t.parent.is_none() {
                    d.uint(DESC_CHILD_ORDERING, ORDERING_EXPLICIT);
                }
                if let Some(rank) = t.rank {
                    d.int(DESC_SIBLING_ORDER_RANK, i64::from(rank));
                }
            });
            p.uint(PACKET_SEQUENCE_ID, u64::from(seq));
        });
        self.declared.insert(t.uuid);
    }

    /// Appends one TrackEvent packet at `ts` whose body `event` writes.
    fn event(&self, ts: u64, out: &mut Vec<u8>, event: impl FnOnce(&mut Vec<u8>)) {
        out.message(TRACE_PACKET, |p| {
            p.uint(PACKET_TIMESTAMP, ts);
            p.uint(PACKET_CLOCK_ID, MONOTONIC);
            p.message(PACKET_TRACK_EVENT, event);
            p.uint(PACKET_SEQUENCE_ID, u64::from(self.seq));
        });
    }

    /// A migration instant on its destination CPU's track.
    pub fn migration(&mut self, m: &Migration, out: &mut Vec<u8>) {
        let uuid = child_uuid(GROUP_MIGRATIONS, m.dst_cpu);
        let track = Track {
            uuid,
            parent: Some(GROUP_MIGRATIONS),
            name: format!("to cpu{}", m.dst_cpu),
            counter: false,
            description: None,
            rank: Some(m.dst_cpu),
        };
        self.declare(track, out);
        self.event(m.ts, out, |e| {
            e.uint(EVENT_TYPE, TYPE_INSTANT);
            e.uint(EVENT_TRACK_UUID, uuid);
            e.string(EVENT_NAME, m.reason);
            annotate_int(e, "pid", i64::from(m.pid));
            if !m.comm.is_empty() {
                annotate_str(e, "comm", m.comm);
            }
            annotate_int(e, "src_cpu", i64::from(m.src_cpu));
            annotate_int(e, "dst_cpu", i64::from(m.dst_cpu));
            annotate_str(e, "level", m.level);
            annotate_str(e, "reason_source", m.source);
            if let Some(id) = m.stack_id {
                annotate_int(e, "stack_id", i64::from(id));
            }
        });
    }

    /// `cpu`'s nr_running is `n` from `ts`.
    /// Ignored for CPUs past [`MAX_CPUS`] (a damaged recording).
    pub fn nr_running(&mut self, ts: u64, cpu: u32, n: u32, out: &mut Vec<u8>) {
        let c = cpu as usize;
        if c >= MAX_CPUS {
            return;
        }
        if self.nr_running.len() <= c {
            self.nr_running.resize(c + 1, None);
        }
        if self.nr_running[c] == Some(n) {
            return;
        }
        self.nr_running[c] = Some(n);
        let uuid = child_uuid(GROUP_NR_RUNNING, cpu);
        let track = Track {
            uuid,
            parent: Some(GROUP_NR_RUNNING),
            name: format!("cpu{cpu} nr_running"),
            counter: true,
            description: None,
            rank: Some(cpu),
        };
        self.declare(track, out);
        self.counter(ts, uuid, i64::from(n), out);
    }

    /// Domain number `index` (in topology order) has idle-while-waiting value `value` from
    /// `ts`; `name` names its track.
    pub fn idle_waiting(
        &mut self,
        ts: u64,
        index: u32,
        value: u8,
        name: impl FnOnce() -> String,
        out: &mut Vec<u8>,
    ) {
        let i = index as usize;
        if self.idle_waiting.len() <= i {
            self.idle_waiting.resize(i + 1, 0);
        }
        if self.idle_waiting[i] == value {
            return;
        }
        self.idle_waiting[i] = value;
        let uuid = child_uuid(GROUP_IDLE_WAITING, index);
        let track = Track {
            uuid,
            parent: Some(GROUP_IDLE_WAITING),
            name: name(),
            counter: true,
            description: Some(IDLE_WAITING_DESCRIPTION),
            rank: Some(index),
        };
        self.declare(track, out);
        self.counter(ts, uuid, i64::from(value), out);
    }

    fn counter(&self, ts: u64, uuid: u64, value: i64, out: &mut Vec<u8>) {
        self.event(ts, out, |e| {
            e.uint(EVENT_TYPE, TYPE_COUNTER);
            e.uint(EVENT_TRACK_UUID, uuid);
            e.int(EVENT_COUNTER_VALUE, value);
        });
    }
}

fn annotate_int(e: &mut Vec<u8>, name: &str, v: i64) {
    e.message(EVENT_ANNOTATIONS, |a| {
        a.string(ANNOTATION_NAME, name);
        a.int(ANNOTATION_INT, v);
    });
}

fn annotate_str(e: &mut Vec<u8>, name: &str, v: &str) {
    e.message(EVENT_ANNOTATIONS, |a| {
        a.string(ANNOTATION_NAME, name);
        a.string(ANNOTATION_STRING, v);
    });
}
