//! `lbscope report`: a source (the live kernel, a recording, or the synthetic generator)
//! through the analyzer, printed as text or JSON lines; with `--validate` the validator and
//! with `-o` the recorder are sinks beside the printer.

use super::{damage_outcome, settings, stop_on_signals, CmdError};
use crate::analyze::{Analyzer, AnalyzerConfig};
use crate::cli::ReportArgs;
use crate::event::Event;
use crate::pipeline::sinks::{Printer, Validation, Warnings};
use crate::pipeline::{Driver, Sink, Source};
use std::io::Write;

/// Runs `lbscope report`.
pub fn run(args: &ReportArgs) -> Result<(), CmdError> {
    let interval_ns = settings::interval_ns(args.interval)?;
    settings::count(args.count)?;
    if let Some(cpus) = args.synthetic {
        return run_synthetic(args, settings::synthetic_cpus(cpus)?, interval_ns);
    }
    match &args.file {
        Some(path) => {
            let src = Source::file(path)?;
            let damage = report(args, src, interval_ns, &path.display().to_string())?;
            damage_outcome(path, &damage)
        }
        None => run_live(args, interval_ns),
    }
}

/// The analyzer of a report over `src`.
fn analyzer(args: &ReportArgs, src: &Source, interval_ns: u64) -> Result<Analyzer, CmdError> {
    let topo = src.topology().clone();
    let filter = settings::filter(&args.filter, &topo, src.is_live())?;
    let model = args.model.config(&src.header.kernel_release);
    Ok(Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns,
            filter,
            model,
        },
    ))
}

/// Runs the report of `src` (`what` names it in messages), with `extra` sinks beside the
/// printer; returns the source's damage.
fn report_with(
    args: &ReportArgs,
    src: Source,
    interval_ns: u64,
    what: &str,
    extra: &mut [&mut dyn Sink],
) -> Result<crate::record::Damage, CmdError> {
    let analyzer = analyzer(args, &src, interval_ns)?;
    let mut validation = args
        .validate
        .then(|| Validation::new(src.topology(), analyzer.config().model.clone()));
    let stdout = std::io::stdout();
    let mut printer = Printer::new(
        stdout.lock(),
        args.json,
        src.topology(),
        src.header.clock_base_ns,
    );
    let stop = stop_on_signals()?;
    let mut driver = Driver::new(analyzer).count(args.count);
    let mut warnings = Warnings;
    {
        let mut sinks: Vec<&mut dyn Sink> = Vec::new();
        if let Some(v) = &mut validation {
            sinks.push(v);
        }
        for s in extra.iter_mut() {
            sinks.push(&mut **s);
        }
        sinks.push(&mut printer);
        sinks.push(&mut warnings);
        driver.run(&src, &mut sinks, &stop)?;
    }
    if let Some(a) = driver.analyzer() {
        if let Some(w) = unseen_cgroup(a, what) {
            eprintln!("lbscope: warning: {w}");
        }
    }
    let mut out = printer.into_inner();

    if let Some(v) = validation {
        print_validation(v, args.json, what, &mut out)?;
    }
    Ok(src.finish().damage)
}

/// When `--cgroup` named a cgroup no task of the run was seen in: a one-line warning naming
/// the cgroups that were seen, most tasks first.
pub fn unseen_cgroup(a: &Analyzer, what: &str) -> Option<String> {
    let f = &a.config().filter;
    let want = f.cgroup.as_deref()?;
    let seen = a.cgroups_seen();
    if seen.iter().any(|(p, _)| f.matches_cgroup(p)) {
        return None;
    }
    const LISTED: usize = 10;
    let mut list: Vec<String> = seen
        .iter()
        .take(LISTED)
        .map(|(p, n)| format!("{p} ({n})"))
        .collect();
    if seen.len() > LISTED {
        list.push(format!("and {} more", seen.len() - LISTED));
    }
    Some(match list.is_empty() {
        true => format!("--cgroup {want}: {what} names no cgroup (its source could not name them)"),
        false => format!(
            "--cgroup {want}: no task of {what} was in it; cgroups seen (tasks): {}",
            list.join(", ")
        ),
    })
}

fn report(
    args: &ReportArgs,
    src: Source,
    interval_ns: u64,
    what: &str,
) -> Result<crate::record::Damage, CmdError> {
    report_with(args, src, interval_ns, what, &mut [])
}

