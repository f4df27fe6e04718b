//! What the user asked to see (`-p`, `--comm`, `--cgroup`, `--cpus`) and the analyzer's settings. A filter
//! only narrows what is *reported*; the analyzer still tracks every task and CPU, because a
//! filtered-out event can change the state a reported one depends on.

use crate::cpuset::CpuSet;
use crate::event::Pid;

/// Which tasks and CPUs the figures are about. The empty filter matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// `-p PID`: every thread of the process with this thread-group id.
    pub tgid: Option<u32>,
    /// `--comm NAME`: tasks whose comm is exactly this.
    pub comm: Option<String>,
    /// `--cgroup PATH`: tasks in this cgroup v2 directory or below it, as a path relative to
    /// the cgroup2 mount (`/system.slice/foo.service`, no trailing `/`), the way `Cgroup`
    /// events name cgroups. Settings never leave the root `/` here (it matches everything).
    pub cgroup: Option<String>,
    /// `--cpus LIST`: latency samples of tasks starting to run on these CPUs, migrations with
    /// source or destination here, domains whose span meets the set.
    pub cpus: Option<CpuSet>,
}

impl Filter {
    /// Whether every task passes (no `-p`, `--comm` or `--cgroup`): then what a task is
    /// need not be looked up to filter it.
    pub fn matches_every_task(&self) -> bool {
        self.tgid.is_none() && self.comm.is_none() && self.cgroup.is_none()
    }

    /// Whether a task passes the `-p`, `--comm` and `--cgroup` parts. `tgid`, `comm` and
    /// `cgroup` (its cgroup's path) are what the analyzer knows of the task (`None` = not
    /// seen yet); an unknown task does not match a filter that needs the unknown fact, except
    /// that a thread whose pid equals the wanted tgid is that process's leader whatever else
    /// is known.
    pub fn matches_task(
        &self,
        pid: Pid,
        tgid: Option<u32>,
        comm: Option<&str>,
        cgroup: Option<&str>,
    ) -> bool {
        if let Some(want) = self.tgid {
            let ok = match tgid {
                Some(t) => t == want,
                None => pid == want,
            };
            if !ok {
                return false;
            }
        }
        if let Some(want) = &self.comm {
            if comm != Some(want.as_str()) {
                return false;
            }
        }
        match &self.cgroup {
            Some(_) => cgroup.is_some_and(|c| self.matches_cgroup(c)),
            None => true,
        }
    }

    /// Whether a task in the cgroup at `path` passes `--cgroup`: the path is the wanted one
    /// or one below it (`/a` takes `/a` and `/a/b`, never `/ab`).
    pub fn matches_cgroup(&self, path: &str) -> bool {
        match &self.cgroup {
            None => true,
            Some(want) => {
                path.strip_prefix(want.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                    || want == "/"
            }
        }
    }

    /// Whether the filter says anything about tasks (fast path when it does not).
    pub fn filters_tasks(&self) -> bool {
        self.tgid.is_some() || self.comm.is_some() || self.cgroup.is_some()
    }

    /// Whether samples on `cpu` are reported.
    pub fn matches_cpu(&self, cpu: u32) -> bool {
        self.cpus.as_ref().is_none_or(|s| s.contains(cpu as usize))
    }

    /// Whether a migration between these CPUs is reported.
    pub fn matches_move(&self, src: u32, dst: u32) -> bool {
        self.matches_cpu(src) || self.matches_cpu(dst)
    }

    /// Whether a domain with this span is reported.
    pub fn matches_span(&self, span: &CpuSet) -> bool {
        self.cpus.as_ref().is_none_or(|s| s.intersects(span))
    }
}

/// The analyzer's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnalyzerConfig {
    /// Snapshot interval in event-time nanoseconds (0 is treated as 1).
    pub interval_ns: u64,
    /// What to report.
    pub filter: Filter,
    /// The balancer model's rules and finding thresholds.
    pub model: crate::model::ModelConfig,
}

impl Default for AnalyzerConfig {
    /// One-second intervals, no filter.
    fn default() -> Self {
        AnalyzerConfig {
            interval_ns: 1_000_000_000,
            filter: Filter::default(),
            model: crate::model::ModelConfig::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cg(path: &str) -> Filter {
        Filter {
            cgroup: Some(path.to_string()),
            ..Filter::default()
        }
    }

    #[test]
    fn a_cgroup_takes_itself_and_its_descendants_only() {
        let f = cg("/a");
        assert!(f.matches_cgroup("/a"));
        assert!(f.matches_cgroup("/a/b"));
        assert!(f.matches_cgroup("/a/b/c"));
        assert!(!f.matches_cgroup("/ab"), "a sibling sharing the prefix");
        assert!(!f.matches_cgroup("/ab/a"));
        assert!(!f.matches_cgroup("/"));
        assert!(!f.matches_cgroup("/b/a"));
        assert!(cg("/").matches_cgroup("/x"));
        assert!(Filter::default().matches_cgroup("/anything"));
    }

    #[test]
    fn an_unknown_cgroup_does_not_match_and_the_parts_combine() {
        let f = cg("/a");
        assert!(f.filters_tasks());
        assert!(!f.matches_task(5, Some(5), Some("x"), None));
        assert!(f.matches_task(5, Some(5), Some("x"), Some("/a/s")));
        let both = Filter {
            comm: Some("x".into()),
            ..cg("/a")
        };
        assert!(both.matches_task(5, None, Some("x"), Some("/a")));
        assert!(!both.matches_task(5, None, Some("y"), Some("/a")));
        assert!(!both.matches_task(5, None, Some("x"), Some("/b")));
        assert!(Filter::default().matches_task(5, None, None, None));
    }
}
