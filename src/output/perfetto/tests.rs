//! Perfetto export tests: encode event sequences built in code, read the bytes back with a
//! minimal protobuf reader written here, and check what trace processor relies on.

use super::sched::{prev_state, BATCH_EVENTS};
use super::PerfettoWriter;
use crate::event::{Event, EventKind, MigrateContext, Pid, Reason, ReasonSource};
use crate::topology::Topology;
use std::collections::{HashMap, HashSet};

/// A field value as read off the wire.
#[derive(Clone, Copy, Debug)]
enum V<'a> {
    Int(u64),
    Len(&'a [u8]),
}

impl<'a> V<'a> {
    fn int(self) -> u64 {
        match self {
            V::Int(v) => v,
            _ => panic!("not a varint: {self:?}"),
        }
    }
    fn bytes(self) -> &'a [u8] {
        match self {
            V::Len(b) => b,
            _ => panic!("not length-delimited: {self:?}"),
        }
    }
    fn str(self) -> &'a str {
        std::str::from_utf8(self.bytes()).unwrap()
    }
    fn msg(self) -> Msg<'a> {
        Msg::parse(self.bytes())
    }
    fn packed(self) -> Vec<u64> {
        let b = self.bytes();
        let mut pos = 0;
        let mut out = Vec::new();
        while pos < b.len() {
            out.push(varint(b, &mut pos));
        }
        out
    }
}

fn varint(b: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*pos];
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return v;
        }
    }
    panic!("varint too long");
}

/// A decoded message: its fields in order.
struct Msg<'a>(Vec<(u32, V<'a>)>);

impl<'a> Msg<'a> {
    /// Parses every byte of `b` (panics on anything malformed or left over).
    fn parse(b: &'a [u8]) -> Msg<'a> {
        let mut pos = 0;
        let mut fields = Vec::new();
        while pos < b.len() {
            let key = varint(b, &mut pos);
            let (field, wire) = ((key >> 3) as u32, key & 7);
            let v = match wire {
                0 => V::Int(varint(b, &mut pos)),
                2 => {
                    let len = varint(b, &mut pos) as usize;
                    pos += len;
                    V::Len(&b[pos - len..pos])
                }
                // The exporter writes no fixed-width field.
                _ => panic!("unexpected wire type {wire}"),
            };
            fields.push((field, v));
        }
        assert_eq!(pos, b.len(), "message ends exactly at its end");
        Msg(fields)
    }
    fn all(&self, n: u32) -> Vec<V<'a>> {
        self.0.iter().filter(|f| f.0 == n).map(|f| f.1).collect()
    }
    fn get(&self, n: u32) -> Option<V<'a>> {
        self.all(n).last().copied()
    }
    fn packed(&self, n: u32) -> Vec<u64> {
        self.get(n).map(V::packed).unwrap_or_default()
    }
}

fn ev(ts_ns: u64, cpu: u32, kind: EventKind) -> Event {
    Event { ts_ns, cpu, kind }
}

fn switch(ts: u64, cpu: u32, prev_pid: Pid, prev_state: u32, next_pid: Pid) -> Event {
    let kind = EventKind::Switch {
        prev_pid,
        prev_state,
        next_pid,
    };
    ev(ts, cpu, kind)
}

fn task(pid: Pid, tgid: Pid, comm: &str) -> Event {
    let comm = comm.to_string();
    ev(
        0,
        0,
        EventKind::Task(Box::new(crate::event::TaskInfo {
            pid,
            tgid,
            comm,
            exec: false,
        })),
    )
}

fn nr(ts: u64, rq_cpu: u32, nr_running: u32) -> Event {
    ev(
        ts,
        rq_cpu,
        EventKind::NrRunning {
            rq_cpu: rq_cpu as u16,
            nr_running,
            util_est: crate::event::OptU32::NONE,
            cfs_h_nr_running: crate::event::OptU32::NONE,
        },
    )
}

fn export(topo: &Topology, events: &[Event]) -> Vec<u8> {
    let mut w = PerfettoWriter::new(Vec::new(), topo, 1_000_000).unwrap();
    let mut a = super::analyzer(topo);
    let mut snaps = Vec::new();
    for e in events {
        a.push(e, &mut snaps);
        w.write(e, &a).unwrap();
    }
    w.finish().unwrap()
}

/// Every TracePacket of a trace.
fn packets(trace: &[u8]) -> Vec<Msg<'_>> {
    let top = Msg::parse(trace);
    assert!(top.0.iter().all(|f| f.0 == 1), "a Trace holds only packets");
    top.0.iter().map(|f| f.1.msg()).collect()
}

