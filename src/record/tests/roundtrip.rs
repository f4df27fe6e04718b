//! Round trips: every event kind with edge values, timestamps in any order, many chunks.

use super::{read_chunks, tmp, write_bytes};
use crate::cpuset::{CpuSet, MAX_CPUS};
use crate::event::{
    Balance, BalanceOrigin, CpuIdleType, Event, EventKind, MigrateContext, MigrationType, NumaOp,
    Reason, ReasonSource,
};
use crate::record::{codec, Reader, Writer, CHUNK_RAW_TARGET};

/// Every kind, each with small, large and odd values.
fn edge_events() -> Vec<Event> {
    let m = u32::MAX;
    let mut high = CpuSet::new();
    high.insert(0);
    high.insert(63);
    high.insert(64);
    high.insert(MAX_CPUS - 1);
    let long_frames: Vec<String> = (0..500)
        .map(|i| format!("frame_{i}.constprop.{}", i % 7))
        .collect();
    let ctx_all = MigrateContext {
        in_stopper: true,
        in_hardirq: true,
        in_sched_softirq: true,
        in_execve: true,
        current_idle: true,
        waking: true,
        policy: m,
    };
    let mut kinds = vec![
        EventKind::Switch {
            prev_pid: m,
            prev_state: m,
            next_pid: 0,
        },
        EventKind::Switch {
            prev_pid: 0,
            prev_state: 0,
            next_pid: m,
        },
        EventKind::Waking {
            pid: m,
            prev_cpu: m,
        },
        EventKind::Wakeup {
            pid: 1,
            target_cpu: m,
        },
        EventKind::WakeupNew {
            pid: m,
            tgid: m,
            target_cpu: 1023,
        },
        EventKind::Stack(Box::new(crate::event::StackInfo {
            id: m,
            reason: Reason::Unknown,
            frames: long_frames,
        })),
        EventKind::Stack(Box::new(crate::event::StackInfo {
            id: 0,
            reason: Reason::Wakeup,
            frames: vec![],
        })),
        EventKind::Stack(Box::new(crate::event::StackInfo {
            id: 7,
            reason: Reason::Exec,
            frames: vec![String::new(), "ünïcødé_✓".into()],
        })),
        EventKind::NrRunning {
            rq_cpu: m as u16,
            nr_running: m,
            util_est: crate::event::OptU32::NONE,
            cfs_h_nr_running: crate::event::OptU32::NONE,
        },
        EventKind::NrRunning {
            rq_cpu: 1,
            nr_running: m,
            util_est: crate::event::OptU32::some(u32::MAX),
            cfs_h_nr_running: crate::event::OptU32::some(m),
        },
        EventKind::NrRunning {
            rq_cpu: 2,
            nr_running: 3,
            util_est: crate::event::OptU32::some(0),
            cfs_h_nr_running: crate::event::OptU32::NONE,
        },
        EventKind::NrRunning {
            rq_cpu: 2,
            nr_running: 3,
            util_est: crate::event::OptU32::NONE,
            cfs_h_nr_running: crate::event::OptU32::some(2),
        },
        EventKind::Pelt(Box::new(crate::event::PeltInfo {
            rq_cpu: 3,
            load_avg: u64::MAX,
            runnable_avg: 0,
            util_avg: 1 << 63,
            util_est: None,
            at_search: None,
        })),
        EventKind::Pelt(Box::new(crate::event::PeltInfo {
            rq_cpu: 5,
            load_avg: 7,
            runnable_avg: 9,
            util_avg: 300,
            util_est: Some(u64::MAX),
            at_search: None,
        })),
        EventKind::Pelt(Box::new(crate::event::PeltInfo {
            rq_cpu: u32::MAX,
            load_avg: u64::MAX,
            runnable_avg: 1,
            util_avg: 0,
            util_est: Some(0),
            at_search: Some(crate::event::SearchTasks {
                nr_running: u32::MAX,
                cfs_h_nr_running: 0,
                idle: true,
            }),
        })),
        EventKind::Capacity {
            rq_cpu: 0,
            capacity: u64::MAX,
        },
        EventKind::Numa(Box::new(crate::event::NumaInfo {
            op: NumaOp::Move,
            pid: m,
            src_cpu: i32::MIN,
            dst_pid: 0,
            dst_cpu: i32::MAX,
        })),
        EventKind::Numa(Box::new(crate::event::NumaInfo {
            op: NumaOp::Swap,
            pid: 1,
            src_cpu: -1,
            dst_pid: m,
            dst_cpu: 0,
        })),
        EventKind::Numa(Box::new(crate::event::NumaInfo {
            op: NumaOp::Stick,
            pid: 2,
            src_cpu: 5,
            dst_pid: 3,
            dst_cpu: -1,
        })),
        EventKind::Cgroup(Box::new(crate::event::CgroupInfo {
            pid: m,
            id: u64::MAX,
            path: Some("/a/b".into()),
        })),
        EventKind::Cgroup(Box::new(crate::event::CgroupInfo {
            pid: 0,
            id: 1,
            path: None,
        })),
        EventKind::Fold(Box::default()),
        EventKind::Fold(Box::new(crate::event::Fold {
            by_cpu: vec![(
                m,
                crate::event::FoldedHist {
                    count: u64::MAX,
                    min_ns: 0,
                    max_ns: u64::MAX,
                    log2: vec![u64::MAX, 0, 1],
                    fine: vec![],
                },
            )]
            .into_iter()
            .collect(),
            by_tgid: [(0, Default::default()), (7, Default::default())]
                .into_iter()
                .collect(),
        })),
        EventKind::Task(Box::new(crate::event::TaskInfo {
            pid: m,
            tgid: m,
            comm: String::new(),
            exec: true,
        })),
        EventKind::Task(Box::new(crate::event::TaskInfo {
            pid: 5,
            tgid: 5,
            comm: "kworker/u64:1-events_unbound".into(),
            exec: false,
        })),
        EventKind::Affinity {
            pid: m,
            cpus: Box::new(high),
        },
        EventKind::Affinity {
            pid: 0,
            cpus: Box::new(CpuSet::new()),
        },
        EventKind::Affinity {
            pid: 1,
            cpus: Box::new(CpuSet::first_n(MAX_CPUS)),
        },
        EventKind::Exit { pid: m, tgid: 0 },
        EventKind::Lost { count: u64::MAX },
        EventKind::Lost { count: 0 },
        EventKind::Clock,
    ];
    for (entry, idle) in [(false, false), (true, false), (false, true), (true, true)] {
        kinds.push(EventKind::BalanceSoftirq { entry, idle });
    }
    for (i, (idle, mt)) in [
        (CpuIdleType::Idle, MigrationType::Load),
        (CpuIdleType::NotIdle, MigrationType::Util),
        (CpuIdleType::NewlyIdle, MigrationType::Task),
        (CpuIdleType::Idle, MigrationType::Misfit),
    ]
    .into_iter()
    .enumerate()
    {
        kinds.push(EventKind::Balance(Box::new(Balance {
            level: i as u32,
            sd_weight: if i == 0 { m } else { 2 },
            idle,
            migration_type: mt,
            imbalance: if i == 1 { u64::MAX } else { 0 },
            balanced: i % 2 == 0,
            redo: i == 2,
            dst_cpu: m,
            src_cpu: 0,
            pid: [None, Some(0), Some(m), Some(7)][i],
            origin: [
                None,
                Some(BalanceOrigin::Own),
                Some(BalanceOrigin::NohzIdle),
                Some(BalanceOrigin::Stopper),
            ][i],
            search_ns: [Some(12_345), None, None, Some(u32::MAX)][i],
        })));
    }
    for (i, idle) in [
        CpuIdleType::Idle,
        CpuIdleType::NotIdle,
        CpuIdleType::NewlyIdle,
    ]
    .into_iter()
    .enumerate()
    {
        kinds.push(EventKind::BalanceCall(Box::new(
            crate::event::BalanceCall {
                level: [0, 7, u32::MAX][i],
                sd_weight: [2, m, 0][i],
                idle,
                this_cpu: [0, m, 3][i],
                moved: [0, 1, u32::MAX][i],
                failed: i == 0,
                origin: [
                    None,
                    Some(BalanceOrigin::NohzIdle),
                    Some(BalanceOrigin::Stopper),
                ][i],
                len_ns: [0, 12_345, u32::MAX][i],
            },
        )));
    }
    for (i, func) in crate::event::RtFunc::ALL.into_iter().enumerate() {
        kinds.push(EventKind::RtCall(Box::new(crate::event::RtCall {
            func,
            rq_cpu: [0, m, 3][i],
            len_ns: [0, 12_345, u32::MAX][i],
        })));
    }
    for (end, text) in [
        (false, String::new()),
        (true, "version 16\ncpu0 \u{e9}\n".repeat(500)),
    ] {
        kinds.push(EventKind::Schedstat(Box::new(
            crate::event::SchedstatText {
                end,
                read_ns: if end { u64::MAX } else { 0 },
                text,
            },
        )));
    }
    for (i, reason) in Reason::ALL.iter().enumerate() {
        kinds.push(EventKind::Migrate(Box::new(crate::event::MigrateInfo {
            pid: m - i as u32,
            src_cpu: m,
            dst_cpu: i as u32,
            reason: *reason,
            source: [
                ReasonSource::Stack,
                ReasonSource::Context,
                ReasonSource::TaskState,
            ][i % 3],
            stack_id: match i % 3 {
                0 => None,
                1 => Some(m),
                _ => Some(0),
            },
            ctx: if i % 2 == 0 {
                ctx_all
            } else {
                MigrateContext::default()
            },
        })));
    }
    // Timestamps jump both ways, across 0 and u64::MAX.
    let ts = [
        0,
        u64::MAX,
        1,
        1 << 63,
        (1 << 63) - 1,
        5,
        4,
        1_000_000_000_000,
        999_999_999_999,
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Event {
            ts_ns: ts[i % ts.len()].wrapping_add(i as u64 * 3),
            cpu: if i % 5 == 0 { u32::MAX } else { i as u32 },
            kind,
        })
        .collect()
}

