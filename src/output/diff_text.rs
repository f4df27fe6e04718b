//! Text rendering of a [`Diff`] for terminals and patch cover letters, within 80 columns:
//! warnings first, then one table (baseline, new, change, the 95% interval of the difference
//! and `*` where the change is beyond the noise), then the two runs' run-queue latency
//! histograms side by side in runqlat's log2 slots.
//!
//! Owns no state: a pure function of the diff. JSON is the serde form of [`Diff`] itself.

use crate::diff::{section, Diff, DiffRow, RunInfo, BOOTSTRAP_ITERATIONS};
use std::io::{self, Write};

/// Output width.
const WIDTH: usize = 80;
/// Width of the metric column (two of indent included).
const LABEL: usize = 24;
/// Width of each value column.
const VALUE: usize = 11;
/// Width of the change column.
const CHANGE: usize = 9;
/// Width of the interval column.
const CI: usize = 19;
/// Bar width of each histogram.
const STARS: u64 = 15;

/// Writes the comparison as a table.
pub fn render_diff_text(d: &Diff, w: &mut impl Write) -> io::Result<()> {
    for warning in &d.warnings {
        for line in wrap(&format!("warning: {warning}"), "         ") {
            writeln!(w, "{line}")?;
        }
    }
    if !d.warnings.is_empty() {
        writeln!(w)?;
    }
    if is_multi(d) {
        side_header("baseline", &d.sides.baseline, w)?;
        side_header("new", &d.sides.new, w)?;
        writeln!(w)?;
        multi_table(d, w)?;
        writeln!(w)?;
        writeln!(
            w,
            "run-queue latency histogram, each side's runs pooled (counts summed)"
        )?;
        return histogram_rows(&d.histograms.baseline, &d.histograms.new, w);
    }
    writeln!(w, "baseline  {}", d.baseline)?;
    writeln!(w, "new       {}", d.new)?;
    writeln!(w)?;
    table(&d.rows, w)?;
    writeln!(w)?;
    histograms(&d.histograms.baseline, &d.histograms.new, w)
}

/// Whether a side has several runs (rows then hold means and each run's values).
pub fn is_multi(d: &Diff) -> bool {
    d.sides.baseline.len() != 1 || d.sides.new.len() != 1
}

/// What the runs of a side have in common: "6.1.0-56-amd64, 8 CPUs: smt llc numa", or the
/// distinct values joined by " / " where runs differ.
pub fn side_summary(runs: &[RunInfo]) -> String {
    let distinct = |f: &dyn Fn(&RunInfo) -> &str| {
        let mut v: Vec<&str> = Vec::new();
        for r in runs {
            if !v.contains(&f(r)) {
                v.push(f(r));
            }
        }
        v.join(" / ")
    };
    format!(
        "{}, {}",
        distinct(&|r| r.meta.kernel_release.as_str()),
        distinct(&|r| r.meta.topology_summary.as_str())
    )
}

fn side_header(name: &str, runs: &[RunInfo], w: &mut impl Write) -> io::Result<()> {
    let n = runs.len();
    let head = format!(
        "{name:<9} {n} run{}: {}",
        if n == 1 { "" } else { "s" },
        side_summary(runs)
    );
    for line in wrap(&head, "            ") {
        writeln!(w, "{line}")?;
    }
    for r in runs {
        writeln!(w, "            {} ({:.1} s)", r.label, r.duration_s)?;
    }
    Ok(())
}

/// Breaks `text` at spaces so that lines fit [`WIDTH`]; continuation lines start with
/// `indent`. A word longer than a line stays whole.
fn wrap(text: &str, indent: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut words_on_line = 0;
    for word in text.split(' ') {
        if words_on_line > 0 && line.len() + 1 + word.len() > WIDTH {
            lines.push(std::mem::take(&mut line));
            line.push_str(indent);
            words_on_line = 0;
        }
        if words_on_line > 0 {
            line.push(' ');
        }
        line.push_str(word);
        words_on_line += 1;
    }
    lines.push(line);
    lines
}

