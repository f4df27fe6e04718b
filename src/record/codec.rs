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
    Balance, BalanceOrigin, CpuIdleType, Event, EventKind, Fold, FoldedHist, MigrateContext,
    MigrationType, NumaOp, Reason, ReasonSource,
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
/// Most slots plus buckets a folded histogram may declare (the analyzer's own bounds are
/// checked where it is used).
const MAX_FOLD_LEN: u64 = 4096;

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

/// Appends `e` to a chunk's raw payload; `prev_ts` is the previous event's timestamp in the
/// chunk (the chunk's first timestamp for its first event).
pub(super) fn encode_event(out: &mut Vec<u8>, prev_ts: u64, e: &Event) {
    let tag = match &e.kind {
        EventKind::Switch { .. } => K_SWITCH,
        EventKind::Waking { .. } => K_WAKING,
        EventKind::Wakeup { .. } => K_WAKEUP,
        EventKind::WakeupNew { .. } => K_WAKEUP_NEW,
        EventKind::Migrate { .. } => K_MIGRATE,
        EventKind::Stack { .. } => K_STACK,
        EventKind::NrRunning { .. } => K_NR_RUNNING,
        EventKind::Pelt { util_est: None, .. } => K_PELT,
        EventKind::Pelt { .. } => K_PELT_EST,
        EventKind::Capacity { .. } => K_CAPACITY,
        EventKind::BalanceSoftirq { .. } => K_BALANCE_SOFTIRQ,
        EventKind::Numa { .. } => K_NUMA,
        EventKind::Task { .. } => K_TASK,
        EventKind::Cgroup { .. } => K_CGROUP,
        EventKind::Fold(_) => K_FOLD,
        EventKind::Affinity { .. } => K_AFFINITY,
        EventKind::Exit { .. } => K_EXIT,
        EventKind::Lost { .. } => K_LOST,
        EventKind::Clock => K_CLOCK,
        EventKind::Balance(_) => K_BALANCE,
    };
    out.push(tag);
    // Wrapping difference reinterpreted as signed: small either way round, exact for any pair.
    put_varint(out, zigzag(e.ts_ns.wrapping_sub(prev_ts) as i64));
    put_varint(out, u64::from(e.cpu));
    let v = |out: &mut Vec<u8>, x: u32| put_varint(out, u64::from(x));
    match &e.kind {
        EventKind::Switch {
            prev_pid,
            prev_state,
            next_pid,
        } => {
            v(out, *prev_pid);
            v(out, *prev_state);
            v(out, *next_pid);
        }
        EventKind::Waking { pid, prev_cpu } => {
            v(out, *pid);
            v(out, *prev_cpu);
        }
        EventKind::Wakeup { pid, target_cpu } => {
            v(out, *pid);
            v(out, *target_cpu);
        }
        EventKind::WakeupNew {
            pid,
            tgid,
            target_cpu,
        } => {
            v(out, *pid);
            v(out, *tgid);
            v(out, *target_cpu);
        }
        EventKind::Migrate {
            pid,
            src_cpu,
            dst_cpu,
            reason,
            source,
            stack_id,
            ctx,
        } => {
            v(out, *pid);
            v(out, *src_cpu);
            v(out, *dst_cpu);
            out.push(reason_code(*reason));
            out.push(match source {
                ReasonSource::Stack => 0,
                ReasonSource::Context => 1,
            });
            put_varint(out, stack_id.map_or(0, |id| u64::from(id) + 1));
            out.push(ctx_flags(ctx));
            v(out, ctx.policy);
        }
        EventKind::Stack { id, reason, frames } => {
            v(out, *id);
            out.push(reason_code(*reason));
            put_varint(out, frames.len() as u64);
            for f in frames {
                put_str(out, f);
            }
        }
        EventKind::NrRunning { rq_cpu, nr_running } => {
            v(out, *rq_cpu);
            v(out, *nr_running);
        }
        EventKind::Pelt {
            rq_cpu,
            load_avg,
            runnable_avg,
            util_avg,
            util_est,
        } => {
            v(out, *rq_cpu);
            put_varint(out, *load_avg);
            put_varint(out, *runnable_avg);
            put_varint(out, *util_avg);
            if let Some(e) = util_est {
                put_varint(out, *e);
            }
        }
        EventKind::Capacity { rq_cpu, capacity } => {
            v(out, *rq_cpu);
            put_varint(out, *capacity);
        }
        EventKind::BalanceSoftirq { entry, idle } => {
            out.push(u8::from(*entry) | u8::from(*idle) << 1);
        }
        EventKind::Numa {
            op,
            pid,
            src_cpu,
            dst_pid,
            dst_cpu,
        } => {
            out.push(numa_code(*op));
            v(out, *pid);
            put_varint(out, zigzag(i64::from(*src_cpu)));
            v(out, *dst_pid);
            put_varint(out, zigzag(i64::from(*dst_cpu)));
        }
        EventKind::Task {
            pid,
            tgid,
            comm,
            exec,
        } => {
            v(out, *pid);
            v(out, *tgid);
            put_str(out, comm);
            out.push(u8::from(*exec));
        }
        EventKind::Cgroup { pid, id, path } => {
            v(out, *pid);
            put_varint(out, *id);
            put_str(out, path.as_deref().unwrap_or(""));
        }
        EventKind::Affinity { pid, cpus } => {
            v(out, *pid);
            let words = cpus.words();
            put_varint(out, words.len() as u64);
            for w in words {
                put_varint(out, w);
            }
        }
        EventKind::Exit { pid, tgid } => {
            v(out, *pid);
            v(out, *tgid);
        }
        EventKind::Lost { count } => put_varint(out, *count),
        EventKind::Clock => {}
        EventKind::Balance(b) => {
            v(out, b.level);
            v(out, b.sd_weight);
            out.push(b.idle as u8);
            out.push(b.migration_type as u8);
            put_varint(out, b.imbalance);
            let origin = match b.origin {
                None => 0,
                Some(BalanceOrigin::Own) => 1,
                Some(BalanceOrigin::NohzIdle) => 2,
                Some(BalanceOrigin::Stopper) => 3,
            };
            let timed = u8::from(b.search_ns.is_some()) << 4;
            out.push(u8::from(b.balanced) | u8::from(b.redo) << 1 | origin << 2 | timed);
            v(out, b.dst_cpu);
            v(out, b.src_cpu);
            put_varint(out, b.pid.map_or(0, |p| u64::from(p) + 1));
            if let Some(ns) = b.search_ns {
                v(out, ns);
            }
        }
        EventKind::Fold(f) => {
            for part in [&f.by_cpu, &f.by_tgid] {
                put_varint(out, part.len() as u64);
                for (id, h) in part {
                    v(out, *id);
                    put_folded(out, h);
                }
            }
        }
    }
}

