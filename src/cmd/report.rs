//! `lbscope report`: the live kernel through the analyzer into text or JSON lines.

use super::{pipeline, CmdError};
use crate::analyze::{Analyzer, AnalyzerConfig, Filter, Snapshot};
use crate::cli::{FilterArgs, ReportArgs};
use crate::cpuset::CpuSet;
use crate::source::file::FileSource;
use crate::topology::Topology;
use crate::validate::Validator;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Turns the filter flags into an analyzer filter, checking them against the machine.
pub fn build_filter(f: &FilterArgs, topo: &Topology, live: bool) -> Result<Filter, CmdError> {
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
    Ok(Filter {
        tgid: f.pid,
        comm: f.comm.clone(),
        cpus,
    })
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

/// The live source's settings from the collection flags, checked (one place for `report`,
/// `record` and `top`).
#[cfg(feature = "bpf")]
/// The live source's options; `recording` when the run writes a recording, which keeps
/// every record (otherwise what only a recording reads is not traced at all).
pub fn live_config(
    c: &crate::cli::CollectArgs,
    recording: bool,
    fold: Option<(crate::cli::FoldMode, &crate::cli::FilterArgs)>,
) -> Result<crate::source::live::LiveConfig, CmdError> {
    let unneeded = if recording {
        Vec::new()
    } else {
        crate::source::live::RECORDING_ONLY.to_vec()
    };
    let cpus = crate::source::live::possible_cpus();
    let (fold, fold_tgid) = match fold {
        Some((mode, f)) => (folds(mode, recording, f, cpus)?, f.pid),
        None => (false, None),
    };
    Ok(crate::source::live::LiveConfig {
        ringbuf_bytes: ringbuf_bytes(c)?,
        attach: c.attach,
        unneeded,
        fold,
        fold_tgid,
        ..Default::default()
    })
}

/// Whether a live run folds latency in the kernel (`--fold`), on a machine of `cpus` CPUs.
pub fn folds(
    mode: crate::cli::FoldMode,
    recording: bool,
    f: &crate::cli::FilterArgs,
    cpus: usize,
) -> Result<bool, CmdError> {
    use crate::cli::FoldMode;
    let unfit = if recording {
        Some("a recording keeps every event (drop -o, or --fold)")
    } else if f.comm.is_some() {
        Some("the kernel folds by process, not by name (use -p, or drop --fold)")
    } else if f.cpus.is_some() {
        Some("the kernel folds per process over all CPUs (drop --cpus, or --fold)")
    } else {
        None
    };
    match (mode, unfit) {
        (FoldMode::Off, _) => Ok(false),
        (FoldMode::On, Some(why)) => Err(CmdError::Usage(format!("--fold on: {why}"))),
        (FoldMode::On, None) => Ok(true),
        (FoldMode::Auto, unfit) => Ok(unfit.is_none() && cpus > crate::cli::FOLD_AUTO_CPUS),
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

/// (tracepoint, attach kind) pairs for a recording header.
#[cfg(feature = "bpf")]
pub fn probe_names(r: &crate::source::live::ProbeReport) -> Vec<(String, String)> {
    use crate::source::live::ProbeState;
    r.tracepoints
        .iter()
        .map(|(tp, s)| {
            let k = match s {
                ProbeState::TpBtf => "tp_btf".to_string(),
                ProbeState::RawTp => "raw_tp".to_string(),
                ProbeState::Missing => "missing".to_string(),
                ProbeState::Failed(e) => format!("failed: {e}"),
                ProbeState::NotNeeded => "not needed".to_string(),
            };
            (tp.clone(), k)
        })
        .chain(
            r.balancer
                .iter()
                .flatten()
                .map(|f| (format!("fentry/{f}"), "fentry".to_string())),
        )
        .collect()
}

/// Prints snapshots as text or JSON lines.
fn printer<'a>(
    json: bool,
    topo: &'a Topology,
    clock_base_ns: i64,
    out: &'a mut impl std::io::Write,
) -> impl FnMut(&Snapshot) -> std::io::Result<()> + 'a {
    move |s: &Snapshot| {
        if json {
            crate::output::json::render_json(s, out)?;
        } else {
            crate::output::text::render_text(s, topo, clock_base_ns, out)?;
        }
        out.flush()
    }
}

/// Prints validation mode's figures after the intervals; fails when the run held no
/// balancer decisions to validate against.
fn print_validation(
    v: Validator,
    json: bool,
    what: &str,
    out: &mut impl std::io::Write,
) -> Result<(), CmdError> {
    let v = v.finish();
    if v.balance_events == 0 {
        return Err(CmdError::Failed(format!(
            "--validate: {what} holds no balancer decisions: they are recorded only where \
             fentry on the balancer loads (`lbscope doctor` says whether it does; the topology \
             lab's kernels allow it: tests/lab/run)"
        )));
    }
    if json {
        serde_json::to_writer(&mut *out, &serde_json::json!({ "validation": v }))
            .map_err(std::io::Error::other)?;
        writeln!(out)?;
    } else {
        crate::output::validation_text::validation(&v, out)?;
    }
    out.flush()?;
    Ok(())
}

/// Runs `lbscope report`.
pub fn run(args: &ReportArgs) -> Result<(), CmdError> {
    let interval_ns = interval_ns(args.interval)?;
    if args.count == Some(0) {
        return Err(CmdError::Usage("-c 0: the count is at least 1".into()));
    }
    if let Some(cpus) = args.synthetic {
        return run_synthetic(args, cpus, interval_ns);
    }
    match &args.file {
        Some(path) => run_file(args, path, interval_ns),
        None => run_live(args, interval_ns),
    }
}

fn run_synthetic(args: &ReportArgs, cpus: usize, interval_ns: u64) -> Result<(), CmdError> {
    use crate::source::synthetic::{topology, SyntheticConfig, SyntheticSource};
    if !(2..=crate::cpuset::MAX_CPUS).contains(&cpus) {
        return Err(CmdError::Usage(format!(
            "--synthetic {cpus}: from 2 to {} CPUs",
            crate::cpuset::MAX_CPUS
        )));
    }
    let topo = topology(cpus);
    let filter = build_filter(&args.filter, &topo, false)?;
    let mut analyzer = Analyzer::new(
        topo.clone(),
        AnalyzerConfig {
            interval_ns,
            filter,
            // A generated machine has no kernel: the current rules.
            model: args.model.config(""),
        },
    );
    let stop = stop_on_signals()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(crate::source::QUEUE_BATCHES);
    let cfg = SyntheticConfig {
        cpus,
        tasks: cpus * 8,
        rate: args.synthetic_rate.max(1),
        events: args.synthetic_events,
        ..SyntheticConfig::default()
    };
    let started = std::time::Instant::now();
    let cpu_before = thread_cpu_ns();
    let source = SyntheticSource::start(cfg, tx);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut sink = printer(args.json, &topo, 0, &mut out);
    let mut events = 0u64;
    pipeline::run(
        &rx,
        &mut analyzer,
        args.count,
        &stop,
        pipeline::Hooks {
            request_stop: &mut || source.stop_async(),
            tee: &mut |b| {
                events += b.len() as u64;
                Ok(())
            },
            sink: &mut sink,
            warn: &mut |w| eprintln!("lbscope: warning: {w}"),
        },
    )?;
    drop(sink);
    let secs = started.elapsed().as_secs_f64();
    // The analyzer's own thread: what it alone costs, the generator's thread left out.
    let own = match (cpu_before, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => format!(
            "; the analyzer's thread used {:.2} s of CPU = {:.1} M events/s",
            (b - a) as f64 / 1e9,
            events as f64 / ((b - a) as f64 / 1e9) / 1e6
        ),
        _ => String::new(),
    };
    eprintln!(
        "lbscope: synthetic: {events} events of {cpus} CPUs in {secs:.2} s = {:.1} M events/s{own}; the analyzer tracks {} tasks",
        events as f64 / secs / 1e6,
        analyzer.tracked_tasks()
    );
    source.join();
    Ok(())
}

/// CPU time of the calling thread in ns (the first field of /proc/thread-self/schedstat).
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A stop flag raised by SIGINT and SIGTERM.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>, CmdError> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

/// Turns a recording's damage into the command's outcome: the results stand, the exit code
/// says they are incomplete.
pub fn damage_outcome(path: &Path, d: &crate::record::Damage) -> Result<(), CmdError> {
    if d.is_clean() {
        return Ok(());
    }
    for m in &d.messages {
        eprintln!("lbscope: {}: {m}", path.display());
    }
    Err(CmdError::Incomplete(format!(
        "{}: damaged recording: {} chunk(s), {} bytes skipped{}; the figures above cover the readable chunks",
        path.display(),
        d.skipped_chunks,
        d.skipped_bytes,
        if d.truncated_tail { ", truncated at the end" } else { "" }
    )))
}

fn run_file(args: &ReportArgs, path: &Path, interval_ns: u64) -> Result<(), CmdError> {
    let src = FileSource::open(path)?;
    let topo = src.header.topology.clone();
    let filter = build_filter(&args.filter, &topo, false)?;
    let model = args.model.config(&src.header.kernel_release);
    let mut validator = args.validate.then(|| Validator::new(&topo, model.clone()));
    let mut analyzer = Analyzer::new(
        topo.clone(),
        AnalyzerConfig {
            interval_ns,
            filter,
            model,
        },
    );
    let stop = stop_on_signals()?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let base = src.header.clock_base_ns;
    let mut sink = printer(args.json, &topo, base, &mut out);
    pipeline::run(
        &src.rx,
        &mut analyzer,
        args.count,
        &stop,
        pipeline::Hooks {
            request_stop: &mut || {},
            tee: &mut |b| {
                if let Some(v) = &mut validator {
                    v.push(b);
                }
                Ok(())
            },
            sink: &mut sink,
            warn: &mut |w| eprintln!("lbscope: warning: {w}"),
        },
    )?;
    drop(sink);
    if let Some(v) = validator {
        let what = path.display().to_string();
        print_validation(v, args.json, &what, &mut out)?;
    }
    damage_outcome(path, &src.damage())
}

#[cfg(feature = "bpf")]
fn run_live(args: &ReportArgs, interval_ns: u64) -> Result<(), CmdError> {
    use crate::source::live::{clock, LiveSource, ProbeState};
    let cfg = live_config(
        &args.collect,
        args.output.is_some(),
        Some((args.fold.when, &args.filter)),
    )?;
    let topo = Topology::detect()?;
    let filter = build_filter(&args.filter, &topo, true)?;
    if let Some(o) = &args.output {
        super::record::check_output(o)?;
    }
    let stop = stop_on_signals()?;
    let (tx, rx) = std::sync::mpsc::sync_channel(crate::source::QUEUE_BATCHES);
    let folded = cfg.fold;
    let source = LiveSource::start(cfg, tx)?;
    if let (true, Err(why)) = (args.validate, &source.report.balancer) {
        return Err(CmdError::Failed(format!(
            "--validate needs the balancer's own decisions, from fentry on the balancer, which \
             did not load here ({why}); validate in the topology lab (tests/lab/run) or a \
             recording made where fentry loads: lbscope report FILE --validate"
        )));
    }
    let attached = source.report.attached();
    let mode = source
        .report
        .tracepoints
        .iter()
        .find_map(|(_, s)| match s {
            ProbeState::TpBtf => Some("tp_btf"),
            ProbeState::RawTp => Some("raw_tp"),
            _ => None,
        })
        .unwrap_or("none");
    let base = clock::realtime_offset_ns();
    let mut tee = match &args.output {
        Some(o) => {
            let h = super::record::header(&topo, probe_names(&source.report), base);
            Some(super::record::Tee::create(o, &h, false)?)
        }
        None => None,
    };
    eprintln!(
        "lbscope: tracing {} tracepoints ({mode}) on {} CPUs{}; Ctrl-C to stop",
        attached.len(),
        topo.online.len(),
        if folded {
            ", latency folded in the kernel (--fold)"
        } else {
            ""
        }
    );
    if !source.report.kallsyms {
        eprintln!("lbscope: warning: /proc/kallsyms gave no addresses: migration reasons fall back to context rules");
    }
    let model = args.model.config(&super::version::kernel_release());
    let mut validator = args.validate.then(|| Validator::new(&topo, model.clone()));
    let mut analyzer = Analyzer::new(
        topo.clone(),
        AnalyzerConfig {
            interval_ns,
            filter,
            model,
        },
    );
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut sink = printer(args.json, &topo, base, &mut out);
    let mut request_stop = || source.stop_async();
    let mut tee_batch = |b: &[crate::event::Event]| {
        if let Some(v) = &mut validator {
            v.push(b);
        }
        match &mut tee {
            Some(t) => t.write(b),
            None => Ok(()),
        }
    };
    pipeline::run(
        &rx,
        &mut analyzer,
        args.count,
        &stop,
        pipeline::Hooks {
            request_stop: &mut request_stop,
            tee: &mut tee_batch,
            sink: &mut sink,
            warn: &mut |w| eprintln!("lbscope: warning: {w}"),
        },
    )?;
    drop(sink);
    if let Some(t) = tee {
        t.finish()?;
    }
    if let Some(v) = validator {
        print_validation(v, args.json, "this run", &mut out)?;
    }
    Ok(())
}

/// Without BPF support there is no live source.
#[cfg(not(feature = "bpf"))]
fn run_live(_args: &ReportArgs, _interval_ns: u64) -> Result<(), CmdError> {
    Err(crate::source::SourceError::NoBpf.into())
}

#[cfg(test)]
mod tests {
    use super::folds;
    use crate::cli::{FilterArgs, FoldMode, FOLD_AUTO_CPUS};

    #[test]
    fn fold_when_asked_or_when_big() {
        let none = FilterArgs::default();
        let pid = FilterArgs {
            pid: Some(7),
            ..Default::default()
        };
        let comm = FilterArgs {
            comm: Some("x".into()),
            ..Default::default()
        };
        let cpus = FilterArgs {
            cpus: Some("0-3".into()),
            ..Default::default()
        };
        let big = FOLD_AUTO_CPUS + 1;
        // auto: only big machines, and never where folding would lose what was asked for.
        assert!(!folds(FoldMode::Auto, false, &none, FOLD_AUTO_CPUS).unwrap());
        assert!(folds(FoldMode::Auto, false, &none, big).unwrap());
        assert!(folds(FoldMode::Auto, false, &pid, big).unwrap());
        assert!(!folds(FoldMode::Auto, true, &none, big).unwrap());
        assert!(!folds(FoldMode::Auto, false, &comm, big).unwrap());
        assert!(!folds(FoldMode::Auto, false, &cpus, big).unwrap());
        // on: refused where it cannot keep its promise, with the reason.
        assert!(folds(FoldMode::On, false, &pid, 2).unwrap());
        for (rec, f, why) in [
            (true, &none, "recording"),
            (false, &comm, "by process"),
            (false, &cpus, "--cpus"),
        ] {
            let e = folds(FoldMode::On, rec, f, 2).unwrap_err().to_string();
            assert!(e.contains("--fold on") && e.contains(why), "{e}");
        }
        assert!(!folds(FoldMode::Off, false, &none, big).unwrap());
    }
}
