//! `lbscope diff`: two recordings through two analyzers, compared (crate::diff).

use super::report::{build_filter, damage_outcome, interval_ns};
use super::{pipeline, CmdError};
use crate::analyze::{Analyzer, AnalyzerConfig, Snapshot};
use crate::cli::{DiffArgs, FilterArgs, ModelArgs};
use crate::diff::{RunMeta, RunSummary};
use crate::record::{Damage, Header};
use crate::source::file::FileSource;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Every interval of a recording, the final partial one included.
pub fn analyze_file(
    path: &Path,
    interval_ns: u64,
    filter: &FilterArgs,
    model: &ModelArgs,
) -> Result<(Header, Vec<Snapshot>, Damage), CmdError> {
    analyze_source(FileSource::open(path)?, interval_ns, filter, model)
}

/// Every interval of an opened recording, the final partial one included.
pub fn analyze_source(
    src: FileSource,
    interval_ns: u64,
    filter: &FilterArgs,
    model: &ModelArgs,
) -> Result<(Header, Vec<Snapshot>, Damage), CmdError> {
    let topo = src.header.topology.clone();
    let filter = build_filter(filter, &topo, false)?;
    let mut analyzer = Analyzer::new(
        topo,
        AnalyzerConfig {
            interval_ns,
            filter,
            model: model.config(&src.header.kernel_release),
        },
    );
    let mut snaps = Vec::new();
    pipeline::run(
        &src.rx,
        &mut analyzer,
        None,
        &AtomicBool::new(false),
        pipeline::Hooks {
            request_stop: &mut || {},
            tee: &mut |_| Ok(()),
            sink: &mut |s| {
                snaps.push(s.clone());
                Ok(())
            },
            warn: &mut |w| eprintln!("lbscope: warning: {w}"),
        },
    )?;
    let header = src.header.clone();
    Ok((header, snaps, src.damage()))
}

fn meta(h: &Header) -> RunMeta {
    let levels: Vec<&str> = h.topology.levels.iter().map(|l| l.key.as_str()).collect();
    RunMeta {
        kernel_release: h.kernel_release.clone(),
        hostname: h.hostname.clone(),
        topology_summary: format!("{} CPUs: {}", h.topology.online.len(), levels.join(" ")),
        nr_cpus: h.topology.online.len(),
    }
}

/// Runs `lbscope diff`.
pub fn run(args: &DiffArgs) -> Result<(), CmdError> {
    let interval_ns = interval_ns(args.interval)?;
    let (ha, sa, da) = analyze_file(&args.baseline, interval_ns, &args.filter, &args.model)?;
    let (hb, sb, db) = analyze_file(&args.new, interval_ns, &args.filter, &args.model)?;
    let label = |p: &Path| p.display().to_string();
    let a = RunSummary::from_snapshots(&sa, &label(&args.baseline), meta(&ha));
    let b = RunSummary::from_snapshots(&sb, &label(&args.new), meta(&hb));
    let d = crate::diff::diff(&a, &b);
    if args.tui {
        super::top::show_diff(d, ha.topology.clone())?;
        damage_outcome(&args.baseline, &da)?;
        return damage_outcome(&args.new, &db);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        use std::io::Write;
        serde_json::to_writer(&mut out, &d).map_err(std::io::Error::other)?;
        writeln!(out)?;
    } else {
        crate::output::diff_text::render_diff_text(&d, &mut out)?;
    }
    damage_outcome(&args.baseline, &da)?;
    damage_outcome(&args.new, &db)
}
