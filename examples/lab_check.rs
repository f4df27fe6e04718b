//! `lab_check`: what the topology lab (tests/lab/run) reads from a recording besides
//! `lbscope report`: the Balance events (fentry mode) per domain level, and the agreement of
//! the stack-derived migration reasons with the balancer's idle type
//! (`lbscope::validate::reason_agreement`). Not a workload generator: a host-side helper.
//!
//! Output: one JSON object: `balance_events`, `balanced`, `detached`, `levels` (Balance events
//! per `sd->level`), `probes` (the recording header's), `reason_agreement` (share or null),
//! `matched`, `balancer_migrations`.

use anyhow::{Context, Result};
use lbscope::event::EventKind;
use lbscope::record::Reader;
use std::collections::BTreeMap;

fn main() -> Result<()> {
    let path = std::env::args()
        .nth(1)
        .context("usage: lab_check RECORDING")?;
    let mut reader = Reader::open(std::path::Path::new(&path))?;
    let probes = reader.header().probes.clone();
    let mut events = Vec::new();
    while let Some(chunk) = reader.next_chunk() {
        events.extend(chunk);
    }
    let (mut n, mut balanced, mut detached) = (0u64, 0u64, 0u64);
    let mut levels: BTreeMap<u32, u64> = BTreeMap::new();
    for e in &events {
        if let EventKind::Balance(b) = &e.kind {
            n += 1;
            balanced += u64::from(b.balanced);
            detached += u64::from(b.pid.is_some());
            *levels.entry(b.level).or_default() += 1;
        }
    }
    let r = lbscope::validate::reason_agreement(&events);
    let out = serde_json::json!({
        "balance_events": n,
        "balanced": balanced,
        "detached": detached,
        "levels": levels,
        "probes": probes,
        "reason_agreement": r.share(),
        "matched": r.matched,
        "balancer_migrations": r.balancer_migrations,
    });
    println!("{out}");
    Ok(())
}