#[test]
fn every_kind_round_trips_with_edge_values() {
    let evs = edge_events();
    let bytes = write_bytes("edge.lbs", std::slice::from_ref(&evs));
    let (chunks, d) = read_chunks(bytes);
    assert!(d.is_clean(), "{d:?}");
    assert_eq!(chunks, vec![evs.clone()]);
    // Each event alone too: the first event of a chunk is relative to the chunk's first ts.
    let singles: Vec<Vec<Event>> = evs.iter().map(|e| vec![e.clone()]).collect();
    let (chunks, d) = read_chunks(write_bytes("singles.lbs", &singles));
    assert!(d.is_clean(), "{d:?}");
    assert_eq!(chunks, singles);
}

#[test]
fn decoded_kinds_match_encoder_tags() {
    // The codec's decode of its own encode, without the file around it.
    let evs = edge_events();
    let mut raw = Vec::new();
    let first = evs[0].ts_ns;
    let mut prev = first;
    for e in &evs {
        codec::encode_event(&mut raw, prev, e);
        prev = e.ts_ns;
    }
    let back = codec::decode_events(&raw, first, evs.len() as u32).unwrap();
    assert_eq!(back, evs);
    // One byte short, one event too many, one byte extra: all errors, no panic.
    assert!(codec::decode_events(&raw[..raw.len() - 1], first, evs.len() as u32).is_err());
    assert!(codec::decode_events(&raw, first, evs.len() as u32 + 1).is_err());
    let mut more = raw.clone();
    more.push(0);
    assert!(codec::decode_events(&more, first, evs.len() as u32).is_err());
}

