//! What a restarted live analysis must be told again. The live source sends some facts only
//! once: a task's identity (tgid, comm) and affinity at first sight, a kernel stack's
//! description the first time it is seen. When `+`/`-` or `/` replace the analyzer, the new
//! one would never learn them, so the live feed keeps the latest of each here and replays
//! them into the new analyzer, stamped at the current time.
//!
//! Invariants: memory is bounded by live tasks and distinct stacks (a task is dropped at its
//! exit), like the analyzer's own.

use crate::analyze::{Analyzer, Snapshot};
use crate::event::{Event, EventKind, Pid};
use std::collections::HashMap;

/// The once-sent facts seen so far.
#[derive(Debug, Default)]
pub struct Carry {
    identity: HashMap<Pid, Event>,
    affinity: HashMap<Pid, Event>,
    stacks: HashMap<u32, Event>,
}

impl Carry {
    /// Notes `ev` if it is a once-sent fact.
    pub fn observe(&mut self, ev: &Event) {
        match &ev.kind {
            EventKind::Task { pid, .. } => {
                self.identity.insert(*pid, ev.clone());
            }
            EventKind::Affinity { pid, .. } => {
                self.affinity.insert(*pid, ev.clone());
            }
            EventKind::Stack { id, .. } => {
                self.stacks.insert(*id, ev.clone());
            }
            EventKind::Exit { pid, .. } => {
                self.identity.remove(pid);
                self.affinity.remove(pid);
            }
            _ => {}
        }
    }

    /// Tells `analyzer` every fact, stamped `ts_ns`. Snapshots it emits meanwhile (none
    /// are expected: every event has the same time) are dropped.
    pub fn replay_into(&self, analyzer: &mut Analyzer, ts_ns: u64) {
        let mut out: Vec<Snapshot> = Vec::new();
        let facts = self
            .stacks
            .values()
            .chain(self.identity.values())
            .chain(self.affinity.values());
        for ev in facts {
            let mut e = ev.clone();
            e.ts_ns = ts_ns;
            analyzer.push(&e, &mut out);
        }
    }

    /// Tasks known.
    pub fn tasks(&self) -> usize {
        self.identity.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::AnalyzerConfig;
    use crate::topology::Topology;

    fn ev(ts_ns: u64, kind: EventKind) -> Event {
        Event {
            ts_ns,
            cpu: 0,
            kind,
        }
    }

    #[test]
    fn keeps_live_tasks_and_lets_a_new_analyzer_filter_by_name() {
        let mut c = Carry::default();
        let task = |pid, comm: &str| EventKind::Task {
            pid,
            tgid: pid,
            comm: comm.into(),
            exec: false,
        };
        c.observe(&ev(1, task(10, "keep")));
        c.observe(&ev(2, task(11, "gone")));
        c.observe(&ev(3, EventKind::Exit { pid: 11, tgid: 11 }));
        assert_eq!(c.tasks(), 1, "an exited task is forgotten");
        let cfg = AnalyzerConfig {
            interval_ns: 1_000_000_000,
            filter: crate::analyze::Filter {
                comm: Some("keep".into()),
                ..Default::default()
            },
            ..AnalyzerConfig::default()
        };
        let mut a = Analyzer::new(Topology::synthetic_flat(2), cfg);
        c.replay_into(&mut a, 5_000);
        assert_eq!(a.now_ns(), 5_000, "facts are stamped now");
        assert_eq!(a.tracked_tasks(), 1);
    }
}
