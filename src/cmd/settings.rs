//! Checked settings from the raw command-line arguments: every refusal of a flag or a flag
//! combination lives here, each a one-line error that names the fix. Commands take their
//! settings from these functions and never re-check arguments themselves.

use super::CmdError;
use crate::analyze::Filter;
use crate::cli::FilterArgs;
use crate::cpuset::CpuSet;
use crate::topology::Topology;
use std::path::Path;

/// Turns the filter flags into an analyzer filter, checking them against the machine.
pub fn filter(f: &FilterArgs, topo: &Topology, live: bool) -> Result<Filter, CmdError> {
    if let Some(pid) = f.pid {
        if live && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(CmdError::Usage(format!(
                "no process with PID {pid}: check it with `ps -p {pid}` (use --comm NAME to catch a process that has not started yet)"
            )));
        }
    }
    if let Some(c) = &f.comm {
        if c.is_empty() || c.len() > 15 {
            return Err(CmdError::Usage(format!(
                "--comm '{c}': a task name is 1 to 15 bytes (the kernel truncates longer ones; use the first 15)"
            )));
        }
    }
    let cpus = match &f.cpus {
        Some(s) => {
            let set = CpuSet::parse_list(s)
                .map_err(|e| CmdError::Usage(format!("--cpus '{s}': {e} (example: 0-3,8)")))?;
            if set.is_empty() || !set.is_subset(&topo.online) {
                return Err(CmdError::Usage(format!(
                    "--cpus '{s}': online CPUs are {}",
                    topo.online
                )));
            }
            Some(set)
        }
        None => None,
    };
    let cgroup = match &f.cgroup {
        Some(p) => {
            let mount = crate::source::cgroup2::cgroup2_mount();
            cgroup(p, mount.as_deref(), live.then_some(|d: &Path| d.is_dir()))?
        }
        None => None,
    };
    Ok(Filter {
        tgid: f.pid,
        comm: f.comm.clone(),
        cgroup,
        cpus,
    })
}

/// `--cgroup PATH` as the analyzer matches it: the path from the cgroup2 `mount` (`/a/b`),
/// `None` for the root (everything). A path under the mount has it stripped; any other is
/// taken as from the mount. A live run checks that the directory exists (`is_dir`); a
/// recording's cgroups are another machine's, so its paths are taken as given (an absolute
/// path under /sys/fs/cgroup, where the mount usually is, has that stripped too).
pub fn cgroup(
    arg: &str,
    mount: Option<&Path>,
    is_dir: Option<impl Fn(&Path) -> bool>,
) -> Result<Option<String>, CmdError> {
    let bad = |why: String| CmdError::Usage(format!("--cgroup '{arg}': {why}"));
    if !arg.starts_with('/') || arg.split('/').any(|c| c == "." || c == "..") {
        return Err(bad(
            "a cgroup v2 directory, absolute (/sys/fs/cgroup/system.slice/foo.service) or from the cgroup2 mount (/system.slice/foo.service)".into(),
        ));
    }
    // A recording's machine had its mount where most do, whatever this one does.
    let usual = is_dir.is_none().then_some(Path::new("/sys/fs/cgroup"));
    let rel = mount
        .into_iter()
        .chain(usual)
        .find_map(|base| Path::new(arg).strip_prefix(base).ok())
        .map_or(arg.to_string(), |r| format!("/{}", r.display()));
    // No empty components, no trailing '/': the form `Cgroup` events name paths in.
    let rel = format!(
        "/{}",
        rel.split('/')
            .filter(|c| !c.is_empty())
            .collect::<Vec<_>>()
            .join("/")
    );
    if let Some(is_dir) = is_dir {
        let Some(mount) = mount else {
            return Err(bad(
                "this machine has no cgroup2 mount (mount -t cgroup2 none /sys/fs/cgroup)".into(),
            ));
        };
        if !is_dir(&mount.join(rel.trim_start_matches('/'))) {
            return Err(bad(format!(
                "not a directory under the cgroup2 mount {} (list them with `ls {}`)",
                mount.display(),
                mount.display()
            )));
        }
    }
    Ok((rel != "/").then_some(rel))
}