/// Prints validation mode's figures after the intervals; fails when the run held no
/// balancer decisions to validate against.
fn print_validation(
    v: Validation,
    json: bool,
    what: &str,
    out: &mut impl Write,
) -> Result<(), CmdError> {
    let v = v.finish();
    if v.balance_events == 0 {
        return Err(CmdError::Failed(format!(
            "--validate: {what} holds no balancer decisions: they are recorded only where \
             fentry or kprobes on the balancer load (`lbscope doctor` says whether they do; \
             the topology lab's kernels allow both: tests/lab/run)"
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

/// Counts the events that pass.
#[derive(Default)]
struct EventCount(u64);

impl Sink for EventCount {
    fn events(&mut self, batch: &[Event]) -> std::io::Result<()> {
        self.0 += batch.len() as u64;
        Ok(())
    }
}

fn run_synthetic(args: &ReportArgs, cpus: usize, interval_ns: u64) -> Result<(), CmdError> {
    use crate::source::synthetic::SyntheticConfig;
    let cfg = SyntheticConfig {
        cpus,
        tasks: cpus * 8,
        rate: args.synthetic_rate.max(1),
        events: args.synthetic_events,
        ..SyntheticConfig::default()
    };
    let started = std::time::Instant::now();
    let cpu_before = thread_cpu_ns();
    let src = Source::synthetic(cfg);
    let analyzer = analyzer(args, &src, interval_ns)?;
    let stop = stop_on_signals()?;
    let stdout = std::io::stdout();
    let mut printer = Printer::new(stdout.lock(), args.json, src.topology(), 0);
    let mut events = EventCount::default();
    let mut driver = Driver::new(analyzer).count(args.count);
    driver.run(&src, &mut [&mut events, &mut printer, &mut Warnings], &stop)?;
    drop(printer);
    let secs = started.elapsed().as_secs_f64();
    // The analyzer's own thread: what it alone costs, the generator's thread left out.
    let own = match (cpu_before, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => format!(
            "; the analyzer's thread used {:.2} s of CPU = {:.1} M events/s",
            (b - a) as f64 / 1e9,
            events.0 as f64 / ((b - a) as f64 / 1e9) / 1e6
        ),
        _ => String::new(),
    };
    eprintln!(
        "lbscope: synthetic: {} events of {cpus} CPUs in {secs:.2} s = {:.1} M events/s{own}; the analyzer tracks {} tasks",
        events.0,
        events.0 as f64 / secs / 1e6,
        driver.analyzer().map_or(0, Analyzer::tracked_tasks)
    );
    src.finish();
    Ok(())
}

/// CPU time of the calling thread in ns (the first field of /proc/thread-self/schedstat).
fn thread_cpu_ns() -> Option<u64> {
    crate::selfcost::parse_schedstat(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

#[cfg(feature = "bpf")]
fn run_live(args: &ReportArgs, interval_ns: u64) -> Result<(), CmdError> {
    use crate::pipeline::sinks::Recorder;
    let mut cfg = settings::live_config(
        &args.collect,
        args.output.is_some(),
        Some((args.fold.when, &args.filter, None)),
        Some(interval_ns),
    )?;
    cfg.schedstat = true;
    let topo = crate::topology::Topology::detect()?;
    settings::filter(&args.filter, &topo, true)?;
    if let Some(o) = &args.output {
        settings::check_output(o)?;
    }
    let src = Source::live(cfg, topo)?;
    if let (true, Some(why)) = (args.validate, &src.probes.balancer_error) {
        return Err(CmdError::Failed(format!(
            "--validate needs the balancer's own decisions, from fentry or kprobes on the \
             balancer, which did not load here ({why}); validate in the topology lab \
             (tests/lab/run) or a recording made where they load: lbscope report FILE --validate"
        )));
    }
    let mut recorder = match &args.output {
        Some(o) => Some(Recorder::create(o, &src.header, false)?),
        None => None,
    };
    eprintln!(
        "lbscope: tracing {} tracepoints ({}) on {} CPUs{}; Ctrl-C to stop",
        src.probes.attached_tracepoints().len(),
        src.probes.tracing_mode(),
        src.topology().online.len(),
        if src.probes.folded {
            ", latency folded in the kernel (--fold)"
        } else {
            ""
        }
    );
    eprintln!("lbscope: {}", src.probes.balancer_line());
    if src.probes.kallsyms == Some(false) {
        eprintln!("lbscope: warning: /proc/kallsyms gave no addresses: migration reasons fall back to context rules");
    }
    let started = std::time::Instant::now();
    // The whole process's time, the collector's thread included once it has ended.
    let run_before = crate::selfcost::process_cpu_ns();
    match &mut recorder {
        Some(r) => report_with(args, src, interval_ns, "this run", &mut [r])?,
        None => report(args, src, interval_ns, "this run")?,
    };
    if let (Some(a), Some(b)) = (run_before, crate::selfcost::process_cpu_ns()) {
        let (own_ns, wall) = (b.saturating_sub(a), started.elapsed());
        if let Some(p) = crate::selfcost::percent_of_core(own_ns, wall) {
            eprintln!(
                "lbscope: own CPU {:.2} s over {:.1} s = {p:.2}% of a core (every thread; the \
                 BPF programs run in the traced tasks and are not in it)",
                own_ns as f64 / 1e9,
                wall.as_secs_f64()
            );
        }
    }
    Ok(())
}

/// Without BPF support there is no live source.
#[cfg(not(feature = "bpf"))]
fn run_live(_args: &ReportArgs, _interval_ns: u64) -> Result<(), CmdError> {
    Err(crate::source::SourceError::NoBpf.into())
}
