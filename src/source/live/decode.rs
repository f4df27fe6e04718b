//! Ring-buffer records (bpf/lbscope.h, through the skeleton's generated types) to [`Event`]s.
//! The only place kernel bytes are reinterpreted: every read checks the record's length first.

use super::cgroups::CgroupNames;
use super::kallsyms::Kallsyms;
use super::skel::types as t;
use crate::cpuset::CpuSet;
use crate::event::{
    Balance, BalanceCall, BalanceOrigin, CpuIdleType, Event, EventKind, MigrateContext,
    MigrationType, NumaOp, OptU32, PeltInfo, Reason, ReasonSource, RtCall, RtFunc, SearchTasks,
};
use crate::idhash::IdMap;
use crate::reason::{classify_frames, Resolver, StackClass};
use std::collections::HashMap;

/// The first id given to a stack that came inline (`LBS_MF_INLINE_STACK`): above any id of the
/// kernel's stack map (its size, 16,384), so the two never meet in a recording.
const INLINE_STACK_IDS: u32 = 1 << 31;

/// `LBS_UTIL_EST_SENT` of lbscope.h: an `LBS_NR_RUNNING` record's v1 holds util_est, its v2
/// the CFS task count.
const UTIL_EST_SENT: u64 = 1 << 32;

/// A run-queue length as `LBS_NR_RUNNING` carries it (v0 the count; v1, v2 util_est and the
/// CFS count, each present when it has `UTIL_EST_SENT`).
fn nr_running(rq_cpu: u32, v0: u64, v1: u64, v2: u64) -> EventKind {
    EventKind::NrRunning {
        // CPU numbers stay far below 2^16 (NR_CPUS is at most 8192).
        rq_cpu: u16::try_from(rq_cpu).unwrap_or(u16::MAX),
        nr_running: v0 as u32,
        util_est: OptU32::new((v1 & UTIL_EST_SENT != 0).then_some(v1 as u32)),
        cfs_h_nr_running: OptU32::new((v2 & UTIL_EST_SENT != 0).then_some(v2 as u32)),
    }
}

/// Where decoded events go: a batch, or the merge's queue of the record's CPU.
pub trait Out {
    /// Appends one event.
    fn push(&mut self, e: Event);
}

impl Out for Vec<Event> {
    fn push(&mut self, e: Event) {
        Vec::push(self, e);
    }
}

impl Out for std::collections::VecDeque<Event> {
    fn push(&mut self, e: Event) {
        self.push_back(e);
    }
}

/// The CPU that made a record (each event decoded from it carries it).
pub fn record_cpu(data: &[u8]) -> Option<u32> {
    read::<t::lbs_hdr>(data).map(|h| h.cpu)
}

/// Reads a `T` from the front of `data`, or `None` when the record is too short.
fn read<T: Copy>(data: &[u8]) -> Option<T> {
    if data.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: the length was checked; `T` is one of the generated `#[repr(C)]` plain-data
    // record types (integers and byte arrays only), valid for any bit pattern; the read is
    // unaligned-safe.
    Some(unsafe { std::ptr::read_unaligned(data.as_ptr().cast::<T>()) })
}

