//! What makes a comparison less trustworthy, said before its table: the sides recorded on
//! different kernels, hosts or topologies, runs of one side that differ among themselves,
//! domains not in every run, runs with nothing recorded or with lost events, runs of
//! different lengths, and the balancer's calls recorded in some runs only.
//!
//! Invariant: with one run a side the warnings (and their order) are those of the plain
//! two-recording comparison; the multi-run ones are only added when a side has several runs.

use super::layout::{Calls, Layout};
use super::run::{RunMeta, RunSummary};

/// Runs whose lengths differ by more than this fraction get a warning about totals.
pub(super) const LENGTH_TOLERANCE: f64 = 0.10;
/// At most this many domain names are listed in one warning.
const LIST_DOMAINS: usize = 8;

/// The fields of [`RunMeta`] compared, with how a warning names them.
fn fields(m: &RunMeta) -> [(&'static str, String); 4] {
    [
        ("kernel release", m.kernel_release.clone()),
        ("host", m.hostname.clone()),
        ("CPU count", m.nr_cpus.to_string()),
        ("topology", m.topology_summary.clone()),
    ]
}

fn between_sides(a: &RunMeta, b: &RunMeta, w: &mut Vec<String>) {
    for ((what, x), (_, y)) in fields(a).into_iter().zip(fields(b)) {
        if x != y {
            w.push(format!(
                "different {what}: \"{x}\" (baseline) vs \"{y}\" (new)"
            ));
        }
    }
}

/// Runs of one side that differ from the side's first run.
fn within_side(side: &str, runs: &[RunSummary], w: &mut Vec<String>) {
    let Some(first) = runs.first() else { return };
    for (k, (what, x)) in fields(&first.meta).into_iter().enumerate() {
        let odd: Vec<String> = runs[1..]
            .iter()
            .filter_map(|r| {
                let y = &fields(&r.meta)[k].1;
                (*y != x).then(|| format!("\"{y}\" ({})", r.label))
            })
            .collect();
        if !odd.is_empty() {
            w.push(format!(
                "runs of the {side} side differ in {what}: \"{x}\" ({}) vs {}",
                first.label,
                odd.join(", ")
            ));
        }
    }
    let lens: Vec<f64> = runs.iter().map(|r| r.duration_ns() as f64 / 1e9).collect();
    let (lo, hi) = lens.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), l| {
        (lo.min(*l), hi.max(*l))
    });
    if hi - lo > LENGTH_TOLERANCE * hi {
        w.push(format!(
            "runs of the {side} side differ in length ({lo:.1} s to {hi:.1} s): their \
             totals (samples, lost events) are not comparable"
        ));
    }
}

/// `whose` says where the domains were seen: "only in the baseline run".
fn domain_warning(whose: &str, names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let mut list = names[..names.len().min(LIST_DOMAINS)].join(", ");
    if names.len() > LIST_DOMAINS {
        list.push_str(&format!(" and {} more", names.len() - LIST_DOMAINS));
    }
    Some(format!("domains {whose}, not compared: {list}"))
}

/// Why the balancer's call counters are not compared: some runs recorded the calls, others
/// not.
fn calls_warning(calls: [Calls; 2], multi: bool) -> String {
    let says = |side: &str, c: Calls| match (c, multi) {
        (Calls::All, false) => format!("the {side} run recorded them"),
        (Calls::None, false) => format!("the {side} run did not"),
        (Calls::All, true) => format!("every {side} run did"),
        (Calls::Some, _) => format!("some {side} runs did"),
        (Calls::None, true) => format!("no {side} run did"),
    };
    format!(
        "balancer call counters left out (lb_count, lb_balanced, lb_failed, lb_gained, \
         searches, imbalance, active balances): they need the balancer's calls recorded \
         (balancer hooks, fentry or kprobe) in every run, and {}, {}; only balancer \
         migrations by reason and level (from migrations) are compared",
        says("baseline", calls[0]),
        says("new", calls[1])
    )
}

fn mean_len_s(runs: &[RunSummary]) -> f64 {
    if runs.is_empty() {
        return 0.0;
    }
    runs.iter().map(|r| r.duration_ns() as f64).sum::<f64>() / runs.len() as f64 / 1e9
}

/// Every warning of a comparison, before the noise estimate's own.
pub(super) fn warnings(a: &[RunSummary], b: &[RunSummary], layout: &Layout) -> Vec<String> {
    let mut w = Vec::new();
    let multi = a.len() != 1 || b.len() != 1;
    for (side, runs) in [("baseline", a), ("new", b)] {
        if runs.is_empty() {
            w.push(format!("the {side} side has no runs: nothing to compare"));
        }
    }
    if let (Some(x), Some(y)) = (a.first(), b.first()) {
        between_sides(&x.meta, &y.meta, &mut w);
    }
    if multi {
        within_side("baseline", a, &mut w);
        within_side("new", b, &mut w);
    }
    for (side, names) in ["baseline", "new"].iter().zip(&layout.only_in) {
        let whose = if multi {
            format!("not in every run, seen on the {side} side")
        } else {
            format!("only in the {side} run")
        };
        w.extend(domain_warning(&whose, names));
    }
    for (side, runs) in [("baseline", a), ("new", b)] {
        for r in runs {
            let run = if multi {
                format!("{side} run {}", r.label)
            } else {
                format!("{side} run")
            };
            if r.intervals.is_empty() {
                w.push(format!("the {run} has no intervals: nothing was recorded"));
            }
            let lost = r.lost_events();
            if lost > 0 {
                w.push(format!(
                    "the {run} lost {lost} events: its figures may be incomplete"
                ));
            }
        }
    }
    if let Some(calls) = layout.calls_mixed {
        w.push(calls_warning(calls, multi));
    }
    let (la, lb) = (mean_len_s(a), mean_len_s(b));
    if (la - lb).abs() > LENGTH_TOLERANCE * la.max(lb) {
        let what = if multi { "sides' runs" } else { "runs" };
        w.push(format!(
            "{what} differ in length ({la:.1} s vs {lb:.1} s): compare rates and percentiles, \
             not totals (samples, lost events)"
        ));
    }
    w
}
