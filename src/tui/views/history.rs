//! History charts: a [`Chart`]'s rows as labelled sparklines, the newest interval at the
//! right edge, each row with its latest value and its highest in the window. When the
//! window holds more intervals than the chart has columns, a column stands for several
//! consecutive intervals and shows the highest of them, so peaks are never averaged away.
//! An axis line under the rows marks with `|` the columns where the interval length or the
//! filter changed.

use crate::tui::history::{Chart, Row, Unit};
use crate::tui::term::Palette;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// Widest label column (labels are never cut below this: the longest reason,
/// "nohz_idle_balance" with its side "A ", fits).
pub const LABEL_MAX: usize = 24;
/// Width of the figures after the sparkline: " 12.3/s ^45.6/s".
pub const FIGURES: usize = 22;
/// Eighths of a cell, from empty to full.
const BARS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// A column without any value (no sample, no model view).
pub const NONE: char = '·';

/// Intervals per column for `n` intervals in `width` columns.
pub fn per_column(n: usize, width: usize) -> usize {
    n.div_ceil(width.max(1)).max(1)
}

/// Columns per interval when a `window` of intervals is narrower than `width`: the same for
/// every run of the window, so a chart filling up keeps its scale.
pub fn stretch(window: usize, width: usize) -> usize {
    (width / window.max(1)).max(1)
}

/// Each column repeated `c` times.
pub fn widen<T: Copy>(cols: &[T], c: usize) -> Vec<T> {
    cols.iter()
        .flat_map(|v| std::iter::repeat_n(*v, c.max(1)))
        .collect()
}

/// The columns of `values`, `k` intervals each, counted from the newest so that the newest
/// column is whole: each the highest value of its intervals. Oldest column first.
pub fn columns(values: &[Option<f64>], k: usize) -> Vec<Option<f64>> {
    let k = k.max(1);
    let mut cols: Vec<Option<f64>> = values
        .rchunks(k)
        .map(|c| c.iter().flatten().copied().reduce(f64::max))
        .collect();
    cols.reverse();
    cols
}

/// Whether each column (as [`columns`] cuts them) holds a marked interval.
pub fn marked_columns(marks: &[bool], k: usize) -> Vec<bool> {
    let mut cols: Vec<bool> = marks.rchunks(k.max(1)).map(|c| c.contains(&true)).collect();
    cols.reverse();
    cols
}

/// The sparkline of `cols` scaled to `max`, `height` text rows, top row first.
pub fn sparkline(cols: &[Option<f64>], max: f64, height: usize) -> Vec<String> {
    let levels = 8 * height;
    let level = |v: f64| -> usize {
        if v <= 0.0 || max <= 0.0 {
            0
        } else {
            ((v / max * levels as f64).round() as usize).clamp(1, levels)
        }
    };
    (0..height)
        .rev()
        .map(|r| {
            cols.iter()
                .map(|c| match c {
                    None if r == 0 => NONE,
                    None => ' ',
                    Some(v) => BARS[level(*v).saturating_sub(8 * r).min(8)],
                })
                .collect()
        })
        .collect()
}

/// A figure in a row's unit, compact.
pub fn figure(v: Option<f64>, unit: Unit) -> String {
    let Some(v) = v else { return "-".into() };
    match unit {
        Unit::PerSec if v >= 100.0 => format!("{v:.0}/s"),
        Unit::PerSec => format!("{v:.1}/s"),
        Unit::Us => super::us(v),
        Unit::Pct => format!("{v:.1}%"),
        Unit::Count => format!("{v:.0}"),
    }
}

/// How a chart is laid out in an area.
pub struct Layout {
    /// Text rows per sparkline.
    pub height: usize,
    /// Columns of the sparkline.
    pub width: usize,
    /// Width of the label column.
    pub label: usize,
}

impl Layout {
    /// The sparkline width left in `area` beside labels of `label` characters (and a space)
    /// and the figures.
    pub fn new(area: Rect, height: usize, label: usize) -> Layout {
        let label = (label + 1).clamp(9, LABEL_MAX);
        Layout {
            height: height.max(1),
            width: (area.width as usize).saturating_sub(label + FIGURES).max(1),
            label,
        }
    }

    /// The layout of `chart` in `area`: its longest label fits (up to [`LABEL_MAX`]).
    pub fn for_chart(area: Rect, height: usize, chart: &Chart, extra: usize) -> Layout {
        let longest = chart.rows.iter().map(|r| r.label.chars().count()).max();
        Layout::new(area, height, longest.unwrap_or(0) + extra)
    }
}

/// One row's lines, scaled so that `scale` fills the rows: the label, the latest value and
/// the row's highest on its bottom line.
fn row_lines(
    r: &Row,
    cols: &[Option<f64>],
    scale: Option<f64>,
    lay: &Layout,
    pal: Palette,
) -> Vec<Line<'static>> {
    let rows = sparkline(cols, scale.unwrap_or(0.0), lay.height);
    let max = r.max();
    let last = r.values.last().copied().flatten();
    let n = rows.len();
    rows.into_iter()
        .enumerate()
        .map(|(i, spark)| {
            let pad = lay.width.saturating_sub(spark.chars().count());
            let w = lay.label;
            let label = if i + 1 == n {
                format!("{:<w$}", cut(&r.label, w - 1))
            } else {
                " ".repeat(w)
            };
            let mut spans = vec![
                Span::styled(label, pal.title()),
                Span::raw(" ".repeat(pad)),
                Span::styled(spark, pal.bar()),
            ];
            if i + 1 == n {
                spans.push(Span::raw(format!(
                    " {:>9} ^{:<10}",
                    figure(last, r.unit),
                    figure(max, r.unit)
                )));
            }
            Line::from(spans)
        })
        .collect()
}