fn put_folded(out: &mut Vec<u8>, h: &FoldedHist) {
    put_varint(out, h.count);
    put_varint(out, h.min_ns);
    put_varint(out, h.max_ns);
    for counts in [&h.log2, &h.fine] {
        put_varint(out, counts.len() as u64);
        for c in counts {
            put_varint(out, *c);
        }
    }
}

/// A cursor over a raw payload.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cur<'_> {
    fn left(&self) -> usize {
        self.b.len() - self.at
    }

    fn byte(&mut self) -> Res<u8> {
        match self.b.get(self.at) {
            Some(&x) => {
                self.at += 1;
                Ok(x)
            }
            None => bad("payload ends inside an event"),
        }
    }

    fn varint(&mut self) -> Res<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return bad("varint overflows 64 bits");
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        bad("varint longer than 10 bytes")
    }

    fn u32(&mut self) -> Res<u32> {
        let v = self.varint()?;
        u32::try_from(v).or_else(|_| bad(format!("value {v} does not fit 32 bits")))
    }

    fn i32(&mut self) -> Res<i32> {
        let v = unzigzag(self.varint()?);
        i32::try_from(v).or_else(|_| bad(format!("value {v} does not fit 32 bits")))
    }

    fn flag(&mut self) -> Res<bool> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            b => bad(format!("flag byte {b} is neither 0 nor 1")),
        }
    }

    fn string(&mut self) -> Res<String> {
        let len = self.varint()?;
        if len > self.left() as u64 {
            return bad(format!("string of {len} bytes runs past the payload"));
        }
        let len = len as usize;
        let s = &self.b[self.at..self.at + len];
        self.at += len;
        match std::str::from_utf8(s) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => bad("string is not UTF-8"),
        }
    }
}

