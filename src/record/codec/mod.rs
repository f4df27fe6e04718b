//! The binary encoding of events inside a chunk's raw (uncompressed) payload, and the
//! little-endian and varint helpers the file and chunk headers share.
//!
//! Invariants:
//! - `decode_events(encode_events(evs)) == evs` for every event the vocabulary can express:
//!   every field round-trips bit for bit (u64 timestamps in any order, u32::MAX pids, empty
//!   strings, CPU sets up to `MAX_CPUS`).
//! - The numeric codes below (kind tags, reasons, NUMA ops, flag bits) are the on-disk contract
//!   of format v1: never renumber them. Adding a variant to the vocabulary breaks the
//!   exhaustive `match`es here on purpose; give it a new code and bump the format version.
//! - Decoding never panics and never allocates more than the input can justify: counts and
//!   lengths are checked against the bytes that remain before anything is reserved.

use crate::cpuset::{CpuSet, MAX_CPUS};
use crate::event::{
    Balance, BalanceCall, BalanceOrigin, CpuIdleType, Event, EventKind, Fold, FoldedHist,
    FoldedRef, FoldedSet, MigrateContext, MigrationType, NumaOp, OptU32, Reason, ReasonSource,
    RtCall, RtFunc, SchedstatText,
};

/// The fewest bytes an encoded event takes: kind, timestamp delta and CPU, one byte each.
pub(super) const MIN_EVENT_BYTES: usize = 3;

/// Most words a CPU set has on disk.
const MAX_WORDS: usize = MAX_CPUS / 64;

// Kind tags. 0 is never written, so a run of zero bytes is not a valid event.
const K_SWITCH: u8 = 1;
const K_WAKING: u8 = 2;
const K_WAKEUP: u8 = 3;
const K_WAKEUP_NEW: u8 = 4;
const K_MIGRATE: u8 = 5;
const K_STACK: u8 = 6;
const K_NR_RUNNING: u8 = 7;
const K_PELT: u8 = 8;
const K_CAPACITY: u8 = 9;
const K_BALANCE_SOFTIRQ: u8 = 10;
const K_NUMA: u8 = 11;
const K_TASK: u8 = 12;
const K_AFFINITY: u8 = 13;
const K_EXIT: u8 = 14;
const K_LOST: u8 = 15;
const K_CLOCK: u8 = 16;
// Added after v1's first files: readers of older files never meet it, so v1 stays readable.
const K_BALANCE: u8 = 17;
const K_PELT_EST: u8 = 18;
const K_CGROUP: u8 = 19;
const K_FOLD: u8 = 20;
const K_BALANCE_CALL: u8 = 21;
const K_SCHEDSTAT: u8 = 22;
const K_RT_CALL: u8 = 23;
const K_NR_RUNNING_CFS: u8 = 24;
/// A run queue a busiest-group search sent (`PeltInfo::at_search`): PELT with util_est, then
/// nr_running, the CFS count and idle (a byte).
const K_PELT_SEARCH: u8 = 25;
/// Most slots plus buckets a folded histogram may declare (the analyzer's own bounds are
/// checked where it is used).
const MAX_FOLD_LEN: u64 = 4096;

/// The origin's code in Balance and BalanceCall flags (0: not known).
fn origin_code(o: Option<BalanceOrigin>) -> u8 {
    match o {
        None => 0,
        Some(BalanceOrigin::Own) => 1,
        Some(BalanceOrigin::NohzIdle) => 2,
        Some(BalanceOrigin::Stopper) => 3,
    }
}

/// The origin of a code from [`origin_code`] (two bits).
fn origin_of(code: u8) -> Option<BalanceOrigin> {
    [
        None,
        Some(BalanceOrigin::Own),
        Some(BalanceOrigin::NohzIdle),
        Some(BalanceOrigin::Stopper),
    ][usize::from(code & 3)]
}

/// Why a chunk's payload did not decode (it passed its checksum, so the writer or a crafted
/// file is to blame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DecodeError(pub String);

type Res<T> = Result<T, DecodeError>;

fn bad<T>(what: impl Into<String>) -> Res<T> {
    Err(DecodeError(what.into()))
}

/// Appends `v` as an unsigned LEB128 varint.
pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Reads little-endian fixed-size fields from a slice known to be long enough.
pub(super) fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// See [`le_u32`].
pub(super) fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn reason_code(r: Reason) -> u8 {
    match r {
        Reason::Wakeup => 0,
        Reason::Fork => 1,
        Reason::Exec => 2,
        Reason::PeriodicBalance => 3,
        Reason::NohzIdleBalance => 4,
        Reason::NewidleBalance => 5,
        Reason::ActiveBalance => 6,
        Reason::NumaBalancing => 7,
        Reason::Affinity => 8,
        Reason::Hotplug => 9,
        Reason::RtPushPull => 10,
        Reason::DlPushPull => 11,
        Reason::SchedExt => 12,
        Reason::Unknown => 13,
    }
}

fn reason_of(code: u8) -> Res<Reason> {
    Ok(match code {
        0 => Reason::Wakeup,
        1 => Reason::Fork,
        2 => Reason::Exec,
        3 => Reason::PeriodicBalance,
        4 => Reason::NohzIdleBalance,
        5 => Reason::NewidleBalance,
        6 => Reason::ActiveBalance,
        7 => Reason::NumaBalancing,
        8 => Reason::Affinity,
        9 => Reason::Hotplug,
        10 => Reason::RtPushPull,
        11 => Reason::DlPushPull,
        12 => Reason::SchedExt,
        13 => Reason::Unknown,
        c => return bad(format!("unknown migration reason code {c}")),
    })
}

fn numa_code(op: NumaOp) -> u8 {
    match op {
        NumaOp::Move => 0,
        NumaOp::Swap => 1,
        NumaOp::Stick => 2,
    }
}

fn ctx_flags(c: &MigrateContext) -> u8 {
    u8::from(c.in_stopper)
        | u8::from(c.in_hardirq) << 1
        | u8::from(c.in_sched_softirq) << 2
        | u8::from(c.in_execve) << 3
        | u8::from(c.current_idle) << 4
        | u8::from(c.waking) << 5
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

mod decode;
mod encode;

pub(super) use decode::decode_events;
pub(super) use encode::encode_event;
