//! The timeline view's UI state and keys: zoom (time per cell), the time cursor (the last
//! column; none = the shown interval's end), the selected row, folding by LLC or NUMA node
//! and which groups are expanded; and the "finding explained" screen opened from the
//! findings view. The data is the app's [`Timeline`](crate::analyze::timeline::Timeline),
//! fed by the pipeline; nothing here reads it except to clamp the cursor.
//!
//! Rows: one per CPU when they fit; otherwise one per LLC, or per NUMA node when even the
//! LLCs do not fit (`f` picks one); Enter expands a group into its CPUs.

use super::app::{App, View};
use super::keymap::Action;
use super::state::FindingRow;
use crate::cpuset::CpuSet;
use crate::topology::{LevelKind, Topology};
use std::collections::BTreeSet;

/// Time per cell, ns, as `i`/`o` step through it.
pub const ZOOMS_NS: &[u64] = &[
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
];
/// The zoom a fresh view opens at (20 ms per cell).
pub const DEFAULT_ZOOM: usize = 10;
/// Cells a page key moves.
pub const PAGE_CELLS: u64 = 40;
/// Auto folding: CPUs up to this many get a row each; beyond, LLCs do (up to as many).
pub const AUTO_ROWS: usize = 32;

/// How CPUs are grouped into rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fold {
    /// CPUs when they fit the screen, else LLCs, else nodes.
    #[default]
    Auto,
    /// One row per CPU.
    Cpus,
    /// One row per LLC.
    Llc,
    /// One row per NUMA node.
    Node,
}

impl Fold {
    /// The name shown in the view's header.
    pub fn name(self) -> &'static str {
        match self {
            Fold::Auto => "auto",
            Fold::Cpus => "cpu",
            Fold::Llc => "llc",
            Fold::Node => "node",
        }
    }

    fn next(self) -> Fold {
        match self {
            Fold::Auto => Fold::Cpus,
            Fold::Cpus => Fold::Llc,
            Fold::Llc => Fold::Node,
            Fold::Node => Fold::Auto,
        }
    }
}

/// One row of the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// "cpu 5", "llc 0-15", "node 16-31".
    pub label: String,
    /// The CPUs it sums up.
    pub cpus: CpuSet,
    /// A group (folded), not a single CPU.
    pub group: bool,
    /// A CPU shown under its expanded group.
    pub nested: bool,
}

/// A finding opened on its timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Explain {
    /// The finding.
    pub finding: FindingRow,
    /// First evidence line shown.
    pub scroll: usize,
    /// Zoom chosen with `i`/`o`; `None`: the one that fits the finding's span.
    pub zoom: Option<usize>,
    /// Cells the window was moved by `h`/`l` (negative: back).
    pub shift: i64,
}

/// The timeline's UI state.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineUi {
    /// Index into [`ZOOMS_NS`].
    pub zoom: usize,
    /// The cursor's time; `None`: the shown interval's end (following the replay or live).
    pub at_ns: Option<u64>,
    /// The selected row.
    pub row: usize,
    /// Row grouping.
    pub fold: Fold,
    /// Expanded groups, by their first CPU.
    pub expanded: BTreeSet<usize>,
    /// A finding explained (the findings view's Enter).
    pub explain: Option<Explain>,
}

impl Default for TimelineUi {
    fn default() -> Self {
        TimelineUi {
            zoom: DEFAULT_ZOOM,
            at_ns: None,
            row: 0,
            fold: Fold::Auto,
            expanded: BTreeSet::new(),
            explain: None,
        }
    }
}

impl TimelineUi {
    /// Time per cell, ns.
    pub fn cell_ns(&self) -> u64 {
        ZOOMS_NS[self.zoom.min(ZOOMS_NS.len() - 1)]
    }
}

/// The spans of the LLC level (or the lowest level above SMT), if the topology has one.
fn llc_spans(topo: &Topology) -> Option<Vec<CpuSet>> {
    let l = topo
        .levels
        .iter()
        .find(|l| l.kind == LevelKind::Llc)
        .or_else(|| topo.levels.iter().find(|l| l.kind != LevelKind::Smt))?;
    Some(l.domains.iter().map(|d| d.span).collect())
}

