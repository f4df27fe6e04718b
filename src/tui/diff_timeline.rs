//! `diff --tui`'s timeline: the first run of each side on its own CPU timeline, one above the
//! other, at the same zoom and the same time from each run's start, so that a stretch of one
//! run lines up with the same stretch of the other. This module owns the two timelines and
//! the shared cursor, and the keys of that view; the zoom, fold, selected row and expanded
//! groups are the timeline view's own ([`TimelineUi`](super::timeline::TimelineUi)).
//!
//! Invariant: `offset_ns` lies in `[0, longest run)`; it is the time of the cursor's cell
//! counted from each run's first interval start.

use super::app::App;
use super::keymap::Action;
use super::timeline::{self, PAGE_CELLS, ZOOMS_NS};
use crate::analyze::timeline::Timeline;
use crate::topology::Topology;

/// One side of the comparison on the timeline.
#[derive(Clone, Debug)]
pub struct DiffSide {
    /// "baseline" or "new", and the recording's name.
    pub label: String,
    /// The run's timeline (its first minute: the clip it was built with).
    pub timeline: Timeline,
    /// The run's topology (the two sides may differ).
    pub topo: Topology,
    /// The run's first interval start, ns: time zero of its row.
    pub start_ns: u64,
    /// The end of what the timeline holds, ns.
    pub end_ns: u64,
}

impl DiffSide {
    /// Length shown, ns.
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// Both sides and the shared cursor.
#[derive(Clone, Debug)]
pub struct DiffTimelines {
    /// Baseline, then new.
    pub sides: [DiffSide; 2],
    /// The cursor's time from each run's start; `None`: [`PAGE_CELLS`] cells in at the
    /// zoom in force (the runs' starts on screen).
    pub offset_ns: Option<u64>,
}

impl DiffTimelines {
    /// The longer run's length, ns.
    pub fn span_ns(&self) -> u64 {
        self.sides.iter().map(DiffSide::len_ns).max().unwrap_or(0)
    }

    /// The cursor's offset at `cell_ns` per cell.
    pub fn offset(&self, cell_ns: u64) -> u64 {
        let first = cell_ns.saturating_mul(PAGE_CELLS).saturating_sub(1);
        let at = self.offset_ns.unwrap_or(first);
        at.min(self.span_ns().saturating_sub(1))
    }
}

/// Applies a key in the diff timeline; `false` when the key is not the view's own. Zoom,
/// rows, fold and expanding behave as in the timeline view; the cursor moves both runs.
pub fn handle(app: &mut App, a: Action) -> bool {
    let Some(d) = app.diff_timelines.as_deref_mut() else {
        return false;
    };
    let cell = app.tl.cell_ns() as i64;
    let cells = match a {
        Action::Left => -1,
        Action::Right => 1,
        Action::PageBack => -(PAGE_CELLS as i64),
        Action::PageForward => PAGE_CELLS as i64,
        Action::Oldest => {
            d.offset_ns = None;
            return true;
        }
        Action::Newest => {
            d.offset_ns = Some(d.span_ns().saturating_sub(1));
            return true;
        }
        Action::ZoomIn | Action::ZoomOut => {
            // Zoom about the cursor: it keeps its time.
            let at = d.offset(app.tl.cell_ns());
            d.offset_ns.get_or_insert(at);
            app.tl.zoom = if a == Action::ZoomIn {
                app.tl.zoom.saturating_sub(1)
            } else {
                (app.tl.zoom + 1).min(ZOOMS_NS.len() - 1)
            };
            return true;
        }
        // The app's topology is the baseline's: its rows decide groups; the new side has
        // the same rows when the topologies match, and clamps the selection when not.
        Action::Up | Action::Down | Action::Fold | Action::Enter => {
            return timeline::handle(app, a);
        }
        _ => return false,
    };
    let at = d.offset(app.tl.cell_ns()) as i64;
    let to = (at + cell * cells).clamp(0, d.span_ns().saturating_sub(1) as i64);
    d.offset_ns = Some(to as u64);
    true
}
