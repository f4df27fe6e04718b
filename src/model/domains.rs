//! The model's table of domains: every domain of every level with the parameters sd_init and
//! the flags give it (imbalance_pct, SHARE_LLC, NUMA, prefer_sibling, imb_numa_nr), and the
//! balancer's view of it from a set of per-CPU samples ([`DomainView`]).
//!
//! Invariants: `DomainTable::doms` lists the topology's domains level by level, bottom-up, in
//! the topology's order, so a domain's flat index is `base[level] + index in level`. Groups keep
//! the topology's order (by first CPU); the order the kernel visits them in from a destination
//! CPU is kept beside them (`ModelDomain::ring`), built once with the table.
//!
//! The kernel balances a domain from one destination CPU at a time; a view has no such CPU, so
//! it takes as local group the one an idle CPU would pull into: the group with the most idle
//! CPUs, then the fewest running tasks, then the first. The destination counts as idle when
//! that group has an idle CPU.

use super::stats::{self, CpuSample, DomainParams, GroupStats, MigrationType, ModelRules};
use crate::cpuset::CpuSet;
use crate::topology::{
    first_holders, Domain, IndexedTopology, Level, LevelKind, Topology, NOT_HELD,
};
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
    /// The groups (indices into `groups`) around the kernel's ring, `sg->next` (see
    /// [`ModelDomain::visit_order`]).
    ring: Vec<u16>,
    /// Each group's position in `ring`.
    ring_pos: Vec<u16>,
    /// The CPUs owning this domain whose own ring is not a rotation of `ring` (overlapping
    /// NUMA domains of unusual CPU numberings only), with their visiting order.
    own_orders: Vec<(usize, Vec<u16>)>,
}

/// Every domain of the topology with its parameters.
#[derive(Clone, Debug)]
pub struct DomainTable {
    /// Domains level by level.
    pub doms: Vec<ModelDomain>,
    /// Flat index of each level's first domain.
    pub base: Vec<usize>,
}

/// The groups in the order `for_each_cpu_wrap(i, span, start)` first meets them
/// (build_sched_groups and build_overlap_sched_groups both walk the span that way);
/// `group_of[cpu]` is the group holding `cpu`.
fn wrap_order(span: &CpuSet, group_of: &[u32], nr_groups: usize, start: usize) -> Vec<u16> {
    let mut seen = vec![false; nr_groups];
    let mut out = Vec::new();
    let from_start = span.iter().filter(|&c| c >= start);
    for c in from_start.chain(span.iter().filter(|&c| c < start)) {
        let Some(&g) = group_of.get(c).filter(|&&g| g != NOT_HELD) else {
            continue;
        };
        if !std::mem::replace(&mut seen[g as usize], true) {
            out.push(g as u16);
        }
    }
    out
}

/// The kernel's ring of a domain's groups and the CPUs whose ring differs from it (see
/// [`ModelDomain::visit_order`]): `(ring, positions in it, own orders)`.
#[allow(clippy::type_complexity)]
fn rings(d: &Domain, overlap: bool) -> (Vec<u16>, Vec<u16>, Vec<(usize, Vec<u16>)>) {
    let group_of = first_holders(&d.groups);
    let n = d.groups.len();
    // Non-overlapping levels share one set of group structures among the span's CPUs, and
    // each CPU's build_sched_groups rewrites their `next` links: the last CPU built (the
    // highest, for_each_cpu(i, cpu_map)) leaves its ring.
    let last = d.span.iter().last().unwrap_or(0);
    let ring = match (overlap, d.cpus.first()) {
        (true, Some(first)) => wrap_order(&d.span, &group_of, n, first),
        _ => wrap_order(&d.span, &group_of, n, last),
    };
    let mut pos = vec![0u16; n];
    for (i, &g) in ring.iter().enumerate() {
        pos[g as usize] = i as u16;
    }
    let mut own = Vec::new();
    if overlap {
        // Overlapping levels build a ring per CPU, from that CPU.
        for c in d.cpus.iter() {
            let order = wrap_order(&d.span, &group_of, n, c);
            let Some(&g0) = order.first() else { continue };
            let at = pos[g0 as usize] as usize;
            let rotated = ring[at..].iter().chain(&ring[..at]);
            if order.len() != ring.len() || !order.iter().eq(rotated) {
                own.push((c, order));
            }
        }
    }
    (ring, pos, own)
}

/// SD_SHARE_LLC: set by sd_init on SMT, CLS and MC.
fn shares_llc(kind: LevelKind) -> bool {
    matches!(kind, LevelKind::Smt | LevelKind::Cluster | LevelKind::Llc)
}

/// SD_NUMA (and SDTL_OVERLAP): the NUMA levels above NODE. sched_init_numa gives only those
/// `.sd_flags = cpu_numa_flags, .flags = SDTL_OVERLAP`; NODE, the node itself, gets neither,
/// so sd_init treats it as a plain level (PREFER_SIBLING kept, cache_nice_tries 1).
pub(crate) fn sd_numa(level: &Level) -> bool {
    level.kind == LevelKind::Numa && level.name != "NODE"
}

