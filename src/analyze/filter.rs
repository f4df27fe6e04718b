//! What the user asked to see (`-p`, `--comm`, `--cpus`) and the analyzer's settings. A filter
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
    /// `--cpus LIST`: latency samples of tasks starting to run on these CPUs, migrations with
    /// source or destination here, domains whose span meets the set.
    pub cpus: Option<CpuSet>,
}

impl Filter {
    /// Whether a task passes the `-p` and `--comm` parts. `tgid` and `comm` are what the
    /// analyzer knows of the task (`None` = not seen yet); an unknown task does not match a
    /// filter that needs the unknown fact, except that a thread whose pid equals the wanted
    /// tgid is that process's leader whatever else is known.
    pub fn matches_task(&self, pid: Pid, tgid: Option<u32>, comm: Option<&str>) -> bool {
        if let Some(want) = self.tgid {
            let ok = match tgid {
                Some(t) => t == want,
                None => pid == want,
            };
            if !ok {
                return false;
            }
        }
        match &self.comm {
            Some(want) => comm == Some(want.as_str()),
            None => true,
        }
    }

    /// Whether the filter says anything about tasks (fast path when it does not).
    pub fn filters_tasks(&self) -> bool {
        self.tgid.is_some() || self.comm.is_some()
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