/// A long hackbench-like stream.
fn stream(n: usize) -> Vec<Event> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut ts = 1_000_000_000u64;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly forward, now and then a little back (ring-buffer merge order).
            ts = if x % 11 == 0 {
                ts - (x % 3000)
            } else {
                ts + (x % 20_000)
            };
            let cpu = (x >> 20) as u32 % 64;
            let pid = 10_000 + (x >> 30) as u32 % 160;
            let kind = match i % 4 {
                0 => EventKind::Waking { pid, prev_cpu: cpu },
                1 => EventKind::Wakeup {
                    pid,
                    target_cpu: (cpu + 1) % 64,
                },
                2 => EventKind::Switch {
                    prev_pid: pid,
                    prev_state: 1,
                    next_pid: pid + 1,
                },
                _ => EventKind::NrRunning {
                    rq_cpu: cpu as u16,
                    nr_running: (x % 5) as u32,
                    util_est: crate::event::OptU32::NONE,
                    cfs_h_nr_running: crate::event::OptU32::NONE,
                },
            };
            Event {
                ts_ns: ts,
                cpu,
                kind,
            }
        })
        .collect()
}

#[test]
fn many_chunks_round_trip_and_stats_add_up() {
    let evs = stream(300_000);
    let p = tmp("many.lbs");
    let mut w = Writer::create(&p, &super::header()).unwrap();
    // Uneven batches, no flush: chunks are sealed by size alone, then by finish.
    let mut i = 0;
    let mut k = 1;
    while i < evs.len() {
        let j = (i + k * 37).min(evs.len());
        w.write_events(&evs[i..j]).unwrap();
        i = j;
        k = k % 50 + 1;
    }
    let mid = w.stats();
    assert!(mid.chunks >= 2, "{mid:?}");
    let s = w.finish().unwrap();
    assert_eq!(s.events, evs.len() as u64);
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(s.bytes, bytes.len() as u64);
    let offsets = super::chunk_offsets(&bytes);
    assert_eq!(offsets.len() as u64, s.chunks);
    let mut r = Reader::open(&p).unwrap();
    let mut got = Vec::new();
    let mut n = 0;
    while let Some(c) = r.next_chunk() {
        // Every sealed-by-size chunk sits just past the target.
        n += 1;
        got.extend(c);
    }
    assert!(r.damage().is_clean(), "{:?}", r.damage());
    assert_eq!(n as u64, s.chunks);
    assert_eq!(got, evs);
    assert!(s.chunks as usize >= 300_000 * 5 / CHUNK_RAW_TARGET);
    eprintln!(
        "{} events: {} bytes on disk, {:.2} bytes/event",
        s.events,
        s.bytes,
        s.bytes as f64 / s.events as f64
    );
    let _ = std::fs::remove_file(&p);
}

