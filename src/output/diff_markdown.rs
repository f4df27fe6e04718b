//! Markdown rendering of a [`Diff`] (`lbscope diff --format markdown`): the table a developer
//! pastes into a cover letter, a README or a review, headed by what was compared (each side's
//! kernel releases, topology and runs) and how the noise was estimated, then the warnings,
//! then one GitHub-flavoured table: baseline, new (mean ±sd of the runs with several runs a
//! side), change, the 95% interval of the difference, the p-value of Welch's test with
//! several runs, and `*` where the change is beyond the noise.
//!
//! Owns no state: a pure function of the diff; the figures are the text table's, formatted
//! by the same helpers.

use super::diff_text::{
    change, decimals, is_multi, mean_sd, metric_name, num, side_summary, title,
};
use crate::diff::{Diff, DiffRow, Method, RunInfo, BOOTSTRAP_ITERATIONS};
use std::io::{self, Write};

/// Cells must not break the table: a pipe in a label is escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn side(name: &str, runs: &[RunInfo], w: &mut impl Write) -> io::Result<()> {
    let n = runs.len();
    let mean_s = runs.iter().map(|r| r.duration_s).sum::<f64>() / n.max(1) as f64;
    writeln!(
        w,
        "- **{name}**: {n} run{}, {}, {mean_s:.1} s{}",
        if n == 1 { "" } else { "s" },
        cell(&side_summary(runs)),
        if n == 1 { "" } else { " each on average" }
    )?;
    for r in runs {
        writeln!(w, "  - `{}` ({:.1} s)", r.label, r.duration_s)?;
    }
    Ok(())
}

fn method(d: &Diff) -> String {
    let (na, nb) = (d.sides.baseline.len(), d.sides.new.len());
    match d.sides.method {
        Method::WelchOverRuns => format!(
            "runs are the unit ({na} and {nb}): mean ±sd of the runs (sd in % of the mean); \
             95% interval of mean(new) - mean(baseline) by Welch's t (Welch-Satterthwaite df); \
             p from Welch's two-sided test"
        ),
        Method::IntervalBootstrap => format!(
            "one run a side: 95% interval of new - baseline by {BOOTSTRAP_ITERATIONS} bootstrap \
             resamples of each run's intervals"
        ),
        Method::None => "no noise estimate (see the warnings)".into(),
    }
}

fn value(r: &DiffRow, multi: bool, new: bool) -> String {
    let dec = decimals(r);
    let v = if new { r.new } else { r.baseline };
    match (&r.runs, multi) {
        (Some(x), true) => mean_sd(v, if new { x.new_sd } else { x.baseline_sd }, dec),
        _ => num(v, dec, 16, false),
    }
}

fn interval(r: &DiffRow) -> String {
    let dec = decimals(r);
    match (r.ci_low, r.ci_high) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", num(lo, dec, 16, true), num(hi, dec, 16, true)),
        _ => String::new(),
    }
}

/// Writes the comparison as Markdown.
pub fn render_diff_markdown(d: &Diff, w: &mut impl Write) -> io::Result<()> {
    let kernels = |runs: &[RunInfo]| {
        let mut v: Vec<&str> = Vec::new();
        for r in runs {
            if !v.contains(&r.meta.kernel_release.as_str()) {
                v.push(&r.meta.kernel_release);
            }
        }
        v.join(" / ")
    };
    writeln!(
        w,
        "#### lbscope diff: {} vs {}\n",
        cell(&kernels(&d.sides.baseline)),
        cell(&kernels(&d.sides.new))
    )?;
    side("baseline", &d.sides.baseline, w)?;
    side("new", &d.sides.new, w)?;
    writeln!(w, "- **noise**: {}", method(d))?;
    writeln!(w)?;
    for warning in &d.warnings {
        writeln!(w, "> warning: {}", cell(warning))?;
    }
    if !d.warnings.is_empty() {
        writeln!(w)?;
    }
    let multi = is_multi(d);
    let (sd, p) = if multi { (" ±sd", " | p") } else { ("", "") };
    writeln!(
        w,
        "| figure | baseline{sd} | new{sd} | change | 95% CI of new-base{p} | |"
    )?;
    writeln!(
        w,
        "|:--|--:|--:|--:|:--{}|:-:|",
        if multi { "|--:" } else { "" }
    )?;
    let mut current: Option<&str> = None;
    for r in &d.rows {
        if current != Some(r.section.as_str()) {
            let empty = if multi {
                "| | | | | | |"
            } else {
                "| | | | | |"
            };
            writeln!(w, "| **{}** {empty}", cell(&title(&r.section)))?;
            current = Some(&r.section);
        }
        let p = match (multi, r.runs.as_ref().and_then(|x| x.p_value)) {
            (false, _) => String::new(),
            (true, None) => " |".into(),
            (true, Some(p)) if p < 0.001 => " | <0.001".into(),
            (true, Some(p)) => format!(" | {p:.3}"),
        };
        writeln!(
            w,
            "| {} | {} | {} | {} | {}{p} | {} |",
            cell(metric_name(r)),
            value(r, multi, false),
            value(r, multi, true),
            change(r),
            interval(r),
            if r.significant { "*" } else { "" }
        )?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "`*` beyond the noise: the interval excludes 0 and the change is not trivial."
    )
}