/// `record --cgroup`: refused, a recording keeps every task.
pub fn record_cgroup(arg: Option<&str>) -> Result<(), CmdError> {
    match arg {
        Some(p) => Err(CmdError::Usage(format!(
            "--cgroup '{p}': a recording keeps every task; filter when reading it: lbscope report FILE --cgroup {p}"
        ))),
        None => Ok(()),
    }
}

/// Validates the interval flag.
pub fn interval_ns(secs: f64) -> Result<u64, CmdError> {
    if !(secs.is_finite() && (0.01..=86_400.0 * 365.0).contains(&secs)) {
        return Err(CmdError::Usage(format!(
            "-i {secs}: the interval is a number of seconds from 0.01 up"
        )));
    }
    Ok((secs * 1e9) as u64)
}

/// Validates `-c`: at least one interval.
pub fn count(c: Option<u64>) -> Result<Option<u64>, CmdError> {
    if c == Some(0) {
        return Err(CmdError::Usage("-c 0: the count is at least 1".into()));
    }
    Ok(c)
}

/// Validates replay's `--speed`.
pub fn speed(s: f64) -> Result<f64, CmdError> {
    if !(s.is_finite() && (0.01..=1000.0).contains(&s)) {
        return Err(CmdError::Usage(format!(
            "--speed {s}: a factor from 0.01 to 1000"
        )));
    }
    Ok(s)
}

/// Validates record's `--duration` (seconds).
pub fn duration(d: Option<f64>) -> Result<Option<std::time::Duration>, CmdError> {
    match d {
        Some(d) if !(d.is_finite() && d > 0.0) => Err(CmdError::Usage(format!(
            "--duration {d}: a number of seconds above 0"
        ))),
        Some(d) => Ok(Some(std::time::Duration::from_secs_f64(d))),
        None => Ok(None),
    }
}

/// Validates `serve --listen ADDR:PORT`.
pub fn listen(s: &str) -> Result<std::net::SocketAddr, CmdError> {
    use std::net::ToSocketAddrs;
    let bad = |why: &str| {
        CmdError::Usage(format!(
            "--listen {s}: {why} (an ADDR:PORT such as 127.0.0.1:9464, or [::1]:9464)"
        ))
    };
    let mut addrs = s.to_socket_addrs().map_err(|e| bad(&e.to_string()))?;
    addrs.next().ok_or_else(|| bad("no address"))
}

/// Validates `--synthetic CPUS`.
pub fn synthetic_cpus(cpus: usize) -> Result<usize, CmdError> {
    if !(2..=crate::cpuset::MAX_CPUS).contains(&cpus) {
        return Err(CmdError::Usage(format!(
            "--synthetic {cpus}: from 2 to {} CPUs",
            crate::cpuset::MAX_CPUS
        )));
    }
    Ok(cpus)
}

/// The live source's settings from the collection flags, checked (one place for `report`,
/// `record`, `serve` and `top`); `recording` when the run writes a recording, which keeps
/// every record (otherwise what only a recording reads is not traced at all); `interval_ns`
/// when the run closes intervals, which sets how often it drains
/// ([`crate::source::live::drain_period`]); `fold` the `--fold` mode with the filters it must
/// fit and, for `top`, the machine's context switches a second as it starts (see [`folds`]).
#[cfg(feature = "bpf")]
pub fn live_config(
    c: &crate::cli::CollectArgs,
    recording: bool,
    fold: Option<(crate::cli::FoldMode, &crate::cli::FilterArgs, Option<u64>)>,
    interval_ns: Option<u64>,
) -> Result<crate::source::live::LiveConfig, CmdError> {
    let unneeded = if recording {
        Vec::new()
    } else {
        crate::source::live::RECORDING_ONLY.to_vec()
    };
    let cpus = crate::source::live::possible_cpus();
    let (fold, fold_tgid) = match fold {
        Some((mode, f, rate)) => (folds(mode, recording, f, cpus, rate)?, f.pid),
        None => (false, None),
    };
    let mut cfg = crate::source::live::LiveConfig {
        ringbuf_bytes: ringbuf_bytes(c)?,
        attach: c.attach,
        balancer_attach: c.balancer_attach,
        unneeded,
        fold,
        fold_tgid,
        ..Default::default()
    };
    if let Some(i) = interval_ns {
        cfg.poll_interval = crate::source::live::drain_period(i);
    }
    Ok(cfg)
}