/// One CPU's compact events, decoded: switches (ts, prev_state, next_pid, comm) and
/// wakings (ts, pid, target_cpu, comm), over every bundle of that CPU in order.
#[derive(Debug, Default)]
struct CpuSched {
    switches: Vec<(u64, u64, u64, String)>,
    wakings: Vec<(u64, u64, u64, String)>,
    bundles: usize,
    lost: bool,
}

fn undelta(d: &[u64]) -> Vec<u64> {
    d.iter()
        .scan(0u64, |acc, x| {
            *acc += x;
            Some(*acc)
        })
        .collect()
}

fn sched(pkts: &[Msg]) -> HashMap<u64, CpuSched> {
    let mut out: HashMap<u64, CpuSched> = HashMap::new();
    for p in pkts {
        let Some(b) = p.get(1) else { continue };
        assert_eq!(p.get(10).unwrap().int(), 2, "ftrace sequence");
        let b = b.msg();
        let c = out.entry(b.get(1).unwrap().int()).or_default();
        c.bundles += 1;
        c.lost |= b.get(3).is_some_and(|v| v.int() == 1);
        let cs = b.get(4).unwrap().msg();
        let table: Vec<&str> = cs.all(5).into_iter().map(V::str).collect();
        let name = |i: u64| table[i as usize].to_string();
        let ts = undelta(&cs.packed(1));
        let (st, pid, prio, comm) = (cs.packed(2), cs.packed(3), cs.packed(4), cs.packed(6));
        assert!([st.len(), pid.len(), prio.len(), comm.len()]
            .iter()
            .all(|&l| l == ts.len()));
        assert!(prio.iter().all(|&p| p == 120));
        for i in 0..ts.len() {
            c.switches.push((ts[i], st[i], pid[i], name(comm[i])));
        }
        let ts = undelta(&cs.packed(7));
        let (pid, cpu, prio, comm) = (cs.packed(8), cs.packed(9), cs.packed(10), cs.packed(11));
        let flags = cs.packed(12);
        let lens = [pid.len(), cpu.len(), prio.len(), comm.len(), flags.len()];
        assert!(lens.iter().all(|&l| l == ts.len()));
        for i in 0..ts.len() {
            c.wakings.push((ts[i], pid[i], cpu[i], name(comm[i])));
        }
    }
    out
}

/// Track events by track name: (ts, type, event name, counter value, annotations).
type TrackEvents = HashMap<String, Vec<(u64, u64, String, u64, HashMap<String, String>)>>;

/// Checks every track event's track was declared before it, returns events by track name.
fn track_events(pkts: &[Msg]) -> TrackEvents {
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut out = TrackEvents::new();
    for p in pkts {
        if let Some(d) = p.get(60) {
            let d = d.msg();
            let uuid = d.get(1).unwrap().int();
            if let Some(parent) = d.get(5) {
                assert!(names.contains_key(&parent.int()), "parent declared first");
            }
            let name = d.get(2).unwrap().str().to_string();
            assert!(names.insert(uuid, name).is_none(), "declared once");
        }
        if let Some(e) = p.get(11) {
            assert_eq!(p.get(58).unwrap().int(), 3, "monotonic clock");
            assert_eq!(p.get(10).unwrap().int(), 1, "track sequence");
            let e = e.msg();
            let uuid = e.get(11).unwrap().int();
            let track = names.get(&uuid).expect("track declared before use").clone();
            let ann = e
                .all(4)
                .into_iter()
                .map(|a| {
                    let a = a.msg();
                    let v = match a.get(6) {
                        Some(s) => s.str().to_string(),
                        None => a.get(4).unwrap().int().to_string(),
                    };
                    (a.get(10).unwrap().str().to_string(), v)
                })
                .collect();
            out.entry(track).or_default().push((
                p.get(8).unwrap().int(),
                e.get(9).unwrap().int(),
                e.get(23).map_or(String::new(), |n| n.str().to_string()),
                e.get(30).map_or(0, V::int),
                ann,
            ));
        }
    }
    out
}

fn migrate(ts: u64, pid: Pid, src_cpu: u32, dst_cpu: u32, reason: Reason) -> Event {
    let kind = EventKind::Migrate(Box::new(crate::event::MigrateInfo {
        pid,
        src_cpu,
        dst_cpu,
        reason,
        source: ReasonSource::Stack,
        stack_id: Some(4),
        ctx: MigrateContext::default(),
    }));
    ev(ts, dst_cpu, kind)
}

