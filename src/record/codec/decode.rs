//! Decoding a chunk's raw payload back into events, checking every count and length against
//! the bytes that remain before anything is reserved (codes from `super`).

use super::*;

/// A run queue's CPU, which an event holds in 16 bits.
fn rq_cpu(v: u32) -> Res<u16> {
    u16::try_from(v).or_else(|_| bad(format!("run queue CPU {v} is out of range")))
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
pub(in crate::record) fn decode_events(raw: &[u8], first_ts: u64, count: u32) -> Res<Vec<Event>> {
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
                2 => ReasonSource::TaskState,
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
            EventKind::Migrate(Box::new(crate::event::MigrateInfo {
                pid,
                src_cpu,
                dst_cpu,
                reason,
                source,
                stack_id,
                ctx,
            }))
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
            EventKind::Stack(Box::new(crate::event::StackInfo { id, reason, frames }))
        }
        K_NR_RUNNING => EventKind::NrRunning {
            rq_cpu: rq_cpu(c.u32()?)?,
            nr_running: c.u32()?,
            util_est: OptU32::NONE,
            cfs_h_nr_running: OptU32::NONE,
        },
        K_NR_RUNNING_CFS => {
            let (rq_cpu, nr_running) = (rq_cpu(c.u32()?)?, c.u32()?);
            let f = c.byte()?;
            if f & !3 != 0 || f == 0 {
                return bad(format!("bad nr_running field flags {f:#x}"));
            }
            // util_est is an unsigned int in the kernel: a larger value is kept at the most
            // the event holds.
            let util_est = if f & 1 != 0 {
                Some(u32::try_from(c.varint()?).unwrap_or(u32::MAX))
            } else {
                None
            };
            EventKind::NrRunning {
                rq_cpu,
                nr_running,
                util_est: OptU32::new(util_est),
                cfs_h_nr_running: OptU32::new(if f & 2 != 0 { Some(c.u32()?) } else { None }),
            }
        }
        K_PELT | K_PELT_EST | K_PELT_SEARCH => EventKind::Pelt(Box::new(crate::event::PeltInfo {
            rq_cpu: c.u32()?,
            load_avg: c.varint()?,
            runnable_avg: c.varint()?,
            util_avg: c.varint()?,
            util_est: if tag == K_PELT {
                None
            } else {
                Some(c.varint()?)
            },
            at_search: if tag == K_PELT_SEARCH {
                Some(crate::event::SearchTasks {
                    nr_running: c.u32()?,
                    cfs_h_nr_running: c.u32()?,
                    idle: c.flag()?,
                })
            } else {
                None
            },
        })),
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
        K_NUMA => EventKind::Numa(Box::new(crate::event::NumaInfo {
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
        })),
        K_TASK => EventKind::Task(Box::new(crate::event::TaskInfo {
            pid: c.u32()?,
            tgid: c.u32()?,
            comm: c.string()?,
            exec: c.flag()?,
        })),
        K_CGROUP => EventKind::Cgroup(Box::new(crate::event::CgroupInfo {
            pid: c.u32()?,
            id: c.varint()?,
            path: Some(c.string()?).filter(|p| !p.is_empty()),
        })),
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
                b if flags < 32 => (b & 1 != 0, b & 2 != 0, origin_of(b >> 2)),
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
        K_BALANCE_CALL => {
            let level = c.u32()?;
            let sd_weight = c.u32()?;
            let i = c.byte()?;
            let idle = CpuIdleType::from_kernel(u32::from(i))
                .map_or_else(|| bad(format!("unknown idle type {i}")), Ok)?;
            let this_cpu = c.u32()?;
            let moved = c.u32()?;
            // Bit 0 failed, bits 1-2 the origin.
            let flags = c.byte()?;
            if flags >= 8 {
                return bad(format!("bad balance call flags {flags}"));
            }
            let len_ns = c.u32()?;
            EventKind::BalanceCall(Box::new(BalanceCall {
                level,
                sd_weight,
                idle,
                this_cpu,
                moved,
                failed: flags & 1 != 0,
                origin: origin_of(flags >> 1),
                len_ns,
            }))
        }
        K_RT_CALL => {
            let f = c.byte()?;
            let func = *RtFunc::ALL
                .get(usize::from(f))
                .map_or_else(|| bad(format!("unknown RT function {f}")), Ok)?;
            let rq_cpu = c.u32()?;
            let len_ns = c.u32()?;
            EventKind::RtCall(Box::new(RtCall {
                func,
                rq_cpu,
                len_ns,
            }))
        }
        K_SCHEDSTAT => {
            let end = match c.byte()? {
                0 => false,
                1 => true,
                b => return bad(format!("bad schedstat flag {b}")),
            };
            let read_ns = c.varint()?;
            let text = c.string()?;
            EventKind::Schedstat(Box::new(SchedstatText { end, read_ns, text }))
        }
        K_FOLD => {
            let mut parts = [FoldedSet::default(), FoldedSet::default()];
            for part in parts.iter_mut() {
                // Each entry takes at least 6 bytes (id, count, min, max, two lengths).
                let n = c.varint()?;
                if n > (c.left() / 6) as u64 {
                    return bad(format!("fold of {n} histograms exceeds its chunk"));
                }
                for _ in 0..n {
                    let id = c.u32()?;
                    part.push_hist(id, &folded(c)?);
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
