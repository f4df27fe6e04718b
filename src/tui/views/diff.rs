//! The diff view (`lbscope diff A B --tui`): the comparison's rows (baseline, new, change,
//! 95% interval, `*` beyond the noise) scrolling, next to or above the two runs' run-queue
//! latency histograms side by side (with several runs a side: the rows' means and Welch's
//! intervals over runs, and each side's histograms pooled over its runs); below, when the
//! screen has room, both sides' history of the series `s` picks (their first runs), row by
//! row on one scale.

use crate::diff::{section, Diff, DiffRow};
use crate::tui::app::App;
use crate::tui::history;
use crate::tui::term::Palette;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// Draws the diff view.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let Some(d) = app.diff.as_deref() else {
        return;
    };
    let area = match app.diff_runs.as_deref() {
        Some((a, b)) if area.height >= 16 => {
            let ca = history::chart(app.series, &app.topo, &a.iter().collect::<Vec<_>>());
            let cb = history::chart(app.series, &app.topo, &b.iter().collect::<Vec<_>>());
            let rows = ca.rows.len().max(cb.rows.len()) as u16;
            let h = (1 + 2 * rows).min(area.height / 3);
            let [main, hist] =
                Layout::vertical([Constraint::Min(0), Constraint::Length(h)]).areas(area);
            let longest = ca.rows.iter().chain(&cb.rows).map(|r| r.label.len()).max();
            let lay = super::history::Layout::new(hist, 1, longest.unwrap_or(0) + 2);
            let lines = super::history::paired_lines(&ca, &cb, &lay, h as usize, pal);
            f.render_widget(Paragraph::new(lines), hist);
            main
        }
        _ => area,
    };
    let (table, hist) = if area.width >= 130 {
        let [a, b] = Layout::horizontal([Constraint::Length(78), Constraint::Min(40)]).areas(area);
        (a, b)
    } else {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
        (a, b)
    };
    app.scroll_max.set(draw_table(f, table, d, app.scroll, pal));
    draw_hists(f, hist, d, pal);
}

/// A row's name in the table's 25 characters: the section's last part and the metric; the
/// balancer's counters shortened so that level, idle type and counter all fit ("numa
/// newidle lb_balanced", "imb llc idle load", "gained nohz_idle numa").
pub fn row_label(r: &DiffRow) -> String {
    let m = r.metric.replace("newly_idle", "newidle");
    match r.section.as_str() {
        section::BALANCER_CALLS | section::BALANCER_ACTIVE => m,
        section::BALANCER_IMBALANCE => format!("imb {m}"),
        section::BALANCER_GAINED => format!("gained {}", m.replace("_balance", "")),
        s => format!("{} {}", s.rsplit('.').next().unwrap_or(s), r.metric),
    }
}

