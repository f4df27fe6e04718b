//! Sink tests: the JSON line round-trips and names the contract's fields; the text report
//! has runqlat's layout and the expected sections (golden-ish line assertions).

use super::{render_json, render_text};
use crate::analyze::{Analyzer, AnalyzerConfig, Filter, Snapshot};
use crate::cpuset::CpuSet;
use crate::event::{Event, EventKind, MigrateContext, Reason, ReasonSource};
use crate::topology::{LevelKind, Topology};

fn topo() -> Topology {
    Topology::synthetic(
        &[
            (LevelKind::Smt, "SMT", 2),
            (LevelKind::Llc, "MC", 4),
            (LevelKind::Numa, "NUMA", 8),
        ],
        8,
    )
}

fn e(ts_ns: u64, cpu: u32, kind: EventKind) -> Event {
    Event { ts_ns, cpu, kind }
}

fn sw(ts: u64, cpu: u32, prev_pid: u32, prev_state: u32, next_pid: u32) -> Event {
    e(
        ts,
        cpu,
        EventKind::Switch {
            prev_pid,
            prev_state,
            next_pid,
        },
    )
}

fn mig(
    ts: u64,
    src_cpu: u32,
    dst_cpu: u32,
    reason: Reason,
    source: ReasonSource,
    stack_id: Option<u32>,
) -> Event {
    e(
        ts,
        dst_cpu,
        EventKind::Migrate(Box::new(crate::event::MigrateInfo {
            pid: 30,
            src_cpu,
            dst_cpu,
            reason,
            source,
            stack_id,
            ctx: MigrateContext::default(),
        })),
    )
}

/// One second of a small scene with something in every section.
fn scene() -> Snapshot {
    let mut evs = vec![
        e(
            0,
            0,
            EventKind::Task(Box::new(crate::event::TaskInfo {
                pid: 10,
                tgid: 10,
                comm: "web".into(),
                exec: false,
            })),
        ),
        e(
            0,
            0,
            EventKind::Task(Box::new(crate::event::TaskInfo {
                pid: 20,
                tgid: 20,
                comm: "db".into(),
                exec: false,
            })),
        ),
        e(
            0,
            0,
            EventKind::Affinity {
                pid: 20,
                cpus: Box::new(CpuSet::parse_list("0").unwrap()),
            },
        ),
        e(
            0,
            0,
            EventKind::Stack(Box::new(crate::event::StackInfo {
                id: 9,
                reason: Reason::Unknown,
                frames: vec!["set_task_cpu".into(), "mystery_fn".into()],
            })),
        ),
    ];
    for c in 0..8 {
        evs.push(sw(0, c, 0, 1, if c == 1 { 0 } else { 100 + c }));
    }
    // Latencies of 0.5, 1.5, 3 and 100 us for "web", 10 us for "db".
    let mut t = 1_000;
    for d in [500u64, 1_500, 3_000, 100_000] {
        evs.push(e(
            t,
            2,
            EventKind::Wakeup {
                pid: 10,
                target_cpu: 2,
            },
        ));
        evs.push(sw(t + d, 2, 102, 0, 10));
        evs.push(sw(t + d + 10, 2, 10, 1, 102));
        t += 200_000;
    }
    // 102 was preempted each time: it waited 10 ns (slot 0, with the two sub-2-us ones).
    evs.push(e(
        900_000,
        0,
        EventKind::Wakeup {
            pid: 20,
            target_cpu: 0,
        },
    ));
    evs.push(sw(910_000, 0, 100, 1, 20));
    evs.push(mig(10, 0, 1, Reason::Wakeup, ReasonSource::Stack, Some(1)));
    evs.push(mig(
        20,
        0,
        4,
        Reason::PeriodicBalance,
        ReasonSource::Stack,
        Some(2),
    ));
    evs.push(mig(30, 0, 2, Reason::Unknown, ReasonSource::Stack, Some(9)));
    evs.push(mig(
        40,
        0,
        12,
        Reason::ActiveBalance,
        ReasonSource::Context,
        None,
    ));
    evs.push(e(50, 5, EventKind::Lost { count: 4 }));
    // 21, pinned to CPU 0, waits there from 0.5 s; 22 waits on busy CPU 4 from 0.75 s. CPU 1
    // idles throughout.
    evs.push(e(
        0,
        0,
        EventKind::Affinity {
            pid: 21,
            cpus: Box::new(CpuSet::parse_list("0").unwrap()),
        },
    ));
    evs.push(e(
        500_000_000,
        0,
        EventKind::Wakeup {
            pid: 21,
            target_cpu: 0,
        },
    ));
    evs.push(e(
        750_000_000,
        4,
        EventKind::Wakeup {
            pid: 22,
            target_cpu: 4,
        },
    ));
    evs.push(e(1_000_000_000, 0, EventKind::Clock));
    let mut a = Analyzer::new(
        topo(),
        AnalyzerConfig {
            interval_ns: 1_000_000_000,
            filter: Filter::default(),
            ..Default::default()
        },
    );
    let mut out = Vec::new();
    for ev in &evs {
        a.push(ev, &mut out);
    }
    assert_eq!(out.len(), 1);
    out.remove(0)
}

