//! Text rendering of validation mode's [`Validation`]: how often the model agrees with the
//! kernel's own balancer decisions, overall and per level, and how often the stack-derived
//! migration reasons agree with the kernel's idle type. Owns no state.

use crate::validate::{LevelAgreement, Validation};
use std::io::{self, Write};

fn pct(n: u64, of: u64) -> String {
    if of == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", n as f64 * 100.0 / of as f64)
    }
}

fn row(w: &mut impl Write, name: &str, a: &LevelAgreement) -> io::Result<()> {
    writeln!(
        w,
        "  {:<7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}",
        name,
        a.decisions,
        a.kernel_balanced,
        a.model_balanced,
        pct(a.balanced_agree, a.decisions),
        a.both_unbalanced,
        pct(a.type_agree, a.both_unbalanced)
    )
}

/// The validation section printed after a report's intervals.
pub fn validation(v: &Validation, w: &mut impl Write) -> io::Result<()> {
    writeln!(
        w,
        "Validation: the model ({} rules) against the kernel's own balancer decisions",
        v.rules
    )?;
    writeln!(
        w,
        "  {:<7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "LEVEL", "SEARCHES", "K BAL", "M BAL", "AGREE", "BOTH IMB", "TYPE OK"
    )?;
    for (k, a) in &v.per_level {
        row(w, k, a)?;
    }
    row(w, "all", &v.total)?;
    if !v.migration_types.is_empty() {
        let t: Vec<String> = v
            .migration_types
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(w, "  migration types (kernel/model): {}", t.join(", "))?;
    }
    if !v.disagreements_by_kind.is_empty() {
        let mut kinds: Vec<(&String, &u64)> = v.disagreements_by_kind.iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = kinds
            .iter()
            .take(6)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(
            w,
            "  disagreements (level/idle type/kernel verdict): {}{}; --json has the first {} \
             with the model's groups",
            top.join(", "),
            if kinds.len() > 6 { ", ..." } else { "" },
            v.disagreements.len()
        )?;
    }
    let r = &v.reasons;
    writeln!(
        w,
        "  reasons: {} of {} balancer migrations paired with the kernel's pass ({} by \
         detach_task, {} by the search into their CPU); the stack reason agrees with the \
         kernel's idle type in {}",
        r.matched,
        r.balancer_migrations,
        r.matched_detach,
        r.matched_search,
        pct(r.agreeing, r.matched)
    )?;
    if v.unmapped > 0 || v.late > 0 || v.redo > 0 {
        writeln!(
            w,
            "  not judged: {} searches retried without pinned CPUs, {} at a domain size the \
             recording's topology lacks; {} events later than the reorder window",
            v.redo, v.unmapped, v.late
        )?;
    }
    Ok(())
}