/// The heading of a section.
pub fn title(section: &str) -> String {
    match section {
        section::RUN => "recording".into(),
        section::RUNQLAT => "run-queue latency (us)".into(),
        section::MIGRATIONS => "migrations/s".into(),
        section::BY_REASON => "migrations/s by reason".into(),
        section::BY_LEVEL => "migrations/s by level crossed".into(),
        section::IDLE_MOVABLE => "idle while others wait, movable (% of time)".into(),
        section::IDLE_PINNED => "idle while others wait, pinned (% of time)".into(),
        section::BALANCER_CALLS => "balancer counters/s by level and idle type (from calls)".into(),
        section::BALANCER_IMBALANCE => "balancer imbalance/s by migration type (from calls)".into(),
        section::BALANCER_ACTIVE => "active balances/s (from calls)".into(),
        section::BALANCER_GAINED => {
            "balancer tasks gained/s by reason and level (from migrations)".into()
        }
        section::FINDINGS => "findings/s by kind".into(),
        section::LOST => "lost events".into(),
        other => other.replace('_', " "),
    }
}

/// How a row's metric is shown.
pub fn metric_name(r: &DiffRow) -> &str {
    match (r.section.as_str(), r.metric.as_str()) {
        (section::RUN, "duration_s") => "duration (s)",
        (_, m) => m,
    }
}

/// Decimals of a row's values: counts none, percentages two, the rest one; more (up to
/// four) for a small non-zero value, so that it shows two significant digits.
pub fn decimals(r: &DiffRow) -> usize {
    let count = matches!(
        (r.section.as_str(), r.metric.as_str()),
        (section::RUN, "intervals") | (section::RUNQLAT, "samples") | (section::LOST, _)
    );
    if count {
        return 0;
    }
    let pct = r.section == section::IDLE_MOVABLE || r.section == section::IDLE_PINNED;
    let base = if pct { 2 } else { 1 };
    let smallest = [r.baseline.abs(), r.new.abs()]
        .into_iter()
        .filter(|v| *v != 0.0)
        .fold(f64::INFINITY, f64::min);
    if smallest < 1.0 {
        let digits = (-smallest.log10()).ceil() as usize + 1;
        digits.clamp(base, 4)
    } else {
        base
    }
}

/// `v` with `dec` decimals in at most `width - 1` characters (fewer decimals if needed).
pub fn num(v: f64, dec: usize, width: usize, sign: bool) -> String {
    for d in (0..=dec).rev() {
        let s = if sign {
            format!("{v:+.d$}")
        } else {
            format!("{v:.d$}")
        };
        if s.len() < width || d == 0 {
            return s;
        }
    }
    unreachable!("the loop returns at d == 0")
}

/// The change column of a row ("+25.0%", "n/a").
pub fn change(r: &DiffRow) -> String {
    match r.change_pct {
        None => "n/a".into(),
        Some(c) if c.abs() >= 99_999.5 => format!("{}99999%", if c > 0.0 { ">+" } else { "<-" }),
        Some(c) if c.abs() >= 1000.0 => format!("{c:+.0}%"),
        Some(c) => format!("{c:+.1}%"),
    }
}

/// `v` with a signed k/M/G suffix: "+1.6G".
fn compact(v: f64) -> String {
    let a = v.abs();
    let (x, unit) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else {
        (v / 1e3, "k")
    };
    format!("{x:+.1}{unit}")
}

fn interval(r: &DiffRow, dec: usize) -> String {
    let (Some(lo), Some(hi)) = (r.ci_low, r.ci_high) else {
        return String::new();
    };
    // Fewer decimals until it fits the column, then suffixes.
    for d in (0..=dec).rev() {
        let s = format!("[{}, {}]", num(lo, d, CI, true), num(hi, d, CI, true));
        if s.len() <= CI {
            return s;
        }
    }
    format!("[{}, {}]", compact(lo), compact(hi))
}

