//! The command line: clap definitions for every subcommand. Also the source of the shell
//! completions in completions/ and of the man page, so help text lives in one place.

use clap::{Args, Parser, Subcommand};

/// One sentence per finding kind, shown after `report --help` and `diff --help` (a macro so
/// that `concat!` can place it in the help text).
macro_rules! findings_help {
    () => {
        "Findings (wrong placements the balancer model flags; see README \"Findings\"):\n\
missed_pull\n    a CPU stayed idle longer than the balancer's rules allow while a task allowed on it waited\n\
busy_wakeup\n    a wakeup queued a task on a busy CPU while its LLC had an idle CPU it was allowed on\n\
harmful_migration\n    a balancer move widened the imbalance of its two groups, or left its own NUMA node idle\n\
ping_pong\n    a task moved A -> B -> A within --ping-pong-ms\n\
churn\n    a domain moved more than --churn-per-s tasks a second while its imbalance did not fall\n\
uneven_spread\n    one process's (or a multi-process cgroup's) threads sat unevenly over NUMA nodes (or LLCs) for --spread-hold-ms while capacity was free"
    };
}

/// The findings' explanation, as `--help` shows it.
pub const FINDINGS_HELP: &str = findings_help!();

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
sudo lbscope top                   the live TUI\n  \
lbscope top --demo                 the TUI over a shipped recording\n  \
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
        after_help = concat!("Examples:\n  sudo lbscope report                    every second until Ctrl-C\n  \
sudo lbscope report -i 10 -c 1        one 10 s interval\n  \
sudo lbscope report --comm hackbench   only tasks named hackbench\n  \
sudo lbscope report --cpus 0-3 --json  JSON lines, CPUs 0-3\n\n\
Ctrl-C or SIGTERM print the interval so far and exit 0. The JSON fields are documented in the \
README (\"JSON output\").\n\n", findings_help!())
    )]
    Report(ReportArgs),
    /// The live TUI: CPUs, sched domains, run-queue latency, migrations and findings,
    /// refreshed every interval.
    #[command(
        after_help = "Examples:\n  sudo lbscope top\n  sudo lbscope top -i 2 --comm postgres\n  \
lbscope top --demo                 a shipped recording, no root needed\n\n\
Keys: tab and 1-6 switch views, arrows or j/k move, / filters by process name, p or space \
pauses, +/- change the interval, ? lists every key, q or Ctrl-C quits."
    )]
    Top(TopArgs),
    /// The TUI over a recording: the same views, with a time cursor, pause, step, seek and
    /// speed, and the recording's metadata on screen.
    #[command(
        after_help = "Examples:\n  lbscope replay run.lbs\n  lbscope replay run.lbs -i 5 --comm hackbench\n\n\
Keys: left/right seek one interval, p pauses, n steps, [ and ] change the speed, +/- the \
interval; ? lists every key."
    )]
    Replay(ReplayArgs),
    /// Record every event the analyzer needs to a file, for `report`, `diff` and `export`
    /// later, on any machine.
    #[command(
        after_help = "Examples:\n  sudo lbscope record -o before.lbs --duration 30\n  \
sudo lbscope record -o run.lbs                 until Ctrl-C\n  lbscope report run.lbs\n\n\
The recording holds the whole machine: filter when reporting (-p, --comm, --cpus). It is \
written in checksummed chunks at least once a second, so a crash or kill -9 loses at most the \
last second. Ctrl-C or SIGTERM finish the file cleanly. Files are created mode 0600.\n\n\
With --ring SECS only the last SECS seconds are kept, in memory, and written at the first \
--trigger, at SIGUSR1 or at the end:\n  \
sudo lbscope record --ring 30 --trigger 'p99>=10ms' -o catch.lbs"
    )]
    Record(RecordArgs),
    /// Keep tracing in the foreground and expose the figures as OpenMetrics (Prometheus) at
    /// http://ADDR:PORT/metrics.
    #[command(
        after_help = "Examples:\n  sudo lbscope serve                         http://127.0.0.1:9464/metrics\n  \
sudo lbscope serve --listen 0.0.0.0:9464    reachable from other hosts\n  \
sudo lbscope serve --comm postgres -i 5     one process's figures, every 5 s\n\n\
Runs until SIGINT or SIGTERM; examples/lbscope.service runs it under systemd with the \
capabilities it needs. The metrics advance when an interval closes; a scrape returns the \
intervals closed so far and never waits for the tracer. Metric names and labels are \
documented in the README (\"Metrics\").\n\n\
Flight recorder: with --ring SECS --dump-dir DIR the last SECS seconds of events stay in \
memory and are written to DIR as an ordinary recording (lbscope-<UTC time>-<trigger>.lbs, \
mode 0600) when a --trigger holds for an interval, on SIGUSR1, or on POST /dump with \
--dump-on-post:\n  \
sudo lbscope serve --ring 60 --dump-dir /var/lib/lbscope --trigger 'missed_pull>=5/s' \\\n    \
--trigger 'p99>=10ms'\n  \
sudo kill -USR1 $(pidof lbscope)              dump now\n\
Dumps are capped per hour (--max-dumps-per-hour) and by the directory's size \
(--dump-dir-max-mb); a dump that cannot be written is logged and counted \
(lbscope_dump_failures_total) and serving goes on."
    )]
    Serve(ServeArgs),
    /// Compare two recordings, or two sides of several runs each: run-queue latency,
    /// migrations by reason and level, idle-while-others-wait, the balancer's own counters
    /// (schedstat's, per level and idle type) and lost events, with whether each change is
    /// beyond the noise.
    #[command(after_help = concat!("Examples:\n  lbscope diff before.lbs after.lbs\n  \
