//! Text rendering of a [`Snapshot`] for terminals and reports, readable at 80 columns. The
//! run-queue latency histogram copies libbpf-tools runqlat's layout character for character,
//! so output can be compared with runqlat's side by side.
//!
//! Owns no state: a pure function of the snapshot, the topology (column order) and the clock
//! base (wall time of the header).

use crate::analyze::{reason_names, LatencySummary, Snapshot, TOP_PROCESSES};
use crate::topology::Topology;
use std::io::{self, Write};

/// Processes shown in text (the JSON keeps [`TOP_PROCESSES`]).
const TEXT_PROCESSES: usize = 10;
/// Up to this many domains, every one is shown; beyond, only those with time to show.
const ALL_DOMAINS_UP_TO: usize = 24;
/// runqlat's bar width.
const STARS: u64 = 40;

/// Writes a runqlat-style report of one interval. `clock_base_ns` is added to a monotonic
/// timestamp to get Unix-epoch ns; the header's time of day is in UTC.
pub fn render_text(
    s: &Snapshot,
    topo: &Topology,
    clock_base_ns: i64,
    w: &mut impl Write,
) -> io::Result<()> {
    header(s, clock_base_ns, w)?;
    writeln!(w)?;
    latency(s, w)?;
    writeln!(w)?;
    migrations(s, topo, w)?;
    writeln!(w)?;
    idle_while_waiting(s, w)?;
    writeln!(w)?;
    super::model_text::balancer(s, w)?;
    writeln!(w)?;
    super::model_text::findings(s, w)?;
    writeln!(w)?;
    lost(s, w)?;
    if let Some(r) = &s.balancer_counters_run {
        writeln!(w)?;
        super::counters_text::counters(r, w)?;
    }
    Ok(())
}

/// `HH:MM:SS` of a monotonic timestamp, UTC.
fn time_of_day(mono_ns: u64, clock_base_ns: i64) -> String {
    let epoch_ns = mono_ns as i128 + clock_base_ns as i128;
    let secs = epoch_ns.div_euclid(1_000_000_000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

fn header(s: &Snapshot, clock_base_ns: i64, w: &mut impl Write) -> io::Result<()> {
    write!(
        w,
        "{} UTC  interval {:.3} s{}  events {}",
        time_of_day(s.t_end_ns, clock_base_ns),
        s.len_ns() as f64 / 1e9,
        if s.partial { " (partial)" } else { "" },
        s.events
    )?;
    if s.lost_events > 0 {
        write!(w, "  LOST {} EVENTS", s.lost_events)?;
    }
    if s.switch_gaps > 0 {
        write!(w, "  {} SWITCH GAPS", s.switch_gaps)?;
    }
    writeln!(w)
}

fn latency(s: &Snapshot, w: &mut impl Write) -> io::Result<()> {
    let l = &s.runqlat_us;
    writeln!(w, "Run-queue latency: {} samples", l.count)?;
    if l.count == 0 {
        return Ok(());
    }
    log2_hist(&l.log2_buckets, "usecs", w)?;
    writeln!(w, "  {}", percentiles(l))?;
    if !s.runqlat_by_process.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "  {:<8} {:<16} {:>8} {:>9} {:>9} {:>10}",
            "TGID", "COMM", "COUNT", "P50 us", "P99 us", "MAX us"
        )?;
        for p in s
            .runqlat_by_process
            .iter()
            .take(TEXT_PROCESSES.min(TOP_PROCESSES))
        {
            let tgid = p.tgid.map_or("?".to_string(), |t| t.to_string());
            let comm = p.comm.as_deref().unwrap_or("?");
            writeln!(
                w,
                "  {:<8} {:<16} {:>8} {:>9.1} {:>9.1} {:>10.1}",
                tgid, comm, p.latency.count, p.latency.p50, p.latency.p99, p.latency.max
            )?;
        }
    }
    Ok(())
}

fn percentiles(l: &LatencySummary) -> String {
    format!(
        "p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1} us  (count {})",
        l.p50, l.p90, l.p99, l.p999, l.max, l.count
    )
}

/// libbpf-tools `print_log2_hist` with `print_stars`, for slots of at most 32.
fn log2_hist(vals: &[u64], val_type: &str, w: &mut impl Write) -> io::Result<()> {
    let Some(idx_max) = vals.iter().rposition(|v| *v > 0) else {
        return Ok(());
    };
    let val_max = vals.iter().copied().max().unwrap_or(1).max(1);
    writeln!(w, "{:5}{:<19} : count    distribution", "", val_type)?;
    for (i, &val) in vals.iter().enumerate().take(idx_max + 1) {
        let high = (1u64 << (i + 1)) - 1;
        let low = if i == 0 { 0 } else { 1u64 << i };
        let stars = (val.min(val_max) * STARS / val_max) as usize;
        writeln!(
            w,
            "{:>10} -> {:<10} : {:<8} |{}{}|",
            low,
            high,
            val,
            "*".repeat(stars),
            " ".repeat(STARS as usize - stars)
        )?;
    }
    Ok(())
}