fn table(rows: &[DiffRow], w: &mut impl Write) -> io::Result<()> {
    writeln!(
        w,
        "{:LABEL$}{:>VALUE$}{:>VALUE$}{:>CHANGE$}  95% CI of new-base",
        "", "baseline", "new", "change"
    )?;
    let mut current: Option<&str> = None;
    let mut any_ci = false;
    for r in rows {
        if current != Some(r.section.as_str()) {
            writeln!(w, "{}", title(&r.section))?;
            current = Some(&r.section);
        }
        let name = format!("  {}", metric_name(r));
        let label = if name.len() < LABEL {
            name
        } else {
            writeln!(w, "{name}")?;
            String::new()
        };
        let dec = decimals(r);
        any_ci |= r.ci_low.is_some();
        let line = format!(
            "{label:LABEL$}{:>VALUE$}{:>VALUE$}{:>CHANGE$}  {:CI$}{}",
            num(r.baseline, dec, VALUE, false),
            num(r.new, dec, VALUE, false),
            change(r),
            interval(r, dec),
            if r.significant { " *" } else { "" }
        );
        writeln!(w, "{}", line.trim_end())?;
    }
    writeln!(w)?;
    if any_ci {
        writeln!(
            w,
            "* beyond the noise: the 95% interval of new - baseline ({BOOTSTRAP_ITERATIONS} \
             bootstrap"
        )?;
        writeln!(
            w,
            "  resamples of each run's intervals) excludes 0 and the change is not trivial"
        )
    } else {
        writeln!(
            w,
            "no noise estimate (see the warnings): no change can be called significant"
        )
    }
}

/// The table of a comparison with several runs a side: each side's mean and its runs'
/// standard deviation in % of the mean, the change of the means, Welch's interval.
fn multi_table(d: &Diff, w: &mut impl Write) -> io::Result<()> {
    const MLABEL: usize = 20;
    const MVALUE: usize = 14;
    writeln!(
        w,
        "{:MLABEL$}{:>MVALUE$}{:>MVALUE$}{:>CHANGE$}  95% CI of new-base",
        "", "baseline ±sd", "new ±sd", "change"
    )?;
    let mut current: Option<&str> = None;
    let mut any_ci = false;
    for r in &d.rows {
        if current != Some(r.section.as_str()) {
            writeln!(w, "{}", title(&r.section))?;
            current = Some(&r.section);
        }
        let name = format!("  {}", metric_name(r));
        let label = if name.len() < MLABEL {
            name
        } else {
            writeln!(w, "{name}")?;
            String::new()
        };
        let dec = decimals(r);
        any_ci |= r.ci_low.is_some();
        let (sa, sb) = r
            .runs
            .as_ref()
            .map_or((0.0, 0.0), |x| (x.baseline_sd, x.new_sd));
        let line = format!(
            "{label:MLABEL$}{:>MVALUE$}{:>MVALUE$}{:>CHANGE$}  {:CI$}{}",
            mean_sd(r.baseline, sa, dec),
            mean_sd(r.new, sb, dec),
            change(r),
            interval(r, dec),
            if r.significant { " *" } else { "" }
        );
        writeln!(w, "{}", line.trim_end())?;
    }
    writeln!(w)?;
    let (na, nb) = (d.sides.baseline.len(), d.sides.new.len());
    if any_ci {
        writeln!(
            w,
            "* beyond the noise: Welch's 95% interval of mean(new) - mean(baseline) over"
        )?;
        writeln!(
            w,
            "  runs ({na} and {nb} runs, t with Welch-Satterthwaite df) excludes 0 and the"
        )?;
        writeln!(
            w,
            "  change is not trivial; ±sd is the runs' stddev in % of the mean"
        )
    } else {
        writeln!(
            w,
            "no noise estimate (see the warnings): no change can be called significant"
        )
    }
}

/// "12.3 ±4.1%": a mean and a standard deviation in % of it (absolute when the mean is 0).
pub fn mean_sd(mean: f64, sd: f64, dec: usize) -> String {
    let m = num(mean, dec, 8, false);
    if mean == 0.0 {
        return if sd == 0.0 {
            format!("{m} ±0")
        } else {
            format!("{m} ±{}", num(sd, dec, 6, false))
        };
    }
    let pct = sd / mean.abs() * 100.0;
    if pct >= 9.95 {
        format!("{m} ±{pct:.0}%")
    } else {
        format!("{m} ±{pct:.1}%")
    }
}

