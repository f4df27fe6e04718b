//! JSON lines: one [`Snapshot`] per line, the documented machine-readable contract (field
//! names in `analyze::snapshot`). Owns no state.

use crate::analyze::Snapshot;
use std::io::{self, Write};

/// Writes `s` as one JSON object followed by a newline.
pub fn render_json(s: &Snapshot, w: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer(&mut *w, s).map_err(io::Error::other)?;
    w.write_all(b"\n")
}