/// The groups a machine of `n` online CPUs has: its LLCs (when it has more than one and they
/// are not single CPUs) and its NUMA nodes (when more than one).
fn groups(topo: &Topology, n: usize) -> (Option<Vec<CpuSet>>, Option<Vec<CpuSet>>) {
    let llcs = llc_spans(topo).filter(|s| s.len() > 1 && s.len() < n);
    let nodes = (topo.numa_nodes.len() > 1).then(|| topo.numa_nodes.clone());
    (llcs, nodes)
}

/// What the rows are per on this machine: `ui`'s choice, with `Auto` settled (CPUs when they
/// fit the screen, else LLCs, else nodes) and a grouping the machine lacks falling back to the
/// other one, or to CPUs.
pub fn per(topo: &Topology, ui: &TimelineUi) -> Fold {
    let n = topo.online.iter().count();
    let (llcs, nodes) = groups(topo, n);
    settle(ui.fold, n, llcs.as_deref(), nodes.as_deref())
}

/// [`per`] over groups already found.
fn settle(fold: Fold, n: usize, llcs: Option<&[CpuSet]>, nodes: Option<&[CpuSet]>) -> Fold {
    let want = match fold {
        Fold::Auto if n <= AUTO_ROWS => Fold::Cpus,
        Fold::Auto => match llcs {
            Some(l) if l.len() <= AUTO_ROWS || nodes.is_none() => Fold::Llc,
            _ => Fold::Node,
        },
        f => f,
    };
    match (want, llcs.is_some(), nodes.is_some()) {
        (Fold::Llc, false, true) => Fold::Node,
        (Fold::Node, true, false) => Fold::Llc,
        (Fold::Llc, false, false) | (Fold::Node, false, false) => Fold::Cpus,
        (f, _, _) => f,
    }
}

/// The rows of the grid (a grid lower than them scrolls with the selection).
pub fn rows(topo: &Topology, ui: &TimelineUi) -> Vec<Row> {
    let cpus: Vec<usize> = topo.online.iter().collect();
    let (llcs, nodes) = groups(topo, cpus.len());
    let (groups, name) = match settle(ui.fold, cpus.len(), llcs.as_deref(), nodes.as_deref()) {
        Fold::Llc => (llcs, "llc"),
        Fold::Node => (nodes, "node"),
        _ => (None, ""),
    };
    let cpu_row = |c: usize, nested: bool| Row {
        label: format!("{}cpu {c}", if nested { " " } else { "" }),
        cpus: std::iter::once(c).collect(),
        group: false,
        nested,
    };
    let Some(groups) = groups else {
        return cpus.into_iter().map(|c| cpu_row(c, false)).collect();
    };
    let mut out = Vec::new();
    for g in groups {
        let first = g.iter().next().unwrap_or(0);
        let open = ui.expanded.contains(&first);
        out.push(Row {
            label: format!("{}{name} {g}", if open { "-" } else { "+" }),
            cpus: g,
            group: true,
            nested: false,
        });
        if open {
            out.extend(g.iter().map(|c| cpu_row(c, true)));
        }
    }
    out
}

/// The cursor's time: the chosen one, or the shown interval's end (live: the newest event
/// the timeline saw, when later).
pub fn focus_ns(app: &App) -> Option<u64> {
    if let Some(t) = app.tl.at_ns {
        return Some(t);
    }
    let end = app.current().map(|s| s.t_end_ns.saturating_sub(1));
    match (&app.timeline, app.cursor()) {
        (Some(tl), None) if tl.now_ns() > 0 => {
            Some(end.map_or(tl.now_ns(), |e| e.max(tl.now_ns())))
        }
        _ => end,
    }
}

/// Moves the cursor by `cells` and brings the shown interval along (seeking in replay).
fn move_cursor(app: &mut App, cells: i64) {
    let Some(t) = focus_ns(app) else { return };
    let step = app.tl.cell_ns() as i64 * cells;
    let lo = app.history.front().map_or(0, |s| s.t_start_ns);
    let hi = match &app.timeline {
        Some(tl) => tl
            .now_ns()
            .max(app.history.back().map_or(0, |s| s.t_end_ns)),
        None => app.history.back().map_or(t, |s| s.t_end_ns),
    };
    let to = (t as i64 + step).clamp(lo as i64, hi.saturating_sub(1) as i64) as u64;
    app.tl.at_ns = Some(to);
    app.paused = true;
    if let Some(i) = app.history.iter().position(|s| s.t_end_ns > to) {
        app.set_cursor(Some(i));
    }
}