/// sd->imb_numa_nr of the domain `cpu` owns at level `li` (build_sched_domains), computed as
/// the kernel does on its whole hierarchy, before degenerate domains are dropped (the topology
/// has dropped them). The first level that does not share the LLC while its child does is PKG
/// (`cpu_cpu_mask`, the node), or NODE when the node lies inside the package: the node, or
/// the LLC if larger, either way. There `nr_llcs = span / LLC span`, imb = nr_llcs, or span >>
/// 3 for a single LLC, at least 1; the levels above scale it by max(1, span / span of the
/// first SD_NUMA level above it (NODE is not one), or of the node without one).
fn imb_numa_nr(topo: &Topology, li: usize, cpu: usize) -> u64 {
    let Some(llc) = topo.levels.iter().rposition(|l| shares_llc(l.kind)) else {
        return 0;
    };
    if li <= llc {
        return 0;
    }
    let weight = |l: usize| topo.span(l, cpu).map_or(1, |s| s.len()) as u64;
    let llc_span = topo.span(llc, cpu).unwrap_or_default();
    let node = topo
        .node_of(cpu)
        .map_or(topo.online, |n| topo.numa_nodes[n]);
    let first = node.or(&llc_span).len() as u64;
    let nr_llcs = first / (llc_span.len() as u64).max(1);
    let imb = if nr_llcs == 1 { first >> 3 } else { nr_llcs }.max(1);
    let imb_span = (llc + 1..topo.levels.len())
        .find(|&l| sd_numa(&topo.levels[l]))
        .map_or(first, weight)
        .max(1);
    imb * (weight(li) / imb_span).max(1)
}

impl DomainTable {
    /// The table of `topo` under `rules`.
    pub fn new(topo: &Topology, rules: ModelRules) -> DomainTable {
        let smt_level = topo.levels.first().filter(|l| l.kind == LevelKind::Smt);
        let mut doms = Vec::new();
        let mut base = Vec::new();
        for (li, level) in topo.levels.iter().enumerate() {
            base.push(doms.len());
            let child = li.checked_sub(1).map(|c| &topo.levels[c]);
            let mut params = DomainParams {
                imbalance_pct: if level.kind == LevelKind::Smt {
                    110
                } else {
                    117
                },
                share_llc: shares_llc(level.kind),
                numa: sd_numa(level),
                // sd_init clears SD_PREFER_SIBLING only with SD_NUMA (6.1 reads the child's
                // flag, 6.6+ the busiest group's, which holds its child's flags).
                prefer_sibling: child.is_some_and(|c| !sd_numa(c)),
                smt_groups: child.is_some_and(|c| c.kind == LevelKind::Smt),
                imb_numa_nr: 0,
                rules,
            };
            let overlap = sd_numa(level);
            for d in &level.domains {
                params.imb_numa_nr = d.cpus.first().map_or(0, |cpu| imb_numa_nr(topo, li, cpu));
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
                let (ring, ring_pos, own_orders) = rings(d, overlap);
                doms.push(ModelDomain {
                    level: li,
                    key: level.key.clone(),
                    span: d.span,
                    groups: d.groups.clone(),
                    cores,
                    params,
                    ring,
                    ring_pos,
                    own_orders,
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

    /// The order update_sd_lb_stats visits the groups in for `dst_cpu` in group `local`:
    /// from `sd->groups` along `sg->next`. `sd->groups` is the destination's own group
    /// (build_sched_groups: `sd->groups = first`, the group of the CPU built from), and the
    /// ring follows `for_each_cpu_wrap(i, span, cpu)`; update_sd_pick_busiest keeps the first
    /// of equal groups, so this order settles ties. `dst_cpu` `None`: a rotation of the ring
    /// from `local`.
    pub fn visit_order(
        &self,
        dst_cpu: Option<usize>,
        local: usize,
    ) -> impl Iterator<Item = usize> + '_ {
        let own = dst_cpu
            .filter(|_| !self.own_orders.is_empty())
            .and_then(|c| self.own_orders.iter().find(|o| o.0 == c));
        let (head, tail): (&[u16], &[u16]) = match own {
            Some((_, order)) => (order, &[]),
            None => {
                let at = self.ring_pos.get(local).map_or(0, |&p| p as usize);
                (&self.ring[at..], &self.ring[..at])
            }
        };
        head.iter().chain(tail).map(|&g| g as usize)
    }

    /// One balance pass of `dst_cpu` (`None`: any CPU of the group) into group `local`
    /// (`dst_idle`: env->idle != CPU_NOT_IDLE): every group's statistics and the decision
    /// (sched_balance_find_src_group and calculate_imbalance), each group's capacity its
    /// CPUs' current sum.
    pub fn decide(
        &self,
        samples: &[CpuSample],
        dst_cpu: Option<usize>,
        local: usize,
        dst_idle: bool,
    ) -> (Vec<GroupStats>, stats::Decision) {
        self.decide_with(samples, &[], dst_cpu, local, dst_idle)
    }

    /// [`ModelDomain::decide`] with `caps`: each group's `sgc->capacity` where known (see
    /// [`stats::group_stats_with`]; empty: none known).
    pub fn decide_with(
        &self,
        samples: &[CpuSample],
        caps: &[Option<u64>],
        dst_cpu: Option<usize>,
        local: usize,
        dst_idle: bool,
    ) -> (Vec<GroupStats>, stats::Decision) {
        let groups: Vec<GroupStats> = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                stats::group_stats_with(
                    g,
                    samples,
                    self.cores[i],
                    &self.params,
                    i == local,
                    dst_idle,
                    caps.get(i).copied().flatten(),
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
            let order = self.visit_order(dst_cpu, local);
            stats::decide(&groups, order, local, &self.params, dst_idle)
        };
        (groups, d)
    }

    /// The balancer's view of this domain from `samples` (indexed by CPU).
    pub fn view(&self, samples: &[CpuSample]) -> DomainView {
        self.view_with(samples, &[])
    }

    /// [`ModelDomain::view`] with the groups' `sgc->capacity` where known (`caps`, by group).
    pub fn view_with(&self, samples: &[CpuSample], caps: &[Option<u64>]) -> DomainView {
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
        let (groups, d) = self.decide_with(samples, caps, None, local, dst_idle);
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
