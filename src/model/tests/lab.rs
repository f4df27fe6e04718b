//! Scenario recordings from the topology lab (tests/lab/run), 6.1 on 4 NUMA nodes of 4 CPUs:
//! each raises the findings its scenario is built for, about the scenario's own threads.

use crate::analyze::tests::run;
use crate::analyze::{Analyzer, AnalyzerConfig};
use crate::event::EventKind;
use crate::model::{Finding, ModelConfig, ModelRules};
use crate::record::Reader;
use std::collections::BTreeMap;

const GROUP_IMBALANCE: &[u8] =
    include_bytes!("../../../tests/fixtures/lab/6.1-4node-group-imbalance.lbs");
const NUMA_SPREAD: &[u8] = include_bytes!("../../../tests/fixtures/lab/6.1-4node-numa-spread.lbs");

/// Every finding of the recording in one interval, and each pid's comm.
fn findings(bytes: &[u8]) -> (Vec<Finding>, BTreeMap<u32, String>) {
    let mut r = Reader::from_bytes(bytes.to_vec()).expect("the lab fixture reads");
    let mut evs = Vec::new();
    while let Some(chunk) = r.next_chunk() {
        evs.extend(chunk);
    }
    let h = r.header().clone();
    let comms = evs
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Task(ti) => {
                let crate::event::TaskInfo { pid, comm, .. } = &**ti;
                Some((*pid, comm.to_string()))
            }
            _ => None,
        })
        .collect();
    let mut a = Analyzer::new(
        h.topology.clone(),
        AnalyzerConfig {
            interval_ns: u64::MAX / 4,
            model: ModelConfig {
                rules: ModelRules::from_release(&h.kernel_release),
                max_findings: usize::MAX,
                ..ModelConfig::default()
            },
            ..Default::default()
        },
    );
    let snaps = run(&mut a, &evs);
    (snaps.into_iter().flat_map(|s| s.findings).collect(), comms)
}

fn of<'a>(
    f: &'a [Finding],
    kind: &str,
    comms: &BTreeMap<u32, String>,
    comm: &str,
) -> Vec<&'a Finding> {
    f.iter()
        .filter(|f| f.kind.name() == kind)
        .filter(|f| {
            f.pids
                .iter()
                .any(|p| comms.get(p).is_some_and(|c| c == comm))
        })
        .collect()
}

#[test]
fn group_imbalance_raises_missed_pulls_and_busy_wakeups_of_the_job() {
    // The bulk-synchronous job (comm `job`, a thread per CPU) beside two hogs (`hog`) in
    // another cgroup: job threads wait behind the hogs while CPUs idle at the barrier.
    let (f, comms) = findings(GROUP_IMBALANCE);
    let missed = of(&f, "missed_pull", &comms, "job");
    assert!(!missed.is_empty(), "missed_pull of the job's threads");
    assert!(missed.iter().all(|m| m.level.is_some()));
    let busy = of(&f, "busy_wakeup", &comms, "job");
    assert!(busy.len() >= 10, "{} busy wakeups of the job", busy.len());
}

#[test]
fn numa_spread_raises_uneven_spread_of_its_process() {
    // Threads freed from node 0 after 300 ms while NUMA balancing pulls them back to their
    // memory there: the process sits unevenly over the 4 nodes for over 100 ms.
    let (f, comms) = findings(NUMA_SPREAD);
    let spread = of(&f, "uneven_spread", &comms, "spin");
    assert_eq!(spread.len(), 1, "{:?}", spread);
    let s = spread[0];
    assert_eq!(s.evidence["by"], "node");
    let threads: Vec<u64> = serde_json::from_value(s.evidence["threads"].clone()).unwrap();
    assert_eq!(threads.len(), 4);
    assert!(
        threads[0] > 2 * threads.iter().min().unwrap(),
        "{threads:?}"
    );
    assert!(s.evidence["held_ms"].as_u64().unwrap() >= 100);
}