fn migrations(s: &Snapshot, topo: &Topology, w: &mut impl Write) -> io::Result<()> {
    let m = &s.migrations;
    let secs = s.len_ns() as f64 / 1e9;
    let rate = if secs > 0.0 {
        m.total as f64 / secs
    } else {
        0.0
    };
    writeln!(
        w,
        "Migrations: {} total, {:.1}/s, {} classified from context (no stack)",
        m.total, rate, m.context_classified
    )?;
    if m.unseen > 0 {
        writeln!(
            w,
            "  and {} unseen (no record; inferred from where the tasks ran next)",
            m.unseen
        )?;
    }
    if m.total == 0 {
        return Ok(());
    }
    // Columns: the topology's levels bottom-up, then any other level with migrations
    // ("unknown", or a level of another machine's topology when rendering a recording).
    let mut cols: Vec<String> = topo.levels.iter().map(|l| l.key.clone()).collect();
    for (k, n) in &m.by_level {
        if *n > 0 && !cols.contains(k) {
            cols.push(k.clone());
        }
    }
    let width = |k: &str| k.len().max(6) + 1;
    write!(w, "  {:<18}", "REASON")?;
    for c in &cols {
        write!(w, "{:>1$}", c, width(c))?;
    }
    writeln!(w, "{:>8}", "total")?;
    for reason in reason_names() {
        let Some(row) = m.matrix.get(reason) else {
            continue;
        };
        let total: u64 = row.values().sum();
        if total == 0 {
            continue;
        }
        write!(w, "  {:<18}", reason)?;
        for c in &cols {
            write!(w, "{:>1$}", row.get(c).copied().unwrap_or(0), width(c))?;
        }
        writeln!(w, "{:>8}", total)?;
    }
    if !m.unknown_stacks.is_empty() {
        writeln!(
            w,
            "  Unclassified stacks (reason unknown), most frequent first:"
        )?;
        for st in m.unknown_stacks.iter().take(5) {
            writeln!(w, "    stack {}: {} migrations", st.stack_id, st.count)?;
            if st.frames.is_empty() {
                writeln!(w, "      (frames not recorded)")?;
            }
            for f in &st.frames {
                writeln!(w, "      {f}")?;
            }
        }
    }
    Ok(())
}

fn idle_while_waiting(s: &Snapshot, w: &mut impl Write) -> io::Result<()> {
    writeln!(
        w,
        "Idle while others wait (movable: a waiter may run on the idle CPU; pinned:"
    )?;
    writeln!(w, "affinity keeps every waiter off the idle CPUs):")?;
    if s.idle_while_waiting.is_empty() {
        writeln!(w, "  (no domain)")?;
        return Ok(());
    }
    let show_all = s.idle_while_waiting.len() <= ALL_DOMAINS_UP_TO;
    let mut hidden = 0usize;
    writeln!(
        w,
        "  {:<9} {:<22} {:>9} {:>9}",
        "LEVEL", "SPAN", "MOVABLE", "PINNED"
    )?;
    for d in &s.idle_while_waiting {
        if !show_all && d.movable_ns == 0 && d.pinned_ns == 0 {
            hidden += 1;
            continue;
        }
        writeln!(
            w,
            "  {:<9} {:<22} {:>8.1}% {:>8.1}%",
            d.level,
            d.span.to_string(),
            d.movable_fraction * 100.0,
            d.pinned_fraction * 100.0
        )?;
    }
    if hidden > 0 {
        writeln!(w, "  ({hidden} more domains with no such time)")?;
    }
    Ok(())
}

fn lost(s: &Snapshot, w: &mut impl Write) -> io::Result<()> {
    if s.switch_gaps > 0 || s.migrations.unseen > 0 {
        writeln!(
            w,
            "Unrecorded: {} switch gaps, {} unseen migrations (the kernel ran no BPF\n  \
             program at those tracepoints, or records were lost): figures may be incomplete",
            s.switch_gaps, s.migrations.unseen
        )?;
    }
    if s.lost_events == 0 {
        return writeln!(w, "Lost events: 0");
    }
    let per_cpu: Vec<String> = s
        .lost_by_cpu
        .iter()
        .map(|(c, n)| format!("cpu {c}: {n}"))
        .collect();
    writeln!(w, "Lost events: {} ({})", s.lost_events, per_cpu.join(", "))?;
    writeln!(
        w,
        "!!! Events were lost: every figure in this interval is INCOMPLETE !!!"
    )
}
