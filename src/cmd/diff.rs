//! `lbscope diff`: two recordings, each through its own analyzer into a history, compared
//! (crate::diff); printed as text or JSON, or shown in the TUI (`--tui`).

use super::{damage_outcome, settings, stop_on_signals, CmdError};
use crate::analyze::Snapshot;
use crate::cli::{DiffArgs, FilterArgs, ModelArgs};
use crate::diff::{Diff, RunMeta, RunSummary};
use crate::pipeline::Source;
use crate::record::{Damage, Header};
use crate::topology::Topology;
use crate::tui::app::App;
use std::path::Path;

/// Every interval of a recording, the final partial one included.
pub fn analyze_file(
    path: &Path,
    interval_ns: u64,
    filter: &FilterArgs,
    model: &ModelArgs,
) -> Result<(Header, Vec<Snapshot>, Damage), CmdError> {
    super::replay::analyze_recording(Source::file(path)?, interval_ns, filter, model)
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
    let interval_ns = settings::interval_ns(args.interval)?;
    let (ha, sa, da) = analyze_file(&args.baseline, interval_ns, &args.filter, &args.model)?;
    let (hb, sb, db) = analyze_file(&args.new, interval_ns, &args.filter, &args.model)?;
    let label = |p: &Path| p.display().to_string();
    let a = RunSummary::from_snapshots(&sa, &label(&args.baseline), meta(&ha));
    let b = RunSummary::from_snapshots(&sb, &label(&args.new), meta(&hb));
    let d = crate::diff::diff(&a, &b);
    if args.tui {
        show(d, ha.topology.clone(), (sa, sb))?;
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

/// Shows a comparison in the TUI until `q`: computed before the screen opens, so the
/// screen's loop has nothing to feed.
fn show(d: Diff, topo: Topology, runs: (Vec<Snapshot>, Vec<Snapshot>)) -> Result<(), CmdError> {
    let mut app = App::for_diff(d, topo);
    app.diff_runs = Some(Box::new(runs));
    let stop = stop_on_signals()?;
    let mut guard = crate::tui::term::enter().map_err(|e| CmdError::Failed(e.to_string()))?;
    let r = crate::tui::run::run(&mut guard, &mut app, &mut crate::tui::run::NoFeed, &stop);
    drop(guard);
    Ok(r?)
}
