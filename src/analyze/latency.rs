//! Run-queue latency collection for one interval: one histogram per CPU, one per process and
//! one per cgroup (by the analyzer's cgroup index; tasks of no known cgroup have none).
//! The global and per-domain figures are not kept separately: they are the sums of the
//! per-CPU histograms (the global one with the samples of CPU numbers past [`MAX_CPUS`]),
//! merged when the interval closes, once per interval instead of once or more per sample.
//!
//! In folded mode the samples arrive already folded in the kernel, per CPU and per process
//! ([`LatencyCollector::merge_cpu`], [`LatencyCollector::merge_process`]): the per-process
//! histograms are another view of the per-CPU ones, never added to them.
//!
//! Samples are added to their histograms in batches ([`PENDING`] at a time, and before any
//! figure is read): the two histogram lines a sample touches are likely cache misses, and a
//! tight loop over independent samples lets the processor wait for many of them at once
//! instead of one after the other between the rest of the analyzer's work. Histograms only
//! count, so the order in which samples are added does not show.
//!
//! Memory: per-CPU histograms are bounded by the CPUs; per-process and per-cgroup ones live
//! for one interval and are bounded by the processes (cgroups) that ran in it (the room of
//! the per-process ones is kept for the next interval, up to four times what it used); at
//! most [`PENDING`] samples wait.

use super::filter::Filter;
use super::hist::LatHist;
use super::snapshot::{CgroupLatency, CpuLatency, DomainLatency, ProcessLatency};
use crate::cpuset::MAX_CPUS;
use crate::event::FoldedRef;
use crate::idhash::IdMap;
use crate::topology::Topology;

/// Processes reported per interval.
pub const TOP_PROCESSES: usize = 20;

/// Samples buffered before they are added to their histograms.
const PENDING: usize = 256;

/// Where a process's figures are: the index of its histogram in `proc_hists` and of its
/// name in `proc_names`.
#[derive(Clone, Copy, Debug)]
struct ProcSlot {
    index: u32,
    /// Its name is the leader's (preferred over a thread's): no sample can better it.
    leader_comm: bool,
}

/// A sample not yet added: the CPU (index in `by_cpu`, or past it for `no_cpu`), the index
/// of its process's histogram in `proc_hists`, of its cgroup's in `cg_hists` ([`NO_CGROUP`]:
/// none), and the latency in ns.
#[derive(Clone, Copy, Debug)]
struct Pending {
    cpu: u32,
    proc: u32,
    cgroup: u32,
    ns: u64,
}

/// `Pending::cgroup` of a task whose cgroup is not known.
const NO_CGROUP: u32 = u32::MAX;

/// The per-interval latency histograms.
#[derive(Clone, Debug, Default)]
pub struct LatencyCollector {
    /// Samples of CPU numbers past [`MAX_CPUS`], which have no per-CPU histogram.
    no_cpu: LatHist,
    by_cpu: Vec<LatHist>,
    /// The index in `proc_hists` of each process's histogram, by tgid (small entries: the
    /// map is read for every sample).
    by_proc: IdMap<u32, ProcSlot>,
    /// The same for samples of tasks whose process is not known.
    no_proc: Option<ProcSlot>,
    /// The per-process histograms, and their processes' names.
    proc_hists: Vec<LatHist>,
    proc_names: Vec<Option<String>>,
    /// The index in `cg_hists` of each cgroup's histogram, by the analyzer's cgroup index.
    by_cgroup: IdMap<u32, u32>,
    /// The per-cgroup histograms, and the analyzer's index of their cgroups.
    cg_hists: Vec<LatHist>,
    cg_of: Vec<u32>,
    pending: Vec<Pending>,
    /// Process names listed whatever their rank (`serve --process-latency`).
    listed: Vec<String>,
}

