//! `Topology`: which CPUs share each sched-domain level (SMT, CLS, MC/LLC, PKG, NUMA), as the
//! kernel builds its domains, so that a migration can be labelled with the level it crossed and
//! a balancer call with the domain and groups it looked at.
//!
//! Invariants, whatever the source (sysfs, debugfs names, synthetic):
//! - `levels` run bottom-up; every CPU's span at a level contains its span at the level below,
//!   and every kept level differs from the one below for at least one CPU (degenerate levels are
//!   dropped, as the kernel does). A single-CPU machine has no level at all.
//! - Every online CPU owns exactly one domain per level (`Domain::cpus`). Below NUMA, spans
//!   partition the online CPUs and `cpus == span`; NUMA levels may overlap (SD_OVERLAP), where
//!   several domains contain a CPU but only one is its own.
//! - `Domain::groups` cover the span, ordered by first CPU: the child level's spans (single CPUs
//!   at the lowest level), or for an overlapping NUMA domain the highest lower span that fits.
//! - All sets are within `online`; `nr_cpus` is the highest online CPU + 1.
//!
//! Reading the machine lives in `topology/sysfs.rs`; this file owns the types, the queries and
//! the assembly of levels from per-CPU spans.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use index::{first_holders, IndexedTopology, NOT_HELD};

mod index;
mod sysfs;
#[cfg(test)]
mod tests;

/// The machine's CPUs and sched-domain levels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Highest online CPU + 1: the length of per-CPU tables.
    pub nr_cpus: usize,
    /// CPUs that were online when the topology was read.
    pub online: CpuSet,
    /// Levels bottom-up (index 0 = lowest), degenerate levels dropped.
    pub levels: Vec<Level>,
    /// CPUs of each NUMA node, index = node id (an empty set for a missing node id). A machine
    /// without NUMA information has one node 0 holding every online CPU.
    pub numa_nodes: Vec<CpuSet>,
    /// Where the level names came from.
    pub source: TopologySource,
}

/// Where a [`Topology`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopologySource {
    /// Spans from sysfs, level names from `/sys/kernel/debug/sched/domains`.
    Debugfs,
    /// Spans from sysfs, names inferred the way the kernel assigns them.
    Sysfs,
    /// Built in code (tests, or a recording without topology).
    Synthetic,
}

/// What the CPUs of one level share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelKind {
    /// Hardware threads of one core (kernel "SMT").
    Smt,
    /// Cores sharing an L2 or a cache tag (kernel "CLS").
    Cluster,
    /// Cores sharing the last-level cache (kernel "MC").
    Llc,
    /// A package, in practice the NUMA node (kernel "PKG", "DIE" before 6.7).
    Package,
    /// Nodes within a NUMA distance (kernel "NODE", "NUMA").
    Numa,
}

impl LevelKind {
    /// The report key of the first level of this kind; later ones get "2", "3", ... appended.
    pub fn key_base(self) -> &'static str {
        match self {
            LevelKind::Smt => "smt",
            LevelKind::Cluster => "cluster",
            LevelKind::Llc => "llc",
            LevelKind::Package => "package",
            LevelKind::Numa => "numa",
        }
    }

    /// The kind of a kernel domain name (`SMT`, `CLS`, `MC`, `PKG`/`DIE`, `NODE`/`NUMA`), or
    /// `None` for a name this tool does not know (e.g. s390's `BOOK`).
    pub fn from_kernel_name(name: &str) -> Option<LevelKind> {
        match name {
            "SMT" => Some(LevelKind::Smt),
            "CLS" => Some(LevelKind::Cluster),
            "MC" => Some(LevelKind::Llc),
            "PKG" | "DIE" => Some(LevelKind::Package),
            "NODE" | "NUMA" => Some(LevelKind::Numa),
            _ => None,
        }
    }
}

/// One sched-domain level: every CPU's domain at that height.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// What the CPUs of a domain share.
    pub kind: LevelKind,
    /// The kernel's domain name: "SMT", "CLS", "MC", "PKG", "NODE", "NUMA" (from debugfs when
    /// it was readable).
    pub name: String,
    /// Stable report key, unique per topology: "smt", "cluster", "llc", "package", "numa",
    /// then "numa2", "numa3", ... for further levels of the same kind.
    pub key: String,
    /// Distinct spans at this level, ordered by first CPU (then by first owning CPU).
    pub domains: Vec<Domain>,
}

