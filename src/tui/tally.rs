//! The most migrated tasks of each interval, counted beside the analyzer from the same
//! events (the snapshot has migrations by reason and level, not by task). A migration is a
//! `Migrate` event (fork placements are not moves of a task and are left out); it belongs
//! to the interval its timestamp falls in, and passes the analyzer's filter the way the
//! analyzer's own counts do (task by pid, tgid and name; CPUs by either end of the move).
//!
//! Invariants: memory is bounded by live tasks plus the migrations of the open interval.

use crate::analyze::{Filter, Snapshot};
use crate::event::{Event, EventKind, Pid};
use crate::pipeline::Sink;
use std::collections::HashMap;

/// Snapshots of an analysed recording, each with its most migrated tasks.
pub type Analysed = Vec<(Snapshot, Vec<TaskMigrations>)>;

/// Tasks listed per interval.
pub const TOP_TASKS: usize = 10;

/// One task's migrations in one interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskMigrations {
    /// Thread id.
    pub pid: Pid,
    /// Its process, when known.
    pub tgid: Option<Pid>,
    /// Its name, when known.
    pub comm: Option<String>,
    /// Migrations in the interval.
    pub count: u64,
}

/// Counts migrations per task between snapshots.
#[derive(Debug, Default)]
pub struct Tally {
    filter: Filter,
    names: HashMap<Pid, (Pid, String)>,
    /// (timestamp, pid) of migrations not yet given to a snapshot.
    pending: Vec<(u64, Pid)>,
}

impl Tally {
    /// A tally with the analyzer's filter.
    pub fn new(filter: Filter) -> Tally {
        Tally {
            filter,
            ..Tally::default()
        }
    }

    /// Replaces the filter (the analysis restarted); names stay known.
    pub fn set_filter(&mut self, filter: Filter) {
        self.filter = filter;
        self.pending.clear();
    }

    /// Notes one event.
    pub fn observe(&mut self, ev: &Event) {
        match &ev.kind {
            EventKind::Task {
                pid, tgid, comm, ..
            } => {
                self.names.insert(*pid, (*tgid, comm.clone()));
            }
            EventKind::Migrate {
                pid,
                src_cpu,
                dst_cpu,
                ..
            } if self.filter.matches_move(*src_cpu, *dst_cpu) => {
                self.pending.push((ev.ts_ns, *pid));
            }
            // Kept while a migration of the task waits for its interval to close.
            EventKind::Exit { pid, .. } if !self.pending.iter().any(|(_, p)| p == pid) => {
                self.names.remove(pid);
            }
            _ => {}
        }
    }

    /// The top tasks of the interval `s` closes, most migrations first.
    pub fn close(&mut self, s: &Snapshot) -> Vec<TaskMigrations> {
        let mut counts: HashMap<Pid, u64> = HashMap::new();
        self.pending.retain(|&(ts, pid)| {
            if ts < s.t_end_ns {
                *counts.entry(pid).or_default() += 1;
                false
            } else {
                true
            }
        });
        let mut v: Vec<TaskMigrations> = counts
            .into_iter()
            .filter_map(|(pid, count)| {
                let known = self.names.get(&pid);
                let tgid = known.map(|k| k.0);
                let comm = known.map(|k| k.1.clone());
                self.filter
                    .matches_task(pid, tgid, comm.as_deref())
                    .then_some(TaskMigrations {
                        pid,
                        tgid,
                        comm,
                        count,
                    })
            })
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)));
        v.truncate(TOP_TASKS);
        v
    }
}

/// A sink keeping every snapshot with its most migrated tasks.
pub struct Tallied {
    tally: Tally,
    /// What was kept so far.
    pub out: Analysed,
}

impl Tallied {
    /// Counting with the analyzer's filter.
    pub fn new(filter: Filter) -> Tallied {
        Tallied {
            tally: Tally::new(filter),
            out: Vec::new(),
        }
    }
}

impl Sink for Tallied {
    fn events(&mut self, batch: &[Event]) -> std::io::Result<()> {
        batch.iter().for_each(|ev| self.tally.observe(ev));
        Ok(())
    }

    fn snapshot(&mut self, s: &Snapshot) -> std::io::Result<()> {
        let top = self.tally.close(s);
        self.out.push((s.clone(), top));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts_ns: u64, kind: EventKind) -> Event {
        Event {
            ts_ns,
            cpu: 0,
            kind,
        }
    }

    fn mig(pid: Pid, src_cpu: u32, dst_cpu: u32) -> EventKind {
        EventKind::Migrate {
            pid,
            src_cpu,
            dst_cpu,
            reason: crate::event::Reason::Wakeup,
            source: crate::event::ReasonSource::Stack,
            stack_id: None,
            ctx: Default::default(),
        }
    }

    fn snap(t_end_ns: u64) -> Snapshot {
        Snapshot {
            t_start_ns: 0,
            t_end_ns,
            partial: false,
            events: 0,
            migrations: Default::default(),
            runqlat_us: Default::default(),
            runqlat_by_cpu: vec![],
            runqlat_by_domain: vec![],
            runqlat_by_process: vec![],
            idle_while_waiting: vec![],
            lost_events: 0,
            lost_by_cpu: Default::default(),
            cpus: vec![],
            model_rules: String::new(),
            domains: vec![],
            findings: vec![],
            findings_by_kind: Default::default(),
        }
    }

    #[test]
    fn counts_per_interval_by_timestamp_and_filters_like_the_analyzer() {
        let mut t = Tally::new(Filter {
            cpus: Some(crate::cpuset::CpuSet::parse_list("0-1").unwrap()),
            ..Default::default()
        });
        let task = EventKind::Task {
            pid: 7,
            tgid: 7,
            comm: "hog".into(),
            exec: false,
        };
        t.observe(&ev(1, task));
        t.observe(&ev(10, mig(7, 0, 1)));
        t.observe(&ev(20, mig(7, 1, 0)));
        t.observe(&ev(30, mig(8, 0, 1)));
        t.observe(&ev(40, mig(9, 2, 3))); // outside --cpus 0-1
        t.observe(&ev(150, mig(7, 0, 1))); // next interval
        let top = t.close(&snap(100));
        assert_eq!(
            top,
            vec![
                TaskMigrations {
                    pid: 7,
                    tgid: Some(7),
                    comm: Some("hog".into()),
                    count: 2
                },
                TaskMigrations {
                    pid: 8,
                    tgid: None,
                    comm: None,
                    count: 1
                },
            ]
        );
        assert_eq!(t.close(&snap(200))[0].count, 1);
        t.set_filter(Filter {
            comm: Some("hog".into()),
            ..Default::default()
        });
        t.observe(&ev(210, mig(7, 2, 3)));
        t.observe(&ev(220, mig(8, 2, 3)));
        let top = t.close(&snap(300));
        assert_eq!(top.len(), 1, "only the named task: {top:?}");
        assert_eq!(top[0].pid, 7);
    }
}
