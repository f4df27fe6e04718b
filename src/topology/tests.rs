//! Tests of topology reading against the sysfs trees in tests/fixtures/sysfs, copies of them
//! with files removed or garbled, synthetic topologies and the host.

use super::*;
use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysfs")
        .join(name)
}

fn fixture(name: &str) -> Topology {
    let t = Topology::from_root(&fixture_dir(name)).expect("fixture reads");
    check_invariants(&t);
    t
}

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

fn names(t: &Topology) -> Vec<&str> {
    t.levels.iter().map(|l| l.name.as_str()).collect()
}

fn keys(t: &Topology) -> Vec<&str> {
    t.levels.iter().map(|l| l.key.as_str()).collect()
}

fn spans(t: &Topology, level: usize) -> Vec<String> {
    t.levels[level]
        .domains
        .iter()
        .map(|d| d.span.to_string())
        .collect()
}

fn groups(d: &Domain) -> Vec<String> {
    d.groups.iter().map(|g| g.to_string()).collect()
}

/// The module's invariants, on any topology.
fn check_invariants(t: &Topology) {
    assert_eq!(t.nr_cpus, t.online.iter().last().map_or(0, |c| c + 1));
    let mut seen_keys = Vec::new();
    for (li, level) in t.levels.iter().enumerate() {
        assert!(
            !seen_keys.contains(&level.key),
            "duplicate key {}",
            level.key
        );
        seen_keys.push(level.key.clone());
        for cpu in t.online.iter() {
            let owners = level
                .domains
                .iter()
                .filter(|d| d.cpus.contains(cpu))
                .count();
            assert_eq!(
                owners, 1,
                "cpu {cpu} owns {owners} domains at {}",
                level.key
            );
            let span = t.span(li, cpu).unwrap();
            assert!(span.contains(cpu));
            if li > 0 {
                assert!(t.span(li - 1, cpu).unwrap().is_subset(&span));
            }
        }
        for d in &level.domains {
            assert!(d.span.is_subset(&t.online) && d.cpus.is_subset(&d.span));
            let cover = d.groups.iter().fold(CpuSet::new(), |a, g| a.or(g));
            assert_eq!(cover, d.span, "groups cover the span at {}", level.key);
            assert!(d.groups.windows(2).all(|w| w[0].first() < w[1].first()));
            if level.kind != LevelKind::Numa {
                assert_eq!(d.cpus, d.span);
            }
        }
        let firsts: Vec<_> = level.domains.iter().map(|d| d.span.first()).collect();
        assert!(firsts.windows(2).all(|w| w[0] <= w[1]));
    }
}

/// A scratch copy of a fixture, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn of(name: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "lbscope-topology-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        copy_tree(&fixture_dir(name), &dir);
        Scratch(dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        fs::write(self.path(rel), text).unwrap();
    }

    fn remove(&self, rel: &str) {
        let p = self.path(rel);
        if p.is_dir() {
            fs::remove_dir_all(p).unwrap();
        } else {
            fs::remove_file(p).unwrap();
        }
    }

    fn read(&self) -> Result<Topology, TopologyError> {
        let t = Topology::from_root(&self.0);
        if let Ok(t) = &t {
            check_invariants(t);
        }
        t
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            fs::copy(e.path(), target).unwrap();
        }
    }
}

const CPU: &str = "sys/devices/system/cpu";