/// A runqlat star bar of `c` out of `max`.
fn bar(c: u64, max: u64) -> String {
    let n = (c.min(max) * STARS / max.max(1)) as usize;
    format!("|{}{}|", "*".repeat(n), " ".repeat(STARS as usize - n))
}

fn histograms(a: &[u64], b: &[u64], w: &mut impl Write) -> io::Result<()> {
    let last_nonzero = |h: &[u64]| h.iter().rposition(|c| *c != 0);
    if last_nonzero(a).max(last_nonzero(b)).is_none() {
        return writeln!(w, "run-queue latency histogram: no samples");
    }
    writeln!(w, "run-queue latency histogram, whole runs")?;
    histogram_rows(a, b, w)
}

/// The histograms' column heads and rows (or a line saying there are no samples).
fn histogram_rows(a: &[u64], b: &[u64], w: &mut impl Write) -> io::Result<()> {
    let last_nonzero = |h: &[u64]| h.iter().rposition(|c| *c != 0);
    let Some(last) = last_nonzero(a).max(last_nonzero(b)) else {
        return writeln!(w, "  no samples");
    };
    writeln!(
        w,
        "{:>20}{:>10}  {:<16}{:>10}  distribution",
        "usecs", "baseline", "distribution", "new"
    )?;
    let (max_a, max_b) = (
        a.iter().copied().max().unwrap_or(0),
        b.iter().copied().max().unwrap_or(0),
    );
    for i in 0..=last {
        let low = if i == 0 { 0 } else { 1u64 << i };
        let high = (1u64 << (i + 1)) - 1;
        let (ca, cb) = (
            a.get(i).copied().unwrap_or(0),
            b.get(i).copied().unwrap_or(0),
        );
        writeln!(
            w,
            "{low:>8} -> {high:<8}{ca:>10} {}{cb:>10} {}",
            bar(ca, max_a),
            bar(cb, max_b)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::HistPair;

    fn row(section: &str, metric: &str, base: f64, new: f64, sig: bool) -> DiffRow {
        DiffRow {
            section: section.into(),
            metric: metric.into(),
            baseline: base,
            new,
            change_pct: (base != 0.0).then(|| (new - base) / base * 100.0),
            ci_low: Some((new - base) * 0.8),
            ci_high: Some((new - base) * 1.2),
            significant: sig,
            runs: None,
        }
    }

    fn info(label: &str, kernel: &str) -> RunInfo {
        RunInfo {
            label: label.into(),
            meta: crate::diff::RunMeta {
                kernel_release: kernel.into(),
                hostname: "box".into(),
                topology_summary: "8 CPUs: smt llc".into(),
                nr_cpus: 8,
            },
            duration_s: 5.0,
        }
    }

    fn sample() -> Diff {
        Diff {
            baseline: "base.lbs".into(),
            new: "new.lbs".into(),
            sides: crate::diff::Sides {
                method: crate::diff::Method::IntervalBootstrap,
                baseline: vec![info("base.lbs", "6.12.0")],
                new: vec![info("new.lbs", "6.13.0")],
            },
            warnings: vec![
                "different kernel release: \"6.12.0\" (baseline) vs \"6.13.0\" (new)".into(),
                format!(
                    "the new run has 2 full intervals: {}",
                    crate::diff::TOO_FEW_INTERVALS
                ),
            ],
            rows: vec![
                row(section::RUNQLAT, "p50", 12.0, 15.0, true),
                row(section::RUNQLAT, "p99", 250.0, 251.0, false),
                row(section::RUNQLAT, "samples", 120_000.0, 119_000.0, false),
                row(section::BY_REASON, "wakeup", 120.5, 80.2, true),
                row(section::BY_REASON, "numa_balancing", 0.0, 3.5, false),
                row(section::IDLE_MOVABLE, "llc 0-7", 1.25, 0.5, true),
                row(
                    section::IDLE_MOVABLE,
                    "numa 0-15,32-47,64-79,96-111",
                    1.0,
                    1.0,
                    false,
                ),
                DiffRow {
                    ci_low: None,
                    ci_high: None,
                    ..row(section::LOST, "total", 0.0, 0.0, false)
                },
                row(section::BY_REASON, "huge", 1e9, 3e9, true),
            ],
            histograms: HistPair {
                baseline: vec![10, 40, 20, 0, 1],
                new: vec![0, 10, 40, 20, 0],
            },
        }
    }

    fn render(d: &Diff) -> String {
        let mut out = Vec::new();
        render_diff_text(d, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn diff_table_rows_and_width() {
        let s = render(&sample());
        println!("{s}");
        for line in s.lines() {
            assert!(line.len() <= WIDTH, "too wide: {line:?}");
        }
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].starts_with("warning: different kernel release"));
        assert!(lines[1].starts_with("warning: the new run has 2 full intervals"));
        assert!(lines[2].starts_with("         "), "wrapped: {:?}", lines[2]);
        let find = |p: &str| {
            *lines
                .iter()
                .find(|l| l.starts_with(p))
                .unwrap_or_else(|| panic!("no line {p:?} in\n{s}"))
        };
        assert!(find("                ").contains("baseline"));
        assert!(s.contains("\nrun-queue latency (us)\n"));
        let p50 = find("  p50 ");
        assert!(p50.contains("12.0") && p50.contains("15.0") && p50.contains("+25.0%"));
        assert!(p50.ends_with(" *"), "{p50:?}");
        assert!(p50.contains("[+2.4, +3.6]"), "{p50:?}");
        assert!(!find("  p99 ").ends_with('*'));
        assert!(find("  samples ").contains("120000"));
        let wakeup = find("  wakeup ");
        assert!(wakeup.contains("120.5") && wakeup.contains("80.2") && wakeup.contains("-33.4%"));
        assert!(find("  numa_balancing ").contains("n/a"));
        assert!(find("  llc 0-7 ").contains("1.25"));
        let tiny = DiffRow {
            baseline: 0.0004,
            new: 0.25,
            ..row(section::IDLE_PINNED, "smt 0-1", 0.0, 0.0, false)
        };
        assert_eq!(decimals(&tiny), 4);
        assert_eq!(num(tiny.baseline, decimals(&tiny), VALUE, false), "0.0004");
        assert_eq!(
            decimals(&row(section::BY_REASON, "fork", 0.5, 0.0, false)),
            2
        );
        assert_eq!(
            decimals(&row(section::BY_REASON, "fork", 5.0, 0.0, false)),
            1
        );
        // A long domain name gets a line of its own.
        let i = lines
            .iter()
            .position(|l| *l == "  numa 0-15,32-47,64-79,96-111")
            .unwrap();
        assert!(lines[i + 1].trim_start().starts_with("1.00"));
        assert!(s.contains("migrations/s by reason\n"));
        assert!(s.contains("* beyond the noise"));
        // The histograms side by side.
        let h = find("       2 -> 3       ");
        assert!(h.contains("40 |***************|"), "{h:?}");
        assert!(h.contains("10 |***"), "{h:?}");
        assert!(find("      16 -> 31      ").contains("1 |               |"));
    }

    #[test]
    fn diff_without_noise_or_samples() {
        let mut d = sample();
        d.warnings.clear();
        for r in &mut d.rows {
            (r.ci_low, r.ci_high, r.significant) = (None, None, false);
        }
        d.histograms = HistPair::default();
        let s = render(&d);
        assert!(s.starts_with("baseline  base.lbs\nnew       new.lbs\n"));
        assert!(s.contains("no noise estimate"));
        assert!(!s.contains('*'));
        assert!(s.contains("run-queue latency histogram: no samples"));
    }

    #[test]
    fn diff_text_of_a_real_diff() {
        use crate::diff::{diff, RunSummary};
        let d = diff(
            &RunSummary::from_snapshots(&[], "a", Default::default()),
            &RunSummary::from_snapshots(&[], "b", Default::default()),
        );
        let s = render(&d);
        assert!(s.contains("  p50 "));
        assert!(s.lines().all(|l| l.len() <= WIDTH));
    }
}