/// Whether a live run folds latency in the kernel (`--fold`), on a machine of `cpus` CPUs
/// that switched `switches_per_s` times a second as the run started (measured by `top` only:
/// streaming costs its user space a fixed time per switch, folding does not).
pub fn folds(
    mode: crate::cli::FoldMode,
    recording: bool,
    f: &crate::cli::FilterArgs,
    cpus: usize,
    switches_per_s: Option<u64>,
) -> Result<bool, CmdError> {
    use crate::cli::FoldMode;
    match (mode, unfit_to_fold(recording, f)) {
        (FoldMode::Off, _) => Ok(false),
        (FoldMode::On, Some(why)) => Err(CmdError::Usage(format!("--fold on: {why}"))),
        (FoldMode::On, None) => Ok(true),
        (FoldMode::Auto, unfit) => Ok(unfit.is_none()
            && (cpus > crate::cli::FOLD_AUTO_CPUS
                || switches_per_s.is_some_and(|r| r > crate::cli::FOLD_AUTO_SWITCHES))),
    }
}

/// Whether [`folds`] of a run that writes no recording turns on the machine's switch rate,
/// so that `top` measures it only then: `--fold auto`, filters folding can honour, and no
/// more CPUs than fold whatever the rate.
pub fn fold_turns_on_rate(
    mode: crate::cli::FoldMode,
    f: &crate::cli::FilterArgs,
    cpus: usize,
) -> bool {
    mode == crate::cli::FoldMode::Auto
        && unfit_to_fold(false, f).is_none()
        && cpus <= crate::cli::FOLD_AUTO_CPUS
}

/// Why the kernel cannot fold for this run, if it cannot.
fn unfit_to_fold(recording: bool, f: &crate::cli::FilterArgs) -> Option<&'static str> {
    if recording {
        Some("a recording keeps every event (drop -o, or --fold)")
    } else if f.comm.is_some() {
        Some("the kernel folds by process, not by name (use -p, or drop --fold)")
    } else if f.cgroup.is_some() {
        Some("the kernel folds by process, not by cgroup (use -p, or drop --fold)")
    } else if f.cpus.is_some() {
        Some("the kernel folds per process over all CPUs (drop --cpus, or --fold)")
    } else {
        None
    }
}

/// Validates `--ringbuf-mb` and returns bytes.
#[cfg(feature = "bpf")]
fn ringbuf_bytes(c: &crate::cli::CollectArgs) -> Result<u32, CmdError> {
    if let Some(kb) = c.ringbuf_kb {
        if !kb.is_power_of_two() || !(4..=1 << 20).contains(&kb) {
            return Err(CmdError::Usage(format!(
                "--ringbuf-kb {kb}: a power of two from 4 to 1048576"
            )));
        }
        return Ok(kb << 10);
    }
    let mb = c.ringbuf_mb;
    if !mb.is_power_of_two() || mb > 1024 {
        return Err(CmdError::Usage(format!(
            "--ringbuf-mb {mb}: a power of two from 1 to 1024"
        )));
    }
    Ok(mb << 20)
}

