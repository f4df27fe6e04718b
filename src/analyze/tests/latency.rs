//! Run-queue latency: runqlat's definition, bucket edges, attribution.

use super::*;
use crate::analyze::{log2_slot, LOG2_SLOTS};

/// One wakeup-to-run sample of `ns` per entry, each by a distinct task on CPU 0.
fn samples(ns: &[u64]) -> Snapshot {
    let mut evs = vec![switch(0, 0, 0, 1, 0)];
    let mut t = 1_000;
    for (i, d) in ns.iter().enumerate() {
        let pid = 100 + i as u32;
        evs.push(wakeup(t, pid, 0));
        evs.push(switch(t + d, 0, 0, 1, pid));
        evs.push(switch(t + d + 1, 0, pid, 1, 0));
        t += d + 10;
    }
    one(Topology::synthetic_flat(2), &evs)
}

#[test]
fn log2_slot_edges() {
    let cases = [
        (0, 0),
        (1, 0),
        (2, 1),
        (3, 1),
        (4, 2),
        (7, 2),
        (8, 3),
        (15, 3),
        (16, 4),
        ((1 << 25) - 1, 24),
        (1 << 25, 25),
        (1 << 40, 25),
        (u64::MAX, 25),
    ];
    for (us, slot) in cases {
        assert_eq!(log2_slot(us), slot, "{us} us");
    }
    assert_eq!(LOG2_SLOTS, 26);
}

#[test]
fn bucket_edges_with_ns_rounding() {
    // 0, 1, 2, 3, 4, 7, 8 us, each at the top of its microsecond (ns / 1000 truncates).
    let s = samples(&[999, 1_999, 2_000, 3_999, 4_000, 7_999, 8_000]);
    assert_eq!(s.runqlat_us.count, 7);
    assert_eq!(s.runqlat_us.log2_buckets, vec![2, 2, 2, 1]);
    assert_eq!(s.runqlat_us.max, 8.0);
}

#[test]
fn cap_slot_catches_larger() {
    let s = samples(&[(1u64 << 25) * 1000, (1u64 << 33) * 1000]);
    assert_eq!(s.runqlat_us.log2_buckets.len(), LOG2_SLOTS);
    assert_eq!(s.runqlat_us.log2_buckets[25], 2);
    assert_eq!(s.runqlat_us.max, (1u64 << 33) as f64);
}

#[test]
fn empty_histogram_is_trimmed() {
    let s = one(Topology::synthetic_flat(2), &[switch(0, 0, 0, 1, 0)]);
    assert_eq!(s.runqlat_us.count, 0);
    assert!(s.runqlat_us.log2_buckets.is_empty());
    assert_eq!(s.runqlat_us.p99, 0.0);
    assert!(s.runqlat_by_cpu.is_empty() && s.runqlat_by_domain.is_empty());
}

#[test]
fn preempted_task_is_re_enqueued() {
    let s = one(
        Topology::synthetic_flat(2),
        &[
            switch(0, 0, 0, 1, 10),
            // 10 preempted by 11: 10 waits from t=1000.
            wakeup(900, 11, 0),
            switch(1_000, 0, 10, 0, 11),
            // 11 goes to sleep, 10 runs again after 5 us.
            switch(6_000, 0, 11, 1, 10),
            // 10 sleeps: no enqueue, and a later switch-in without wakeup gives no sample.
            switch(7_000, 0, 10, 1, 0),
            switch(8_000, 0, 0, 1, 10),
        ],
    );
    assert_eq!(s.runqlat_us.count, 2);
    // 11: 100 ns (slot 0); 10: 5 us (slot 2).
    assert_eq!(s.runqlat_us.log2_buckets, vec![1, 0, 1]);
    assert_eq!(s.runqlat_us.max, 5.0);
}

#[test]
fn idle_task_never_enqueued() {
    let s = one(
        Topology::synthetic_flat(2),
        &[
            switch(0, 0, 0, 0, 10),
            switch(5_000, 0, 10, 0, 0),
            wakeup(5_500, 0, 0),
            switch(9_000, 0, 0, 0, 10),
        ],
    );
    // Only 10's preemption at 5000 -> 9000 counts.
    assert_eq!(s.runqlat_us.count, 1);
    assert_eq!(s.runqlat_us.max, 4.0);
}