#[test]
fn two_sockets_smt_numa() {
    let t = fixture("2s-smt-numa");
    assert_eq!(t.nr_cpus, 16);
    assert_eq!(t.source, TopologySource::Sysfs);
    assert_eq!(names(&t), ["SMT", "MC", "NUMA"]);
    assert_eq!(keys(&t), ["smt", "llc", "numa"]);
    let kinds: Vec<_> = t.levels.iter().map(|l| l.kind).collect();
    assert_eq!(kinds, [LevelKind::Smt, LevelKind::Llc, LevelKind::Numa]);
    assert_eq!(spans(&t, 0)[..3], ["0,8", "1,9", "2,10"]);
    assert_eq!(t.levels[0].domains.len(), 8);
    assert_eq!(groups(&t.levels[0].domains[0]), ["0", "8"]);
    assert_eq!(spans(&t, 1), ["0-3,8-11", "4-7,12-15"]);
    assert_eq!(
        groups(&t.levels[1].domains[1]),
        ["4,12", "5,13", "6,14", "7,15"]
    );
    assert_eq!(spans(&t, 2), ["0-15"]);
    assert_eq!(groups(&t.levels[2].domains[0]), ["0-3,8-11", "4-7,12-15"]);
    assert_eq!(t.numa_nodes, [set("0-3,8-11"), set("4-7,12-15")]);
    assert_eq!(t.node_of(12), Some(1));

    assert_eq!(t.crossed_level(8, 0), Some(0));
    assert_eq!(t.crossed_level(1, 8), Some(1));
    assert_eq!(t.crossed_level(0, 4), Some(2));
    assert_eq!(t.crossed_level(3, 3), None);
    assert_eq!(t.crossed_level(0, 16), None);
    assert_eq!(t.level_key(t.crossed_level(0, 9)), "llc");
    assert_eq!(t.level_key(None), "unknown");
    assert_eq!(t.level_key(Some(7)), "unknown");
    assert_eq!(t.level_by_key("numa"), Some(2));
    assert_eq!(t.domain_index(1, 12), Some(1));
    assert_eq!(t.domain_index(0, 13), Some(5));
    assert_eq!(t.domain_of(1, 9).unwrap().span, set("0-3,8-11"));
    assert_eq!(t.domain_of(3, 0), None);
}

#[test]
fn kunpeng_clusters() {
    let t = fixture("kunpeng-cluster");
    assert_eq!(names(&t), ["CLS", "MC"]);
    assert_eq!(keys(&t), ["cluster", "llc"]);
    assert_eq!(spans(&t, 0), ["0-3", "4-7", "8-11", "12-15"]);
    assert_eq!(groups(&t.levels[0].domains[2]), ["8", "9", "10", "11"]);
    assert_eq!(
        groups(&t.levels[1].domains[0]),
        ["0-3", "4-7", "8-11", "12-15"]
    );
    assert_eq!(t.level_key(t.crossed_level(0, 1)), "cluster");
    assert_eq!(t.level_key(t.crossed_level(0, 5)), "llc");
    assert_eq!(t.numa_nodes, [set("0-15")]);
}

#[test]
fn flat_two_cpus() {
    let t = fixture("flat2");
    assert_eq!(t.nr_cpus, 2);
    assert_eq!(names(&t), ["MC"]);
    assert_eq!(keys(&t), ["llc"]);
    assert_eq!(spans(&t, 0), ["0-1"]);
    assert_eq!(groups(&t.levels[0].domains[0]), ["0", "1"]);
    assert_eq!(t.crossed_level(1, 0), Some(0));
    assert_eq!(
        t,
        Topology::synthetic_flat(2).with_source(TopologySource::Sysfs)
    );
}

impl Topology {
    fn with_source(mut self, source: TopologySource) -> Topology {
        self.source = source;
        self
    }
}

#[test]
fn four_nodes_two_numa_levels() {
    let t = fixture("4node-numa");
    assert_eq!(names(&t), ["MC", "NUMA", "NUMA"]);
    assert_eq!(keys(&t), ["llc", "numa", "numa2"]);
    assert_eq!(spans(&t, 0), ["0-3", "4-7", "8-11", "12-15"]);
    assert_eq!(spans(&t, 1), ["0-7", "8-15"]);
    assert_eq!(groups(&t.levels[1].domains[1]), ["8-11", "12-15"]);
    assert_eq!(groups(&t.levels[2].domains[0]), ["0-7", "8-15"]);
    assert_eq!(t.level_key(t.crossed_level(0, 5)), "numa");
    assert_eq!(t.level_key(t.crossed_level(0, 9)), "numa2");
    assert_eq!(t.numa_nodes.len(), 4);
}

