//! The terminal UI, a sink of the one pipeline: `lbscope top` (live), `lbscope replay`
//! (a recording) and `lbscope diff --tui` draw the same views.
//!
//! - `app`: the UI state and what each action does to it (one owner: the event loop);
//! - `keymap`: keys to actions, and the table the help view lists;
//! - `state`: the adapter from snapshots to domain, group and finding rows;
//! - `views`: one file per view, reading state only;
//! - `run`: the event loop and its feeds (live analyzer, replay cursor);
//! - `term`: raw mode, the alternate screen, restoring them on every exit, `NO_COLOR`.

pub mod app;
pub mod keymap;
pub mod run;
pub mod state;
pub mod term;
#[cfg(test)]
mod tests;
pub mod views;

use crate::record::Header;
use app::RecordingInfo;

/// `YYYY-MM-DD HH:MM UTC` of a Unix time.
pub fn utc_date(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60
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