/// A task name up to its NUL; invalid UTF-8 replaced (one allocation when it is valid).
fn comm_str(c: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = c
        .iter()
        .take_while(|b| **b != 0)
        .map(|b| *b as u8)
        .collect();
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Turns records into events, classifying each distinct migration stack once.
pub struct Decoder {
    kallsyms: Kallsyms,
    stacks: IdMap<u32, StackClass>,
    /// Stacks that came inline (the stack map's bucket was taken), by their addresses: the id
    /// each was given, from [`INLINE_STACK_IDS`] on.
    inline_stacks: HashMap<Vec<u64>, u32>,
    resolver: Resolver,
    cgroups: CgroupNames,
    /// Records that did not parse (wrong length or kind): a bug, shown by `doctor`/reports.
    pub malformed: u64,
}

impl Decoder {
    /// A decoder naming frames with `kallsyms`.
    pub fn new(kallsyms: Kallsyms) -> Self {
        Decoder {
            kallsyms,
            stacks: IdMap::default(),
            inline_stacks: HashMap::new(),
            resolver: Resolver::new(),
            cgroups: CgroupNames::new(),
            malformed: 0,
        }
    }

    /// Decodes one record into `out`. `stack` fetches the addresses of a stack id from the
    /// kernel's stack map.
    pub fn decode(
        &mut self,
        data: &[u8],
        stack: &dyn Fn(u32) -> Option<Vec<u64>>,
        out: &mut impl Out,
    ) {
        let Some(h) = read::<t::lbs_hdr>(data) else {
            self.malformed += 1;
            return;
        };
        let (ts_ns, cpu) = (h.ts, h.cpu);
        if t::lbs_kind(u32::from(h.kind)) == t::lbs_kind::LBS_STAGED {
            self.staged(&h, data, stack, out);
            return;
        }
        let kind = match t::lbs_kind(u32::from(h.kind)) {
            t::lbs_kind::LBS_SWITCH => read::<t::lbs_switch>(data).map(|r| EventKind::Switch {
                prev_pid: r.prev_pid,
                prev_state: r.prev_state,
                next_pid: r.next_pid,
            }),
            t::lbs_kind::LBS_WAKING => read::<t::lbs_wake>(data).map(|r| {
                self.resolver.note_waking(cpu, r.pid);
                EventKind::Waking {
                    pid: r.pid,
                    prev_cpu: r.a,
                }
            }),
            t::lbs_kind::LBS_WAKEUP => read::<t::lbs_wake>(data).map(|r| EventKind::Wakeup {
                pid: r.pid,
                target_cpu: r.a,
            }),
            t::lbs_kind::LBS_WAKEUP_NEW => {
                read::<t::lbs_wake>(data).map(|r| EventKind::WakeupNew {
                    pid: r.pid,
                    tgid: r.tgid,
                    target_cpu: r.a,
                })
            }
            t::lbs_kind::LBS_MIGRATE => match read::<t::lbs_migrate>(data) {
                Some(r) if r.flags & t::lbs_migrate_flags::LBS_MF_INLINE_STACK.0 != 0 => {
                    let Some(f) = read::<t::lbs_migrate_frames>(data) else {
                        self.malformed += 1;
                        return;
                    };
                    let n = (f.nr_frames as usize).min(f.ips.len());
                    let addrs = f.ips[..n].to_vec();
                    let next = INLINE_STACK_IDS + self.inline_stacks.len() as u32;
                    let id = *self.inline_stacks.entry(addrs.clone()).or_insert(next);
                    self.migrate(ts_ns, cpu, &r, Some(id), &|_| Some(addrs.clone()), out);
                    return;
                }
                Some(r) => {
                    let id = u32::try_from(r.stack_id).ok();
                    self.migrate(ts_ns, cpu, &r, id, stack, out);
                    return;
                }
                None => None,
            },
            t::lbs_kind::LBS_NR_RUNNING => {
                read::<t::lbs_rq>(data).map(|r| nr_running(r.rq_cpu, r.v0, r.v1, r.v2))
            }
            t::lbs_kind::LBS_SWITCH_NR | t::lbs_kind::LBS_WAKEUP_NR => {
                match read::<t::lbs_pair>(data) {
                    Some(r) => self.pair(&h, &r, out),
                    None => self.malformed += 1,
                }
                return;
            }
            // v2: util_avg in the low 32 bits, util_est in the high ones.
            t::lbs_kind::LBS_PELT => read::<t::lbs_rq>(data).map(|r| {
                EventKind::Pelt(Box::new(PeltInfo {
                    rq_cpu: r.rq_cpu,
                    load_avg: r.v0,
                    runnable_avg: r.v1,
                    util_avg: r.v2 & 0xffff_ffff,
                    util_est: Some(r.v2 >> 32),
                    at_search: None,
                }))
            }),
            t::lbs_kind::LBS_SEARCH_RQ => read::<t::lbs_search_rq>(data).map(|r| {
                EventKind::Pelt(Box::new(PeltInfo {
                    rq_cpu: r.rq_cpu,
                    load_avg: r.load,
                    runnable_avg: r.runnable,
                    util_avg: u64::from(r.util),
                    util_est: Some(u64::from(r.util_est)),
                    at_search: Some(SearchTasks {
                        nr_running: r.nr_running,
                        cfs_h_nr_running: r.cfs_h_nr,
                        idle: r.idle != 0,
                    }),
                }))
            }),
            t::lbs_kind::LBS_CAPACITY => read::<t::lbs_rq>(data).map(|r| EventKind::Capacity {
                rq_cpu: r.rq_cpu,
                capacity: r.v0,
            }),
            t::lbs_kind::LBS_SOFTIRQ => Some(EventKind::BalanceSoftirq {
                entry: h.flags & 1 != 0,
                idle: h.flags & 2 != 0,
            }),
            t::lbs_kind::LBS_NUMA => read::<t::lbs_numa>(data).and_then(|r| {
                let op = match t::lbs_numa_op(r.op) {
                    t::lbs_numa_op::LBS_NUMA_MOVE => NumaOp::Move,
                    t::lbs_numa_op::LBS_NUMA_SWAP => NumaOp::Swap,
                    t::lbs_numa_op::LBS_NUMA_STICK => NumaOp::Stick,
                    _ => return None,
                };
                if op != NumaOp::Stick {
                    self.resolver.note_numa(
                        ts_ns,
                        r.pid,
                        r.src_cpu,
                        r.dst_pid,
                        r.dst_cpu,
                        op == NumaOp::Swap,
                    );
                }
                Some(EventKind::Numa(Box::new(crate::event::NumaInfo {
                    op,
                    pid: r.pid,
                    src_cpu: r.src_cpu,
                    dst_pid: r.dst_pid,
                    dst_cpu: r.dst_cpu,
                })))
            }),
            t::lbs_kind::LBS_TASK => match read::<t::lbs_task>(data) {
                Some(r) => {
                    let task = EventKind::Task(Box::new(crate::event::TaskInfo {
                        pid: r.pid,
                        tgid: r.tgid,
                        comm: comm_str(&r.comm),
                        exec: h.flags & 1 != 0,
                    }));
                    out.push(Event {
                        ts_ns,
                        cpu,
                        kind: task,
                    });
                    if r.cgroup != 0 {
                        out.push(Event {
                            ts_ns,
                            cpu,
                            kind: EventKind::Cgroup(Box::new(crate::event::CgroupInfo {
                                pid: r.pid,
                                id: r.cgroup,
                                path: self.cgroups.name(r.cgroup),
                            })),
                        });
                    }
                    return;
                }
                None => None,
            },
            t::lbs_kind::LBS_AFFINITY => read::<t::lbs_affinity>(data).map(|r| {
                let n = (r.nr_words as usize).min(r.mask.len());
                EventKind::Affinity {
                    pid: r.pid,
                    cpus: Box::new(CpuSet::from_words(&r.mask[..n])),
                }
            }),
            t::lbs_kind::LBS_EXIT => read::<t::lbs_task>(data).map(|r| EventKind::Exit {
                pid: r.pid,
                tgid: r.tgid,
            }),
            t::lbs_kind::LBS_BALANCE => read::<t::lbs_balance>(data).and_then(|r| {
                Some(EventKind::Balance(Box::new(Balance {
                    level: r.level,
                    sd_weight: r.sd_weight,
                    idle: CpuIdleType::from_kernel(r.idle)?,
                    migration_type: MigrationType::from_kernel(r.migration_type)?,
                    imbalance: r.imbalance.max(0) as u64,
                    balanced: r.balanced != 0,
                    redo: r.redo != 0,
                    dst_cpu: r.dst_cpu.max(0) as u32,
                    src_cpu: r.src_cpu.max(0) as u32,
                    pid: (r.pid != 0).then_some(r.pid),
                    origin: balance_origin(r.h.flags),
                    search_ns: (r.search_ns != 0).then_some(r.search_ns),
                })))
            }),
            t::lbs_kind::LBS_BALANCE_CALL => read::<t::lbs_balance_call>(data).and_then(|r| {
                Some(EventKind::BalanceCall(Box::new(BalanceCall {
                    level: r.level,
                    sd_weight: r.sd_weight,
                    idle: CpuIdleType::from_kernel(r.idle)?,
                    this_cpu: r.this_cpu,
                    moved: r.moved,
                    failed: r.failed != 0,
                    origin: balance_origin(r.h.flags),
                    len_ns: r.len_ns,
                })))
            }),
            t::lbs_kind::LBS_RT_CALL => read::<t::lbs_rt_call>(data).and_then(|r| {
                Some(EventKind::RtCall(Box::new(RtCall {
                    func: *RtFunc::ALL.get(r.func as usize)?,
                    rq_cpu: r.rq_cpu,
                    len_ns: r.len_ns,
                })))
            }),
            _ => None,
        };
        match kind {
            Some(kind) => out.push(Event { ts_ns, cpu, kind }),
            None => self.malformed += 1,
        }
    }

    /// A run-queue length and the switch or wakeup after it, in one slot (bpf/lbscope.h,
    /// `lbs_pair`): the two events they would have been, each at its own time.
    fn pair(&mut self, h: &t::lbs_hdr, r: &t::lbs_pair, out: &mut impl Out) {
        let sent = |flag: t::lbs_pair_flags| {
            if h.flags & flag.0 as u16 != 0 {
                UTIL_EST_SENT
            } else {
                0
            }
        };
        let (v1, v2) = (
            u64::from(r.util_est) | sent(t::lbs_pair_flags::LBS_PAIR_UTIL_EST),
            u64::from(r.cfs_h_nr) | sent(t::lbs_pair_flags::LBS_PAIR_CFS),
        );
        let (rq_cpu, second) = if t::lbs_kind(u32::from(h.kind)) == t::lbs_kind::LBS_SWITCH_NR {
            let switch = EventKind::Switch {
                prev_pid: r.x,
                prev_state: r.z,
                next_pid: r.y,
            };
            (h.cpu, switch)
        } else {
            let wakeup = EventKind::Wakeup {
                pid: r.x,
                target_cpu: r.z,
            };
            (r.z, wakeup)
        };
        let (ts_ns, cpu) = (h.ts, h.cpu);
        out.push(Event {
            ts_ns,
            cpu,
            kind: nr_running(rq_cpu, u64::from(r.nr), v1, v2),
        });
        out.push(Event {
            ts_ns: ts_ns + u64::from(r.dt),
            cpu,
            kind: second,
        });
    }

    /// A CPU's staged records: `h.flags` slots of `LBS_STAGE_SLOT` bytes after the header,
    /// each a record of its own (never a staged one).
    fn staged(
        &mut self,
        h: &t::lbs_hdr,
        data: &[u8],
        stack: &dyn Fn(u32) -> Option<Vec<u64>>,
        out: &mut impl Out,
    ) {
        let slot = t::lbs_stage::LBS_STAGE_SLOT.0 as usize;
        let n = usize::from(h.flags);
        let hdr = std::mem::size_of::<t::lbs_hdr>();
        let Some(body) = data.get(hdr..hdr + n * slot) else {
            self.malformed += 1;
            return;
        };
        for rec in body.chunks_exact(slot) {
            match read::<t::lbs_hdr>(rec) {
                Some(r) if t::lbs_kind(u32::from(r.kind)) != t::lbs_kind::LBS_STAGED => {
                    self.decode(rec, stack, out)
                }
                _ => self.malformed += 1,
            }
        }
    }

    fn migrate(
        &mut self,
        ts_ns: u64,
        cpu: u32,
        r: &t::lbs_migrate,
        stack_id: Option<u32>,
        stack: &dyn Fn(u32) -> Option<Vec<u64>>,
        out: &mut impl Out,
    ) {
        type F = t::lbs_migrate_flags;
        let ctx = MigrateContext {
            in_stopper: r.flags & F::LBS_MF_STOPPER.0 != 0,
            in_hardirq: r.flags & F::LBS_MF_HARDIRQ.0 != 0,
            in_sched_softirq: r.flags & F::LBS_MF_SCHED_SOFTIRQ.0 != 0,
            in_execve: r.flags & F::LBS_MF_IN_EXECVE.0 != 0,
            current_idle: r.flags & F::LBS_MF_CURRENT_IDLE.0 != 0,
            waking: r.flags & F::LBS_MF_WAKING.0 != 0,
            policy: r.policy,
        };
        // A waking task's move is a wakeup by its state; no stack was taken.
        let by_state = r.flags & F::LBS_MF_NO_STACK.0 != 0 && ctx.waking;
        let class = match stack_id.filter(|_| !by_state) {
            Some(id) => match self.stacks.get(&id) {
                Some(c) => Some(*c),
                None => stack(id).map(|addrs| {
                    let mut frames: Vec<String> =
                        addrs.iter().map(|a| self.kallsyms.name(*a)).collect();
                    // Frames inside the tracing machinery (the BPF program, bpf_trace_run)
                    // say nothing about the migration.
                    if let Some(i) = frames.iter().position(|f| f == "set_task_cpu") {
                        frames.drain(..i);
                    }
                    let class = classify_frames(&frames);
                    self.stacks.insert(id, class);
                    out.push(Event {
                        ts_ns,
                        cpu,
                        kind: EventKind::Stack(Box::new(crate::event::StackInfo {
                            id,
                            reason: class.nominal(),
                            frames,
                        })),
                    });
                    class
                }),
            },
            None => None,
        };
        let (reason, source, stack_id) = match class {
            _ if by_state => (Reason::Wakeup, ReasonSource::TaskState, None),
            Some(c) => (
                self.resolver
                    .resolve(c, ts_ns, r.pid, r.src_cpu, r.dst_cpu, &ctx),
                ReasonSource::Stack,
                stack_id,
            ),
            None => (
                self.resolver
                    .resolve_context(ts_ns, cpu, r.pid, r.src_cpu, r.dst_cpu, &ctx),
                ReasonSource::Context,
                None,
            ),
        };
        out.push(Event {
            ts_ns,
            cpu,
            kind: EventKind::Migrate(Box::new(crate::event::MigrateInfo {
                pid: r.pid,
                src_cpu: r.src_cpu,
                dst_cpu: r.dst_cpu,
                reason,
                source,
                stack_id,
                ctx,
            })),
        });
    }
}

/// The origin bits of an `lbs_balance` header (bpf/lbscope.h `enum lbs_balance_origin`).
fn balance_origin(flags: u16) -> Option<BalanceOrigin> {
    use t::lbs_balance_origin as O;
    let bit = |o: O| flags & o.0 as u16 != 0;
    if !bit(O::LBS_BAL_ORIGIN_KNOWN) {
        None
    } else if bit(O::LBS_BAL_STOPPER) {
        Some(BalanceOrigin::Stopper)
    } else if bit(O::LBS_BAL_NOHZ) {
        Some(BalanceOrigin::NohzIdle)
    } else {
        Some(BalanceOrigin::Own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: Copy>(v: &T) -> Vec<u8> {
        let p = (v as *const T).cast::<u8>();
        // SAFETY: `v` is a plain-data generated record; reading its bytes is sound.
        unsafe { std::slice::from_raw_parts(p, std::mem::size_of::<T>()) }.to_vec()
    }

    fn hdr(kind: t::lbs_kind, cpu: u32) -> t::lbs_hdr {
        t::lbs_hdr {
            ts: 1000,
            kind: kind.0 as u16,
            flags: 0,
            cpu,
        }
    }

    /// CPU 1's switch from task 10 to task 11 at `ts`, 10 left in `prev_state`.
    fn switch_rec(ts: u64, prev_state: u32) -> t::lbs_switch {
        let mut sw = t::lbs_switch {
            h: hdr(t::lbs_kind::LBS_SWITCH, 1),
            prev_pid: 10,
            next_pid: 11,
            prev_state,
            pad: 0,
        };
        sw.h.ts = ts;
        sw
    }

    /// CPU 1's record of `rq_cpu`'s run-queue length at `ts`, with `v` as v0, v1, v2.
    fn nr_rec(ts: u64, rq_cpu: u32, v: [u64; 3]) -> t::lbs_rq {
        let mut r = t::lbs_rq {
            h: hdr(t::lbs_kind::LBS_NR_RUNNING, 1),
            rq_cpu,
            pad: 0,
            v0: v[0],
            v1: v[1],
            v2: v[2],
        };
        r.h.ts = ts;
        r
    }

    /// A PELT record (util_avg low, util_est high in v2) is a sample; a search's run queue
    /// (`LBS_SEARCH_RQ`, from the balancer object) is the same sums with the task counts.
    #[test]
    fn a_search_run_queue_is_pelt_with_task_counts() {
        let mut d = Decoder::new(Kallsyms::default());
        let mut out = vec![];
        let mut r = nr_rec(3000, 5, [900, 800, 700 | (650 << 32)]);
        r.h.kind = t::lbs_kind::LBS_PELT.0 as u16;
        d.decode(&bytes(&r), &|_| None, &mut out);
        let s = t::lbs_search_rq {
            h: hdr(t::lbs_kind::LBS_SEARCH_RQ, 2),
            rq_cpu: 5,
            nr_running: 3,
            cfs_h_nr: 2,
            idle: 0,
            load: 900,
            runnable: 800,
            util: 700,
            util_est: 650,
        };
        d.decode(&bytes(&s), &|_| None, &mut out);
        let tasks = SearchTasks {
            nr_running: 3,
            cfs_h_nr_running: 2,
            idle: false,
        };
        let got: Vec<_> = out
            .iter()
            .map(|e| match &e.kind {
                EventKind::Pelt(p) => (
                    e.cpu,
                    p.rq_cpu,
                    p.load_avg,
                    p.runnable_avg,
                    p.util_avg,
                    p.util_est,
                    p.at_search,
                ),
                k => panic!("{k:?}"),
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 5, 900, 800, 700, Some(650), None),
                (2, 5, 900, 800, 700, Some(650), Some(tasks))
            ]
        );
        assert_eq!(d.malformed, 0);
    }

    /// A name ends at its NUL (or fills the field); invalid UTF-8 is replaced, not dropped.
    #[test]
    fn task_names_end_at_nul_and_keep_invalid_bytes_visible() {
        let c = |b: &[u8]| b.iter().map(|x| *x as std::ffi::c_char).collect::<Vec<_>>();
        assert_eq!(comm_str(&c(b"kworker/0:1\0junk")), "kworker/0:1");
        assert_eq!(comm_str(&c(b"sixteen-bytes-xx")), "sixteen-bytes-xx");
        assert_eq!(comm_str(&c(b"ab\xffcd\0")), "ab\u{fffd}cd");
        assert_eq!(comm_str(&c(b"\0")), "");
    }

    #[test]
    fn switch_and_short_record() {
        let mut d = Decoder::new(Kallsyms::default());
        let mut out = vec![];
        let rec = t::lbs_switch {
            h: hdr(t::lbs_kind::LBS_SWITCH, 1),
            prev_pid: 10,
            next_pid: 0,
            prev_state: 1,
            pad: 0,
        };
        let b = bytes(&rec);
        d.decode(&b, &|_| None, &mut out);
        assert_eq!(
            out[0].kind,
            EventKind::Switch {
                prev_pid: 10,
                prev_state: 1,
                next_pid: 0
            }
        );
        d.decode(&b[..b.len() - 1], &|_| None, &mut out);
        d.decode(&b[..3], &|_| None, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(d.malformed, 2);
    }

    /// A staged record: its slots decode as records of their own, in order, each with its
    /// own time; a slot holding a staged record, or a record cut short, counts as malformed.
    #[test]
    fn staged_slots_decode_in_order() {
        let slot = t::lbs_stage::LBS_STAGE_SLOT.0 as usize;
        let sw = switch_rec(2000, 0);
        let nr = nr_rec(2500, 0, [3, 0, 0]);
        let mut outer = hdr(t::lbs_kind::LBS_STAGED, 1);
        outer.flags = 3;
        let mut rec = bytes(&outer);
        for part in [bytes(&sw), bytes(&nr), bytes(&outer)] {
            let mut s = part;
            s.resize(slot, 0xee);
            rec.extend(s);
        }
        let mut d = Decoder::new(Kallsyms::default());
        let mut out = vec![];
        d.decode(&rec, &|_| None, &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|e| (e.ts_ns, e.cpu, e.kind.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    2000,
                    1,
                    EventKind::Switch {
                        prev_pid: 10,
                        prev_state: 0,
                        next_pid: 11
                    }
                ),
                (
                    2500,
                    1,
                    EventKind::NrRunning {
                        rq_cpu: 0,
                        nr_running: 3,
                        util_est: crate::event::OptU32::NONE,
                        cfs_h_nr_running: crate::event::OptU32::NONE
                    }
                )
            ]
        );
        assert_eq!(d.malformed, 1, "a staged record inside a staged one");
        d.decode(&rec[..rec.len() - 1], &|_| None, &mut out);
        assert_eq!(
            (out.len(), d.malformed),
            (2, 2),
            "fewer bytes than its slots"
        );
        assert_eq!(record_cpu(&rec), Some(1));
    }

    /// A run-queue length paired with the switch or wakeup after it gives the same events,
    /// with the same times, as the two records would on their own: a switch's run queue is
    /// its CPU's, a wakeup's its target's; util_est and the CFS count only where sent.
    #[test]
    fn pairs_decode_as_their_two_records() {
        let slot = t::lbs_stage::LBS_STAGE_SLOT.0 as usize;
        let staged = |slots: &[Vec<u8>]| {
            let mut outer = hdr(t::lbs_kind::LBS_STAGED, 1);
            outer.flags = slots.len() as u16;
            let mut rec = bytes(&outer);
            for s in slots {
                let mut s = s.clone();
                s.resize(slot, 0xee);
                rec.extend(s);
            }
            let mut d = Decoder::new(Kallsyms::default());
            let mut out = vec![];
            d.decode(&rec, &|_| None, &mut out);
            assert_eq!(d.malformed, 0);
            out.iter()
                .map(|e| (e.ts_ns, e.cpu, e.kind.clone()))
                .collect::<Vec<_>>()
        };
        let rq = |ts: u64, rq_cpu: u32, v1: u64, v2: u64| bytes(&nr_rec(ts, rq_cpu, [2, v1, v2]));
        let sw = switch_rec(5_000, 1);
        let mut wk = t::lbs_wake {
            h: hdr(t::lbs_kind::LBS_WAKEUP, 1),
            pid: 12,
            tgid: 9,
            a: 3,
            pad: 0,
        };
        wk.h.ts = 7_000;
        let alone = staged(&[
            rq(4_000, 1, UTIL_EST_SENT | 300, UTIL_EST_SENT | 2),
            bytes(&sw),
            rq(6_500, 3, 0, 0),
            bytes(&wk),
        ]);
        let pair = |ts: u64, kind: t::lbs_kind, flags: u16, dt: u32, xyz: [u32; 3], est: u32| {
            let mut p = t::lbs_pair {
                h: hdr(kind, 1),
                dt,
                nr: 2,
                util_est: est,
                cfs_h_nr: if flags & 2 != 0 { 2 } else { 0 },
                x: xyz[0],
                y: xyz[1],
                z: xyz[2],
                pad: 0,
            };
            p.h.ts = ts;
            p.h.flags = flags;
            bytes(&p)
        };
        let paired = staged(&[
            pair(
                4_000,
                t::lbs_kind::LBS_SWITCH_NR,
                3,
                1_000,
                [10, 11, 1],
                300,
            ),
            pair(6_500, t::lbs_kind::LBS_WAKEUP_NR, 0, 500, [12, 9, 3], 0),
        ]);
        assert_eq!(alone.len(), 4);
        assert_eq!(paired, alone);
    }

    #[test]
    fn migrate_with_stack_classified_once() {
        let syms = "ffffffff81000000 T set_task_cpu\nffffffff81001000 T sched_balance_rq\n\
                    ffffffff81002000 T sched_balance_newidle\n";
        let mut d = Decoder::new(Kallsyms::parse(syms.as_bytes()));
        let mut out = vec![];
        let rec = t::lbs_migrate {
            h: hdr(t::lbs_kind::LBS_MIGRATE, 1),
            pid: 7,
            src_cpu: 0,
            dst_cpu: 1,
            stack_id: 3,
            flags: 0,
            policy: 0,
        };
        let fetch = |id: u32| {
            assert_eq!(id, 3);
            Some(vec![
                0xffffffff81000010,
                0xffffffff81001010,
                0xffffffff81002010,
            ])
        };
        d.decode(&bytes(&rec), &fetch, &mut out);
        d.decode(&bytes(&rec), &|_| panic!("stack fetched twice"), &mut out);
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(
            matches!(&out[0].kind, EventKind::Stack(s) if s.id == 3 && s.reason == Reason::NewidleBalance && s.frames.len() == 3)
        );
        assert!(matches!(
            &out[2].kind,
            EventKind::Migrate(m) if m.reason == Reason::NewidleBalance && m.stack_id == Some(3)
        ));
    }

    /// A stack the stack map refused (-EEXIST: its bucket holds another stack) comes inline:
    /// classified from its own frames, named once by an id of its own, and the same frames
    /// again reuse that id; another inline stack gets the next id.
    #[test]
    fn migrate_with_inline_stack_when_the_map_bucket_is_taken() {
        let syms = "ffffffff81000000 T set_task_cpu\nffffffff81001000 T sched_balance_rq\n\
                    ffffffff81002000 T _nohz_idle_balance\nffffffff81003000 T sched_balance_newidle\n";
        let mut d = Decoder::new(Kallsyms::parse(syms.as_bytes()));
        let mut out = vec![];
        let frames = |third: u64| {
            let mut f = t::lbs_migrate_frames {
                m: t::lbs_migrate {
                    h: hdr(t::lbs_kind::LBS_MIGRATE, 1),
                    pid: 7,
                    src_cpu: 0,
                    dst_cpu: 1,
                    stack_id: -17,
                    flags: t::lbs_migrate_flags::LBS_MF_INLINE_STACK.0
                        | t::lbs_migrate_flags::LBS_MF_SCHED_SOFTIRQ.0,
                    policy: 0,
                },
                nr_frames: 3,
                pad: 0,
                ips: [0; 48],
            };
            f.ips[..3].copy_from_slice(&[0xffffffff81000010, 0xffffffff81001010, third]);
            f
        };
        let nohz = bytes(&frames(0xffffffff81002010));
        let never = |_: u32| -> Option<Vec<u64>> { panic!("the stack map was read") };
        d.decode(&nohz, &never, &mut out);
        d.decode(&nohz, &never, &mut out);
        d.decode(&bytes(&frames(0xffffffff81003010)), &never, &mut out);
        let kinds: Vec<_> = out.iter().map(|e| &e.kind).collect();
        assert_eq!(kinds.len(), 5, "{kinds:?}");
        assert!(
            matches!(kinds[0], EventKind::Stack(s) if s.id == INLINE_STACK_IDS
                && s.reason == Reason::NohzIdleBalance && s.frames.len() == 3)
        );
        for k in [kinds[1], kinds[2]] {
            assert!(
                matches!(k, EventKind::Migrate(m) if m.reason == Reason::NohzIdleBalance
                    && m.source == ReasonSource::Stack
                    && m.stack_id == Some(INLINE_STACK_IDS)),
                "{k:?}"
            );
        }
        assert!(
            matches!(kinds[3], EventKind::Stack(s) if s.id == INLINE_STACK_IDS + 1
                && s.reason == Reason::NewidleBalance)
        );
        assert!(matches!(
            kinds[4],
            EventKind::Migrate(m) if m.reason == Reason::NewidleBalance
        ));
        // A record flagged inline but cut short is malformed, not misread.
        d.decode(&nohz[..nohz.len() - 8], &never, &mut out);
        assert_eq!((out.len(), d.malformed), (5, 1));
    }

    #[test]
    fn migrate_without_stack_uses_context() {
        let mut d = Decoder::new(Kallsyms::default());
        let mut out = vec![];
        let rec = t::lbs_migrate {
            h: hdr(t::lbs_kind::LBS_MIGRATE, 1),
            pid: 7,
            src_cpu: 0,
            dst_cpu: 1,
            stack_id: -17,
            flags: t::lbs_migrate_flags::LBS_MF_SCHED_SOFTIRQ.0,
            policy: 0,
        };
        d.decode(&bytes(&rec), &|_| None, &mut out);
        assert!(matches!(
            &out[0].kind,
            EventKind::Migrate(m) if m.reason == Reason::PeriodicBalance
                && m.source == ReasonSource::Context
        ));
    }

    #[test]
    fn waking_migrate_without_stack_is_a_wakeup_by_task_state() {
        let mut d = Decoder::new(Kallsyms::default());
        let mut out = vec![];
        let f = |x: t::lbs_migrate_flags| x.0;
        let mut rec = t::lbs_migrate {
            h: hdr(t::lbs_kind::LBS_MIGRATE, 1),
            pid: 7,
            src_cpu: 0,
            dst_cpu: 1,
            stack_id: -1,
            flags: f(t::lbs_migrate_flags::LBS_MF_WAKING)
                | f(t::lbs_migrate_flags::LBS_MF_NO_STACK),
            policy: 0,
        };
        d.decode(&bytes(&rec), &|_| panic!("no stack to fetch"), &mut out);
        // No stack taken and no waking state: nothing but the context to go by.
        rec.flags = f(t::lbs_migrate_flags::LBS_MF_NO_STACK);
        d.decode(&bytes(&rec), &|_| panic!("no stack to fetch"), &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|e| match &e.kind {
                EventKind::Migrate(mi) => (mi.reason, mi.source, mi.stack_id),
                ref k => panic!("{k:?}"),
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Reason::Wakeup, ReasonSource::TaskState, None),
                (Reason::NewidleBalance, ReasonSource::Context, None),
            ]
        );
    }
}
