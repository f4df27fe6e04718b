//! Text rendering of the balancer model's part of a [`Snapshot`]: the per-domain imbalance
//! table and the findings (counts by kind, then the first ones with their evidence sentence).
//!
//! Owns no state: a pure function of the snapshot.

use crate::analyze::Snapshot;
use std::io::{self, Write};

/// Findings shown with their sentence in text (the JSON keeps every kept one).
pub const TEXT_FINDINGS: usize = 10;
/// Width of a finding's sentence lines (after a 4-space indent).
const WRAP: usize = 74;
/// Up to this many domains, every one is shown; beyond, only those with an imbalance.
const ALL_DOMAINS_UP_TO: usize = 24;

/// The per-domain table: group types, busiest group, imbalance and migration type.
pub fn balancer(s: &Snapshot, w: &mut impl Write) -> io::Result<()> {
    writeln!(
        w,
        "Balancer model ({} rules; group types as group_classify names them):",
        s.model_rules
    )?;
    if s.domains.is_empty() {
        return writeln!(w, "  (no domain)");
    }
    writeln!(
        w,
        "  {:<7} {:<12} {:>3} {:<10} {:<12} {:<12} {:>7} {:<6}",
        "LEVEL", "SPAN", "PCT", "BUSIEST", "BUSIEST TYPE", "LOCAL TYPE", "IMB", "TYPE"
    )?;
    let show_all = s.domains.len() <= ALL_DOMAINS_UP_TO;
    let mut hidden = 0usize;
    for d in &s.domains {
        if !show_all && d.imbalance == 0 {
            hidden += 1;
            continue;
        }
        let busiest = d.busiest_group.and_then(|i| d.groups.get(i));
        let local = d.groups.get(d.local_group);
        let mt = d.migration_type.map_or("-".to_string(), |m| {
            serde_json::to_value(m)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        });
        writeln!(
            w,
            "  {:<7} {:<12} {:>3} {:<10} {:<12} {:<12} {:>7} {:<6}",
            d.level,
            d.span.to_string(),
            d.imbalance_pct,
            busiest.map_or("-".to_string(), |g| g.cpus.to_string()),
            busiest.map_or("-", |g| g.group_type.name()),
            local.map_or("-", |g| g.group_type.name()),
            d.imbalance,
            mt
        )?;
    }
    if hidden > 0 {
        writeln!(w, "  ({hidden} more domains, balanced)")?;
    }
    Ok(())
}

/// Counts by kind, then the first [`TEXT_FINDINGS`] findings with their sentence.
pub fn findings(s: &Snapshot, w: &mut impl Write) -> io::Result<()> {
    let total: u64 = s.findings_by_kind.values().sum();
    writeln!(w, "Findings: {total}")?;
    if total == 0 {
        return Ok(());
    }
    let counts: Vec<String> = s
        .findings_by_kind
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    writeln!(w, "  {}", counts.join(", "))?;
    for f in s.findings.iter().take(TEXT_FINDINGS) {
        writeln!(
            w,
            "  +{:.3} ms {}",
            f.t_ns.saturating_sub(s.t_start_ns) as f64 / 1e6,
            f.kind.name()
        )?;
        for line in wrap(&f.text, WRAP) {
            writeln!(w, "    {line}")?;
        }
    }
    let more = total.saturating_sub(s.findings.len().min(TEXT_FINDINGS) as u64);
    if more > 0 {
        writeln!(
            w,
            "  ({more} more; --json has the first {} with evidence)",
            s.findings.len()
        )?;
    }
    Ok(())
}

/// `text` cut at spaces into lines of at most `width` characters (a longer word stands alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}