/// Refuses an output path that cannot be a recording: a directory, a symlink, or a missing
/// parent directory.
pub fn check_output(path: &std::path::Path) -> Result<(), CmdError> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.file_type().is_symlink() {
            return Err(CmdError::Usage(format!(
                "{}: is a symbolic link; lbscope does not write through links: name the target file",
                path.display()
            )));
        }
        if m.is_dir() {
            return Err(CmdError::Usage(format!(
                "{}: is a directory: name a file",
                path.display()
            )));
        }
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent {
        if !dir.is_dir() {
            return Err(CmdError::Usage(format!(
                "{}: directory {} does not exist",
                path.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Validates `serve --process-latency` names: at most 32, each a possible comm (1 to 15
/// bytes), duplicates dropped.
pub fn process_names(names: &[String]) -> Result<Vec<String>, CmdError> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if n.is_empty() || n.len() > 15 {
            return Err(CmdError::Usage(format!(
                "--process-latency {n:?}: a process name of 1 to 15 bytes, as in /proc/PID/comm"
            )));
        }
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    if out.len() > 32 {
        return Err(CmdError::Usage(format!(
            "--process-latency: {} names; at most 32 keep the metric's labels bounded",
            out.len()
        )));
    }
    Ok(out)
}

/// The flight recorder's ring and triggers from `--ring`, `--ring-mb` and `--trigger`
/// (`None` without `--ring`).
pub fn flight(
    f: &crate::cli::FlightArgs,
) -> Result<Option<(crate::flight::RingLimits, Vec<crate::flight::Trigger>)>, CmdError> {
    let triggers = f
        .trigger
        .iter()
        .map(|t| crate::flight::Trigger::parse(t).map_err(|e| CmdError::Usage(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(secs) = f.ring else {
        if !triggers.is_empty() {
            return Err(CmdError::Usage(
                "--trigger needs --ring SECS: the seconds of events a dump holds".into(),
            ));
        }
        return Ok(None);
    };
    if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
        return Err(CmdError::Usage(format!(
            "--ring {secs}: seconds above 0 and at most 3600 (the ring is held in memory)"
        )));
    }
    if !(1..=65_536).contains(&f.ring_mb) {
        return Err(CmdError::Usage(format!(
            "--ring-mb {}: from 1 to 65536 MiB",
            f.ring_mb
        )));
    }
    Ok(Some((
        crate::flight::RingLimits {
            span_ns: (secs * 1e9) as u64,
            max_bytes: f.ring_mb << 20,
        },
        triggers,
    )))
}

/// Where `serve`'s dumps go: `--dump-dir` (created 0700 when missing, and written to once
/// to be sure it can be) with its caps; `ring` whether `--ring` was given.
pub fn dump_dir(
    a: &crate::cli::ServeArgs,
    ring: bool,
) -> Result<Option<crate::pipeline::sinks::Destination>, CmdError> {
    match (&a.dump_dir, ring) {
        (None, false) if a.dump_on_post => Err(CmdError::Usage(
            "--dump-on-post needs --ring SECS and --dump-dir DIR".into(),
        )),
        (None, false) => Ok(None),
        (Some(d), false) => Err(CmdError::Usage(format!(
            "--dump-dir {}: needs --ring SECS, the seconds of events each dump holds",
            d.display()
        ))),
        (None, true) => Err(CmdError::Usage(
            "--ring: name where dumps go with --dump-dir DIR".into(),
        )),
        (Some(dir), true) => {
            if a.max_dumps_per_hour == 0 {
                return Err(CmdError::Usage(
                    "--max-dumps-per-hour 0: at least 1 (or drop --ring)".into(),
                ));
            }
            if a.dump_dir_max_mb == 0 {
                return Err(CmdError::Usage(
                    "--dump-dir-max-mb 0: at least 1 MiB (or drop --ring)".into(),
                ));
            }
            writable_dir(dir)?;
            Ok(Some(crate::pipeline::sinks::Destination::Dir {
                dir: dir.clone(),
                max_per_hour: a.max_dumps_per_hour,
                max_dir_bytes: a.dump_dir_max_mb.saturating_mul(1 << 20),
            }))
        }
    }
}

/// Creates `dir` (0700) when missing and checks that a file can be created in it.
fn writable_dir(dir: &std::path::Path) -> Result<(), CmdError> {
    use std::os::unix::fs::DirBuilderExt;
    let fail = |why: String| {
        CmdError::Usage(format!(
            "--dump-dir {}: {why}; name a directory lbscope can write",
            dir.display()
        ))
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| fail(format!("cannot create it ({e})")))?;
    }
    if !dir.is_dir() {
        return Err(fail("not a directory".into()));
    }
    let probe = dir.join(format!(".lbscope-probe-{}", std::process::id()));
    std::fs::File::create(&probe).map_err(|e| fail(format!("cannot write there ({e})")))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

#[cfg(test)]
mod tests;
