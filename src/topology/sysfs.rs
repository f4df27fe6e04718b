//! Reading a machine's topology under a root directory: spans from sysfs, names from debugfs.
//!
//! Only `sys/devices/system/cpu/online` must exist and parse. Every other file is optional: a
//! level whose file is missing or garbled for any online CPU is not a candidate, so a partial
//! sysfs (containers, odd architectures) yields fewer levels, never an error or a panic.
//!
//! Candidates bottom-up, as the kernel's topology tables (x86 and the generic default):
//! - SMT = `core_cpus_list` (older kernels: `thread_siblings_list`);
//! - CLS = `cluster_cpus_list`;
//! - MC = the CPUs sharing the last-level cache (x86 `cpu_coregroup_mask`);
//! - PKG = the CPU's NUMA node, as the kernel's `cpu_cpu_mask` (all CPUs without node
//!   directories, as without CONFIG_NUMA; the package when node data is partial), and no PKG
//!   when a node is smaller than its package (x86 NUMA-in-package drops PKG, keeps NODE);
//! - NODE = the node, with several nodes;
//! - one NUMA level per node distance above the local one (one level over all CPUs when the
//!   distance table is unusable).
//!
//! A candidate is kept when it contains the level below for every CPU, partitions the CPUs
//! (below NUMA), and differs from the level below for some CPU.

use super::{assemble, single, LevelKind, LevelSpans, Topology, TopologyError, TopologySource};
use crate::cpuset::CpuSet;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The most debugfs domains read per CPU: a guard against odd trees.
const MAX_DOMAINS: usize = 64;

pub(super) fn read(root: &Path) -> Result<Topology, TopologyError> {
    let cpu_dir = root.join("sys/devices/system/cpu");
    let online = read_online(&cpu_dir.join("online"))?;
    let nr_cpus = online.iter().last().map_or(0, |c| c + 1);
    let m = Machine {
        cpu_dir,
        online,
        nr_cpus,
    };
    let nodes = Nodes::read(&root.join("sys/devices/system/node"), &online);
    let mut chain = prune(&m, candidates(&m, &nodes));
    let named = apply_debugfs_names(&root.join("sys/kernel/debug/sched/domains"), &m, &mut chain);
    Ok(Topology {
        nr_cpus,
        online,
        levels: assemble(&online, &chain),
        numa_nodes: nodes.by_id,
        source: if named {
            TopologySource::Debugfs
        } else {
            TopologySource::Sysfs
        },
    })
}

