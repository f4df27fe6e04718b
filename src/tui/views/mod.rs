//! Drawing: the frame (title line, tabs, footer) and one module per view. Every function
//! here reads the [`App`] and the snapshot it points at; none changes state.

pub(crate) mod diff;
mod diff_timeline;
mod domains;
mod explain;
mod findings;
mod help;
pub mod history;
mod latency;
mod migrations;
mod overview;
pub(crate) mod timeline;

pub use explain::{lines as explain_lines, window as explain_window};
pub use findings::rows as finding_rows;

use super::app::{App, SourceInfo, View};
use super::term::Palette;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// Draws the whole screen.
pub fn draw(f: &mut Frame, app: &App, pal: Palette) {
    let [top, tabs, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(
        Paragraph::new(title_line(app, pal, usize::from(top.width))),
        top,
    );
    f.render_widget(Paragraph::new(tab_line(app, pal)), tabs);
    match app.view {
        View::Overview => overview::draw(f, body, app, pal),
        View::Domains => domains::draw(f, body, app, pal),
        View::Latency => latency::draw(f, body, app, pal),
        View::Migrations => migrations::draw(f, body, app, pal),
        View::Findings => findings::draw(f, body, app, pal),
        View::Help => help::draw(f, body, app, pal),
        View::Diff => diff::draw(f, body, app, pal),
        View::Timeline if app.diff.is_some() => diff_timeline::draw(f, body, app, pal),
        View::Timeline => timeline::draw(f, body, app, pal),
        View::Explain => explain::draw(f, body, app, pal),
    }
    f.render_widget(Paragraph::new(footer_line(app, pal)), foot);
}

/// The title line, `width` columns at most: a recording's name gives way (cut, marked with
/// `…`) before the state, position, interval and clock do.
fn title_line(app: &App, pal: Palette, width: usize) -> Line<'static> {
    let mut s = vec![Span::styled(
        match &app.source {
            SourceInfo::Live { .. } => "lbscope top".to_string(),
            SourceInfo::Replay(_) => "lbscope replay ".to_string(),
            SourceInfo::Diff => "lbscope diff".to_string(),
        },
        pal.title(),
    )];
    title_parts(app, pal, &mut s);
    if let SourceInfo::Replay(r) = &app.source {
        let used: usize = s.iter().map(|p| p.content.chars().count()).sum();
        let room = width.saturating_sub(used).max(8);
        s.insert(1, Span::styled(fit(&r.name, room), pal.title()));
    }
    Line::from(s)
}

/// What follows the title's name: the state, a replay's position, the interval, whether the
/// kernel folds latency (live `--fold`), the filter, live `top`'s own CPU (percent of one
/// core) and the clock.
fn title_parts(app: &App, pal: Palette, s: &mut Vec<Span<'static>>) {
    if app.diff.is_none() {
        let behind = match (app.cursor(), &app.source) {
            (Some(c), SourceInfo::Live { .. }) => app.history.len().saturating_sub(c + 1),
            _ => 0,
        };
        if app.paused {
            s.push(Span::styled(" | PAUSED", pal.warn()));
        } else if behind > 0 {
            s.push(Span::styled(format!(" | {behind} BACK"), pal.warn()));
        } else if app.ended {
            s.push(Span::styled(" | END", pal.warn()));
        }
        if let SourceInfo::Replay(r) = &app.source {
            let first = app.history.front().map_or(0, |s| s.t_start_ns);
            let at = app
                .current()
                .map_or(0, |s| s.t_end_ns.saturating_sub(first));
            s.push(Span::raw(format!(
                " | t {:.1}/{:.1} s {}x",
                at as f64 / 1e9,
                r.span_ns as f64 / 1e9,
                app.speed
            )));
        }
        s.push(Span::raw(format!(
            " | every {}",
            secs(app.interval_ns as f64 / 1e9)
        )));
        if let SourceInfo::Live { folded: true, .. } = &app.source {
            s.push(Span::raw(" | folded"));
        }
        if let Some(c) = &app.comm {
            s.push(Span::raw(format!(" | comm={c}")));
        }
        if let (SourceInfo::Live { .. }, Some(p)) = (&app.source, app.self_cpu) {
            s.push(Span::raw(format!(" | self {p:.1}%")));
        }
        if let Some(snap) = app.current() {
            s.push(Span::raw(format!(
                " | {} UTC",
                time_of_day(snap.t_end_ns, app.clock_base_ns)
            )));
        }
    }
}