/// Two CPUs: 10 and 11 (one process) run, CPU 1 goes idle, 20 is woken onto busy CPU 0 (a
/// movable waiter while CPU 1 idles), is pulled to CPU 1 and runs there; 11 is woken with no
/// waking; 30 is forked onto CPU 1; CPU 1 lost events.
fn scenario() -> Vec<Event> {
    vec![
        task(10, 10, "ten"),
        task(11, 10, "eleven"),
        task(20, 20, "twenty"),
        switch(100, 0, 0, 0, 10),
        switch(110, 1, 0, 0, 11),
        switch(150, 1, 11, 1, 0),
        ev(
            200,
            0,
            EventKind::Waking {
                pid: 20,
                prev_cpu: 0,
            },
        ),
        ev(
            210,
            0,
            EventKind::Wakeup {
                pid: 20,
                target_cpu: 0,
            },
        ),
        nr(210, 0, 2),
        migrate(300, 20, 0, 1, Reason::NewidleBalance),
        switch(310, 1, 0, 0x402, 20),
        nr(310, 0, 1),
        nr(310, 1, 1),
        nr(320, 1, 1),
        ev(
            400,
            1,
            EventKind::Wakeup {
                pid: 11,
                target_cpu: 1,
            },
        ),
        task(30, 30, "child"),
        ev(
            500,
            0,
            EventKind::WakeupNew {
                pid: 30,
                tgid: 30,
                target_cpu: 1,
            },
        ),
        ev(600, 1, EventKind::Lost { count: 3 }),
    ]
}