/// The slot of process `tgid` (its histogram empty and its name unknown if new).
fn proc_slot<'m>(
    by_proc: &'m mut IdMap<u32, ProcSlot>,
    no_proc: &'m mut Option<ProcSlot>,
    hists: &mut Vec<LatHist>,
    names: &mut Vec<Option<String>>,
    tgid: Option<u32>,
) -> &'m mut ProcSlot {
    let new = || {
        grow(hists, hists.len() + 1);
        names.push(None);
        ProcSlot {
            index: (hists.len() - 1) as u32,
            leader_comm: false,
        }
    };
    match tgid {
        Some(g) => by_proc.entry(g).or_insert_with(new),
        None => no_proc.get_or_insert_with(new),
    }
}

/// Extends `hists` to `len` empty histograms. Kept out of line: a histogram is a few KB,
/// and building one inline would make every caller's stack frame (the analyzer's per-event
/// path) that much larger.
#[cold]
#[inline(never)]
fn grow(hists: &mut Vec<LatHist>, len: usize) {
    hists.resize_with(len, LatHist::default);
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
    /// The busiest named cgroups.
    pub by_cgroup: Vec<CgroupLatency>,
}

impl LatencyCollector {
    /// Adds one sample of `ns` for a task of process `tgid`, in the cgroup of the analyzer's
    /// index `cgroup`, that started running on `cpu`. `name` gives the best name known and whether it is the process leader's; it is asked
    /// only while the process has no leader's name yet, which saves a lookup of the leader
    /// for nearly every sample.
    pub fn record<'a>(
        &mut self,
        cpu: u32,
        tgid: Option<u32>,
        cgroup: Option<u32>,
        ns: u64,
        name: impl FnOnce() -> (Option<&'a str>, bool),
    ) {
        self.cpu_slot(cpu);
        let cgroup = match cgroup {
            Some(c) => {
                let (hists, of) = (&mut self.cg_hists, &mut self.cg_of);
                *self.by_cgroup.entry(c).or_insert_with(|| {
                    grow(hists, hists.len() + 1);
                    of.push(c);
                    (hists.len() - 1) as u32
                })
            }
            None => NO_CGROUP,
        };
        let slot = proc_slot(
            &mut self.by_proc,
            &mut self.no_proc,
            &mut self.proc_hists,
            &mut self.proc_names,
            tgid,
        );
        self.pending.push(Pending {
            // Past `by_cpu` (and so in `no_cpu`) exactly when past MAX_CPUS.
            cpu,
            proc: slot.index,
            cgroup,
            ns,
        });
        if !slot.leader_comm {
            if let (Some(comm), leader) = name() {
                let known = &mut self.proc_names[slot.index as usize];
                if known.is_none() || leader {
                    *known = Some(comm.to_string());
                    slot.leader_comm = leader;
                }
            }
        }
        if self.pending.len() >= PENDING {
            self.flush();
        }
    }

    /// Adds the buffered samples to their histograms.
    fn flush(&mut self) {
        for p in &self.pending {
            match self.by_cpu.get_mut(p.cpu as usize) {
                Some(h) => h.record(p.ns),
                None => self.no_cpu.record(p.ns),
            }
            self.proc_hists[p.proc as usize].record(p.ns);
            if let Some(h) = self.cg_hists.get_mut(p.cgroup as usize) {
                h.record(p.ns);
            }
        }
        self.pending.clear();
    }

    /// Adds a histogram of samples (folded in the kernel, passed by [`LatHist::folded_ok`]) of
    /// tasks that started running on `cpu`; it counts in the global and per-domain figures
    /// like recorded samples.
    pub fn merge_cpu(&mut self, cpu: u32, h: FoldedRef<'_>) {
        self.cpu_slot(cpu);
        match self.by_cpu.get_mut(cpu as usize) {
            Some(c) => c.add_folded(h),
            None => self.no_cpu.add_folded(h),
        }
    }