lbscope diff eevdf.lbs scx.lbs --json\n  \
lbscope diff base-1.lbs base-2.lbs base-3.lbs -- new-1.lbs new-2.lbs new-3.lbs\n  \
lbscope diff runs/6.1/ runs/6.12/ --format markdown\n\n  \
lbscope diff before.lbs after.lbs --tui\n\n\
Sides: two arguments are the baseline and the new side, each a recording or a directory \
whose .lbs files (in name order) are its runs; with more, the baseline's come before `--` \
and the new side's after it (options go before `--`).\n\n\
Noise, one run a side: each change carries a 95% bootstrap interval over the recordings' \
intervals (-i). Record at least a few intervals per run.\n\
Noise, several runs a side: runs are the unit. Each figure is computed per run; a side \
shows the mean and the runs' standard deviation; the 95% interval of mean(new) - \
mean(baseline) is Welch's t interval (unequal variances, Welch-Satterthwaite degrees of \
freedom), valid for few runs (2 or more a side; 5 or more to see small changes), and the \
JSON and Markdown give its p-value. Runs should be independent: a fresh boot or at least a \
fresh workload each.\n\
`*` marks changes whose interval excludes zero and that are not trivially small.\n\n\
The TUI (--tui) shows the same rows: with several runs a side, the means and Welch's \
intervals, and each side's histograms pooled over its runs.\n\n", findings_help!()))]
    Diff(DiffArgs),
    /// Convert a recording for other tools: Perfetto (ui.perfetto.dev), JSON lines, or both
    /// in one pass.
    #[command(
        after_help = "Examples:\n  lbscope export run.lbs --perfetto run.pftrace\n  \
lbscope export run.lbs --jsonl - | head\n  \
lbscope export run.lbs --perfetto run.pftrace --jsonl run.jsonl"
    )]
    Export(ExportArgs),
    /// Check what this machine allows: kernel, BTF, lockdown, privileges, which tracepoints
    /// and balancer hooks load, and the topology. Every problem says what to do.
    #[command(after_help = "Example:\n  sudo lbscope doctor")]
    Doctor(DoctorArgs),
    /// Print the man page (roff), generated from these definitions.
    #[command(after_help = "Example:\n  lbscope man > /usr/local/share/man/man1/lbscope.1")]
    Man,
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

/// The man page, as `lbscope man` prints it (completions/lbscope.1 is made by this): the
/// command's page, then one section per subcommand with its full help and examples.
pub fn man_page() -> Vec<u8> {
    use clap::CommandFactory;
    use std::io::Write;
    // A fixed width, so the page is the same whatever terminal generates it.
    let mut cmd = Cli::command().term_width(80);
    cmd.build();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .expect("rendering to memory cannot fail");
    for sc in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let help = sc.clone().term_width(80).render_long_help().to_string();
        let _ = writeln!(out, ".SH \"LBSCOPE {}\"", sc.get_name().to_uppercase());
        let _ = writeln!(out, ".nf");
        for line in help.lines() {
            let line = line.replace('\\', "\\e");
            let lead = if line.starts_with('.') || line.starts_with('\'') {
                "\\&"
            } else {
                ""
            };
            let _ = writeln!(out, "{lead}{line}");
        }
        let _ = writeln!(out, ".fi");
    }
    out
}