#[test]
fn overlapping_numa_ring() {
    // Four nodes in a ring: neighbours at 20, opposite nodes at 30. The 20 level overlaps.
    let s = Scratch::of("4node-numa");
    let rows = ["10 20 30 20", "20 10 20 30", "30 20 10 20", "20 30 20 10"];
    for (n, row) in rows.iter().enumerate() {
        s.write(&format!("sys/devices/system/node/node{n}/distance"), row);
    }
    let t = s.read().unwrap();
    assert_eq!(keys(&t), ["llc", "numa", "numa2"]);
    let d = t.domain_of(1, 0).unwrap();
    assert_eq!((d.span, d.cpus), (set("0-7,12-15"), set("0-3")));
    assert_eq!(groups(d), ["0-3", "4-7", "12-15"]);
    assert_eq!(t.levels[1].domains.len(), 4);
    assert_eq!(t.crossed_level(8, 0), Some(2));
    assert_eq!(t.crossed_level(0, 4), Some(1));
    assert_eq!(t.crossed_level(4, 12), Some(2));
    assert_eq!(t.crossed_level(8, 12), Some(1));
}

#[test]
fn debugfs_names_take_precedence() {
    let t = fixture("amd-ccx-debugfs");
    assert_eq!(t.source, TopologySource::Debugfs);
    assert_eq!(names(&t), ["SMT", "MC", "DIE"]);
    assert_eq!(keys(&t), ["smt", "llc", "package"]);
    assert_eq!(t.levels[2].kind, LevelKind::Package);
    assert_eq!(spans(&t, 1), ["0-3,8-11", "4-7,12-15"]);

    let s = Scratch::of("amd-ccx-debugfs");
    s.remove("sys/kernel/debug");
    let t = s.read().unwrap();
    assert_eq!(
        (t.source, names(&t)),
        (TopologySource::Sysfs, vec!["SMT", "MC", "PKG"])
    );
}

#[test]
fn debugfs_renames_kind_and_ignores_mismatched_cpus() {
    let s = Scratch::of("amd-ccx-debugfs");
    let dom = "sys/kernel/debug/sched/domains";
    for cpu in 0..16 {
        s.write(&format!("{dom}/cpu{cpu}/domain2/name"), "NODE\n");
    }
    // CPU 3 shows fewer domains than sysfs gives it: its names are not used.
    s.remove(&format!("{dom}/cpu3/domain2"));
    s.write(&format!("{dom}/cpu3/domain1/name"), "BOGUS");
    let t = s.read().unwrap();
    assert_eq!(t.source, TopologySource::Debugfs);
    assert_eq!(names(&t), ["SMT", "MC", "NODE"]);
    assert_eq!(keys(&t), ["smt", "llc", "numa"]);

    // No CPU matches: sysfs names.
    for cpu in 0..16 {
        let _ = fs::remove_dir_all(s.path(&format!("{dom}/cpu{cpu}/domain2")));
    }
    let t = s.read().unwrap();
    assert_eq!(
        (t.source, names(&t)),
        (TopologySource::Sysfs, vec!["SMT", "MC", "PKG"])
    );
}

#[test]
fn missing_files_drop_levels_only() {
    let s = Scratch::of("2s-smt-numa");
    for cpu in 0..16 {
        s.remove(&format!("{CPU}/cpu{cpu}/cache"));
        s.remove(&format!("{CPU}/cpu{cpu}/topology/cluster_cpus_list"));
    }
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["SMT", "PKG", "NUMA"]);
    assert_eq!(keys(&t), ["smt", "package", "numa"]);

    s.remove("sys/devices/system/node");
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["SMT", "PKG"]);
    assert_eq!(spans(&t, 1), ["0-15"]);
    assert_eq!(t.numa_nodes, [set("0-15")]);

    // One CPU without topology files: no SMT level at all.
    s.remove(&format!("{CPU}/cpu3/topology"));
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["PKG"]);
    assert_eq!(groups(&t.levels[0].domains[0]).len(), 16);
}