    /// Makes sure `cpu` has its histogram in `by_cpu`, unless it is past [`MAX_CPUS`] (its
    /// samples then count in `no_cpu` only).
    fn cpu_slot(&mut self, cpu: u32) {
        let c = cpu as usize;
        if c < MAX_CPUS && self.by_cpu.len() <= c {
            grow(&mut self.by_cpu, c + 1);
        }
    }

    /// Adds a histogram of samples (folded in the kernel, passed by [`LatHist::folded_ok`]) of
    /// the tasks of process `tgid`, named `leader_comm` (its leader's name, when known). The
    /// same samples must also reach [`LatencyCollector::merge_cpu`]: this one feeds only the
    /// per-process figures.
    pub fn merge_process(&mut self, tgid: u32, h: FoldedRef<'_>, leader_comm: Option<&str>) {
        let slot = proc_slot(
            &mut self.by_proc,
            &mut self.no_proc,
            &mut self.proc_hists,
            &mut self.proc_names,
            Some(tgid),
        );
        if !slot.leader_comm {
            if let Some(c) = leader_comm {
                self.proc_names[slot.index as usize] = Some(c.to_string());
                slot.leader_comm = true;
            }
        }
        self.proc_hists[slot.index as usize].add_folded(h);
    }

    /// Adds `h` as [`LatencyCollector::merge_process`] would, when process `tgid` has its
    /// figures this interval already, named by its leader: no name is needed then. `false`,
    /// with nothing added, otherwise.
    pub fn merge_named_process(&mut self, tgid: u32, h: FoldedRef<'_>) -> bool {
        match self.by_proc.get(&tgid) {
            Some(s) if s.leader_comm => {
                self.proc_hists[s.index as usize].add_folded(h);
                true
            }
            _ => false,
        }
    }

    /// Process `tgid`'s leader took the name `comm` (exec): its figures are named so from
    /// now on, whatever name its first sample gave them.
    pub fn renamed(&mut self, tgid: u32, comm: &str) {
        if let Some(slot) = self.by_proc.get_mut(&tgid) {
            self.proc_names[slot.index as usize] = Some(comm.to_string());
            slot.leader_comm = true;
        }
    }

    /// Lists the processes named `names` in every interval's figures, beyond the top
    /// [`TOP_PROCESSES`] too.
    pub fn list_processes(&mut self, names: Vec<String>) {
        self.listed = names;
    }

