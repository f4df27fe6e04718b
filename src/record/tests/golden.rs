//! The golden fixture `tests/fixtures/recordings/golden-v1.lbs`: a deterministic generator of
//! its header and events, the `#[ignore]`d test that (re)writes it, and the test that reads the
//! committed file back and checks it against the generator, event by event and raw byte by
//! raw byte, so that any change to format v1 fails here.
//!
//! The workload is plausible (tasks waking, running, sleeping, migrating on a 2-socket SMT
//! machine for about 3 s) because the integration tests run reports and diffs over the same
//! file; every event kind occurs at least once.

use super::super::codec;
use super::super::{ChunkHeader, Header, Reader, Writer, CHUNK_HEADER_LEN, FILE_PREFIX_LEN};
use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind, MigrateContext, NumaOp, Reason, ReasonSource};
use crate::topology::{LevelKind, Topology};
use std::path::PathBuf;

/// Where the fixture lives.
pub fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings/golden-v1.lbs")
}

/// The fixture's header.
pub fn golden_header() -> Header {
    Header {
        format_version: 1,
        tool_version: "0.1.0".into(),
        kernel_release: "6.8.0-golden".into(),
        hostname: "golden-host".into(),
        clock_base_ns: 1_699_999_000_000_000_000,
        created_unix_s: 1_700_000_000,
        topology: Topology::synthetic(
            &[
                (LevelKind::Smt, "SMT", 2),
                (LevelKind::Llc, "MC", 8),
                (LevelKind::Numa, "NUMA", 16),
            ],
            16,
        ),
        probes: [
            ("sched_switch", "tp_btf"),
            ("sched_waking", "tp_btf"),
            ("sched_wakeup", "tp_btf"),
            ("sched_wakeup_new", "tp_btf"),
            ("sched_migrate_task", "tp_btf"),
            ("sched_update_nr_running_tp", "raw_tp"),
            ("pelt_cfs_tp", "raw_tp"),
            ("sched_cpu_capacity_tp", "missing"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect(),
        command_line: ["lbscope", "record", "-o", "golden-v1.lbs"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    }
}

/// xorshift64*: deterministic on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NR_CPUS: u32 = 16;
const T0: u64 = 5_000_000_000;
const BATCH_NS: u64 = 250_000_000;

/// The fixture's events, one inner vector per chunk.
pub fn golden_batches() -> Vec<Vec<Event>> {
    let mut rng = Rng(0x5eed_1b5c_0de0_0001);
    let mut evs: Vec<Event> = Vec::new();
    let ev = |ts_ns: u64, cpu: u32, kind: EventKind| Event { ts_ns, cpu, kind };
    let pids: Vec<u32> = (2000..2012).collect();
    let mut t = T0;
    // Setup: capacities, stacks, the tasks and their affinities.
    for c in 0..NR_CPUS {
        evs.push(ev(
            t,
            c,
            EventKind::Capacity {
                rq_cpu: c,
                capacity: 1024,
            },
        ));
    }
    let frames = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    evs.push(ev(
        t,
        0,
        EventKind::Stack(Box::new(crate::event::StackInfo {
            id: 1,
            reason: Reason::Wakeup,
            frames: frames(&["set_task_cpu", "try_to_wake_up", "wake_up_q", "futex_wake"]),
        })),
    ));
    evs.push(ev(
        t,
        0,
        EventKind::Stack(Box::new(crate::event::StackInfo {
            id: 2,
            reason: Reason::NewidleBalance,
            frames: frames(&[
                "set_task_cpu",
                "detach_tasks",
                "sched_balance_rq",
                "sched_balance_newidle.constprop.0",
                "pick_next_task_fair",
                "__schedule",
            ]),
        })),
    ));
    evs.push(ev(
        t,
        3,
        EventKind::Task(Box::new(crate::event::TaskInfo {
            pid: 2000,
            tgid: 2000,
            comm: "hackbench".into(),
            exec: true,
        })),
    ));
    let all = CpuSet::first_n(NR_CPUS as usize);
    let mut task_cpu = vec![0u32; pids.len()];
    for (i, &p) in pids.iter().enumerate().skip(1) {
        t += 3_000;
        task_cpu[i] = (i as u32 * 5) % NR_CPUS;
        evs.push(ev(
            t,
            3,
            EventKind::WakeupNew {
                pid: p,
                tgid: 2000,
                target_cpu: task_cpu[i],
            },
        ));
        evs.push(ev(
            t + 500,
            3,
            EventKind::Task(Box::new(crate::event::TaskInfo {
                pid: p,
                tgid: 2000,
                comm: "hackbench".into(),
                exec: false,
            })),
        ));
    }
    evs.push(ev(
        t,
        3,
        EventKind::Affinity {
            pid: 2000,
            cpus: Box::new(all),
        },
    ));
    evs.push(ev(
        t,
        3,
        EventKind::Affinity {
            pid: 2011,
            cpus: Box::new(CpuSet::parse_list("0-7").unwrap_or(all)),
        },
    ));
    // Steady state: wakeups with latency, occasional migrations and balancing.
    let mut running: Vec<Option<usize>> = vec![None; NR_CPUS as usize];
    let mut nr = vec![0u32; NR_CPUS as usize];
    let end = T0 + 3 * 1_000_000_000;
    while t < end {
        t += 10_000 + rng.below(40_000_000);
        let i = rng.below(pids.len() as u64) as usize;
        if running.contains(&Some(i)) {
            // It sleeps.
            let c = task_cpu[i];
            evs.push(ev(
                t,
                c,
                EventKind::Switch {
                    prev_pid: pids[i],
                    prev_state: 1,
                    next_pid: 0,
                },
            ));
            running[c as usize] = None;
            nr[c as usize] = nr[c as usize].saturating_sub(1);
            evs.push(ev(
                t + 200,
                c,
                EventKind::NrRunning {
                    rq_cpu: c as u16,
                    nr_running: nr[c as usize],
                    util_est: crate::event::OptU32::NONE,
                    cfs_h_nr_running: crate::event::OptU32::NONE,
                },
            ));
            continue;
        }
        let waker = rng.below(NR_CPUS as u64) as u32;
        let prev = task_cpu[i];
        evs.push(ev(
            t,
            waker,
            EventKind::Waking {
                pid: pids[i],
                prev_cpu: prev,
            },
        ));
        let target = if running[prev as usize].is_none() || pids[i] == 2011 {
            prev
        } else {
            (prev + 1 + rng.below(NR_CPUS as u64 - 1) as u32) % NR_CPUS
        };
        if target != prev {
            evs.push(ev(
                t + 1_500,
                waker,
                EventKind::Migrate(Box::new(crate::event::MigrateInfo {
                    pid: pids[i],
                    src_cpu: prev,
                    dst_cpu: target,
                    reason: Reason::Wakeup,
                    source: ReasonSource::Stack,
                    stack_id: Some(1),
                    ctx: MigrateContext::default(),
                })),
            ));
            task_cpu[i] = target;
        }
        evs.push(ev(
            t + 2_000,
            waker,
            EventKind::Wakeup {
                pid: pids[i],
                target_cpu: target,
            },
        ));
        nr[target as usize] += 1;
        evs.push(ev(
            t + 2_100,
            waker,
            EventKind::NrRunning {
                rq_cpu: target as u16,
                nr_running: nr[target as usize],
                util_est: crate::event::OptU32::NONE,
                cfs_h_nr_running: crate::event::OptU32::NONE,
            },
        ));
        let lat = 5_000 + rng.below(2_000_000);
        let tc = target as usize;
        let (prev_pid, prev_state) = match running[tc] {
            Some(j) => (pids[j], 0),
            None => (0, 0),
        };
        evs.push(ev(
            t + lat,
            target,
            EventKind::Switch {
                prev_pid,
                prev_state,
                next_pid: pids[i],
            },
        ));
        running[tc] = Some(i);
        if rng.below(6) == 0 {
            // Newidle balance pulls a task, seen from the stopper-less path.
            let c = rng.below(NR_CPUS as u64) as u32;
            let j = rng.below(pids.len() as u64) as usize;
            if !running.contains(&Some(j)) && task_cpu[j] != c {
                let stack = rng.below(2) == 0;
                evs.push(ev(
                    t + lat + 100,
                    c,
                    EventKind::Migrate(Box::new(crate::event::MigrateInfo {
                        pid: pids[j],
                        src_cpu: task_cpu[j],
                        dst_cpu: c,
                        reason: Reason::NewidleBalance,
                        source: if stack {
                            ReasonSource::Stack
                        } else {
                            ReasonSource::Context
                        },
                        stack_id: stack.then_some(2),
                        ctx: MigrateContext {
                            current_idle: true,
                            ..MigrateContext::default()
                        },
                    })),
                ));
                task_cpu[j] = c;
            }
        }
        if rng.below(4) == 0 {
            let c = rng.below(NR_CPUS as u64) as u32;
            let u = rng.below(1024);
            evs.push(ev(
                t + 3_000,
                c,
                EventKind::Pelt(Box::new(crate::event::PeltInfo {
                    rq_cpu: c,
                    load_avg: u * 2,
                    runnable_avg: u + 40,
                    util_avg: u,
                    util_est: None,
                    at_search: None,
                })),
            ));
        }
        if rng.below(8) == 0 {
            let c = rng.below(NR_CPUS as u64) as u32;
            let idle = running[c as usize].is_none();
            evs.push(ev(
                t + 4_000,
                c,
                EventKind::BalanceSoftirq { entry: true, idle },
            ));
            evs.push(ev(
                t + 9_000,
                c,
                EventKind::BalanceSoftirq {
                    entry: false,
                    idle: false,
                },
            ));
        }
    }
    t = end;
    evs.push(ev(
        t,
        9,
        EventKind::Numa(Box::new(crate::event::NumaInfo {
            op: NumaOp::Swap,
            pid: 2003,
            src_cpu: 2,
            dst_pid: 2007,
            dst_cpu: 9,
        })),
    ));
    evs.push(ev(
        t + 10,
        9,
        EventKind::Numa(Box::new(crate::event::NumaInfo {
            op: NumaOp::Move,
            pid: 2004,
            src_cpu: 1,
            dst_pid: 0,
            dst_cpu: 12,
        })),
    ));
    evs.push(ev(t + 20, 5, EventKind::Lost { count: 3 }));
    evs.push(ev(
        t + 30,
        7,
        EventKind::Migrate(Box::new(crate::event::MigrateInfo {
            pid: 2005,
            src_cpu: 7,
            dst_cpu: 8,
            reason: Reason::ActiveBalance,
            source: ReasonSource::Context,
            stack_id: None,
            ctx: MigrateContext {
                in_stopper: true,
                policy: 0,
                ..MigrateContext::default()
            },
        })),
    ));
    for &p in &pids[1..] {
        evs.push(ev(t + 100, 4, EventKind::Exit { pid: p, tgid: 2000 }));
    }
    // Ring-buffer order: each CPU's events in order, the merge not quite (PELT samples land a
    // little late), so the fixture holds negative timestamp deltas.
    evs.sort_by_key(|e| e.ts_ns);
    for k in 1..evs.len() {
        if matches!(evs[k].kind, EventKind::Pelt(_)) && evs[k - 1].cpu != evs[k].cpu {
            evs.swap(k - 1, k);
        }
    }
    // One chunk per quarter second, each closed by a Clock event.
    let mut batches: Vec<Vec<Event>> = Vec::new();
    let mut cur: Vec<Event> = Vec::new();
    let mut edge = T0 + BATCH_NS;
    for e in evs {
        while e.ts_ns >= edge {
            cur.push(ev(edge, 0, EventKind::Clock));
            batches.push(std::mem::take(&mut cur));
            edge += BATCH_NS;
        }
        cur.push(e);
    }
    cur.push(ev(edge, 0, EventKind::Clock));
    batches.push(cur);
    batches
}

/// Writes the fixture: `cargo test --lib record::tests::golden::regenerate -- --ignored`.
/// Only for a deliberate format change, which also bumps `FORMAT_VERSION` and adds a new
/// fixture next to the old one.
#[test]
#[ignore]
fn regenerate() {
    let path = golden_path();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut w = Writer::create(&path, &golden_header()).unwrap();
    for b in golden_batches() {
        w.write_events(&b).unwrap();
        w.flush().unwrap();
    }
    let s = w.finish().unwrap();
    eprintln!(
        "{}: {} events, {} chunks, {} bytes",
        path.display(),
        s.events,
        s.chunks,
        s.bytes
    );
}

#[test]
fn golden_fixture_reads_back_exactly() {
    let bytes = std::fs::read(golden_path()).expect("the committed golden fixture");
    assert!(
        bytes.len() < 50_000,
        "the fixture stays small: {}",
        bytes.len()
    );
    let mut r = Reader::from_bytes(bytes.clone()).unwrap();
    assert_eq!(r.header(), &golden_header());
    let want = golden_batches();
    let mut got = Vec::new();
    while let Some(c) = r.next_chunk() {
        got.push(c);
    }
    assert!(r.damage().is_clean(), "{:?}", r.damage());
    assert_eq!(got.len(), want.len(), "one chunk per batch");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "chunk {i}");
    }
    // The encoder still produces the committed raw bytes (independent of zstd's output,
    // which may change between zstd versions while staying decodable).
    let hlen = codec::le_u32(&bytes, 12) as usize;
    let mut at = FILE_PREFIX_LEN + hlen + 4;
    for (i, batch) in want.iter().enumerate() {
        let h = ChunkHeader::parse(&bytes[at..]).unwrap();
        let payload = &bytes[at + CHUNK_HEADER_LEN..at + CHUNK_HEADER_LEN + h.comp_len as usize];
        let raw = zstd::bulk::decompress(payload, h.raw_len as usize).unwrap();
        let mut enc = Vec::new();
        let mut prev = batch[0].ts_ns;
        for e in batch {
            codec::encode_event(&mut enc, prev, e);
            prev = e.ts_ns;
        }
        assert_eq!(raw, enc, "raw encoding of chunk {i}");
        assert_eq!(h.first_ts, batch[0].ts_ns);
        at += CHUNK_HEADER_LEN + h.comp_len as usize;
    }
    assert_eq!(at, bytes.len());
}

#[test]
fn golden_covers_every_kind_and_negative_deltas() {
    let b = golden_batches();
    let mut kinds = std::collections::BTreeSet::new();
    let mut negative = 0;
    for batch in &b {
        for w in batch.windows(2) {
            negative += usize::from(w[1].ts_ns < w[0].ts_ns);
        }
        for e in batch {
            let mut raw = Vec::new();
            codec::encode_event(&mut raw, 0, e);
            kinds.insert(raw[0]);
        }
    }
    assert_eq!(kinds.len(), 16, "{kinds:?}");
    assert!(negative > 0);
    let events: usize = b.iter().map(Vec::len).sum();
    assert!((300..2000).contains(&events), "{events} events");
    assert!(b.len() >= 8, "{} chunks", b.len());
}