#[test]
fn package_from_ids_and_old_file_names() {
    let s = Scratch::of("2s-smt-numa");
    for cpu in 0..16 {
        for f in ["package_cpus_list", "core_siblings_list", "core_cpus_list"] {
            s.remove(&format!("{CPU}/cpu{cpu}/topology/{f}"));
        }
        s.remove(&format!("{CPU}/cpu{cpu}/cache/index3"));
    }
    // The L2 (per core) is now the LLC, equal to SMT; SMT comes from thread_siblings_list.
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["SMT", "PKG", "NUMA"]);
    assert_eq!(spans(&t, 0)[0], "0,8");

    // Partial node data: PKG falls back to physical_package_id, and no level spans both.
    s.write("sys/devices/system/node/node1/cpulist", "?");
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["SMT", "PKG"]);
    assert_eq!(spans(&t, 1), ["0-3,8-11", "4-7,12-15"]);
    assert_eq!(t.crossed_level(0, 4), None);
}

#[test]
fn weird_cluster_data_is_dropped() {
    // A cluster that does not partition the CPUs.
    let s = Scratch::of("kunpeng-cluster");
    s.write(&format!("{CPU}/cpu0/topology/cluster_cpus_list"), "0-5\n");
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["MC"]);

    // A cluster wider than the LLC: MC does not nest over it and is dropped instead.
    let s = Scratch::of("2s-smt-numa");
    for cpu in 0..16 {
        s.write(
            &format!("{CPU}/cpu{cpu}/topology/cluster_cpus_list"),
            "0-15\n",
        );
    }
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["SMT", "CLS"]);
}

#[test]
fn numa_in_package_drops_pkg() {
    // Sub-NUMA clustering: one package, two nodes; x86 drops PKG and keeps NODE.
    let s = Scratch::of("2s-smt-numa");
    for cpu in 0..16 {
        for f in ["package_cpus_list", "core_siblings_list"] {
            s.write(&format!("{CPU}/cpu{cpu}/topology/{f}"), "0-15\n");
        }
    }
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["SMT", "MC", "NUMA"]);
    // An LLC per two cores, smaller than the node: NODE shows up between MC and NUMA.
    for cpu in 0..16 {
        let llc = ["0-1,8-9", "2-3,10-11", "4-5,12-13", "6-7,14-15"][cpu % 8 / 2];
        s.write(&format!("{CPU}/cpu{cpu}/cache/index3/shared_cpu_list"), llc);
    }
    let t = s.read().unwrap();
    assert_eq!(names(&t), ["SMT", "MC", "NODE", "NUMA"]);
    assert_eq!(keys(&t), ["smt", "llc", "numa", "numa2"]);
    assert_eq!(spans(&t, 2), ["0-3,8-11", "4-7,12-15"]);
}

#[test]
fn bad_online_file_is_an_error() {
    let s = Scratch::of("flat2");
    s.write(&format!("{CPU}/online"), "zz\n");
    let e = s.read().unwrap_err();
    assert!(matches!(e, TopologyError::OnlineGarbled { .. }));
    assert!(e.to_string().contains("`zz`"), "{e}");

    s.write(&format!("{CPU}/online"), "0-4000\n");
    assert!(matches!(s.read(), Err(TopologyError::OnlineGarbled { .. })));

    s.write(&format!("{CPU}/online"), "\n");
    assert!(matches!(s.read(), Err(TopologyError::NoCpus { .. })));

    s.remove(&format!("{CPU}/online"));
    let e = s.read().unwrap_err();
    assert!(matches!(e, TopologyError::OnlineUnreadable { .. }));
    assert!(e.to_string().contains("mount"), "{e}");
}

