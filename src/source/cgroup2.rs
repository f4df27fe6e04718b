//! Where this machine mounts the unified (v2) cgroup hierarchy: the live source names
//! cgroups relative to it, and `--cgroup` takes paths under it.

use std::path::PathBuf;

/// The cgroup2 mount point, from /proc/self/mountinfo.
pub fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_in(&info)
}

/// The first cgroup2 mount point of a mountinfo text.
fn mount_in(info: &str) -> Option<PathBuf> {
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next() == Some("cgroup2"))
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cgroup2_line_of_mountinfo() {
        let info = "24 1 0:22 / /sys rw - sysfs sysfs rw\n\
                    35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
        assert_eq!(
            super::mount_in(info),
            Some(std::path::PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(
            super::mount_in("24 1 0:22 / /sys rw - sysfs sysfs rw\n"),
            None
        );
    }
}
