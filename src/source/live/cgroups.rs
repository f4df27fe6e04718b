//! Names of cgroups: a cgroup's id in the unified (v2) hierarchy is the inode number of its
//! directory under the cgroup2 mount, so an id is named by finding that directory. The mount
//! is scanned when an unknown id comes up, at most once a second (ids of cgroups removed
//! since stay unnamed), and every directory found is remembered.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How deep the scan goes below the mount.
const MAX_DEPTH: usize = 16;
/// The least time between two scans.
const RESCAN_AFTER: Duration = Duration::from_secs(1);

/// Cgroup ids to paths (relative to the cgroup2 mount, `/` for its root).
#[derive(Debug, Default)]
pub struct CgroupNames {
    root: Option<PathBuf>,
    known: HashMap<u64, String>,
    last_scan: Option<Instant>,
}

impl CgroupNames {
    /// Names under the cgroup2 mount of this machine, if it has one.
    pub fn new() -> Self {
        CgroupNames {
            root: cgroup2_mount(),
            ..Default::default()
        }
    }

    /// The path of cgroup `id`, scanning the mount again if it is not known yet.
    pub fn name(&mut self, id: u64) -> Option<String> {
        if let Some(p) = self.known.get(&id) {
            return Some(p.clone());
        }
        let root = self.root.clone()?;
        if self.last_scan.is_some_and(|t| t.elapsed() < RESCAN_AFTER) {
            return None;
        }
        self.last_scan = Some(Instant::now());
        scan(&root, &root, 0, &mut self.known);
        self.known.get(&id).cloned()
    }
}

pub use crate::source::cgroup2::cgroup2_mount;

fn scan(root: &Path, dir: &Path, depth: usize, known: &mut HashMap<u64, String>) {
    let Ok(meta) = std::fs::metadata(dir) else {
        return;
    };
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    known.insert(meta.ino(), format!("/{}", rel.display()));
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            scan(root, &e.path(), depth + 1, known);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_tree_is_named_by_inode() {
        let base = std::env::temp_dir().join(format!("lbscope-cg-{}", std::process::id()));
        std::fs::create_dir_all(base.join("job/a")).unwrap();
        let mut known = HashMap::new();
        scan(&base, &base, 0, &mut known);
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        assert_eq!(known[&ino(&base)], "/");
        assert_eq!(known[&ino(&base.join("job"))], "/job");
        assert_eq!(known[&ino(&base.join("job/a"))], "/job/a");
        std::fs::remove_dir_all(&base).unwrap();
        // Unknown ids without a mount stay unnamed.
        let mut n = CgroupNames::default();
        assert_eq!(n.name(12345), None);
    }
}