#[test]
fn garbage_elsewhere_is_tolerated() {
    let s = Scratch::of("2s-smt-numa");
    s.write(&format!("{CPU}/online"), "0-1,4\n");
    s.write(&format!("{CPU}/cpu0/cache/index3/level"), "three");
    s.write(&format!("{CPU}/cpu1/topology/core_cpus_list"), "x");
    s.write(&format!("{CPU}/cpu1/topology/thread_siblings_list"), "y");
    s.write("sys/devices/system/node/node1/distance", "21");
    let t = s.read().unwrap();
    assert_eq!((t.nr_cpus, t.online), (5, set("0-1,4")));
    // cpu0's LLC falls back to its L2 (0,8 -> 0), so MC does not partition; cpu1 has no SMT
    // span; node1's distance row is short, so one NUMA level spans all.
    assert_eq!(names(&t), ["PKG", "NUMA"]);
    assert_eq!(t.crossed_level(4, 0), Some(1));
    assert_eq!(t.level_key(Some(1)), "numa");
}

#[test]
fn single_cpu_has_no_levels() {
    let s = Scratch::of("flat2");
    s.write(&format!("{CPU}/online"), "0\n");
    let t = s.read().unwrap();
    assert!(t.levels.is_empty());
    assert_eq!(t.crossed_level(0, 1), None);
}

#[test]
fn synthetic_levels() {
    use LevelKind::*;
    let t = Topology::synthetic(&[(Smt, "SMT", 2), (Llc, "MC", 8), (Numa, "NUMA", 16)], 16);
    check_invariants(&t);
    assert_eq!(t.source, TopologySource::Synthetic);
    assert_eq!(keys(&t), ["smt", "llc", "numa"]);
    assert_eq!(spans(&t, 0)[7], "14-15");
    assert_eq!(
        groups(&t.levels[1].domains[1]),
        ["8-9", "10-11", "12-13", "14-15"]
    );
    assert_eq!(groups(&t.levels[2].domains[0]), ["0-7", "8-15"]);
    assert_eq!(t.numa_nodes, [set("0-7"), set("8-15")]);
    assert_eq!(t.crossed_level(9, 8), Some(0));
    assert_eq!(t.crossed_level(15, 8), Some(1));
    assert_eq!(t.crossed_level(0, 8), Some(2));

    let f = Topology::synthetic_flat(4);
    check_invariants(&f);
    assert_eq!((names(&f), keys(&f)), (vec!["MC"], vec!["llc"]));
    assert_eq!(groups(&f.levels[0].domains[0]), ["0", "1", "2", "3"]);
    assert_eq!(f.numa_nodes, [set("0-3")]);

    let two = Topology::synthetic(&[(Numa, "NUMA", 4), (Numa, "NUMA", 8)], 8);
    assert_eq!(keys(&two), ["numa", "numa2"]);
}

#[test]
fn serde_round_trip() {
    let t = fixture("2s-smt-numa");
    let json = serde_json::to_string(&t).unwrap();
    assert!(json.contains(r#""source":"sysfs""#), "{json}");
    assert!(json.contains(r#""kind":"llc""#));
    assert!(json.contains(r#""span":"0-3,8-11""#));
    let back: Topology = serde_json::from_str(&json).unwrap();
    assert_eq!(back, t);
}

#[test]
fn detects_this_host() {
    let t = Topology::detect().expect("the host's topology reads");
    check_invariants(&t);
    assert!(!t.online.is_empty());
    if t.online.len() > 1 {
        assert!(!t.levels.is_empty());
        assert_eq!(
            t.levels.last().unwrap().domains.len(),
            1,
            "top level spans all CPUs"
        );
    }
    // The development host: 2 CPUs, no SMT, one shared L3, one node.
    let read = |p: &str| fs::read_to_string(p).unwrap_or_default().trim().to_string();
    if read("/sys/devices/system/cpu/online") == "0-1"
        && read("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") == "0"
        && read("/sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list") == "0-1"
    {
        assert_eq!(t.nr_cpus, 2);
        assert_eq!(keys(&t), ["llc"]);
    }
}
