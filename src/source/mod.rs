//! Sources of [`Event`]s: the live kernel (feature `bpf`) and, later, recordings. Every source
//! feeds the same channel of [`SourceMsg`]s, so nothing downstream knows where events came from.

pub mod attach;
mod batch;
pub mod cgroup2;
pub mod file;
#[cfg(feature = "bpf")]
pub mod live;
pub mod synthetic;

pub use batch::{Batch, BatchPool, CHUNK};

/// Batches a source may have queued before it waits for the consumer. The channel is bounded
/// so that a consumer starved of CPU makes the kernel's ring buffer fill (and the losses
/// counted) instead of user-space memory grow without limit.
pub const QUEUE_BATCHES: usize = 4;

/// What a source sends down the channel.
#[derive(Debug)]
pub enum SourceMsg {
    /// Events in delivery order, ending with a clock event.
    Batch(Batch),
    /// Something the user should know that does not stop collection.
    Warning(String),
    /// The source has nothing more.
    End,
}

/// Why a source could not start. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Missing capabilities.
    #[error("needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) to load BPF programs: run as root, e.g. `sudo lbscope ...`")]
    Privileges,
    /// No kernel BTF.
    #[error("kernel BTF not found at {0}: lbscope needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels since 5.4 have it)")]
    NoBtf(String),
    /// A tracepoint the tool cannot do without is absent.
    #[error("the kernel has no tracepoint '{0}', which lbscope needs: run `lbscope doctor` for what this kernel offers (needs CONFIG_TRACEPOINTS and CONFIG_SCHED_DEBUG-era scheduler tracepoints, kernel 5.15 or later)")]
    MissingTracepoint(String),
    /// Loading or attaching failed.
    #[error(
        "loading the BPF programs failed: {0}. Run `lbscope doctor` to see what this kernel allows"
    )]
    Load(String),
    /// `--balancer-attach fentry|kprobe`: the kernel refused that kind of balancer hook.
    #[error("--balancer-attach {0}: the kernel refused the balancer hooks ({1}). Run `lbscope doctor` to see which kind this kernel allows; `--balancer-attach auto` runs from tracepoints alone where it allows none")]
    BalancerRefused(&'static str, String),
    /// BPF support was not compiled in.
    #[error("this lbscope was built without BPF support (--no-default-features): rebuild with the default `bpf` feature, or use a recording")]
    NoBpf,
}

/// A file's contents, trimmed (`None` when it cannot be read).
pub fn read_trim(p: &str) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The running kernel's release (`uname -r`), "unknown" when /proc does not say.
pub fn kernel_release() -> String {
    read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}