fn tab_line(app: &App, pal: Palette) -> Line<'static> {
    if app.diff.is_some() {
        let tab = |v: View, name: &'static str| {
            if app.view == v {
                Span::styled(name, pal.selected())
            } else {
                Span::raw(name)
            }
        };
        let mut s = vec![tab(View::Diff, "Diff")];
        if app.diff_timelines.is_some() {
            s.extend([
                Span::raw(" "),
                tab(View::Timeline, "Timeline"),
                Span::raw("  (tab)"),
            ]);
        }
        s.push(Span::raw("  (? help)"));
        return Line::from(s);
    }
    let mut s = Vec::new();
    for (i, v) in View::TABS.iter().enumerate() {
        let label = format!("{} {}", i + 1, v.title());
        s.push(if *v == app.view {
            Span::styled(label, pal.selected())
        } else {
            Span::raw(label)
        });
        s.push(Span::raw(" "));
    }
    Line::from(s)
}

fn footer_line(app: &App, pal: Palette) -> Line<'static> {
    if let Some(t) = &app.typing {
        return Line::from(vec![
            Span::styled("filter process name: ", pal.title()),
            Span::raw(format!("{t}_")),
            Span::styled("  (enter applies, esc cancels)", pal.dim()),
        ]);
    }
    let keys = if app.view == View::Explain {
        "esc back  j/k scroll  h/l move  i/o zoom  ? help  q quit"
    } else if app.view == View::Timeline && app.diff.is_some() {
        "q quit  ? help  tab table  h/l cursor  H/L page  i/o zoom  f rows  enter expand  g/G ends"
    } else if app.view == View::Timeline {
        "q quit  ? help  h/l cursor  H/L page  i/o zoom  f rows  enter expand  G newest  p pause"
    } else if app.diff.is_some() && app.diff_timelines.is_some() {
        "q quit  j/k scroll  tab timeline  ? help"
    } else if app.diff.is_some() {
        "q quit  j/k scroll  ? help"
    } else if matches!(app.source, SourceInfo::Replay(_)) {
        "q quit  ? help  p pause  <-/-> seek  n step  [/] speed  +/- interval  / filter  s/w history"
    } else {
        "q quit  ? help  tab/1-7 views  p pause  +/- interval  / filter  s/w history"
    };
    match &app.status {
        Some(st) => Line::from(vec![
            Span::styled(st.clone(), pal.warn()),
            Span::styled(format!("  | {keys}"), pal.dim()),
        ]),
        None => Line::from(Span::styled(keys, pal.dim())),
    }
}

/// The history chart of `snaps` (the app's window) in `area`: rows `height` text lines
/// high, the title's note saying the keys, the window and where settings changed.
fn history_chart(
    f: &mut Frame,
    area: Rect,
    app: &App,
    chart: &super::history::Chart,
    snaps: &[&crate::analyze::Snapshot],
    height: usize,
    pal: Palette,
) {
    let marks = super::history::marked(snaps, &app.marks);
    let lay = history::Layout::for_chart(area, height, chart, 0);
    let k = history::per_column(snaps.len(), lay.width);
    let keys = if app.view == View::Overview {
        "s series  w window"
    } else {
        "w window"
    };
    // What the chart spans first: on a narrow screen the keys are cut, not the figures.
    let mut note = format!("{} of {} intervals", snaps.len(), app.window);
    if k > 1 {
        note.push_str(&format!(", {k} per column"));
    }
    let first = snaps.first().map_or(0, |s| s.t_start_ns);
    if let Some(m) = app.marks.iter().rev().find(|m| m.t_ns >= first) {
        note.push_str(&format!("  | = changed ({})", m.what));
    }
    note.push_str(&format!("  {keys}"));
    let span = match (snaps.first(), snaps.last()) {
        (Some(a), Some(b)) => format!(
            "-{}",
            secs(b.t_end_ns.saturating_sub(a.t_start_ns) as f64 / 1e9)
        ),
        _ => String::new(),
    };
    let fr = history::ChartFrame {
        marks: &marks,
        span,
        note,
    };
    history::draw(f, area, chart, &fr, (height, app.window), pal);
}

