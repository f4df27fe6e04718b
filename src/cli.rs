//! The command line: clap definitions for every subcommand. Also the source of the shell
//! completions in completions/ and of the man page, so help text lives in one place.

use clap::{Args, Parser, Subcommand};

/// See what the Linux scheduler's load balancer is doing, and when it placed tasks wrongly.
#[derive(Debug, Parser)]
#[command(
    name = "lbscope",
    version,
    about,
    long_about = "lbscope watches the scheduler's tracepoints with BPF: every migration with its \
exact reason (wakeup, periodic/newidle/nohz balance, active balance, NUMA, affinity, ...) and the \
sched-domain level it crossed, run-queue latency histograms like runqlat's, and the time CPUs \
sat idle while tasks they could have run were waiting elsewhere.\n\nNeeds root (CAP_BPF and \
CAP_PERFMON) and a kernel with BTF. `lbscope doctor` says what this machine allows.",
    after_help = "Examples:\n  sudo lbscope report               one runqlat-style report per second\n  \
sudo lbscope report -i 5 -c 3 --json\n  sudo lbscope report -p 1234        one process, all its threads\n  \
sudo lbscope doctor                what this kernel allows"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print run-queue latency, migrations by reason and level, and idle-while-others-wait,
    /// per interval, from the live kernel.
    #[command(
        after_help = "Examples:\n  sudo lbscope report                    every second until Ctrl-C\n  \
sudo lbscope report -i 10 -c 1        one 10 s interval\n  \
sudo lbscope report --comm hackbench   only tasks named hackbench\n  \
sudo lbscope report --cpus 0-3 --json  JSON lines, CPUs 0-3\n\n\
Ctrl-C or SIGTERM print the interval so far and exit 0. The JSON fields are documented in the \
README (\"JSON output\")."
    )]
    Report(ReportArgs),
    /// Check what this machine allows: kernel, BTF, lockdown, privileges, which tracepoints
    /// and balancer hooks load, and the topology. Every problem says what to do.
    #[command(after_help = "Example:\n  sudo lbscope doctor")]
    Doctor(DoctorArgs),
    /// Print a shell completion script (the files in completions/ are made by this).
    #[command(
        after_help = "Examples:\n  lbscope completions bash > /etc/bash_completion.d/lbscope\n  \
lbscope completions zsh > ~/.zfunc/_lbscope\n  lbscope completions fish > ~/.config/fish/completions/lbscope.fish"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The completion script for `shell`, as `lbscope completions` prints it.
pub fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "lbscope", &mut out);
    out
}

/// Which tasks and CPUs a report covers.
#[derive(Debug, Args, Clone, Default)]
pub struct FilterArgs {
    /// Only this process (all its threads).
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<u32>,
    /// Only tasks with exactly this name (as in /proc/PID/comm).
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
    /// Only these CPUs, in the kernel's list format (0-3,8).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
}

/// Options of the live collector.
#[derive(Debug, Args, Clone)]
pub struct CollectArgs {
    /// Ring buffer size in MiB (a power of two). Larger loses fewer events under bursts.
    #[arg(long, value_name = "MIB", default_value_t = 16)]
    pub ringbuf_mb: u32,
    /// How to attach the tracepoint programs.
    #[cfg(feature = "bpf")]
    #[arg(long, value_enum, default_value = "auto")]
    pub attach: crate::source::live::AttachMode,
}

/// `lbscope report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Interval length in seconds (fractions allowed).
    #[arg(short = 'i', long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    /// Stop after this many intervals (default: until Ctrl-C).
    #[arg(short = 'c', long, value_name = "COUNT")]
    pub count: Option<u64>,
    /// One JSON object per interval, one per line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub collect: CollectArgs,
}

/// `lbscope doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as one JSON object.
    #[arg(long)]
    pub json: bool,
}