#[test]
fn a_small_trace_reads_back() {
    let topo = Topology::synthetic_flat(2);
    let trace = export(&topo, &scenario());
    let pkts = packets(&trace);

    // The clock snapshot comes first and clears the track sequence's state.
    let first = &pkts[0];
    assert_eq!(first.get(13).unwrap().int(), 1);
    let clocks: Vec<(u64, u64)> = first
        .get(6)
        .unwrap()
        .msg()
        .all(1)
        .into_iter()
        .map(|c| (c.msg().get(1).unwrap().int(), c.msg().get(2).unwrap().int()))
        .collect();
    assert_eq!(clocks, [(6, 0), (3, 0), (1, 1_000_000)]);

    let s = sched(&pkts);
    let c0 = &s[&0];
    assert_eq!(c0.switches, [(100, 0, 10, "ten".to_string())]);
    assert_eq!(
        c0.wakings,
        [(200, 20, 0, "twenty".into()), (500, 30, 1, "child".into())],
        "waking at Waking with the previous CPU; the fork's waking with its CPU"
    );
    let c1 = &s[&1];
    let sw: Vec<(u64, u64, u64, &str)> = c1
        .switches
        .iter()
        .map(|(t, st, p, c)| (*t, *st, *p, c.as_str()))
        .collect();
    assert_eq!(
        sw,
        [
            (110, 0, 11, "eleven"),
            (150, 1, 0, "swapper/1"),
            (310, 0x402, 20, "twenty")
        ]
    );
    assert_eq!(
        c1.wakings,
        [(400, 11, 1, "eleven".into())],
        "wakeup with no waking"
    );
    assert!(c1.lost && !c0.lost);

    let t = track_events(&pkts);
    let m1 = &t["to cpu1"];
    assert_eq!(m1.len(), 2);
    let (ts, ty, name, _, ann) = &m1[0];
    assert_eq!((*ts, *ty, name.as_str()), (300, 3, "newidle_balance"));
    let want: HashMap<String, String> = [
        ("pid", "20"),
        ("comm", "twenty"),
        ("src_cpu", "0"),
        ("dst_cpu", "1"),
        ("level", "llc"),
        ("reason_source", "stack"),
        ("stack_id", "4"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(ann, &want);
    assert_eq!(m1[1].2, "fork");
    assert_eq!(m1[1].4["reason_source"], "wakeup_new");

    let counter = |name: &str| -> Vec<(u64, u64)> { t[name].iter().map(|e| (e.0, e.3)).collect() };
    assert!(t["cpu0 nr_running"].iter().all(|e| e.1 == 4));
    assert_eq!(counter("cpu0 nr_running"), [(210, 2), (310, 1)]);
    assert_eq!(
        counter("cpu1 nr_running"),
        [(310, 1)],
        "repeats are not written"
    );
    // 20 waits on busy CPU 0 while CPU 1 idles from 210; the pull to idle CPU 1 ends it.
    assert_eq!(counter("llc 0-1"), [(210, 2), (300, 0)]);

    // Threads named and tied to their process.
    let mut threads = HashSet::new();
    let mut procs = HashSet::new();
    for p in &pkts {
        let Some(tree) = p.get(2) else { continue };
        let tree = tree.msg();
        for th in tree.all(2) {
            let th = th.msg();
            let (tid, name) = (th.get(1).unwrap().int(), th.get(2).unwrap().str());
            threads.insert((tid, th.get(3).unwrap().int(), name.to_string()));
        }
        for pr in tree.all(1) {
            let pr = pr.msg();
            procs.insert((
                pr.get(1).unwrap().int(),
                pr.get(3).unwrap().str().to_string(),
            ));
        }
    }
    assert!(threads.contains(&(11, 10, "eleven".to_string())));
    assert!(threads.contains(&(30, 30, "child".to_string())));
    assert!(procs.contains(&(10, "ten".to_string())));
    assert!(!procs.iter().any(|p| p.0 == 11));
}

#[test]
fn batches_split_per_cpu_and_times_never_decrease() {
    let topo = Topology::synthetic_flat(2);
    let n = 2 * BATCH_EVENTS + 500;
    let mut evs: Vec<Event> = (0..n as u64)
        .map(|i| switch(1_000 + i * 10, 0, 0, 1, 100 + (i % 7) as u32))
        .collect();
    // An event stamped earlier than its predecessor on the same CPU.
    evs[1500].ts_ns -= 25;
    evs.push(switch(5, 1, 0, 0, 9));
    let s = sched(&packets(&export(&topo, &evs)));
    assert_eq!(s[&0].bundles, 3);
    assert_eq!(s[&1].bundles, 1);
    let ts: Vec<u64> = s[&0].switches.iter().map(|e| e.0).collect();
    assert_eq!(ts.len(), n);
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(ts[1500], ts[1499], "clamped to the previous time");
    assert_eq!(ts[n - 1], 1_000 + (n as u64 - 1) * 10);
    assert_eq!(s[&1].switches[0].0, 5);
}

#[test]
fn pinned_waiters_are_a_separate_value() {
    let topo = Topology::synthetic_flat(2);
    let pin = serde_json::from_str(r#"{"type":"affinity","pid":20,"cpus":"0"}"#).unwrap();
    let evs = [
        switch(0, 0, 0, 0, 10),
        switch(0, 1, 0, 0, 0),
        ev(50, 0, pin),
        ev(
            100,
            0,
            EventKind::Wakeup {
                pid: 20,
                target_cpu: 0,
            },
        ),
        switch(200, 0, 10, 1, 20),
    ];
    let t = track_events(&packets(&export(&topo, &evs)));
    let v: Vec<(u64, u64)> = t["llc 0-1"].iter().map(|e| (e.0, e.3)).collect();
    assert_eq!(v, [(100, 1), (200, 0)]);
}

#[test]
fn cpus_past_the_limit_are_dropped() {
    let evs = [
        switch(10, 0, 0, 0, 1),
        switch(20, u32::MAX, 0, 0, 1),
        ev(
            30,
            u32::MAX,
            EventKind::Waking {
                pid: 1,
                prev_cpu: 0,
            },
        ),
        ev(40, u32::MAX, EventKind::Lost { count: 1 }),
        nr(50, u32::MAX, 3),
    ];
    let trace = export(&Topology::synthetic_flat(2), &evs);
    let pkts = packets(&trace);
    let s = sched(&pkts);
    assert_eq!(s.keys().copied().collect::<Vec<_>>(), [0]);
    assert!(track_events(&pkts).is_empty());
}

#[test]
fn no_events_is_an_empty_trace() {
    assert!(export(&Topology::synthetic_flat(2), &[]).is_empty());
}

#[test]
fn prev_state_in_the_layout_trace_processor_assumes() {
    let cases = [
        (0, 0),
        (0x1, 0x1),
        (0x2, 0x2),
        (0x402, 0x402),
        (0x40, 0x200),
        (0x80, 0x40),
        (0x1002, 0x2),
        (0x101, 0x1),
        (0x3, 0x2),
        (0x20, 0x20),
    ];
    for (raw, want) in cases {
        assert_eq!(prev_state(raw), want, "{raw:#x}");
    }
}