/// One distinct span at a level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    /// The CPUs the balancer at this domain looks at.
    pub span: CpuSet,
    /// The balancer's groups inside the span: the child level's spans (single CPUs at the
    /// lowest level), ordered by first CPU.
    pub groups: Vec<CpuSet>,
    /// The CPUs whose own domain at this level this is. Equals `span` except at overlapping
    /// NUMA levels, where another CPU's domain may also contain these CPUs.
    pub cpus: CpuSet,
}

impl Level {
    /// Index of the domain `cpu` owns at this level.
    pub fn domain_index(&self, cpu: usize) -> Option<usize> {
        self.domains.iter().position(|d| d.cpus.contains(cpu))
    }
}

/// Why the topology could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// `cpu/online` could not be read.
    #[error(
        "cannot read the online CPU list {}: {source}; lbscope reads the CPU topology from \
         sysfs: mount it (`mount -t sysfs sysfs /sys`) or, in a container, bind-mount the \
         host's /sys",
        path.display()
    )]
    OnlineUnreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `cpu/online` does not hold a CPU list.
    #[error(
        "{} should hold a CPU list such as `0-3,8` but holds `{content}` ({reason}); check \
         that a real sysfs is mounted there",
        path.display()
    )]
    OnlineGarbled {
        /// The file.
        path: PathBuf,
        /// What it held (trimmed, shortened).
        content: String,
        /// Why it did not parse.
        reason: String,
    },
    /// `cpu/online` lists no CPU.
    #[error("{} lists no online CPU; check that a real sysfs is mounted there", path.display())]
    NoCpus {
        /// The file.
        path: PathBuf,
    },
}

impl Topology {
    /// The running machine's topology: [`Topology::from_root`] on `/`.
    pub fn detect() -> Result<Topology, TopologyError> {
        Topology::from_root(Path::new("/"))
    }

    /// Reads the topology under `root`, which holds `sys/devices/system/cpu/...`,
    /// `sys/devices/system/node/...` and optionally `sys/kernel/debug/sched/domains/...`.
    ///
    /// Spans always come from sysfs. When debugfs names the domains of a CPU with as many
    /// levels as sysfs gives it, its names are used (source `Debugfs`), else the kernel's names
    /// are inferred (source `Sysfs`). Missing or garbled files drop the level they describe;
    /// only a missing or garbled `cpu/online` is an error.
    pub fn from_root(root: &Path) -> Result<Topology, TopologyError> {
        sysfs::read(root)
    }

    /// One "MC" (LLC) level spanning all `nr_cpus` CPUs, whose groups are the single CPUs.
    pub fn synthetic_flat(nr_cpus: usize) -> Topology {
        Topology::synthetic(&[(LevelKind::Llc, "MC", nr_cpus)], nr_cpus)
    }

    /// Levels of contiguous spans for tests: each `(kind, name, cpus_per_domain)` cuts CPUs
    /// `0..nr_cpus` into consecutive domains of that size (the last may be shorter), e.g.
    /// `&[(Smt, "SMT", 2), (Llc, "MC", 8), (Numa, "NUMA", 16)]` with 16 CPUs. Sizes should
    /// grow bottom-up and divide each other; nothing is dropped. NUMA nodes are the spans of
    /// the level below the first NUMA level (or of that level when named "NODE").
    pub fn synthetic(levels: &[(LevelKind, &str, usize)], nr_cpus: usize) -> Topology {
        let online = CpuSet::first_n(nr_cpus);
        let nr_cpus = online.len();
        let chunk = |size: usize, cpu: usize| {
            let size = if size == 0 { nr_cpus } else { size };
            let start = cpu / size * size;
            (start..(start + size).min(nr_cpus)).collect::<CpuSet>()
        };
        let spans: Vec<LevelSpans> = levels
            .iter()
            .map(|&(kind, name, size)| LevelSpans {
                kind,
                name: name.to_string(),
                spans: (0..nr_cpus).map(|c| chunk(size, c)).collect(),
            })
            .collect();
        let numa_nodes = match levels.iter().position(|l| l.0 == LevelKind::Numa) {
            Some(i) => {
                let at = if levels[i].1 == "NODE" || i == 0 {
                    i
                } else {
                    i - 1
                };
                let mut nodes: Vec<CpuSet> = Vec::new();
                for c in 0..nr_cpus {
                    let s = spans[at].spans[c];
                    if !nodes.contains(&s) {
                        nodes.push(s);
                    }
                }
                nodes
            }
            None => vec![online],
        };
        Topology {
            nr_cpus,
            online,
            levels: assemble(&online, &spans),
            numa_nodes,
            source: TopologySource::Synthetic,
        }
    }