/// `s` cut to `n` characters.
fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The axis under a chart: `-` per column, `|` where settings changed, and what the window
/// spans.
fn axis(marks: &[bool], lay: &Layout, span: &str, pal: Palette) -> Line<'static> {
    let pad = lay.width.saturating_sub(marks.len());
    let ticks: String = marks.iter().map(|m| if *m { '|' } else { '-' }).collect();
    let w = lay.label;
    Line::from(vec![
        Span::styled(format!("{:<w$}", cut(span, w - 1)), pal.dim()),
        Span::raw(" ".repeat(pad)),
        Span::styled(ticks, pal.dim()),
        Span::styled(" now".to_string(), pal.dim()),
    ])
}

/// What a chart needs beyond its rows.
pub struct ChartFrame<'a> {
    /// Whether each interval of the window begins with new settings.
    pub marks: &'a [bool],
    /// What the window spans, for the axis ("-2:00", "120 iv").
    pub span: String,
    /// The title line's text after the chart's own title.
    pub note: String,
}

/// Lines of a chart over a window of `window` intervals: title, rows (as many as fit in
/// `max_lines`), axis.
pub fn lines(
    chart: &Chart,
    fr: &ChartFrame<'_>,
    lay: &Layout,
    window: usize,
    max_lines: usize,
    pal: Palette,
) -> Vec<Line<'static>> {
    let n = chart.rows.first().map_or(0, |r| r.values.len());
    let k = per_column(n, lay.width);
    let c = if k == 1 {
        stretch(window, lay.width)
    } else {
        1
    };
    let mut out = vec![Line::from(vec![
        Span::styled(format!("history: {}", chart.title), pal.title()),
        Span::styled(format!("  {}", fr.note), pal.dim()),
    ])];
    let room = max_lines.saturating_sub(2);
    for r in &chart.rows {
        if out.len() - 1 + lay.height > room {
            break;
        }
        let cols = widen(&columns(&r.values, k), c);
        out.extend(row_lines(r, &cols, r.max(), lay, pal));
    }
    let marks = widen(&marked_columns(fr.marks, k), c);
    out.push(axis(&marks, lay, &fr.span, pal));
    out
}

/// Draws a chart over a window of `window` intervals in `area`.
pub fn draw(
    f: &mut Frame,
    area: Rect,
    chart: &Chart,
    fr: &ChartFrame<'_>,
    (height, window): (usize, usize),
    pal: Palette,
) {
    let lay = Layout::for_chart(area, height, chart, 0);
    let l = lines(chart, fr, &lay, window, area.height as usize, pal);
    f.render_widget(Paragraph::new(l), area);
}

/// Two runs' charts row by row ("A all", "B all"), each pair on one scale, both runs cut into
/// columns alike from their first interval (the shorter padded at its end), for `diff --tui`.
pub fn paired_lines(
    a: &Chart,
    b: &Chart,
    lay: &Layout,
    max_lines: usize,
    pal: Palette,
) -> Vec<Line<'static>> {
    let len = |c: &Chart| c.rows.first().map_or(0, |r| r.values.len());
    let n = len(a).max(len(b));
    let k = per_column(n, lay.width);
    let title = format!("history: {}", a.title);
    // The note gives way (cut, marked) before the title does, within the screen's width.
    let room = (lay.label + lay.width + FIGURES).saturating_sub(title.chars().count());
    let note = super::fit(
        &format!("  baseline (A) and new (B) from their first interval; {k} per column"),
        room,
    );
    let mut out = vec![Line::from(vec![
        Span::styled(title, pal.title()),
        Span::styled(note, pal.dim()),
    ])];
    let pad = |r: &Row| {
        let mut v = r.values.clone();
        v.resize(n, None);
        // Whole columns counted from the first interval.
        v.resize(n.div_ceil(k) * k, None);
        v
    };
    let mut labels: Vec<&str> = a.rows.iter().map(|r| r.label.as_str()).collect();
    for r in &b.rows {
        if !labels.contains(&r.label.as_str()) {
            labels.push(&r.label);
        }
    }
    for label in labels {
        if out.len() + 2 * lay.height > max_lines {
            break;
        }
        let empty = |c: &Chart| Row {
            label: label.to_string(),
            values: vec![None; len(c)],
            unit: a.rows.first().map_or(Unit::Count, |r| r.unit),
        };
        let ra = a
            .rows
            .iter()
            .find(|r| r.label == label)
            .cloned()
            .unwrap_or_else(|| empty(a));
        let rb = b
            .rows
            .iter()
            .find(|r| r.label == label)
            .cloned()
            .unwrap_or_else(|| empty(b));
        let max = [ra.max(), rb.max()].into_iter().flatten().reduce(f64::max);
        for (side, r) in [("A", ra), ("B", rb)] {
            let cols = columns(&pad(&r), k);
            let shown = Row {
                label: format!("{side} {}", r.label),
                ..r
            };
            out.extend(row_lines(&shown, &cols, max, lay, pal));
        }
    }
    out
}
