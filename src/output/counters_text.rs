//! Text rendering of the run's balancer counters ([`RunReport`]): lbscope's counts per domain
//! level and idle type beside the kernel's `/proc/schedstat` difference over the same window,
//! the active balances, and the balancer migrations by reason and level. Owns no state.

use crate::analyze::run_counters::{ComparedRow, RunReport};
use std::io::{self, Write};

/// "lbscope kernel" for one counter: one figure when both agree, both when they differ, "-"
/// for a side that has none.
fn pair(ours: Option<u64>, kernel: Option<u64>) -> String {
    match (ours, kernel) {
        (Some(a), Some(b)) if a == b => format!("{a} ="),
        (a, b) => format!(
            "{} {}",
            a.map_or("-".to_string(), |v| v.to_string()),
            b.map_or("-".to_string(), |v| v.to_string())
        ),
    }
}

fn line(w: &mut impl Write, r: &ComparedRow, calls: bool) -> io::Result<()> {
    let o = r.lbscope.as_ref();
    let k = r.kernel.as_ref();
    let call =
        |f: fn(&crate::analyze::counters::Counts) -> u64| o.filter(|_| calls).map(|o| f(&o.counts));
    let imb = o.filter(|_| calls).map(|o| {
        let i = &o.imbalance;
        format!("{}/{}/{}/{}", i.load, i.util, i.task, i.misfit)
    });
    writeln!(
        w,
        "  {:<8} {:<10} {:>15} {:>15} {:>15} {:>15} {:>8} {:>19} {:>9}",
        r.level,
        r.idle,
        pair(call(|c| c.lb_count), k.map(|k| k.lb_count)),
        pair(call(|c| c.lb_balanced), k.map(|k| k.lb_balanced)),
        pair(call(|c| c.lb_failed), k.map(|k| k.lb_failed)),
        pair(o.map(|o| o.counts.lb_gained), k.map(|k| k.lb_gained)),
        o.map_or("-".to_string(), |o| o.searches.to_string()),
        imb.unwrap_or_else(|| "-".to_string()),
        k.map_or("-".to_string(), |k| k.lb_imbalance.to_string()),
    )
}

/// Writes the run's counters.
pub fn counters(r: &RunReport, w: &mut impl Write) -> io::Result<()> {
    writeln!(
        w,
        "balancer counters over the run, per domain level and idle type"
    )?;
    let ours = match r.calls_recorded {
        true => "lbscope: the balancer's calls (fentry/fexit on sched_balance_rq or load_balance) and moves (detach_task)",
        false => "lbscope: the balancer's moves (detach_task) and searches only; its calls were not recorded (lb_count, lb_balanced, lb_failed: -)",
    };
    writeln!(w, "  {ours}")?;
    match (&r.kernel, &r.kernel_missing) {
        (Some(k), _) => writeln!(
            w,
            "  kernel: /proc/schedstat v{} read at the start and the end ({:.3} s apart), end - start; lbscope counts the same window",
            k.schedstat_version,
            k.window_ns as f64 / 1e9
        )?,
        (None, Some(why)) => writeln!(w, "  kernel: - ({why})")?,
        (None, None) => {}
    }
    writeln!(
        w,
        "  each cell: \"N =\" both agree, else lbscope's then the kernel's"
    )?;
    writeln!(
        w,
        "  {:<8} {:<10} {:>15} {:>15} {:>15} {:>15} {:>8} {:>19} {:>9}",
        "level",
        "idle",
        "lb_count",
        "lb_balanced",
        "lb_failed",
        "lb_gained",
        "searches",
        "imb load/util/task/misfit",
        "kernel"
    )?;
    for row in &r.rows {
        line(w, row, r.calls_recorded)?;
    }
    let flight: Vec<String> = r
        .rows
        .iter()
        .filter_map(|row| {
            let f = row.lbscope.as_ref()?.in_flight;
            let n = f.lb_count + f.lb_balanced + f.lb_failed + f.lb_gained;
            (n > 0).then(|| {
                format!(
                    "{} {}: {} {} {} {}",
                    row.level, row.idle, f.lb_count, f.lb_balanced, f.lb_failed, f.lb_gained
                )
            })
        })
        .collect();
    if !flight.is_empty() {
        writeln!(
            w,
            "  in flight during a read, left out (lb_count balanced failed gained): {}",
            flight.join("; ")
        )?;
    }
    let undetermined: u64 = r
        .rows
        .iter()
        .filter_map(|row| row.lbscope.as_ref())
        .map(|o| o.imbalance_undetermined)
        .sum();
    if undetermined > 0 {
        let amount: u64 = r
            .rows
            .iter()
            .filter_map(|row| row.lbscope.as_ref())
            .map(|o| o.imbalance_undetermined_amount.total())
            .sum();
        writeln!(
            w,
            "  imbalance: {undetermined} calls found a busiest group, moved nothing and did not fail (no busiest queue, or all tasks pinned): their {amount} of imbalance is not counted (the kernel counts it where the tasks were pinned)"
        )?;
    }
    if r.lost_events > 0 {
        writeln!(
            w,
            "  {} events were lost: lbscope's counts may fall short",
            r.lost_events
        )?;
    }
    if !r.active.is_empty() || r.stopper_runs > 0 {
        let cells: Vec<String> = r
            .active
            .iter()
            .map(|a| {
                format!(
                    "{} pushed {} (kernel: count {}, failed {}, pushed {})",
                    a.level,
                    a.lbscope_alb_pushed,
                    a.kernel_alb_count.map_or("-".into(), |v| v.to_string()),
                    a.kernel_alb_failed.map_or("-".into(), |v| v.to_string()),
                    a.kernel_alb_pushed.map_or("-".into(), |v| v.to_string()),
                )
            })
            .collect();
        writeln!(
            w,
            "  active balance: the stopper ran {} times; {}",
            r.stopper_runs,
            if cells.is_empty() {
                "nothing pushed".to_string()
            } else {
                cells.join("; ")
            }
        )?;
    }
    if !r.gained_by_migrations.is_empty() {
        let cells: Vec<String> = r
            .gained_by_migrations
            .iter()
            .map(|(reason, levels)| {
                let l: Vec<String> = levels.iter().map(|(l, n)| format!("{l} {n}")).collect();
                format!("{reason}: {}", l.join(", "))
            })
            .collect();
        writeln!(
            w,
            "  balancer migrations by reason and level crossed (sched_migrate_task's kernel stacks): {}",
            cells.join("; ")
        )?;
    }
    Ok(())
}