    /// The interval's figures, then starts afresh. `cgroup_path` names a cgroup by the
    /// analyzer's index: unnamed cgroups are left out of the per-cgroup figures, and cgroups
    /// sharing a path are one.
    pub fn take<'p>(
        &mut self,
        topo: &Topology,
        filter: &Filter,
        cgroup_path: impl Fn(u32) -> Option<&'p str>,
    ) -> LatencyFigures {
        self.flush();
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
        let mut hists = std::mem::take(&mut self.proc_hists);
        let mut names = std::mem::take(&mut self.proc_names);
        // A histogram counts its samples by summing its slots: once each.
        let mut procs: Vec<(u64, Option<u32>, usize)> = self
            .by_proc
            .drain()
            .map(|(tgid, s)| (Some(tgid), s))
            .chain(self.no_proc.take().map(|s| (None, s)))
            .map(|(tgid, s)| {
                let i = s.index as usize;
                (hists[i].count(), tgid, i)
            })
            .collect();
        // Most samples first; tgid breaks ties (unknown last) so hashing never shows.
        procs.sort_unstable_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| a.1.is_none().cmp(&b.1.is_none()))
                .then(a.1.cmp(&b.1))
        });
        let listed = &self.listed;
        let keep: Vec<(u64, Option<u32>, usize)> = procs
            .into_iter()
            .enumerate()
            .filter(|(rank, (_, _, i))| {
                *rank < TOP_PROCESSES || names[*i].as_ref().is_some_and(|n| listed.contains(n))
            })
            .map(|(_, p)| p)
            .collect();
        let by_process = keep
            .into_iter()
            .map(|(_, tgid, i)| ProcessLatency {
                tgid,
                comm: names[i].take(),
                latency: hists[i].summary(),
            })
            .collect();
        // The next interval's histograms go where these were, without regrowing (and copying)
        // the vectors one process at a time; room far beyond this interval's need (a burst
        // of processes before) is given back.
        let used = hists.len();
        hists.clear();
        names.clear();
        if hists.capacity() > 4 * used.max(64) {
            hists.shrink_to(used);
            names.shrink_to(used);
        }
        self.proc_hists = hists;
        self.proc_names = names;
        LatencyFigures {
            global,
            by_cpu,
            by_domain,
            by_process,
            by_cgroup: self.take_cgroups(cgroup_path),
        }
    }

    /// The busiest named cgroups of the interval (most samples first, then by path).
    fn take_cgroups<'p>(
        &mut self,
        cgroup_path: impl Fn(u32) -> Option<&'p str>,
    ) -> Vec<CgroupLatency> {
        self.by_cgroup.clear();
        let hists = std::mem::take(&mut self.cg_hists);
        let of = std::mem::take(&mut self.cg_of);
        let mut by_path: std::collections::BTreeMap<&str, LatHist> = Default::default();
        for (h, &c) in hists.iter().zip(&of) {
            if let Some(p) = cgroup_path(c) {
                by_path.entry(p).or_default().merge(h);
            }
        }
        let mut v: Vec<(u64, &str, LatHist)> = by_path
            .into_iter()
            .map(|(p, h)| (h.count(), p, h))
            .collect();
        // Stable: equal counts stay in path order.
        v.sort_by_key(|c| std::cmp::Reverse(c.0));
        v.into_iter()
            .take(super::cgroups::TOP_CGROUPS)
            .map(|(_, p, h)| CgroupLatency {
                path: p.to_string(),
                latency: h.summary(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffered_samples_all_count() {
        let topo = crate::source::synthetic::topology(4);
        let mut c = LatencyCollector::default();
        let n = 3 * PENDING as u64 + 7;
        for i in 0..n {
            let cpu = [0, 3, MAX_CPUS as u32][i as usize % 3];
            c.record(cpu, Some(1 + (i % 2) as u32), None, 1_000 + i, || {
                (Some("p"), true)
            });
        }
        let f = c.take(&topo, &Filter::default(), |_| None);
        assert_eq!(f.global.count, n);
        let by_cpu: u64 = f.by_cpu.iter().map(|l| l.latency.count).sum();
        assert_eq!(by_cpu, n - n / 3, "CPUs past MAX_CPUS count only globally");
        let by_proc: Vec<u64> = f.by_process.iter().map(|p| p.latency.count).collect();
        assert_eq!(by_proc, vec![n / 2 + 1, n / 2]);
        assert_eq!(f.global.max, ns_max(n));
        let again = c.take(&topo, &Filter::default(), |_| None);
        assert_eq!(again.global.count, 0, "a new interval starts empty");
    }

    #[test]
    fn listed_processes_are_reported_beyond_the_top() {
        let topo = crate::source::synthetic::topology(4);
        let mut c = LatencyCollector::default();
        c.list_processes(vec!["p0".into(), "nosuch".into()]);
        // Process i has i + 1 samples: p0 has the fewest.
        for i in 0..(TOP_PROCESSES as u32 + 5) {
            let name = format!("p{i}");
            for _ in 0..=i {
                c.record(0, Some(100 + i), None, 5_000, || {
                    (Some(name.as_str()), true)
                });
            }
        }
        let f = c.take(&topo, &Filter::default(), |_| None);
        assert_eq!(f.by_process.len(), TOP_PROCESSES + 1);
        let last = f.by_process.last().unwrap();
        assert_eq!(
            (last.comm.as_deref(), last.latency.count),
            (Some("p0"), 1),
            "the listed process, with its exact count"
        );
    }

    fn ns_max(n: u64) -> f64 {
        super::super::hist::ns_to_us(1_000 + n - 1)
    }
}
