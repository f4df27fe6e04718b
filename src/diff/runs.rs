//! Several runs a side: runs are the unit. Each run's figure is computed over the whole run
//! (every interval), each side gives the mean and the sample standard deviation of its runs,
//! and the 95% interval of mean(new) - mean(baseline) is Welch's t interval with the
//! Welch-Satterthwaite degrees of freedom (see [`super::stats`]). A change is significant
//! when that interval excludes 0 on the side of the change and the change is not trivially
//! small ([`super::min_effect`]), as with one run a side. The run's length gets an interval
//! too (with one run a side it has none): for fixed work it is what the benchmark measures.
//!
//! Why not the bootstrap over intervals here: intervals of one run share that run's boot,
//! placement and warm-up, so they understate the run-to-run spread a kernel comparison has
//! to beat. Welch's interval assumes each side's runs independent and roughly normal; with
//! 2 to 10 runs its t quantile (12.7 at 1 degree of freedom, 2.78 at 4) keeps the false
//! alarm rate near its 5% (see the tests), where a normal quantile would not.

use super::layout::{Kind, Layout, RowDef};
use super::run::RunSummary;
use super::stats::{mean, stddev, welch};
use super::{row, tidy, DiffRow, Method, RowRuns};

/// Confidence level of the intervals.
pub const LEVEL: f64 = 0.95;

/// Every row's value in each run: `out[run][row]`.
fn per_run(runs: &[RunSummary], layout: &Layout, defs: &[RowDef]) -> Vec<Vec<f64>> {
    runs.iter()
        .map(|r| {
            let mut all = layout.zero();
            for iv in &r.intervals {
                all.add(&layout.dense(iv));
            }
            defs.iter().map(|d| tidy(d.kind.eval(&all))).collect()
        })
        .collect()
}

/// The rows of sides with several runs (or one run against several).
pub(super) fn compare(
    a: &[RunSummary],
    b: &[RunSummary],
    layout: &Layout,
    defs: &[RowDef],
    warnings: &mut Vec<String>,
) -> (Method, Vec<DiffRow>) {
    let enough = a.len() >= 2 && b.len() >= 2;
    for (side, runs) in [("baseline", a), ("new", b)] {
        if runs.len() == 1 {
            warnings.push(format!(
                "the {side} side has one run: an interval over runs needs at least two a \
                 side, so no change can be called significant"
            ));
        }
    }
    let (va, vb) = (per_run(a, layout, defs), per_run(b, layout, defs));
    let column = |v: &[Vec<f64>], k: usize| v.iter().map(|r| r[k]).collect::<Vec<f64>>();
    let rows = defs
        .iter()
        .enumerate()
        .map(|(k, def)| {
            let (xa, xb) = (column(&va, k), column(&vb, k));
            // Run length varies between runs too: for a fixed amount of work (hackbench)
            // it is the benchmark's own figure. The interval count only follows it.
            let w = if def.kind.has_noise() || def.kind == Kind::DurationS {
                welch(&xa, &xb, LEVEL)
            } else {
                None
            };
            let runs = RowRuns {
                baseline_sd: tidy(stddev(&xa)),
                new_sd: tidy(stddev(&xb)),
                df: w.and_then(|w| w.df).map(tidy),
                p_value: w.map(|w| tidy(w.p)),
                baseline: xa.clone(),
                new: xb.clone(),
            };
            row(
                def,
                tidy(mean(&xa)),
                tidy(mean(&xb)),
                w.map(|w| w.ci),
                Some(runs),
            )
        })
        .collect();
    let method = if enough {
        Method::WelchOverRuns
    } else {
        Method::None
    };
    (method, rows)
}