#[test]
fn dropping_a_writer_keeps_its_buffered_events() {
    let p = tmp("dropped.lbs");
    let evs = stream(1000);
    {
        let mut w = Writer::create(&p, &super::header()).unwrap();
        w.write_events(&evs).unwrap();
        assert_eq!(w.stats().events, 0, "nothing sealed yet");
    }
    let (chunks, d) = read_chunks(std::fs::read(&p).unwrap());
    assert!(d.is_clean());
    assert_eq!(chunks.concat(), evs);
    let _ = std::fs::remove_file(&p);
}

#[test]
fn header_only_and_empty_writes() {
    let bytes = write_bytes("header-only.lbs", &[vec![], vec![]]);
    let mut r = Reader::from_bytes(bytes).unwrap();
    assert_eq!(r.header(), &super::header());
    assert_eq!(r.next_chunk(), None);
    assert!(r.damage().is_clean());
}

#[test]
fn format_version_is_forced_on_write() {
    let mut h = super::header();
    h.format_version = 77;
    let p = tmp("forced.lbs");
    Writer::create(&p, &h).unwrap().finish().unwrap();
    let r = Reader::open(&p).unwrap();
    assert_eq!(r.header().format_version, crate::record::FORMAT_VERSION);
    let _ = std::fs::remove_file(&p);
}

#[test]
fn reader_and_writer_can_move_to_threads() {
    fn send<T: Send>() {}
    send::<Reader>();
    send::<Writer>();
}

#[test]
fn an_unknown_rt_function_code_is_refused() {
    let e = Event::rt_call_at(5, 1, crate::event::RtFunc::PushIrqWork, 1, 10);
    let mut raw = Vec::new();
    codec::encode_event(&mut raw, 5, &e);
    // tag, ts delta 0, cpu 1, then the function's code.
    assert_eq!(raw[..4], [23, 0, 1, 2]);
    assert_eq!(codec::decode_events(&raw, 5, 1).unwrap(), vec![e]);
    raw[3] = 3;
    let err = codec::decode_events(&raw, 5, 1).unwrap_err();
    assert!(err.0.contains("unknown RT function 3"), "{err:?}");
}