/// Decodes `count` events from a chunk's raw payload whose first timestamp is `first_ts`. The
/// payload must hold exactly those events.
pub(super) fn decode_events(raw: &[u8], first_ts: u64, count: u32) -> Res<Vec<Event>> {
    let mut c = Cur { b: raw, at: 0 };
    let cap = (count as usize).min(raw.len() / MIN_EVENT_BYTES);
    let mut out = Vec::with_capacity(cap);
    let mut prev = first_ts;
    for _ in 0..count {
        let e = decode_one(&mut c, prev)?;
        prev = e.ts_ns;
        out.push(e);
    }
    if c.left() != 0 {
        return bad(format!(
            "{} bytes left over after the chunk's {count} events",
            c.left()
        ));
    }
    Ok(out)
}

fn decode_one(c: &mut Cur<'_>, prev_ts: u64) -> Res<Event> {
    let tag = c.byte()?;
    let ts_ns = prev_ts.wrapping_add(unzigzag(c.varint()?) as u64);
    let cpu = c.u32()?;
    let kind = match tag {
        K_SWITCH => EventKind::Switch {
            prev_pid: c.u32()?,
            prev_state: c.u32()?,
            next_pid: c.u32()?,
        },
        K_WAKING => EventKind::Waking {
            pid: c.u32()?,
            prev_cpu: c.u32()?,
        },
        K_WAKEUP => EventKind::Wakeup {
            pid: c.u32()?,
            target_cpu: c.u32()?,
        },
        K_WAKEUP_NEW => EventKind::WakeupNew {
            pid: c.u32()?,
            tgid: c.u32()?,
            target_cpu: c.u32()?,
        },
        K_MIGRATE => {
            let pid = c.u32()?;
            let src_cpu = c.u32()?;
            let dst_cpu = c.u32()?;
            let reason = reason_of(c.byte()?)?;
            let source = match c.byte()? {
                0 => ReasonSource::Stack,
                1 => ReasonSource::Context,
                b => return bad(format!("unknown reason source {b}")),
            };
            let stack_id = match c.varint()? {
                0 => None,
                n => Some(
                    u32::try_from(n - 1).or_else(|_| bad(format!("stack id {} too big", n - 1)))?,
                ),
            };
            let f = c.byte()?;
            if f & !0x3f != 0 {
                return bad(format!("unknown migration context flags {f:#x}"));
            }
            let ctx = MigrateContext {
                in_stopper: f & 1 != 0,
                in_hardirq: f & 2 != 0,
                in_sched_softirq: f & 4 != 0,
                in_execve: f & 8 != 0,
                current_idle: f & 16 != 0,
                waking: f & 32 != 0,
                policy: c.u32()?,
            };
            EventKind::Migrate {
                pid,
                src_cpu,
                dst_cpu,
                reason,
                source,
                stack_id,
                ctx,
            }
        }
        K_STACK => {
            let id = c.u32()?;
            let reason = reason_of(c.byte()?)?;
            let n = c.varint()?;
            // Each frame takes at least its length byte.
            if n > c.left() as u64 {
                return bad(format!("{n} stack frames cannot fit the payload"));
            }
            let mut frames = Vec::with_capacity(n as usize);
            for _ in 0..n {
                frames.push(c.string()?);
            }
            EventKind::Stack { id, reason, frames }
        }
        K_NR_RUNNING => EventKind::NrRunning {
            rq_cpu: c.u32()?,
            nr_running: c.u32()?,
        },
        K_PELT | K_PELT_EST => EventKind::Pelt {
            rq_cpu: c.u32()?,
            load_avg: c.varint()?,
            runnable_avg: c.varint()?,
            util_avg: c.varint()?,
            util_est: if tag == K_PELT_EST {
                Some(c.varint()?)
            } else {
                None
            },
        },
        K_CAPACITY => EventKind::Capacity {
            rq_cpu: c.u32()?,
            capacity: c.varint()?,
        },
        K_BALANCE_SOFTIRQ => {
            let f = c.byte()?;
            if f & !3 != 0 {
                return bad(format!("unknown softirq flags {f:#x}"));
            }
            EventKind::BalanceSoftirq {
                entry: f & 1 != 0,
                idle: f & 2 != 0,
            }
        }
        K_NUMA => EventKind::Numa {
            op: match c.byte()? {
                0 => NumaOp::Move,
                1 => NumaOp::Swap,
                2 => NumaOp::Stick,
                b => return bad(format!("unknown NUMA operation {b}")),
            },
            pid: c.u32()?,
            src_cpu: c.i32()?,
            dst_pid: c.u32()?,
            dst_cpu: c.i32()?,
        },
        K_TASK => EventKind::Task {
            pid: c.u32()?,
            tgid: c.u32()?,
            comm: c.string()?,
            exec: c.flag()?,
        },
        K_CGROUP => EventKind::Cgroup {
            pid: c.u32()?,
            id: c.varint()?,
            path: Some(c.string()?).filter(|p| !p.is_empty()),
        },
        K_AFFINITY => {
            let pid = c.u32()?;
            let n = c.varint()?;
            if n > MAX_WORDS as u64 {
                return bad(format!("CPU set of {n} words exceeds {MAX_WORDS}"));
            }
            let mut words = [0u64; MAX_WORDS];
            for w in words.iter_mut().take(n as usize) {
                *w = c.varint()?;
            }
            EventKind::Affinity {
                pid,
                cpus: Box::new(CpuSet::from_words(&words)),
            }
        }
        K_EXIT => EventKind::Exit {
            pid: c.u32()?,
            tgid: c.u32()?,
        },
        K_LOST => EventKind::Lost { count: c.varint()? },
        K_CLOCK => EventKind::Clock,
        K_BALANCE => {
            let level = c.u32()?;
            let sd_weight = c.u32()?;
            let i = c.byte()?;
            let idle = CpuIdleType::from_kernel(u32::from(i))
                .map_or_else(|| bad(format!("unknown idle type {i}")), Ok)?;
            let m = c.byte()?;
            let migration_type = MigrationType::from_kernel(u32::from(m))
                .map_or_else(|| bad(format!("unknown migration type {m}")), Ok)?;
            let imbalance = c.varint()?;
            // Bits 0 balanced, 1 redo, 2-3 the origin (0 unknown: recordings before it), 4 a
            // search length follows the pid.
            let flags = c.byte()?;
            let (balanced, redo, origin) = match flags & 0x0f {
                b if flags < 32 => (
                    b & 1 != 0,
                    b & 2 != 0,
                    [
                        None,
                        Some(BalanceOrigin::Own),
                        Some(BalanceOrigin::NohzIdle),
                        Some(BalanceOrigin::Stopper),
                    ][usize::from(b >> 2)],
                ),
                _ => return bad(format!("bad balanced flags {flags}")),
            };
            let dst_cpu = c.u32()?;
            let src_cpu = c.u32()?;
            let pid = match c.varint()? {
                0 => None,
                n => Some(u32::try_from(n - 1).or_else(|_| bad(format!("pid {} too big", n - 1)))?),
            };
            let search_ns = if flags & 16 != 0 {
                Some(c.u32()?)
            } else {
                None
            };
            EventKind::Balance(Box::new(Balance {
                level,
                sd_weight,
                idle,
                migration_type,
                imbalance,
                balanced,
                redo,
                dst_cpu,
                src_cpu,
                pid,
                origin,
                search_ns,
            }))
        }
        K_FOLD => {
            let mut parts = [Vec::new(), Vec::new()];
            for part in parts.iter_mut() {
                // Each entry takes at least 6 bytes (id, count, min, max, two lengths).
                let n = c.varint()?;
                if n > (c.left() / 6) as u64 {
                    return bad(format!("fold of {n} histograms exceeds its chunk"));
                }
                for _ in 0..n {
                    part.push((c.u32()?, folded(c)?));
                }
            }
            let [by_cpu, by_tgid] = parts;
            EventKind::Fold(Box::new(Fold { by_cpu, by_tgid }))
        }
        t => return bad(format!("unknown event kind {t}")),
    };
    Ok(Event { ts_ns, cpu, kind })
}

fn folded(c: &mut Cur<'_>) -> Res<FoldedHist> {
    let (count, min_ns, max_ns) = (c.varint()?, c.varint()?, c.varint()?);
    let mut lists = [Vec::new(), Vec::new()];
    for list in lists.iter_mut() {
        let n = c.varint()?;
        if n > MAX_FOLD_LEN || n > c.left() as u64 {
            return bad(format!("folded histogram of {n} buckets"));
        }
        for _ in 0..n {
            list.push(c.varint()?);
        }
    }
    let [log2, fine] = lists;
    Ok(FoldedHist {
        count,
        min_ns,
        max_ns,
        log2,
        fine,
    })
}