#[test]
fn wakeup_sample_taken_once() {
    let s = one(
        Topology::synthetic_flat(2),
        &[
            wakeup(0, 10, 1),
            switch(3_000, 1, 0, 1, 10),
            switch(4_000, 1, 10, 1, 0),
            switch(9_000, 1, 0, 1, 10),
        ],
    );
    assert_eq!(s.runqlat_us.count, 1);
    assert_eq!(s.runqlat_us.max, 3.0);
}

#[test]
fn attribution_by_cpu_domain_and_process() {
    let evs = [
        task(0, 10, 10, "leader"),
        task(0, 11, 10, "worker"),
        task(0, 20, 20, "other"),
        // 11 waits on CPU 2 for 4 us, 10 on CPU 3 for 2 us, 20 on CPU 5 for 8 us.
        wakeup(100, 11, 2),
        switch(4_100, 2, 0, 1, 11),
        wakeup(100, 10, 3),
        switch(2_100, 3, 0, 1, 10),
        wakeup(100, 20, 5),
        switch(8_100, 5, 0, 1, 20),
    ];
    let s = one(topo3(), &evs);
    assert_eq!(s.runqlat_us.count, 3);
    let cpus: Vec<(u32, u64)> = s
        .runqlat_by_cpu
        .iter()
        .map(|c| (c.cpu, c.latency.count))
        .collect();
    assert_eq!(cpus, vec![(2, 1), (3, 1), (5, 1)]);
    let doms: Vec<(String, String, u64)> = s
        .runqlat_by_domain
        .iter()
        .map(|d| (d.level.clone(), d.span.to_string(), d.latency.count))
        .collect();
    let want = [
        ("smt", "2-3", 2),
        ("smt", "4-5", 1),
        ("llc", "0-3", 2),
        ("llc", "4-7", 1),
        ("numa", "0-7", 3),
    ];
    let want: Vec<(String, String, u64)> = want
        .iter()
        .map(|(l, s, n)| (l.to_string(), s.to_string(), *n))
        .collect();
    assert_eq!(doms, want);
    let smt23 = &s.runqlat_by_domain[0].latency;
    assert_eq!(smt23.max, 4.0);
    assert_eq!(smt23.log2_buckets, vec![0, 1, 1]);
    assert_eq!(
        process_rows(&s),
        vec![(Some(10), Some("leader"), 2), (Some(20), Some("other"), 1)]
    );
}

#[test]
fn unknown_process_reported_as_none() {
    let s = one(
        Topology::synthetic_flat(2),
        &[wakeup(0, 77, 0), switch(1_000, 0, 0, 1, 77)],
    );
    assert_eq!(s.runqlat_by_process.len(), 1);
    assert_eq!(s.runqlat_by_process[0].tgid, None);
    assert_eq!(s.runqlat_by_process[0].comm, None);
}

#[test]
fn process_list_is_bounded() {
    let mut evs = Vec::new();
    for i in 0..50u32 {
        let pid = 1_000 + i;
        evs.push(task(0, pid, pid, "p"));
        // Process i gets i + 1 samples, so the top 20 are the last 20.
        for k in 0..=i as u64 {
            let t = 10 + k * 100 + i as u64 * 10_000;
            evs.push(wakeup(t, pid, 0));
            evs.push(switch(t + 50, 0, 0, 1, pid));
            evs.push(switch(t + 60, 0, pid, 1, 0));
        }
    }
    let s = one(Topology::synthetic_flat(2), &evs);
    assert_eq!(s.runqlat_by_process.len(), crate::analyze::TOP_PROCESSES);
    assert_eq!(s.runqlat_by_process[0].tgid, Some(1_049));
    assert_eq!(s.runqlat_by_process[0].latency.count, 50);
    assert_eq!(s.runqlat_by_process[19].tgid, Some(1_030));
}