#[test]
fn json_line_round_trips() {
    let s = scene();
    let mut buf = Vec::new();
    render_json(&s, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert!(text.ends_with('\n'));
    assert_eq!(text.matches('\n').count(), 1, "one line");
    let back: Snapshot = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn json_names_the_contract_fields() {
    let s = scene();
    let v: serde_json::Value = serde_json::to_value(&s).unwrap();
    for k in [
        "t_start_ns",
        "t_end_ns",
        "migrations",
        "runqlat_us",
        "runqlat_by_cpu",
        "runqlat_by_domain",
        "runqlat_by_process",
        "idle_while_waiting",
        "lost_events",
        "lost_by_cpu",
        "cpus",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    let m = &v["migrations"];
    assert_eq!(m["total"], 4);
    assert_eq!(m["by_reason"]["periodic_balance"], 1);
    assert_eq!(m["by_reason"]["sched_ext"], 0);
    assert_eq!(m["by_level"]["unknown"], 1);
    assert_eq!(m["matrix"]["wakeup"]["smt"], 1);
    assert_eq!(m["context_classified"], 1);
    assert_eq!(m["unknown_stacks"][0]["stack_id"], 9);
    assert_eq!(m["unknown_stacks"][0]["frames"][1], "mystery_fn");
    let r = &v["runqlat_us"];
    for k in ["count", "log2_buckets", "p50", "p90", "p99", "p999", "max"] {
        assert!(r.get(k).is_some(), "runqlat_us.{k}");
    }
    assert_eq!(v["runqlat_by_cpu"][0]["cpu"], 0);
    assert!(v["runqlat_by_cpu"][0].get("p99").is_some(), "flattened");
    assert_eq!(v["runqlat_by_domain"][0]["level"], "smt");
    assert_eq!(v["runqlat_by_process"][0]["comm"], "web");
    let d = &v["idle_while_waiting"][0];
    for k in [
        "level",
        "span",
        "movable_ns",
        "pinned_ns",
        "movable_fraction",
        "pinned_fraction",
    ] {
        assert!(d.get(k).is_some(), "idle_while_waiting.{k}");
    }
    assert_eq!(v["lost_by_cpu"]["5"], 4);
    let c = &v["cpus"][1];
    assert_eq!(c["idle"], true);
    assert_eq!(c["current_pid"], 0);
    assert!(c.get("nr_running").is_some());
}

fn text(s: &Snapshot) -> String {
    let mut buf = Vec::new();
    // Monotonic 1 s + base = 1970-01-01 01:02:03 UTC.
    render_text(s, &topo(), 3_722_000_000_000, &mut buf).unwrap();
    String::from_utf8(buf).unwrap()
}

#[test]
fn text_has_runqlat_layout_and_sections() {
    let s = scene();
    let out = text(&s);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("01:02:03 UTC  interval 1.000 s"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("LOST 4 EVENTS"));
    let want = [
        "     usecs               : count    distribution",
        "         0 -> 1          : 6        |****************************************|",
        "         2 -> 3          : 1        |******                                  |",
        "         4 -> 7          : 0        |                                        |",
        "         8 -> 15         : 1        |******                                  |",
    ];
    let at = lines
        .iter()
        .position(|l| *l == want[0])
        .expect("histogram header");
    assert_eq!(&lines[at..at + want.len()], &want);
    assert!(out.contains(
        "        64 -> 127        : 1        |******                                  |"
    ));
    assert!(out.contains("Migrations: 4 total, 4.0/s, 1 classified from context (no stack)"));
    assert!(
        out.contains("  REASON                smt    llc   numa unknown   total"),
        "{out}"
    );
    assert!(out.contains("  wakeup                  1      0      0       0       1"));
    assert!(out.contains("  active_balance          0      0      0       1       1"));
    assert!(!out.contains("  fork "), "zero rows hidden");
    assert!(out.contains("    stack 9: 1 migrations\n      set_task_cpu\n      mystery_fn\n"));
    assert!(out.contains("  LEVEL     SPAN                     MOVABLE    PINNED"));
    assert!(
        out.contains("  smt       0-1                         0.0%     50.0%"),
        "{out}"
    );
    assert!(out.contains("  smt       2-3                         0.0%      0.0%"));
    assert!(out.contains("  llc       0-3                         0.0%     50.0%"));
    assert!(out.contains("  numa      0-7                        25.0%     25.0%"));
    assert!(out.contains("Balancer model (v6_6_plus rules"), "{out}");
    assert!(
        out.contains("  llc     0-3          117 2-3        smt_balance  has_spare          0 -")
    );
    assert!(out.contains("Findings: 5\n  busy_wakeup 4, harmful_migration 1\n"));
    assert!(
        out.contains(
            "    task 10 woke onto CPU 2, busy with task 102, while CPU 1 of its llc domain\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("  and 3 unseen (no record; inferred from where"),
        "{out}"
    );
    assert!(
        out.contains("Unrecorded: 0 switch gaps, 3 unseen migrations"),
        "{out}"
    );
    assert!(out.contains("Lost events: 4 (cpu 5: 4)"));
    assert!(out.contains("INCOMPLETE"));
    for l in &lines {
        assert!(l.len() <= 80, "too wide: {l:?}");
    }
}

#[test]
fn text_of_an_empty_interval() {
    let mut a = Analyzer::new(
        topo(),
        AnalyzerConfig {
            interval_ns: 1_000,
            filter: Filter::default(),
            ..Default::default()
        },
    );
    let mut out = Vec::new();
    a.push(&e(0, 0, EventKind::Clock), &mut out);
    let s = a.finish().unwrap();
    let t = text(&s);
    assert!(t.contains("(partial)"));
    assert!(t.contains("Run-queue latency: 0 samples"));
    assert!(!t.contains("usecs"));
    assert!(t.contains("Migrations: 0 total, 0.0/s"));
    assert!(t.contains("Lost events: 0"));
    assert!(!t.contains("INCOMPLETE"));
}