/// `lbscope top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Refresh interval in seconds: the analyzer's interval (`+`/`-` change it).
    #[arg(short = 'i', long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    /// Replay the small recording shipped with lbscope instead of the live kernel (no root
    /// needed).
    #[arg(long)]
    pub demo: bool,
    #[command(flatten)]
    pub fold: FoldArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub collect: CollectArgs,
}

/// `lbscope serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port of the /metrics endpoint (loopback only by default: name an address
    /// to be scraped from other hosts).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9464")]
    pub listen: String,
    /// Interval in seconds: the metrics advance when one closes.
    #[arg(short = 'i', long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    #[command(flatten)]
    pub fold: FoldArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub collect: CollectArgs,
    /// A run-queue latency histogram for the processes of this name
    /// (lbscope_process_runqlat_seconds{comm="NAME"}); repeatable, at most 32 names, so
    /// that label values stay bounded.
    #[arg(long, value_name = "NAME")]
    pub process_latency: Vec<String>,
    #[command(flatten)]
    pub flight: FlightArgs,
    /// Where the flight recorder writes its dumps (created 0700 if missing; needs --ring).
    #[arg(long, value_name = "DIR", help_heading = "Flight recorder")]
    pub dump_dir: Option<std::path::PathBuf>,
    /// At most this many dumps in any hour; more are skipped and counted.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 12,
        help_heading = "Flight recorder"
    )]
    pub max_dumps_per_hour: u32,
    /// The dumps in --dump-dir hold at most this many MiB; a dump that would pass it is
    /// skipped and counted (no dump already written is removed).
    #[arg(
        long,
        value_name = "MIB",
        default_value_t = 1024,
        help_heading = "Flight recorder"
    )]
    pub dump_dir_max_mb: u64,
    /// Also dump on an HTTP POST to /dump on the --listen address.
    #[arg(long, help_heading = "Flight recorder")]
    pub dump_on_post: bool,
}

/// The flight recorder's ring and triggers (`serve`, `record`).
#[derive(Debug, Args, Clone, Default)]
pub struct FlightArgs {
    /// Keep the last SECS seconds of events in memory and write them as a recording when a
    /// trigger fires or SIGUSR1 arrives.
    #[arg(long, value_name = "SECS", help_heading = "Flight recorder")]
    pub ring: Option<f64>,
    /// The ring's memory limit: whichever of --ring and this is reached first bounds it.
    #[arg(
        long,
        value_name = "MIB",
        default_value_t = 256,
        help_heading = "Flight recorder"
    )]
    pub ring_mb: u64,
    /// Dump when an interval meets this: a finding rate KIND>=N/s (KIND: missed_pull,
    /// busy_wakeup, harmful_migration, ping_pong, churn, uneven_spread, or findings for any)
    /// or a run-queue latency STAT>=DURATION (STAT: p50, p90, p99, p999, max; e.g.
    /// p99>=5ms). Repeatable; a trigger that fired rests for the ring's length.
    #[arg(long, value_name = "SPEC", help_heading = "Flight recorder")]
    pub trigger: Vec<String>,
}

/// `lbscope replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recording.
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Interval length in seconds (`+`/`-` change it).
    #[arg(short = 'i', long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    /// Replay speed: recording seconds per second (`[`/`]` change it).
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    pub speed: f64,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub model: ModelArgs,
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
    /// Only tasks in this cgroup v2 directory or below it: a path under the cgroup2 mount
    /// (/sys/fs/cgroup/system.slice/foo.service) or from it (/system.slice/foo.service).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// Only these CPUs, in the kernel's list format (0-3,8).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
}

/// Thresholds of the balancer model's findings (shared by `report` and `diff`).
#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// missed_pull: how long a CPU may stay idle while a movable task waits (default per
    /// domain: 2 × its CPU count in ms × (cache_nice_tries + 1) + 10 ms for the nohz kick, what
    /// the kernel's rules allow).
    #[arg(long, value_name = "MS")]
    pub missed_pull_ms: Option<u64>,
    /// ping_pong: the window of an A -> B -> A round trip.
    #[arg(long, value_name = "MS", default_value_t = 10.0)]
    pub ping_pong_ms: f64,
    /// churn: migrations per second into one domain above which it is judged.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub churn_per_s: u64,
    /// uneven_spread: the fullest node or LLC must hold more than this many times the
    /// emptiest one's threads.
    #[arg(long, value_name = "RATIO", default_value_t = 2.0)]
    pub spread_ratio: f64,
    /// uneven_spread: processes (and cgroups) with fewer running threads are not judged.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub spread_min_threads: u32,
    /// uneven_spread: how long a process must stay uneven (sampled every 20 ms) before it is
    /// reported; a spread still uneven at an interval's end is reported then too.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub spread_hold_ms: u64,
    /// Finding details kept per interval (all are counted by kind).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub max_findings: usize,
}

