//! uneven_spread: one process's threads, or one cgroup's (a cgroup holding several
//! processes: a container, a job's workers), sitting unevenly over NUMA nodes (or over LLCs
//! on a single-node machine) while the emptiest of them has an idle CPU.
//!
//! A spread seen only at the interval's close says little: the balancer may even it out a
//! tick later, or may have evened it just before the close after holding it for most of the
//! interval. So the spread is also sampled every [`SAMPLE_NS`] of event time, and a process
//! found uneven on every sample for `spread_hold_ns` is reported then, with the spread it held
//! and for how long. A process (or cgroup) uneven at the close and not reported yet this
//! interval is reported at the close, as a snapshot.
//!
//! Invariants: `runs` holds exactly the processes and cgroups found uneven at the latest
//! sample, each with the time of the first sample of its unbroken run; each is reported at
//! most once per interval.

use super::findings;
use super::stats;
use super::task::Buckets;
use super::{Finding, FindingKind, Model};
use crate::cpuset::CpuSet;
use crate::event::Pid;
use crate::topology::Topology;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// How often the spread is sampled, in event time.
pub const SAMPLE_NS: u64 = 20_000_000;

/// Whose threads are judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Owner {
    Process(Pid),
    Cgroup(u64),
}

/// The sampling state of the uneven_spread judge.
#[derive(Clone, Debug, Default)]
pub(super) struct SpreadWatch {
    /// What the spread is judged over, fixed by the topology: NUMA nodes, or LLCs on a
    /// single-node machine with several; empty when the machine has neither (nothing to
    /// judge). Shared so that a judgement can read them while it updates the rest.
    buckets: Arc<Buckets>,
    /// The buckets' name: "node" or "llc".
    by: &'static str,
    /// Event time of the next sample; 0 before the first event, `u64::MAX` when there is
    /// nothing to judge.
    next_ns: u64,
    /// Owners uneven at the latest sample: since when (first sample of the run).
    runs: BTreeMap<Owner, u64>,
    /// Owners already reported this interval.
    reported: BTreeSet<Owner>,
    /// Cgroup paths by id, as the source named them.
    cgroup_paths: BTreeMap<u64, String>,
}

impl SpreadWatch {
    /// The watch of `topo`, whose LLC level (if any) is `llc_level`.
    pub(super) fn new(topo: &Topology, llc_level: Option<usize>) -> Self {
        let nodes: Vec<CpuSet> = topo
            .numa_nodes
            .iter()
            .filter(|n| !n.is_empty())
            .copied()
            .collect();
        let (buckets, by) = if nodes.len() > 1 {
            (nodes, "node")
        } else if let Some(l) = llc_level.filter(|&l| topo.levels[l].domains.len() > 1) {
            (
                topo.levels[l].domains.iter().map(|d| d.span).collect(),
                "llc",
            )
        } else {
            (Vec::new(), "node")
        };
        SpreadWatch {
            buckets: Arc::new(Buckets::new(buckets)),
            by,
            ..Default::default()
        }
    }

    /// Cgroup `id` is `path`.
    pub(super) fn name_cgroup(&mut self, id: u64, path: &str) {
        if self.cgroup_paths.get(&id).map(String::as_str) != Some(path) {
            self.cgroup_paths.insert(id, path.to_string());
        }
    }
}

/// One process or cgroup found uneven.
struct Uneven {
    owner: Owner,
    /// The process, or the cgroup's processes.
    tgids: Vec<Pid>,
    threads: Vec<u64>,
    fullest: usize,
    emptiest: usize,
}

impl<X: super::TaskExt> Model<X> {
    /// Samples the spread when `t` reaches the next sample time. Runs at every event: the
    /// one comparison stays inline in the caller.
    #[inline]
    pub(super) fn spread_tick(&mut self, t: u64) {
        if t >= self.spread.next_ns {
            self.spread_due(t);
        }
    }

    #[inline(never)]
    fn spread_due(&mut self, t: u64) {
        if self.spread.buckets.sets.is_empty() {
            // Nothing to judge, ever.
            self.spread.next_ns = u64::MAX;
        } else if self.spread.next_ns == 0 {
            // The first event: the first sample is one period on.
            self.spread.next_ns = t.saturating_add(SAMPLE_NS);
        } else {
            self.spread.next_ns = t.saturating_add(SAMPLE_NS);
            self.spread_sample(t);
        }
    }

