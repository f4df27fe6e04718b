//! The findings view: a scrolling list of the balancer model's findings (a placeholder
//! until the model is in the snapshot) followed by the signals measured directly; Enter
//! opens the selected item's evidence.

use super::{scroll_start, waiting};
use crate::tui::app::App;
use crate::tui::state::{self, FindingRow, MODEL_NA};
use crate::tui::term::Palette;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

/// The rows of the list: the model's findings, then the measured signals.
pub fn rows(app: &App) -> (Option<usize>, Vec<FindingRow>) {
    let Some(s) = app.current() else {
        return (None, Vec::new());
    };
    let model = state::findings(s);
    let n_model = model.as_ref().map(Vec::len);
    let mut v = model.unwrap_or_default();
    v.extend(state::measured_signals(&app.topo, s));
    (n_model, v)
}

/// Draws the findings view.
pub fn draw(f: &mut Frame, area: Rect, app: &App, pal: Palette) {
    let Some(snap) = app.current() else {
        return waiting(f, area, app);
    };
    let (n_model, rows) = rows(app);
    let mut lines = vec![Line::styled(
        match n_model {
            Some(_) => format!(
                "findings of the balancer model: {}",
                state::findings_text(snap)
            ),
            None => format!("findings: {MODEL_NA} (this interval carries no model view)"),
        },
        pal.title(),
    )];
    lines.push(Line::styled(
        format!(
            "measured signals (idle while others wait >= {:.0}% of the interval): {}",
            crate::analyze::SIGNAL_MIN_FRACTION * 100.0,
            rows.len() - n_model.unwrap_or(0)
        ),
        pal.dim(),
    ));
    let sel = app.finding_sel.min(rows.len().saturating_sub(1));
    let open = app.evidence_open && !rows.is_empty();
    let (list_area, ev_area) = if open {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(area);
        (a, Some(b))
    } else {
        (area, None)
    };
    let h = (list_area.height as usize).saturating_sub(lines.len());
    let start = scroll_start(sel, h, rows.len());
    // Columns as wide as the interval's widest kind and place: the sentence gets the rest,
    // and one cut at the edge ends in `…` (Enter shows it whole).
    let kw = rows
        .iter()
        .map(|r| r.kind.chars().count())
        .max()
        .unwrap_or(0);
    let pw = rows
        .iter()
        .map(|r| r.place.chars().count())
        .max()
        .unwrap_or(0);
    for (i, r) in rows.iter().enumerate().skip(start).take(h) {
        let t = super::fit(
            &format!("{:<kw$}  {:<pw$}  {}", r.kind, r.place, r.summary),
            usize::from(list_area.width),
        );
        lines.push(if i == sel {
            Line::styled(t, pal.selected())
        } else {
            Line::raw(t)
        });
    }
    if rows.is_empty() {
        lines.push(Line::raw("nothing to report in this interval"));
    }
    f.render_widget(Paragraph::new(lines), list_area);
    if let Some(ev) = ev_area {
        let r = &rows[sel];
        let block = Block::default()
            .borders(Borders::TOP)
            .title(format!("evidence: {} {} (esc closes)", r.kind, r.place));
        let text: Vec<Line> = r.evidence.iter().map(|l| Line::raw(l.clone())).collect();
        f.render_widget(
            Paragraph::new(text).block(block).wrap(Wrap { trim: false }),
            ev,
        );
    }
}