fn read_online(path: &Path) -> Result<CpuSet, TopologyError> {
    let text = fs::read_to_string(path).map_err(|source| TopologyError::OnlineUnreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let online = CpuSet::parse_list(&text).map_err(|reason| TopologyError::OnlineGarbled {
        path: path.to_path_buf(),
        content: text.trim().chars().take(64).collect(),
        reason,
    })?;
    if online.is_empty() {
        return Err(TopologyError::NoCpus {
            path: path.to_path_buf(),
        });
    }
    Ok(online)
}

/// Reads a small text file, trimmed; `None` when it is missing or unreadable.
fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The online CPUs and where their sysfs directories are.
struct Machine {
    cpu_dir: PathBuf,
    online: CpuSet,
    nr_cpus: usize,
}

impl Machine {
    fn cpu_path(&self, cpu: usize, rel: &str) -> PathBuf {
        self.cpu_dir.join(format!("cpu{cpu}")).join(rel)
    }

    /// The first of `files` (relative to `cpuN/`) that holds a CPU list.
    fn list(&self, cpu: usize, files: &[&str]) -> Option<CpuSet> {
        files
            .iter()
            .find_map(|f| CpuSet::parse_list(&read_trimmed(&self.cpu_path(cpu, f))?).ok())
    }

    /// Per-CPU spans from `f`, restricted to online CPUs; `None` unless every online CPU has
    /// one that contains the CPU itself.
    fn per_cpu(&self, mut f: impl FnMut(usize) -> Option<CpuSet>) -> Option<Vec<CpuSet>> {
        let mut spans = vec![CpuSet::new(); self.nr_cpus];
        for cpu in self.online.iter() {
            let s = f(cpu)?.and(&self.online);
            if !s.contains(cpu) {
                return None;
            }
            spans[cpu] = s;
        }
        Some(spans)
    }

    /// The CPUs sharing `cpu`'s last-level cache: the `shared_cpu_list` of its highest-level
    /// data or unified cache (unified preferred at equal level).
    fn llc(&self, cpu: usize) -> Option<CpuSet> {
        let mut best: Option<((u32, bool), CpuSet)> = None;
        for entry in fs::read_dir(self.cpu_path(cpu, "cache")).ok()?.flatten() {
            if !entry.file_name().to_string_lossy().starts_with("index") {
                continue;
            }
            let dir = entry.path();
            let Some(level) = read_trimmed(&dir.join("level")).and_then(|l| l.parse::<u32>().ok())
            else {
                continue;
            };
            let kind = read_trimmed(&dir.join("type")).unwrap_or_default();
            if kind == "Instruction" {
                continue;
            }
            let Some(shared) = read_trimmed(&dir.join("shared_cpu_list"))
                .and_then(|s| CpuSet::parse_list(&s).ok())
            else {
                continue;
            };
            let rank = (level, kind == "Unified");
            if best.as_ref().is_none_or(|(r, _)| rank > *r) {
                best = Some((rank, shared));
            }
        }
        best.map(|(_, s)| s)
    }

    /// Packages from `physical_package_id` when the package lists are missing.
    fn packages_by_id(&self) -> Option<Vec<CpuSet>> {
        let mut ids: HashMap<usize, String> = HashMap::new();
        for cpu in self.online.iter() {
            ids.insert(
                cpu,
                read_trimmed(&self.cpu_path(cpu, "topology/physical_package_id"))?,
            );
        }
        self.per_cpu(|cpu| {
            let id = &ids[&cpu];
            Some(self.online.iter().filter(|o| &ids[o] == id).collect())
        })
    }
}

/// NUMA nodes: CPUs per node id and the distance table.
struct Nodes {
    /// CPUs per node id (online CPUs only); empty for ids without a directory.
    by_id: Vec<CpuSet>,
    /// `distance[(a, b)]` between node ids, when every row parsed.
    distance: Option<HashMap<(usize, usize), u32>>,
    /// How many node directories were read (memory-only nodes included).
    count: usize,
}

impl Nodes {
    /// Reads `node/nodeN/{cpulist,distance}`. Without any node directory the machine is one
    /// node 0 holding every online CPU, as the kernel sees it without CONFIG_NUMA.
    fn read(dir: &Path, online: &CpuSet) -> Nodes {
        let mut by_id: Vec<CpuSet> = Vec::new();
        let mut rows: Vec<(usize, Option<Vec<u32>>)> = Vec::new();
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(id) = name
                .strip_prefix("node")
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if id >= crate::cpuset::MAX_CPUS {
                continue;
            }
            let Some(cpus) = read_trimmed(&entry.path().join("cpulist"))
                .and_then(|s| CpuSet::parse_list(&s).ok())
            else {
                continue;
            };
            if by_id.len() <= id {
                by_id.resize(id + 1, CpuSet::new());
            }
            by_id[id] = cpus.and(online);
            let row = read_trimmed(&entry.path().join("distance")).and_then(|s| {
                s.split_whitespace()
                    .map(|d| d.parse::<u32>().ok())
                    .collect::<Option<Vec<u32>>>()
            });
            rows.push((id, row));
        }
        if rows.is_empty() {
            return Nodes {
                by_id: vec![*online],
                distance: None,
                count: 1,
            };
        }
        rows.sort_by_key(|r| r.0);
        // Row entries follow the online nodes in id order (drivers/base/node.c).
        let order: Vec<usize> = read_trimmed(&dir.join("online"))
            .and_then(|s| CpuSet::parse_list(&s).ok())
            .map(|s| s.iter().collect())
            .unwrap_or_else(|| rows.iter().map(|r| r.0).collect());
        let mut distance = Some(HashMap::new());
        for (id, row) in &rows {
            match (row, distance.as_mut()) {
                (Some(row), Some(d)) if row.len() == order.len() => {
                    for (to, v) in order.iter().zip(row) {
                        d.insert((*id, *to), *v);
                    }
                }
                _ => distance = None,
            }
        }
        Nodes {
            by_id,
            distance,
            count: rows.len(),
        }
    }

    fn node_of(&self, cpu: usize) -> Option<usize> {
        self.by_id.iter().position(|n| n.contains(cpu))
    }
}