impl Default for ModelArgs {
    /// The command line's defaults.
    fn default() -> Self {
        use clap::{Args as _, FromArgMatches as _};
        let cmd = ModelArgs::augment_args(clap::Command::new("lbscope"));
        ModelArgs::from_arg_matches(&cmd.get_matches_from(["lbscope"])).expect("the defaults parse")
    }
}

impl ModelArgs {
    /// The model configuration for a kernel `release` (picks [`crate::model::ModelRules`]).
    pub fn config(&self, release: &str) -> crate::model::ModelConfig {
        crate::model::ModelConfig {
            rules: crate::model::ModelRules::from_release(release),
            missed_pull_ms: self.missed_pull_ms,
            ping_pong_ns: (self.ping_pong_ms.max(0.0) * 1e6) as u64,
            churn_per_s: self.churn_per_s,
            spread_ratio_pct: (self.spread_ratio.max(0.0) * 100.0) as u64,
            spread_min_threads: self.spread_min_threads,
            spread_hold_ns: self.spread_hold_ms.saturating_mul(1_000_000),
            max_findings: self.max_findings,
        }
    }
}

/// Options of the live collector.
#[derive(Debug, Args, Clone)]
pub struct CollectArgs {
    /// Ring buffer size in MiB (a power of two). Larger loses fewer events under bursts.
    #[arg(long, value_name = "MIB", default_value_t = 16)]
    pub ringbuf_mb: u32,
    /// Ring buffer size in KiB instead (a power of two, at least 4): a tiny buffer shows
    /// how lost events are counted and marked.
    #[arg(long, value_name = "KIB", conflicts_with = "ringbuf_mb")]
    pub ringbuf_kb: Option<u32>,
    /// How to attach the tracepoint programs.
    #[cfg(feature = "bpf")]
    #[arg(long, value_enum, default_value = "auto")]
    pub attach: crate::source::live::AttachMode,
    /// How to attach the balancer hooks, which record the kernel's own balancer decisions
    /// (struct lb_env): fentry/fexit, or kprobe/kretprobe on kernels without BPF trampolines;
    /// both give the same records. `auto` tries fentry, then kprobe, then runs from the
    /// tracepoints alone and says why; naming a kind fails (exit 1) when the kernel refuses
    /// it. `lbscope doctor` shows which kinds load here.
    #[cfg(feature = "bpf")]
    #[arg(long, value_enum, value_name = "KIND", default_value = "auto")]
    pub balancer_attach: crate::source::attach::BalancerAttach,
}

/// `lbscope report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A recording to report on, instead of the live kernel. Prints exactly what the live
    /// report printed over the same events.
    #[arg(value_name = "FILE")]
    pub file: Option<std::path::PathBuf>,
    /// Also record every event to this file while reporting live (see `lbscope record`).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        conflicts_with = "file"
    )]
    pub output: Option<std::path::PathBuf>,
    /// Interval length in seconds (fractions allowed).
    #[arg(short = 'i', long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    /// Stop after this many intervals (default: until Ctrl-C).
    #[arg(short = 'c', long, value_name = "COUNT")]
    pub count: Option<u64>,
    /// One JSON object per interval, one per line.
    #[arg(long)]
    pub json: bool,
    /// Instead of the kernel, a generated event stream of a machine with this many CPUs
    /// (SMT pairs, 16-CPU LLCs, 2 NUMA nodes), for measuring the analyzer at scale. Prints
    /// the sustained events per second on stderr at the end.
    #[arg(long, value_name = "CPUS", conflicts_with_all = ["file", "output"])]
    pub synthetic: Option<usize>,
    /// With --synthetic: stop after this many events (default: until Ctrl-C).
    #[arg(long, value_name = "N", requires = "synthetic")]
    pub synthetic_events: Option<u64>,
    /// With --synthetic: the simulated machine's event rate (event time, events per second).
    #[arg(
        long,
        value_name = "EV/S",
        requires = "synthetic",
        default_value_t = 5_000_000
    )]
    pub synthetic_rate: u64,
    /// Validation mode: sets the kernel's own balancer decisions (struct lb_env, recorded
    /// only where fentry on the balancer loads: `lbscope doctor` says whether it does) against
    /// the model's, per domain level (balanced or not, migration type), and the stack-derived
    /// migration reasons against the kernel's idle type. Printed after the intervals (JSON: a
    /// last line `{"validation": {...}}`). Fails on a kernel or recording without them.
    #[arg(long, conflicts_with = "synthetic")]
    pub validate: bool,
    #[command(flatten)]
    pub fold: FoldArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub collect: CollectArgs,
}