    /// Index of the lowest level whose domain owned by `dst` also contains `src`: the level a
    /// migration from `src` to `dst` crossed. `None` when `src == dst`, a CPU is unknown, or no
    /// level spans both.
    pub fn crossed_level(&self, src: usize, dst: usize) -> Option<usize> {
        if src == dst || !self.online.contains(src) || !self.online.contains(dst) {
            return None;
        }
        (0..self.levels.len())
            .find(|&l| self.domain_of(l, dst).is_some_and(|d| d.span.contains(src)))
    }

    /// Index (in `levels[level].domains`) of the domain `cpu` owns at `level`.
    pub fn domain_index(&self, level: usize, cpu: usize) -> Option<usize> {
        self.levels.get(level)?.domain_index(cpu)
    }

    /// The domain `cpu` owns at `level`.
    pub fn domain_of(&self, level: usize, cpu: usize) -> Option<&Domain> {
        let l = self.levels.get(level)?;
        l.domains.get(l.domain_index(cpu)?)
    }

    /// The span of `cpu`'s domain at `level`.
    pub fn span(&self, level: usize, cpu: usize) -> Option<CpuSet> {
        self.domain_of(level, cpu).map(|d| d.span)
    }

    /// The report key of a level, "unknown" for `None` or an index past the top.
    pub fn level_key(&self, level: Option<usize>) -> &str {
        level
            .and_then(|l| self.levels.get(l))
            .map_or("unknown", |l| l.key.as_str())
    }

    /// The index of the level with report key `key`.
    pub fn level_by_key(&self, key: &str) -> Option<usize> {
        self.levels.iter().position(|l| l.key == key)
    }

    /// The NUMA node holding `cpu`.
    pub fn node_of(&self, cpu: usize) -> Option<usize> {
        self.numa_nodes.iter().position(|n| n.contains(cpu))
    }
}

/// The set holding only `cpu`.
fn single(cpu: usize) -> CpuSet {
    std::iter::once(cpu).collect()
}

/// One level as per-CPU spans, before it becomes a [`Level`]; `spans[cpu]` is empty for
/// offline CPUs.
#[derive(Clone, Debug)]
struct LevelSpans {
    kind: LevelKind,
    name: String,
    spans: Vec<CpuSet>,
}

/// Builds the levels' domains and groups from per-CPU spans (already nested, bottom-up), and
/// gives them their report keys.
fn assemble(online: &CpuSet, chain: &[LevelSpans]) -> Vec<Level> {
    let mut levels: Vec<Level> = Vec::with_capacity(chain.len());
    for (li, l) in chain.iter().enumerate() {
        let mut index: HashMap<CpuSet, usize> = HashMap::new();
        let mut domains: Vec<Domain> = Vec::new();
        for cpu in online.iter() {
            let span = l.spans[cpu];
            let i = *index.entry(span).or_insert_with(|| {
                domains.push(Domain {
                    span,
                    groups: Vec::new(),
                    cpus: CpuSet::new(),
                });
                domains.len() - 1
            });
            domains[i].cpus.insert(cpu);
        }
        domains.sort_by_key(|d| (d.span.first(), d.cpus.first()));
        for d in &mut domains {
            d.groups = groups_of(&d.span, &chain[..li]);
        }
        levels.push(Level {
            kind: l.kind,
            name: l.name.clone(),
            key: String::new(),
            domains,
        });
    }
    assign_keys(&mut levels);
    levels
}

/// The groups of a domain spanning `span`, given the levels below it. Like the kernel's
/// build_overlap_sched_groups: each CPU not yet covered contributes its highest lower span that
/// fits inside `span` (for non-overlapping levels, simply its child span).
fn groups_of(span: &CpuSet, below: &[LevelSpans]) -> Vec<CpuSet> {
    let mut covered = CpuSet::new();
    let mut groups = Vec::new();
    for cpu in span.iter() {
        if covered.contains(cpu) {
            continue;
        }
        let group = below
            .iter()
            .rev()
            .map(|l| l.spans[cpu])
            .find(|s| s.contains(cpu) && s.is_subset(span))
            .unwrap_or_else(|| single(cpu));
        covered = covered.or(&group);
        groups.push(group);
    }
    groups
}

/// Sets each level's key from its kind, numbering repeats: "numa", "numa2", ...
fn assign_keys(levels: &mut [Level]) {
    let mut seen: HashMap<LevelKind, usize> = HashMap::new();
    for l in levels.iter_mut() {
        let n = seen.entry(l.kind).or_insert(0);
        *n += 1;
        l.key = if *n == 1 {
            l.kind.key_base().to_string()
        } else {
            format!("{}{}", l.kind.key_base(), n)
        };
    }
}