/// Applies a key in the timeline view; `false` when the key is not the view's own.
pub fn handle(app: &mut App, a: Action) -> bool {
    let ui = &mut app.tl;
    match a {
        Action::ZoomIn => ui.zoom = ui.zoom.saturating_sub(1),
        Action::ZoomOut => ui.zoom = (ui.zoom + 1).min(ZOOMS_NS.len() - 1),
        Action::Up => ui.row = ui.row.saturating_sub(1),
        Action::Down => ui.row = ui.row.saturating_add(1),
        Action::Fold => {
            ui.fold = ui.fold.next();
            ui.expanded.clear();
            ui.row = 0;
        }
        Action::Enter => {
            let r = rows(&app.topo, &app.tl);
            let Some(row) = r.get(app.tl.row.min(r.len().saturating_sub(1))) else {
                return true;
            };
            // A group opens or closes; a CPU under a group closes its group.
            let first = if row.nested {
                r[..app.tl.row.min(r.len() - 1)]
                    .iter()
                    .rev()
                    .find(|g| g.group)
                    .and_then(|g| g.cpus.iter().next())
            } else if row.group {
                row.cpus.iter().next()
            } else {
                None
            };
            if let Some(first) = first {
                if !app.tl.expanded.remove(&first) {
                    app.tl.expanded.insert(first);
                }
            }
        }
        Action::Left => move_cursor(app, -1),
        Action::Right => move_cursor(app, 1),
        Action::PageBack => move_cursor(app, -(PAGE_CELLS as i64)),
        Action::PageForward => move_cursor(app, PAGE_CELLS as i64),
        Action::Oldest => {
            let lo = app
                .timeline
                .as_ref()
                .and_then(|t| t.kept_from())
                .or_else(|| app.history.front().map(|s| s.t_start_ns));
            if let Some(lo) = lo {
                app.tl.at_ns = Some(lo);
                move_cursor(app, PAGE_CELLS as i64);
            }
        }
        Action::Newest => {
            app.tl.at_ns = None;
            if app.history.is_empty() {
                return true;
            }
            if matches!(app.source, super::app::SourceInfo::Live { .. }) {
                app.paused = false;
                app.set_cursor(None);
            } else {
                app.set_cursor(Some(app.history.len() - 1));
            }
        }
        _ => return false,
    }
    true
}

/// Opens the selected finding on its timeline.
pub fn explain(app: &mut App, finding: FindingRow) {
    app.tl.explain = Some(Explain {
        finding,
        scroll: 0,
        zoom: None,
        shift: 0,
    });
    app.prev_view = app.view;
    app.view = View::Explain;
}

/// Applies a key on the finding explained; `false` when the key is not its own.
pub fn handle_explain(app: &mut App, a: Action) -> bool {
    let Some(e) = app.tl.explain.as_mut() else {
        return false;
    };
    match a {
        Action::Back | Action::Enter => {
            app.tl.explain = None;
            app.view = View::Findings;
        }
        Action::Up => e.scroll = e.scroll.saturating_sub(1),
        Action::Down => e.scroll = e.scroll.saturating_add(1),
        Action::PageBack => e.scroll = e.scroll.saturating_sub(10),
        Action::PageForward => e.scroll = e.scroll.saturating_add(10),
        Action::Left => e.shift -= 4,
        Action::Right => e.shift += 4,
        Action::ZoomIn | Action::ZoomOut => {
            let z = e.zoom.unwrap_or(DEFAULT_ZOOM);
            e.zoom = Some(if a == Action::ZoomIn {
                z.saturating_sub(1)
            } else {
                (z + 1).min(ZOOMS_NS.len() - 1)
            });
        }
        _ => return false,
    }
    true
}

/// The time the screen needs the timeline around: the cursor in the timeline view, the
/// finding's span in the finding explained; `None` elsewhere.
pub fn wanted_ns(app: &App) -> Option<u64> {
    match app.view {
        View::Timeline => focus_ns(app),
        View::Explain => app.tl.explain.as_ref().map(|e| {
            let (a, b) = e.finding.span_ns;
            a + (b - a) / 2
        }),
        _ => None,
    }
}