/// `--fold`, for the live commands that only report.
#[derive(Debug, Args, Clone, Copy)]
pub struct FoldArgs {
    /// Fold run-queue latency into histograms in the kernel instead of streaming every
    /// switch: switches are sent only at idle transitions, wakeups only while a CPU may be
    /// idle, nr_running above 2 sampled (at most every ms per CPU). Latency stays exact;
    /// idle-while-others-wait counts queued tasks from nr_running (no pinned/movable split,
    /// no task filter), per-task waits are not kept. Takes -p, not --comm or --cpus.
    #[arg(long = "fold", value_enum, value_name = "WHEN", default_value = "auto")]
    pub when: FoldMode,
}

/// Whether the live kernel side folds run-queue latency itself (see `--fold`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FoldMode {
    /// Fold on machines with more than 64 CPUs and, in `top`, on a machine switching more
    /// than 10,000 times a second as it starts (in the busiest 0.1 s of 0.5 s), when no
    /// recording is written and neither --comm, --cgroup nor --cpus is given.
    Auto,
    /// Always fold (refused with a recording, --comm or --cpus).
    On,
    /// Stream every event.
    Off,
}

/// CPUs above which `--fold auto` folds.
pub const FOLD_AUTO_CPUS: usize = 64;

/// Context switches a second of the whole machine above which `top --fold auto` folds.
/// Streaming costs user space 400-550 ns of CPU per switch on the README's VM, so it stays
/// under half a percent of a core below this rate; above about 15,000 a second folding is
/// the cheaper mode and streaming passes 1%.
pub const FOLD_AUTO_SWITCHES: u64 = 10_000;

/// `lbscope record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The recording to write (created 0600; an existing file is replaced, a symlink refused).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: std::path::PathBuf,
    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(short = 'd', long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// No progress line on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Refused: a recording keeps every task; filter when reading it
    /// (lbscope report FILE --cgroup PATH).
    #[arg(long, value_name = "PATH", hide = true)]
    pub cgroup: Option<String>,
    #[command(flatten)]
    pub collect: CollectArgs,
    #[command(flatten)]
    pub flight: FlightArgs,
}

/// `lbscope diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline: one recording, or several (files, or directories of .lbs files)
    /// followed by `--` and the new side's.
    #[arg(value_name = "BASELINE", required = true)]
    pub baseline: Vec<std::path::PathBuf>,
    /// The new side's recordings (files or directories), after `--`.
    #[arg(value_name = "NEW", last = true)]
    pub new: Vec<std::path::PathBuf>,
    /// Interval length in seconds the noise estimate resamples (one run a side).
    #[arg(short = 'i', long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    /// Output: a table for the terminal, one JSON object, or a Markdown table for a cover
    /// letter.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = DiffFormat::Text,
          conflicts_with = "tui")]
    pub format: DiffFormat,
    /// The comparison as one JSON object (the same as --format json).
    #[arg(long, conflicts_with_all = ["tui", "format"])]
    pub json: bool,
    /// Show the comparison in the TUI (rows and histograms side by side).
    #[arg(long)]
    pub tui: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// What `lbscope diff` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// A table within 80 columns, with the latency histograms.
    Text,
    /// The comparison as one JSON object.
    Json,
    /// A GitHub-flavoured Markdown table headed by the runs, kernels and topology.
    Markdown,
}

/// `lbscope export`.
#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("format")
        .required(true)
        .multiple(true)
        .args(["perfetto", "jsonl"])
))]
pub struct ExportArgs {
    /// The recording.
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Write a Perfetto trace here.
    #[arg(long, value_name = "OUT")]
    pub perfetto: Option<std::path::PathBuf>,
    /// Write one JSON event per line here (`-` for stdout).
    #[arg(long, value_name = "OUT")]
    pub jsonl: Option<std::path::PathBuf>,
}

/// `lbscope doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as one JSON object.
    #[arg(long)]
    pub json: bool,
}
