//! The model's table of domains: every domain of every level with the parameters sd_init and
//! the flags give it (imbalance_pct, SHARE_LLC, NUMA, prefer_sibling, imb_numa_nr), and the
//! balancer's view of it from a set of per-CPU samples ([`DomainView`]).
//!
//! Invariants: `DomainTable::doms` lists the topology's domains level by level, bottom-up, in
//! the topology's order, so a domain's flat index is `base[level] + index in level`.
//!
//! The kernel balances a domain from one destination CPU at a time; a view has no such CPU, so
//! it takes as local group the one an idle CPU would pull into: the group with the most idle
//! CPUs, then the fewest running tasks, then the first. The destination counts as idle when
//! that group has an idle CPU.

use super::stats::{self, CpuSample, DomainParams, GroupStats, MigrationType, ModelRules};
use crate::cpuset::CpuSet;
use crate::topology::{IndexedTopology, LevelKind, Topology};
use serde::{Deserialize, Serialize};

/// The balancer's view of one domain at an instant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainView {
    /// Level key ("smt", "llc", "numa", ...).
    pub level: String,
    /// The domain's span.
    pub span: CpuSet,
    /// sd->imbalance_pct.
    pub imbalance_pct: u64,
    /// sd->imb_numa_nr (0 below NUMA levels).
    pub imb_numa_nr: u64,
    /// Index in `groups` of the group taken as local (see the module documentation).
    pub local_group: usize,
    /// Index in `groups` of the busiest group (update_sd_pick_busiest), if any.
    pub busiest_group: Option<usize>,
    /// calculate_imbalance's env->imbalance; 0 when the domain is balanced.
    pub imbalance: u64,
    /// The migration type of that imbalance ("load", "util", "task", "misfit").
    pub migration_type: Option<MigrationType>,
    /// The groups with their statistics and group_type.
    pub groups: Vec<GroupStats>,
}

/// One domain with its parameters.
#[derive(Clone, Debug)]
pub struct ModelDomain {
    /// Level index.
    pub level: usize,
    /// Level key.
    pub key: String,
    /// Span.
    pub span: CpuSet,
    /// Groups (the child level's spans).
    pub groups: Vec<CpuSet>,
    /// Cores per group.
    pub cores: Vec<u64>,
    /// Kernel parameters.
    pub params: DomainParams,
}

/// Every domain of the topology with its parameters.
#[derive(Clone, Debug)]
pub struct DomainTable {
    /// Domains level by level.
    pub doms: Vec<ModelDomain>,
    /// Flat index of each level's first domain.
    pub base: Vec<usize>,
}

/// SD_SHARE_LLC: set by sd_init on SMT, CLS and MC.
fn shares_llc(kind: LevelKind) -> bool {
    matches!(kind, LevelKind::Smt | LevelKind::Cluster | LevelKind::Llc)
}

/// sd->imb_numa_nr of every level (topology.c, build_sched_domains). The kernel sets it
/// before degenerate levels are dropped, so on the whole chain SMT, CLS, MC, PKG (whose span
/// is the node: `cpu_cpu_mask`), NODE, NUMA...: the first level that does not share the LLC
/// while its child does is PKG (NODE where x86 drops PKG for NUMA-in-package), which spans
/// one node whether or not it survives; there `imb` is the node's LLC count, or an eighth of
/// the node when it holds one LLC (at least 1). Each level above gets `imb` times its span
/// over the span of the first SD_NUMA level (NODE has no SD_NUMA flag), at least once.
/// So on a machine whose nodes are one LLC each, a NUMA domain's imb_numa_nr is an eighth of
/// a node, not its node count.
fn imb_numa_nr(topo: &Topology) -> Vec<u64> {
    let weight = |li: usize| topo.levels[li].domains.first().map_or(1, |d| d.span.len()) as u64;
    let n = topo.levels.len();
    let mut out = vec![0; n];
    let llc = (0..n).rev().find(|&li| shares_llc(topo.levels[li].kind));
    let llc_w = llc.map_or(1, weight).max(1);
    let first_cpu = topo.online.iter().next();
    let node_w = first_cpu
        .and_then(|c| topo.node_of(c))
        .and_then(|nd| topo.numa_nodes.get(nd))
        .map_or(0, |s| s.len() as u64)
        .max(llc_w);
    let nr_llcs = node_w / llc_w;
    let imb = if nr_llcs == 1 { node_w >> 3 } else { nr_llcs }.max(1);
    let imb_span = (0..n)
        .filter(|&li| topo.levels[li].kind == LevelKind::Numa)
        .map(weight)
        .find(|&w| w > node_w)
        .unwrap_or(node_w)
        .max(1);
    for (li, o) in out.iter_mut().enumerate() {
        if llc.is_some_and(|l| li <= l) || shares_llc(topo.levels[li].kind) {
            continue;
        }
        *o = imb * (weight(li) / imb_span).max(1);
    }
    out
}