/// Every candidate level the files allow, bottom-up.
fn candidates(m: &Machine, nodes: &Nodes) -> Vec<LevelSpans> {
    let mut out = Vec::new();
    let mut push = |kind, name: &str, spans: Option<Vec<CpuSet>>| {
        if let Some(spans) = spans {
            out.push(LevelSpans {
                kind,
                name: name.to_string(),
                spans,
            });
        }
    };
    let smt = m.per_cpu(|c| {
        m.list(
            c,
            &["topology/core_cpus_list", "topology/thread_siblings_list"],
        )
    });
    push(LevelKind::Smt, "SMT", smt);
    push(
        LevelKind::Cluster,
        "CLS",
        m.per_cpu(|c| m.list(c, &["topology/cluster_cpus_list"])),
    );
    push(LevelKind::Llc, "MC", m.per_cpu(|c| m.llc(c)));

    let package = m
        .per_cpu(|c| {
            m.list(
                c,
                &["topology/package_cpus_list", "topology/core_siblings_list"],
            )
        })
        .or_else(|| m.packages_by_id());
    let node_spans = m.per_cpu(|c| nodes.node_of(c).map(|n| nodes.by_id[n]));
    let numa_in_package = match (&package, &node_spans) {
        (Some(p), Some(n)) => m
            .online
            .iter()
            .any(|c| n[c] != p[c] && n[c].is_subset(&p[c])),
        _ => false,
    };
    let pkg = match &node_spans {
        Some(_) if numa_in_package => None,
        Some(n) => Some(n.clone()),
        None => package,
    };
    push(LevelKind::Package, "PKG", pkg);

    if nodes.count < 2 {
        return out;
    }
    push(LevelKind::Numa, "NODE", node_spans);
    let Some(dist) = &nodes.distance else {
        // No usable distance table: one level over every CPU stands for the NUMA levels, so
        // that cross-node migrations still have a level.
        push(LevelKind::Numa, "NUMA", m.per_cpu(|_| Some(m.online)));
        return out;
    };
    let mut distances: Vec<u32> = dist.values().copied().collect();
    distances.sort_unstable();
    distances.dedup();
    for &d in distances.iter().skip(1) {
        let spans = m.per_cpu(|c| {
            let from = nodes.node_of(c)?;
            let mut span = CpuSet::new();
            for (to, cpus) in nodes.by_id.iter().enumerate() {
                if dist.get(&(from, to)).is_some_and(|v| *v <= d) {
                    span = span.or(cpus);
                }
            }
            Some(span)
        });
        push(LevelKind::Numa, "NUMA", spans);
    }
    out
}

/// Keeps the candidates that nest, partition (below NUMA) and are not degenerate.
fn prune(m: &Machine, candidates: Vec<LevelSpans>) -> Vec<LevelSpans> {
    let mut kept: Vec<LevelSpans> = Vec::new();
    for c in candidates {
        let child = |cpu: usize| kept.last().map_or(single(cpu), |k| k.spans[cpu]);
        let nests = m
            .online
            .iter()
            .all(|cpu| child(cpu).is_subset(&c.spans[cpu]));
        let partitions = c.kind == LevelKind::Numa
            || m.online
                .iter()
                .all(|cpu| c.spans[cpu].iter().all(|o| c.spans[o] == c.spans[cpu]));
        let grows = m.online.iter().any(|cpu| child(cpu) != c.spans[cpu]);
        if nests && partitions && grows {
            kept.push(c);
        }
    }
    kept
}

/// Renames levels after `sched/domains/cpuN/domainM/name`, for each CPU whose number of
/// domains equals the number of kept levels that are not degenerate for it (the kernel drops
/// degenerate domains per CPU). Returns whether any name came from there.
fn apply_debugfs_names(dir: &Path, m: &Machine, chain: &mut [LevelSpans]) -> bool {
    if !dir.is_dir() {
        return false;
    }
    let mut votes: Vec<Vec<String>> = vec![Vec::new(); chain.len()];
    for cpu in m.online.iter() {
        let cpu_dir = dir.join(format!("cpu{cpu}"));
        let names: Vec<String> = (0..MAX_DOMAINS)
            .map_while(|d| read_trimmed(&cpu_dir.join(format!("domain{d}/name"))))
            .collect();
        let own: Vec<usize> = (0..chain.len())
            .filter(|&l| {
                let child = if l == 0 {
                    single(cpu)
                } else {
                    chain[l - 1].spans[cpu]
                };
                chain[l].spans[cpu] != child
            })
            .collect();
        if names.is_empty() || names.len() != own.len() || names.iter().any(|n| n.is_empty()) {
            continue;
        }
        for (l, name) in own.into_iter().zip(names) {
            votes[l].push(name);
        }
    }
    let mut named = false;
    for (level, names) in chain.iter_mut().zip(votes) {
        if let Some(name) = most_common(names) {
            level.kind = LevelKind::from_kernel_name(&name).unwrap_or(level.kind);
            level.name = name;
            named = true;
        }
    }
    named
}

/// The most frequent name, the first seen among equals.
fn most_common(names: Vec<String>) -> Option<String> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for n in names {
        match counts.iter_mut().find(|(c, _)| *c == n) {
            Some((_, k)) => *k += 1,
            None => counts.push((n, 1)),
        }
    }
    let best = counts.iter().map(|(_, k)| *k).max()?;
    counts.into_iter().find(|(_, k)| *k == best).map(|(n, _)| n)
}
