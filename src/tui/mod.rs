//! The terminal UI, a sink of the one pipeline: `lbscope top` (live), `lbscope replay`
//! (a recording) and `lbscope diff --tui` draw the same views.
//!
//! - `app`: the UI state and what each action does to it (one owner: the event loop);
//! - `keymap`: keys to actions, and the table the help view lists;
//! - `state`: the adapter from snapshots to domain, group and finding rows;
//! - `history`: the series the history charts draw, from a window of snapshots;
//! - `store`: the intervals a screen keeps: chart figures, and whole snapshots packed;
//! - `views`: one file per view, reading state only;
//! - `run`: the event loop and its feeds (live analyzer, replay cursor);
//! - `timeline`: the timeline view's state and keys, and the finding explained;
//! - `diff_timeline`: `diff --tui`'s two runs on their timelines, and that view's keys;
//! - `term`: raw mode, the alternate screen, restoring them on every exit, `NO_COLOR`.

pub mod app;
pub mod diff_timeline;
#[cfg(test)]
mod diff_timeline_tests;
pub mod history;
#[cfg(test)]
mod history_tests;
pub mod keymap;
pub mod run;
pub mod state;
pub mod store;
#[cfg(test)]
mod store_tests;
pub mod term;
#[cfg(test)]
mod tests;
pub mod timeline;
#[cfg(test)]
mod timeline_tests;
pub mod views;

use crate::record::Header;
use app::RecordingInfo;

/// `YYYY-MM-DD HH:MM UTC` of a Unix time.
pub fn utc_date(unix_s: u64) -> String {
    let c = crate::civil::civil(unix_s);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        c.year, c.month, c.day, c.hour, c.minute
    )
}

/// What the screen says about a recording.
pub fn recording_info(name: &str, h: &Header) -> RecordingInfo {
    let levels: Vec<&str> = h.topology.levels.iter().map(|l| l.key.as_str()).collect();
    RecordingInfo {
        name: name.to_string(),
        hostname: h.hostname.clone(),
        kernel: h.kernel_release.clone(),
        date: utc_date(h.created_unix_s),
        topology: format!("{} CPUs: {}", h.topology.online.len(), levels.join(" ")),
        probes: crate::pipeline::Probes::from_header(&h.probes).mode(),
        span_ns: 0,
    }
}