    /// Every process and cgroup whose threads sit unevenly over `buckets` now.
    fn uneven_now(&self, b: &Buckets) -> Vec<Uneven> {
        let spread = self.tasks.spread(b);
        let buckets = &b.sets;
        let owners = spread
            .processes
            .into_iter()
            .map(|(tgid, h)| (Owner::Process(tgid), vec![tgid], h))
            .chain(
                spread
                    .cgroups
                    .into_iter()
                    .map(|(id, h, tgids)| (Owner::Cgroup(id), tgids, h)),
            );
        let mut out = Vec::new();
        for (owner, tgids, hist) in owners {
            let total: u64 = hist.iter().sum();
            if total < u64::from(self.config.spread_min_threads) {
                continue;
            }
            let (fullest, &max) = hist
                .iter()
                .enumerate()
                .max_by_key(|(i, &n)| (n, std::cmp::Reverse(*i)))
                .unwrap_or((0, &0));
            let (emptiest, &min) = hist
                .iter()
                .enumerate()
                .min_by_key(|(i, &n)| (n, *i))
                .unwrap_or((0, &0));
            let free = buckets[emptiest].iter().any(|c| self.known_idle(c));
            if max - min > stats::NUMA_IMBALANCE_MIN
                && max * 100 > self.config.spread_ratio_pct * min
                && (min as usize) < buckets[emptiest].len()
                && free
            {
                out.push(Uneven {
                    owner,
                    tgids,
                    threads: hist,
                    fullest,
                    emptiest,
                });
            }
        }
        out
    }

    /// One sample: extends or ends each process's uneven run, and reports the runs that
    /// have held for `spread_hold_ns`.
    fn spread_sample(&mut self, t: u64) {
        let (buckets, by) = (Arc::clone(&self.spread.buckets), self.spread.by);
        let now = self.uneven_now(&buckets);
        let uneven: BTreeSet<Owner> = now.iter().map(|u| u.owner).collect();
        self.spread.runs.retain(|o, _| uneven.contains(o));
        for u in now {
            let since = *self.spread.runs.entry(u.owner).or_insert(t);
            let held = t - since;
            if held >= self.config.spread_hold_ns && !self.spread.reported.contains(&u.owner) {
                self.report_spread(t, &buckets.sets, by, &u, held);
            }
        }
    }

    /// At the interval close: reports every process and cgroup uneven now and not reported
    /// yet this interval, then opens the next interval.
    pub(super) fn uneven_spread(&mut self, end: u64) {
        let (buckets, by) = (Arc::clone(&self.spread.buckets), self.spread.by);
        if !buckets.sets.is_empty() {
            for u in self.uneven_now(&buckets) {
                if self.spread.reported.contains(&u.owner) {
                    continue;
                }
                let held = self
                    .spread
                    .runs
                    .get(&u.owner)
                    .map_or(0, |&since| end.saturating_sub(since));
                self.report_spread(end, &buckets.sets, by, &u, held);
            }
        }
        self.spread.reported.clear();
    }

    fn report_spread(&mut self, t: u64, buckets: &[CpuSet], by: &str, u: &Uneven, held: u64) {
        self.spread.reported.insert(u.owner);
        if self.log.counted_only(FindingKind::UnevenSpread) {
            return;
        }
        let hist_s: Vec<String> = u.threads.iter().map(u64::to_string).collect();
        let (max, min) = (u.threads[u.fullest], u.threads[u.emptiest]);
        let held_ms = held / 1_000_000;
        let mut evidence = vec![
            ("by", json!(by)),
            (
                "buckets",
                json!(buckets.iter().map(CpuSet::to_string).collect::<Vec<_>>()),
            ),
            ("threads", json!(u.threads)),
            ("ratio_pct", json!(self.config.spread_ratio_pct)),
            ("held_ms", json!(held_ms)),
        ];
        let who = match u.owner {
            Owner::Process(tgid) => {
                evidence.push(("tgid", json!(tgid)));
                format!("process {tgid}")
            }
            Owner::Cgroup(id) => {
                let path = self.spread.cgroup_paths.get(&id);
                evidence.push(("cgroup", json!(id)));
                evidence.push(("cgroup_path", json!(path)));
                evidence.push(("tgids", json!(u.tgids)));
                format!(
                    "cgroup {} ({} processes)",
                    path.cloned().unwrap_or_else(|| format!("id {id}")),
                    u.tgids.len()
                )
            }
        };
        let held_s = if held_ms > 0 {
            format!(" for {held_ms} ms")
        } else {
            String::new()
        };
        self.log.add(Finding {
            kind: FindingKind::UnevenSpread,
            t_ns: t,
            level: None,
            span: None,
            cpus: buckets[u.emptiest].iter().map(|c| c as u32).collect(),
            pids: u.tgids.iter().copied().take(8).collect(),
            evidence: findings::evidence(evidence),
            text: format!(
                "{who} holds {} threads per {by} ({max} on CPUs {} vs {min} on {}, \
                 which has an idle CPU){held_s}",
                hist_s.join("/"),
                buckets[u.fullest],
                buckets[u.emptiest]
            ),
        });
    }
}
