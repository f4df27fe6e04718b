//! Run-queue latency collection for one interval: one histogram per CPU and one per process.
//! The global and per-domain figures are not kept separately: they are the sums of the
//! per-CPU histograms (the global one with the samples of CPU numbers past [`MAX_CPUS`]),
//! merged when the interval closes, once per interval instead of once or more per sample.
//!
//! In folded mode the samples arrive already folded in the kernel, per CPU and per process
//! ([`LatencyCollector::merge_cpu`], [`LatencyCollector::merge_process`]): the per-process
//! histograms are another view of the per-CPU ones, never added to them.
//!
//! Memory: per-CPU histograms are bounded by the CPUs; per-process ones live for one interval
//! and are bounded by the processes that ran in it.

use super::filter::Filter;
use super::hist::LatHist;
use super::idhash::IdMap;
use super::snapshot::{CpuLatency, DomainLatency, ProcessLatency};
use crate::cpuset::MAX_CPUS;
use crate::topology::Topology;

/// Processes reported per interval.
pub const TOP_PROCESSES: usize = 20;

#[derive(Clone, Debug, Default)]
struct ProcEntry {
    comm: Option<String>,
    /// `comm` is the leader's (preferred over a thread's).
    leader_comm: bool,
    /// Boxed: inline, the map would move the whole histogram at every rehash.
    hist: Box<LatHist>,
}

/// The per-interval latency histograms.
#[derive(Clone, Debug, Default)]
pub struct LatencyCollector {
    /// Samples of CPU numbers past [`MAX_CPUS`], which have no per-CPU histogram.
    no_cpu: LatHist,
    by_cpu: Vec<LatHist>,
    by_proc: IdMap<Option<u32>, ProcEntry>,
}

/// One interval's latency figures, ready for the snapshot.
pub struct LatencyFigures {
    /// Every sample.
    pub global: super::snapshot::LatencySummary,
    /// CPUs with samples.
    pub by_cpu: Vec<CpuLatency>,
    /// Domains with samples, levels bottom-up.
    pub by_domain: Vec<DomainLatency>,
    /// The busiest processes.
    pub by_process: Vec<ProcessLatency>,
}

impl LatencyCollector {
    /// Adds one sample of `ns` for a task of process `tgid` that started running on `cpu`.
    /// `name` gives the best name known and whether it is the process leader's; it is asked
    /// only while the process has no leader's name yet, which saves a lookup of the leader
    /// for nearly every sample.
    pub fn record<'a>(
        &mut self,
        cpu: u32,
        tgid: Option<u32>,
        ns: u64,
        name: impl FnOnce() -> (Option<&'a str>, bool),
    ) {
        let c = cpu as usize;
        if c < MAX_CPUS {
            if self.by_cpu.len() <= c {
                self.by_cpu.resize(c + 1, LatHist::default());
            }
            self.by_cpu[c].record(ns);
        } else {
            self.no_cpu.record(ns);
        }
        let e = self.by_proc.entry(tgid).or_default();
        if !e.leader_comm {
            if let (Some(comm), leader) = name() {
                if e.comm.is_none() || leader {
                    e.comm = Some(comm.to_string());
                    e.leader_comm = leader;
                }
            }
        }
        e.hist.record(ns);
    }

    /// Adds a histogram of samples (folded in the kernel) of tasks that started running on
    /// `cpu`; it counts in the global and per-domain figures like recorded samples.
    pub fn merge_cpu(&mut self, cpu: u32, h: &LatHist) {
        let c = cpu as usize;
        if c < MAX_CPUS {
            if self.by_cpu.len() <= c {
                self.by_cpu.resize(c + 1, LatHist::default());
            }
            self.by_cpu[c].merge(h);
        } else {
            self.no_cpu.merge(h);
        }
    }

    /// Adds a histogram of samples (folded in the kernel) of the tasks of process `tgid`,
    /// named `leader_comm` (its leader's name, when known). The same samples must also reach
    /// [`LatencyCollector::merge_cpu`]: this one feeds only the per-process figures.
    pub fn merge_process(&mut self, tgid: u32, h: &LatHist, leader_comm: Option<&str>) {
        let e = self.by_proc.entry(Some(tgid)).or_default();
        if !e.leader_comm {
            if let Some(c) = leader_comm {
                e.comm = Some(c.to_string());
                e.leader_comm = true;
            }
        }
        e.hist.merge(h);
    }

    /// The interval's figures, then starts afresh.
    pub fn take(&mut self, topo: &Topology, filter: &Filter) -> LatencyFigures {
        let by_cpu_hists = std::mem::take(&mut self.by_cpu);
        let mut global = std::mem::take(&mut self.no_cpu);
        for h in &by_cpu_hists {
            global.merge(h);
        }
        let global = global.summary();
        let by_cpu = by_cpu_hists
            .iter()
            .enumerate()
            .filter(|(_, h)| h.count() > 0)
            .map(|(c, h)| CpuLatency {
                cpu: c as u32,
                latency: h.summary(),
            })
            .collect();
        let mut by_domain = Vec::new();
        for (li, level) in topo.levels.iter().enumerate() {
            for d in &level.domains {
                if !filter.matches_span(&d.span) {
                    continue;
                }
                let mut sum = LatHist::default();
                for c in d.span.iter() {
                    if let Some(h) = by_cpu_hists.get(c) {
                        sum.merge(h);
                    }
                }
                if sum.count() > 0 {
                    by_domain.push(DomainLatency {
                        level: topo.level_key(Some(li)).to_string(),
                        span: d.span,
                        latency: sum.summary(),
                    });
                }
            }
        }
        // A histogram counts its samples by summing its slots: once each.
        let mut procs: Vec<(u64, Option<u32>, ProcEntry)> = self
            .by_proc
            .drain()
            .map(|(tgid, e)| (e.hist.count(), tgid, e))
            .collect();
        // Most samples first; tgid breaks ties (unknown last) so hashing never shows.
        procs.sort_unstable_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| a.1.is_none().cmp(&b.1.is_none()))
                .then(a.1.cmp(&b.1))
        });
        let by_process = procs
            .into_iter()
            .take(TOP_PROCESSES)
            .map(|(_, tgid, e)| ProcessLatency {
                tgid,
                comm: e.comm,
                latency: e.hist.summary(),
            })
            .collect();
        LatencyFigures {
            global,
            by_cpu,
            by_domain,
            by_process,
        }
    }
}