impl DomainTable {
    /// The table of `topo` under `rules`.
    pub fn new(topo: &Topology, rules: ModelRules) -> DomainTable {
        let imb = imb_numa_nr(topo);
        let smt_level = topo.levels.first().filter(|l| l.kind == LevelKind::Smt);
        let mut doms = Vec::new();
        let mut base = Vec::new();
        for (li, level) in topo.levels.iter().enumerate() {
            base.push(doms.len());
            let child = li.checked_sub(1).map(|c| topo.levels[c].kind);
            let params = DomainParams {
                imbalance_pct: if level.kind == LevelKind::Smt {
                    110
                } else {
                    117
                },
                share_llc: shares_llc(level.kind),
                numa: level.kind == LevelKind::Numa,
                prefer_sibling: child.is_some_and(|k| k != LevelKind::Numa),
                smt_groups: child == Some(LevelKind::Smt),
                imb_numa_nr: imb[li],
                rules,
            };
            for d in &level.domains {
                let cores = d
                    .groups
                    .iter()
                    .map(|g| match smt_level {
                        Some(s) if li > 0 => {
                            s.domains.iter().filter(|c| c.span.is_subset(g)).count() as u64
                        }
                        _ => g.len() as u64,
                    })
                    .collect();
                doms.push(ModelDomain {
                    level: li,
                    key: level.key.clone(),
                    span: d.span,
                    groups: d.groups.clone(),
                    cores,
                    params,
                });
            }
        }
        DomainTable { doms, base }
    }

    /// Flat index of the domain `cpu` owns at `level`.
    pub fn index(&self, topo: &IndexedTopology, level: usize, cpu: usize) -> Option<usize> {
        Some(self.base.get(level)? + topo.domain_index(level, cpu)?)
    }
}

impl ModelDomain {
    /// The index of the group holding `cpu`.
    pub fn group_of(&self, cpu: usize) -> Option<usize> {
        self.groups.iter().position(|g| g.contains(cpu))
    }

    /// One balance pass into group `local` (`dst_idle`: env->idle != CPU_NOT_IDLE): every
    /// group's statistics and the decision (sched_balance_find_src_group and
    /// calculate_imbalance).
    pub fn decide(
        &self,
        samples: &[CpuSample],
        local: usize,
        dst_idle: bool,
    ) -> (Vec<GroupStats>, stats::Decision) {
        let groups: Vec<GroupStats> = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                stats::group_stats(
                    g,
                    samples,
                    self.cores[i],
                    &self.params,
                    i == local,
                    dst_idle,
                )
            })
            .collect();
        let d = if groups.is_empty() {
            stats::Decision {
                busiest: None,
                imbalance: 0,
                migration_type: None,
            }
        } else {
            stats::decide(&groups, local, &self.params, dst_idle)
        };
        (groups, d)
    }

    /// The balancer's view of this domain from `samples` (indexed by CPU).
    pub fn view(&self, samples: &[CpuSample]) -> DomainView {
        let sample = |c: usize| samples.get(c).copied().unwrap_or_default();
        let local = (0..self.groups.len())
            .max_by_key(|&i| {
                let g = &self.groups[i];
                let idle = g.iter().filter(|&c| sample(c).idle).count();
                let nr: u64 = g.iter().map(|c| u64::from(sample(c).nr_running)).sum();
                (idle, std::cmp::Reverse(nr), std::cmp::Reverse(i))
            })
            .unwrap_or(0);
        let dst_idle = self
            .groups
            .get(local)
            .is_some_and(|g| g.iter().any(|c| sample(c).idle));
        let (groups, d) = self.decide(samples, local, dst_idle);
        DomainView {
            level: self.key.clone(),
            span: self.span,
            imbalance_pct: self.params.imbalance_pct,
            imb_numa_nr: self.params.imb_numa_nr,
            local_group: local,
            busiest_group: d.busiest,
            imbalance: d.imbalance,
            migration_type: d.migration_type,
            groups,
        }
    }
}
