//! `lbscope report`: the live kernel through the analyzer into text or JSON lines.

use super::CmdError;
use crate::analyze::Filter;
use crate::cli::{FilterArgs, ReportArgs};
use crate::cpuset::CpuSet;
use crate::topology::Topology;

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

/// Runs `lbscope report`.
#[cfg(feature = "bpf")]
pub fn run(args: &ReportArgs) -> Result<(), CmdError> {
    use super::pipeline;
    use crate::analyze::{Analyzer, AnalyzerConfig};
    use crate::source::live::{clock, LiveConfig, LiveSource};
    use std::io::Write;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let interval_ns = interval_ns(args.interval)?;
    if args.count == Some(0) {
        return Err(CmdError::Usage("-c 0: the count is at least 1".into()));
    }
    let mb = args.collect.ringbuf_mb;
    if !mb.is_power_of_two() || mb > 1024 {
        return Err(CmdError::Usage(format!(
            "--ringbuf-mb {mb}: a power of two from 1 to 1024"
        )));
    }
    let topo = Topology::detect()?;
    let filter = build_filter(&args.filter, &topo, true)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let cfg = LiveConfig {
        ringbuf_bytes: mb << 20,
        attach: args.collect.attach,
        ..LiveConfig::default()
    };
    let source = LiveSource::start(cfg, tx)?;
    let attached = source.report.attached();
    let mode = source
        .report
        .tracepoints
        .iter()
        .find_map(|(_, s)| match s {
            crate::source::live::ProbeState::TpBtf => Some("tp_btf"),
            crate::source::live::ProbeState::RawTp => Some("raw_tp"),
            _ => None,
        })
        .unwrap_or("none");
    eprintln!(
        "lbscope: tracing {} tracepoints ({mode}) on {} CPUs; Ctrl-C to stop",
        attached.len(),
        topo.online.len()
    );
    if !source.report.kallsyms {
        eprintln!("lbscope: warning: /proc/kallsyms gave no addresses: migration reasons fall back to context rules");
    }
    let base = clock::realtime_offset_ns();
    let mut analyzer = Analyzer::new(
        topo.clone(),
        AnalyzerConfig {
            interval_ns,
            filter,
        },
    );
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let json = args.json;
    let mut sink = |s: &crate::analyze::Snapshot| -> std::io::Result<()> {
        if json {
            crate::output::json::render_json(s, &mut out)?;
        } else {
            crate::output::text::render_text(s, &topo, base, &mut out)?;
        }
        out.flush()
    };
    let mut request_stop = || source.stop_async();
    pipeline::run(
        &rx,
        &mut analyzer,
        args.count,
        &stop,
        &mut request_stop,
        &mut sink,
        &mut |w| eprintln!("lbscope: warning: {w}"),
    )?;
    Ok(())
}

/// Without BPF support there is no live source.
#[cfg(not(feature = "bpf"))]
pub fn run(_args: &ReportArgs) -> Result<(), CmdError> {
    Err(crate::source::SourceError::NoBpf.into())
}
