//! `lbscope diff`: two sides of one or more recordings each (files, or directories of .lbs
//! files), every recording through its own analyzer, compared (crate::diff); printed as text,
//! JSON or Markdown, or shown in the TUI (`--tui`).

use super::{damage_outcome, settings, stop_on_signals, CmdError};
use crate::analyze::timeline::WINDOW_NS;
use crate::analyze::Snapshot;
use crate::cli::{DiffArgs, DiffFormat, FilterArgs, ModelArgs};
use crate::diff::{Diff, RunMeta, RunSummary};
use crate::pipeline::Source;
use crate::record::{Damage, Header};
use crate::topology::Topology;
use crate::tui::app::App;
use crate::tui::diff_timeline::{DiffSide, DiffTimelines};
use std::path::{Path, PathBuf};

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

/// The recordings of one side: files as given, directories replaced by their `.lbs` files
/// in name order.
fn expand(paths: &[PathBuf], side: &str) -> Result<Vec<PathBuf>, CmdError> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let entries = std::fs::read_dir(p).map_err(|e| {
            CmdError::Usage(format!("{}: cannot list the directory: {e}", p.display()))
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.extension().is_some_and(|x| x == "lbs") && f.is_file())
            .collect();
        if files.is_empty() {
            return Err(CmdError::Usage(format!(
                "{}: no .lbs recordings in this directory (the {side} side)",
                p.display()
            )));
        }
        files.sort();
        out.append(&mut files);
    }
    Ok(out)
}

/// The two sides from the command line: `A B`, or `A1 A2 ... -- B1 B2 ...`.
pub fn sides(args: &DiffArgs) -> Result<(Vec<PathBuf>, Vec<PathBuf>), CmdError> {
    const HOW: &str = "lbscope diff BASELINE NEW, or lbscope diff A1 A2 ... -- B1 B2 ... \
                       (files or directories of .lbs files)";
    let (a, b) = if args.new.is_empty() {
        match args.baseline.as_slice() {
            [a, b] => (vec![a.clone()], vec![b.clone()]),
            [_] => {
                return Err(CmdError::Usage(format!(
                    "diff needs two sides, got one: {HOW}"
                )))
            }
            more => {
                return Err(CmdError::Usage(format!(
                    "{} recordings and no `--`: put `--` between the baseline's runs and the \
                     new side's ({HOW})",
                    more.len()
                )))
            }
        }
    } else {
        // Everything after `--` is a recording to clap, options too.
        if let Some(o) = args
            .new
            .iter()
            .find(|p| p.to_string_lossy().starts_with('-') && !p.exists())
        {
            return Err(CmdError::Usage(format!(
                "{}: options after `--` are read as recordings of the new side: put them \
                 before `--`",
                o.display()
            )));
        }
        (args.baseline.clone(), args.new.clone())
    };
    Ok((expand(&a, "baseline")?, expand(&b, "new")?))
}

/// One side's runs, summarized, with the first run's topology and snapshots (the TUI's
/// history charts draw the first run of each side) and the damage of each.
struct Side {
    runs: Vec<RunSummary>,
    topo: Option<Topology>,
    first: Vec<Snapshot>,
    damage: Vec<Damage>,
}

/// Every run of one side, summarized.
fn summarize(paths: &[PathBuf], interval_ns: u64, args: &DiffArgs) -> Result<Side, CmdError> {
    let mut runs = Vec::new();
    let mut topo = None;
    let mut first = None;
    let mut damage = Vec::new();
    for p in paths {
        let (h, snaps, d) = analyze_file(p, interval_ns, &args.filter, &args.model)?;
        runs.push(RunSummary::from_snapshots(
            &snaps,
            &p.display().to_string(),
            meta(&h),
        ));
        topo.get_or_insert_with(|| h.topology.clone());
        first.get_or_insert(snaps);
        damage.push(d);
    }
    let first = first.unwrap_or_default();
    Ok(Side {
        runs,
        topo,
        first,
        damage,
    })
}

/// Runs `lbscope diff`.
pub fn run(args: &DiffArgs) -> Result<(), CmdError> {
    let interval_ns = settings::interval_ns(args.interval)?;
    let (pa, pb) = sides(args)?;
    let a = summarize(&pa, interval_ns, args)?;
    let b = summarize(&pb, interval_ns, args)?;
    let d = crate::diff::diff_runs(&a.runs, &b.runs);
    let (topo, da, db) = (a.topo, a.damage, b.damage);
    let damaged = || -> Result<(), CmdError> {
        for (p, d) in pa.iter().chain(&pb).zip(da.iter().chain(&db)) {
            damage_outcome(p, d)?;
        }
        Ok(())
    };
    if args.tui {
        let topo = topo.ok_or_else(|| CmdError::Usage("the baseline side has no runs".into()))?;
        let timelines =
            [("baseline", &pa[0], &a.first), ("new", &pb[0], &b.first)].map(|(name, p, snaps)| {
                side_timeline(name, p, snaps, interval_ns, (&args.filter, &args.model))
            });
        let timelines = match timelines {
            [Ok(x), Ok(y)] => Some(Box::new(DiffTimelines {
                sides: [x, y],
                offset_ns: None,
            })),
            _ => None,
        };
        show(d, topo, (a.first, b.first), timelines)?;
        return damaged();
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let format = if args.json {
        DiffFormat::Json
    } else {
        args.format
    };
    match format {
        DiffFormat::Json => {
            use std::io::Write;
            serde_json::to_writer(&mut out, &d).map_err(std::io::Error::other)?;
            writeln!(out)?;
        }
        DiffFormat::Text => crate::output::diff_text::render_diff_text(&d, &mut out)?,
        DiffFormat::Markdown => crate::output::diff_markdown::render_diff_markdown(&d, &mut out)?,
    }
    damaged()
}

/// The timeline of a side's first run over its first [`WINDOW_NS`] (a second pass over the
/// recording, for `--tui` only).
pub fn side_timeline(
    name: &str,
    path: &Path,
    snaps: &[Snapshot],
    interval_ns: u64,
    (filter, model): (&FilterArgs, &ModelArgs),
) -> Result<DiffSide, CmdError> {
    let src = Source::file(path)?;
    let topo = src.topology().clone();
    let start_ns = snaps.first().map_or(0, |s| s.t_start_ns);
    let last = snaps.last().map_or(start_ns, |s| s.t_end_ns);
    let end_ns = last.min(start_ns + WINDOW_NS);
    let timeline =
        super::replay::timeline_of(src, interval_ns, (filter, model), (start_ns, end_ns))?;
    let file = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let clipped = if last > end_ns {
        format!(" (its first {} s)", WINDOW_NS / 1_000_000_000)
    } else {
        String::new()
    };
    Ok(DiffSide {
        label: format!("{name}: {file}{clipped}"),
        timeline,
        topo,
        start_ns,
        end_ns,
    })
}

/// Shows a comparison in the TUI until `q`: computed before the screen opens, so the
/// screen's loop has nothing to feed.
fn show(
    d: Diff,
    topo: Topology,
    runs: (Vec<Snapshot>, Vec<Snapshot>),
    timelines: Option<Box<DiffTimelines>>,
) -> Result<(), CmdError> {
    let mut app = App::for_diff(d, topo);
    app.diff_runs = Some(Box::new(runs));
    app.diff_timelines = timelines;
    let stop = stop_on_signals()?;
    let mut guard = crate::tui::term::enter().map_err(|e| CmdError::Failed(e.to_string()))?;
    let r = crate::tui::run::run(&mut guard, &mut app, &mut crate::tui::run::NoFeed, &stop);
    drop(guard);
    Ok(r?)
}
