//! Text rendering of validation mode's [`Validation`]: how often the model agrees with the
//! kernel's own balancer decisions, overall and per level, beside what a constant answer
//! scores, and how often the stack-derived migration reasons agree with the balancer hooks'.
//! Owns no state.

use crate::validate::{LevelAgreement, Validation};
use std::io::{self, Write};

fn pct(n: u64, of: u64) -> String {
    if of == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", n as f64 * 100.0 / of as f64)
    }
}

fn share(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{:.1}%", v * 100.0))
}

fn row(w: &mut impl Write, name: &str, a: &LevelAgreement) -> io::Result<()> {
    let s = &a.scores;
    writeln!(
        w,
        "  {:<7} {:>8} {:>6} {:>6} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7}",
        name,
        a.decisions,
        s.kernel_imbalanced,
        s.model_imbalanced,
        share(s.agreement),
        share(s.constant_agreement),
        s.kappa
            .map_or_else(|| "-".to_string(), |k| format!("{k:.3}")),
        share(s.recall),
        share(s.precision),
        share(s.constant_precision),
        a.both_unbalanced,
        pct(a.type_agree, a.both_unbalanced),
        share(a.types.constant_agreement),
    )
}

/// The same searches answered from the tracepoints' records alone, one line: what the model
/// is worth where the balancer hooks do not load.
fn sampled(v: &Validation, w: &mut impl Write) -> io::Result<()> {
    let t: Vec<String> = v
        .sampled
        .per_level
        .iter()
        .chain([(&"all".to_string(), &v.sampled.total)])
        .map(|(k, a)| {
            let s = &a.scores;
            format!(
                "{k} {} kappa {} recall {} precision {}",
                share(s.agreement),
                s.kappa
                    .map_or_else(|| "-".to_string(), |k| format!("{k:.3}")),
                share(s.recall),
                share(s.precision)
            )
        })
        .collect();
    writeln!(
        w,
        "  the rows above read the run queues each search sent as it began ({} records: PELT \
         sums and task counts); from the tracepoints' records alone (PELT sampled every few \
         ms or on a step: what the model has without the balancer hooks): {}",
        v.pelt_at_search,
        t.join("; ")
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
        "  {:<7} {:>8} {:>6} {:>6} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7}",
        "LEVEL",
        "SEARCHES",
        "K IMB",
        "M IMB",
        "AGREE",
        "CONST",
        "KAPPA",
        "RECALL",
        "PREC",
        "CONST",
        "BOTH IMB",
        "TYPE OK",
        "CONST"
    )?;
    for (k, a) in &v.per_level {
        row(w, k, a)?;
    }
    row(w, "all", &v.total)?;
    writeln!(
        w,
        "  CONST: what a constant answer scores beside the figure before it (always the \
         commonest verdict; always imbalanced; always the commonest migration type)"
    )?;
    if v.pelt_at_search > 0 {
        sampled(v, w)?;
    }
    if !v.total.types.by_type.is_empty() {
        let t: Vec<String> = v
            .total
            .types
            .by_type
            .iter()
            .map(|(k, c)| format!("{k} {} of {}", share(c.agreement), c.pairs))
            .collect();
        writeln!(w, "  migration type by the kernel's type: {}", t.join(", "))?;
    }
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
        writeln!(w, "{}", margins_line(&v.disagreement_margins))?;
    }
    let r = &v.reasons;
    // Migrations made inside the RT class's push or pull calls pair with those calls.
    let rt = if r.matched_rt > 0 {
        format!(
            ", and {} migrations made inside the RT class's push or pull calls (the hooks' \
             reason rt_push_pull)",
            r.matched_rt
        )
    } else {
        String::new()
    };
    writeln!(
        w,
        "  reasons: {} of {} balancer migrations paired with the kernel's pass ({} by \
         detach_task, {} by the active-balance stopper, {} by the search into their CPU){rt}; \
         the stack reason is the balancer hooks' reason in {} (always the commonest: {})",
        r.matched - r.matched_rt,
        r.balancer_migrations,
        r.matched_detach,
        r.matched_stopper,
        r.matched_search,
        pct(r.agreeing, r.matched),
        share(r.constant_agreement),
    )?;
    if !r.by_reason.is_empty() {
        let t: Vec<String> = r
            .by_reason
            .iter()
            .map(|(k, c)| format!("{k} {} of {}", share(c.agreement), c.pairs))
            .collect();
        writeln!(w, "  by the hooks' reason: {}", t.join(", "))?;
    }
    if !v.raced.is_empty() {
        let t: Vec<String> = v.raced.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(
            w,
            "  not judged, raced (the model's answer changed after the search's entry, at \
             its exit or at a record before it, while the kernel read the CPUs): {}",
            t.join(", ")
        )?;
    }
    if !v.stalled.is_empty() {
        let t: Vec<String> = v.stalled.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(
            w,
            "  not judged, stalled (a CPU the search read made records until just before it, \
             none for 5 ms after, then a change of its run-queue length: its vCPU had \
             stopped, and the kernel may have read the change long before the record's \
             time): {}",
            t.join(", ")
        )?;
    }
    if !v.stalled_judged.is_empty() {
        let t: Vec<String> = v
            .stalled_judged
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(
            w,
            "  judged though a CPU they read had stopped (the search sent the run queues it \
             read): {}",
            t.join(", ")
        )?;
    }
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

/// The disagreements by how little of the groups' PELT sums turns the model's answer the
/// kernel's way, level by level, smallest change first.
fn margins_line(m: &std::collections::BTreeMap<String, u64>) -> String {
    let mut levels: Vec<(&str, Vec<(&str, u64)>)> = Vec::new();
    for (k, n) in m {
        let (level, bucket) = k.split_once('/').unwrap_or((k, ""));
        match levels.iter_mut().find(|(l, _)| *l == level) {
            Some((_, b)) => b.push((bucket, *n)),
            None => levels.push((level, vec![(bucket, *n)])),
        }
    }
    let rank = |b: &str| match b {
        "one task" => 100.0,
        "neither" => 101.0,
        "not tried" => 102.0,
        _ => b.trim_end_matches('%').parse::<f64>().unwrap_or(103.0),
    };
    let parts: Vec<String> = levels
        .into_iter()
        .map(|(level, mut b)| {
            b.sort_by(|x, y| rank(x.0).total_cmp(&rank(y.0)).then(x.0.cmp(y.0)));
            let each: Vec<String> = b
                .iter()
                .map(|(k, n)| match k.ends_with('%') {
                    true => format!("{n} by {k}"),
                    false => format!("{n} {k}"),
                })
                .collect();
            format!("{level} {}", each.join(", "))
        })
        .collect();
    format!(
        "  what turns the disagreements the kernel's way: the groups' PELT sums (load, util, \
         runnable) changed by, else one task more or fewer on a group: {} (the model's PELT \
         sums are samples where a search sent none, and a CPU may change while a search \
         reads; a task being enqueued or dequeued may be counted otherwise than the search \
         did)",
        parts.join("; ")
    )
}