fn num(v: f64) -> String {
    if v.abs() >= 1000.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Returns the most the scroll moves the table: its rows beyond those in view.
fn draw_table(f: &mut Frame, area: Rect, d: &Diff, scroll: usize, pal: Palette) -> usize {
    // The runs and the warnings wrap at their spaces (up to three lines each) rather than
    // run past the edge; the table's rows take what is left.
    let width = super::text_room(area.width);
    let head = if crate::output::diff_text::is_multi(d) {
        format!(
            "baseline {} runs   new {} runs: means of the runs, Welch's interval over runs, \
             histograms pooled",
            d.sides.baseline.len(),
            d.sides.new.len()
        )
    } else {
        format!("baseline {}   new {}", d.baseline, d.new)
    };
    let mut lines: Vec<Line> = super::wrap_words(&head, width, 3)
        .into_iter()
        .map(Line::raw)
        .collect();
    // Whole warnings while at least five of the table's rows stay in view, else one line
    // each, their cut marked (`diff` without --tui prints them whole, in this order).
    let warn = |max| -> Vec<String> {
        d.warnings
            .iter()
            .flat_map(|w| super::wrap_words(&format!("warning: {w}"), width, max))
            .collect()
    };
    let mut warnings = warn(3);
    if (area.height as usize) < lines.len() + warnings.len() + 1 + 5 {
        warnings = warn(1);
    }
    lines.extend(warnings.into_iter().map(|l| Line::styled(l, pal.warn())));
    lines.push(Line::styled(
        format!(
            "{:<26}{:>10}{:>10}{:>9}  {:<18}",
            "figure", "baseline", "new", "change", "95% interval"
        ),
        pal.title(),
    ));
    let h = (area.height as usize).saturating_sub(lines.len());
    let max = d.rows.len().saturating_sub(h);
    let start = scroll.min(max);
    for r in d.rows.iter().skip(start).take(h) {
        let label = row_label(r);
        let change = r.change_pct.map_or("-".into(), |c| format!("{c:+.1}%"));
        let ci = match (r.ci_low, r.ci_high) {
            (Some(lo), Some(hi)) => format!("[{}, {}]", num(lo), num(hi)),
            _ => String::new(),
        };
        let text = format!(
            "{:<26}{:>10}{:>10}{:>9}  {:<18}{}",
            label.chars().take(25).collect::<String>(),
            num(r.baseline),
            num(r.new),
            change,
            ci,
            if r.significant { " *" } else { "" }
        );
        lines.push(if r.significant {
            Line::styled(text, pal.hot())
        } else {
            Line::raw(text)
        });
    }
    f.render_widget(Paragraph::new(lines), area);
    max
}

fn draw_hists(f: &mut Frame, area: Rect, d: &Diff, pal: Palette) {
    let block = Block::default()
        .borders(Borders::TOP)
        .title("run-queue latency, whole runs: baseline | new");
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (a, b) = (&d.histograms.baseline, &d.histograms.new);
    let n = a.len().max(b.len());
    let get = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
    let first = (0..n).find(|&i| get(a, i) + get(b, i) > 0);
    let Some(first) = first else {
        f.render_widget(Paragraph::new("no samples"), inner);
        return;
    };
    let pa = a.iter().copied().max().unwrap_or(1).max(1);
    let pb = b.iter().copied().max().unwrap_or(1).max(1);
    let bar = ((inner.width as usize).saturating_sub(16 + 2 * 9 + 4) / 2).clamp(3, 30);
    let mut lines = vec![Line::styled(
        format!(
            "{:>14}  {:>8} {:<bar$} {:>8} {:<bar$}",
            "usecs", "baseline", "", "new", ""
        ),
        pal.dim(),
    )];
    let rows: Vec<usize> = (first..n).collect();
    let room = (inner.height as usize).saturating_sub(1);
    for &i in rows.iter().skip(rows.len().saturating_sub(room)) {
        let (lo, hi) = if i == 0 {
            (0, 1)
        } else {
            (1u64 << i, (1u64 << (i + 1)) - 1)
        };
        let (ca, cb) = (get(a, i), get(b, i));
        let na = (ca * bar as u64).div_ceil(pa) as usize;
        let nb = (cb * bar as u64).div_ceil(pb) as usize;
        lines.push(Line::from(vec![
            Span::raw(format!("{lo:>6}-{hi:<7}  {ca:>8} ")),
            Span::styled(format!("{:<bar$}", "*".repeat(na)), pal.bar()),
            Span::raw(format!(" {cb:>8} ")),
            Span::styled(format!("{:<bar$}", "*".repeat(nb)), pal.hot()),
        ]));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::row_label;
    use crate::diff::{section, DiffRow};

    fn r(section: &str, metric: &str) -> DiffRow {
        DiffRow {
            section: section.into(),
            metric: metric.into(),
            baseline: 0.0,
            new: 0.0,
            change_pct: None,
            ci_low: None,
            ci_high: None,
            significant: false,
            runs: None,
        }
    }

    #[test]
    fn balancer_rows_keep_level_idle_type_and_counter_in_the_label() {
        let mut rows = Vec::new();
        for level in ["smt", "llc", "numa", "numa2"] {
            for idle in ["busy", "idle", "newly_idle"] {
                for c in [
                    "lb_count",
                    "lb_balanced",
                    "lb_failed",
                    "lb_gained",
                    "searches",
                ] {
                    rows.push(r(section::BALANCER_CALLS, &format!("{level} {idle} {c}")));
                }
                for t in ["load", "util", "task", "misfit"] {
                    rows.push(r(
                        section::BALANCER_IMBALANCE,
                        &format!("{level} {idle} {t}"),
                    ));
                }
            }
            rows.push(r(section::BALANCER_ACTIVE, &format!("{level} alb_pushed")));
            for reason in crate::analyze::reason_names().filter(|n| n.ends_with("_balance")) {
                rows.push(r(section::BALANCER_GAINED, &format!("{reason} {level}")));
            }
        }
        let labels: Vec<String> = rows.iter().map(row_label).collect();
        for l in &labels {
            assert!(l.chars().count() <= 25, "{l}");
        }
        let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
        assert_eq!(distinct.len(), labels.len());
        // Other rows keep their section's last part.
        assert_eq!(row_label(&r(section::RUNQLAT, "p50")), "runqlat_us p50");
    }
}