/// A placeholder when no interval has closed yet.
fn waiting(f: &mut Frame, area: Rect, app: &App) {
    let msg = if app.ended {
        "the source ended before a full interval: nothing to show"
    } else {
        "collecting the first interval..."
    };
    f.render_widget(Paragraph::new(msg), area);
}

/// `1.5 s`, `250 ms`.
pub fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.1} s")
    }
}

/// A latency in microseconds, compact.
pub fn us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1} ms", v / 1e3)
    } else {
        format!("{v:.0} us")
    }
}

/// A per-second rate, compact.
pub fn rate(count: u64, len_ns: u64) -> String {
    if len_ns == 0 {
        return "-".into();
    }
    let r = count as f64 * 1e9 / len_ns as f64;
    if r >= 100.0 || r == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// `HH:MM:SS` of a monotonic timestamp, UTC.
pub fn time_of_day(mono_ns: u64, clock_base_ns: i64) -> String {
    let epoch_ns = mono_ns as i128 + clock_base_ns as i128;
    let secs = epoch_ns.div_euclid(1_000_000_000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// `text` cut to `width` columns, its last one `…` when anything was cut.
pub fn fit(text: &str, width: usize) -> String {
    if width == 0 || text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width - 1).collect();
    cut.push('…');
    cut
}

/// `parts` joined by `sep` into lines of at most `width` columns where they fit, each line
/// starting a new part (a part wider than `width` alone on its line, whole).
pub fn pack<'a>(parts: impl IntoIterator<Item = &'a str>, sep: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![String::new()];
    for part in parts {
        let last = lines.last_mut().expect("one line at least");
        let len = last.chars().count();
        if len > 0 && len + sep.chars().count() + part.chars().count() > width {
            lines.push(part.to_string());
        } else {
            if len > 0 {
                last.push_str(sep);
            }
            last.push_str(part);
        }
    }
    lines
}

/// The columns a line of wrapped text may take in `width`: all but the last, which stays
/// free because a line that fills it cannot be told from one cut there.
pub fn text_room(width: u16) -> usize {
    usize::from(width).saturating_sub(1)
}

/// `text` broken at its spaces into lines of at most `width` columns (a word wider than
/// that alone on its line, cut), at most `max` lines, the last cut with `…` if text is left.
pub fn wrap_words(text: &str, width: usize, max: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = pack(text.split(' '), " ", width);
    let max = max.max(1);
    if lines.len() > max {
        // What is left no longer fits one line (it was broken), so `fit` marks the cut.
        let rest = lines.split_off(max - 1).join(" ");
        lines.push(rest);
    }
    lines.iter().map(|l| fit(l, width)).collect()
}

/// The first row to show so that `sel` is visible in `height` rows.
pub fn scroll_start(sel: usize, height: usize, len: usize) -> usize {
    if height == 0 || len <= height {
        return 0;
    }
    sel.saturating_sub(height - 1).min(len - height)
}

#[cfg(test)]
mod wrap_tests {
    use super::{fit, wrap_words};

    /// Lines break at spaces and never pass the width; a word wider than a line is cut with
    /// `…`; past `max` lines the last one ends in `…`; nothing is lost below `max`.
    #[test]
    fn words_wrap_within_width_and_cuts_are_marked() {
        assert_eq!(wrap_words("a bb ccc dddd", 6, 9), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap_words("a bb ccc dddd", 6, 2), ["a bb", "ccc d…"]);
        assert_eq!(wrap_words("abcdefgh ij", 4, 9), ["abc…", "ij"]);
        assert_eq!(wrap_words("", 4, 2), [""]);
        assert_eq!(fit("abcdef", 6), "abcdef");
        assert_eq!(fit("abcdefg", 6), "abcde…");
        for w in 1..12 {
            for l in wrap_words("the quick brown fox jumps over the lazy dog", w, 3) {
                assert!(l.chars().count() <= w, "'{l}' wider than {w}");
            }
        }
    }
}
