//! Keys to actions, in one table: the event loop maps every key through [`action`], and the
//! help view lists [`KEYS`], so the two cannot disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// What a key asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Leave.
    Quit,
    /// Next view (tab).
    NextView,
    /// Previous view (shift-tab).
    PrevView,
    /// Go to view number n (1-based).
    Goto(u8),
    /// Toggle the help view.
    Help,
    /// Selection up.
    Up,
    /// Selection down.
    Down,
    /// Back in time (seek).
    Left,
    /// Forward in time (seek).
    Right,
    /// Open or close the selected item.
    Enter,
    /// Close what Enter opened, cancel typing.
    Back,
    /// Pause or resume.
    Pause,
    /// One interval forward while paused.
    Step,
    /// Longer refresh interval.
    Slower,
    /// Shorter refresh interval.
    Faster,
    /// Replay speed down.
    SpeedDown,
    /// Replay speed up.
    SpeedUp,
    /// Start typing a process-name filter.
    Filter,
    /// A character typed into the filter.
    Char(char),
    /// Delete the last typed character.
    Backspace,
    /// Timeline: less time per cell.
    ZoomIn,
    /// Timeline: more time per cell.
    ZoomOut,
    /// Timeline: a page back in time; evidence: a page up.
    PageBack,
    /// Timeline: a page forward in time; evidence: a page down.
    PageForward,
    /// Timeline: the oldest time kept.
    Oldest,
    /// Timeline: the newest time (live: follow it again).
    Newest,
    /// Timeline: rows per CPU, LLC or NUMA node, or as the machine's width calls for.
    Fold,
    /// Next history chart (Overview).
    SeriesNext,
    /// Previous history chart.
    SeriesPrev,
    /// Longer history window.
    WindowLonger,
    /// Shorter history window.
    WindowShorter,
    /// Nothing.
    None,
}

/// Every key, as the help view shows it: (keys, what they do).
pub const KEYS: &[(&str, &str)] = &[
    (
        "tab / shift-tab",
        "next / previous view (diff --tui: the table / both runs on the timeline)",
    ),
    (
        "1 2 3 4 5 6 7",
        "overview, domains, latency, migrations, findings, help, timeline",
    ),
    ("up/down  j/k", "move the selection"),
    (
        "left/right  h/l",
        "seek back / forward one interval (replay; live when paused)",
    ),
    (
        "enter",
        "findings: open the finding on its timeline; timeline: expand a group",
    ),
    ("esc", "back from a finding's timeline, cancel typing"),
    ("p  space", "pause / resume"),
    ("n  .", "step one interval while paused"),
    (
        "+ / -",
        "refresh interval longer / shorter (the analyzer's interval)",
    ),
    ("[ / ]", "replay speed down / up"),
    ("/", "filter by process name (enter applies, empty clears)"),
    ("s / S", "history chart: next / previous series (overview)"),
    (
        "w / W",
        "history window: longer / shorter (30 to 600 intervals)",
    ),
    ("?", "this help"),
    ("q  ctrl-c", "quit"),
];

/// The timeline view's own keys, as the help view shows them.
pub const TIMELINE_KEYS: &[(&str, &str)] = &[
    (
        "left/right  h/l",
        "move the cursor one cell (the shown interval follows: seek)",
    ),
    ("pgup/pgdn  H/L", "move the cursor 40 cells"),
    (
        "home/end  g/G",
        "a page after the oldest time kept / the newest (live: follow)",
    ),
    ("i / o", "zoom in / out (time per cell)"),
    (
        "up/down  j/k",
        "select a row (a finding's timeline: scroll)",
    ),
    ("f", "rows per: auto, cpu, llc, node"),
];

/// The action of a key. While typing a filter, printable keys are text.
pub fn action(key: KeyEvent, typing: bool) -> Action {
    if key.kind == KeyEventKind::Release {
        return Action::None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('C')) {
        return Action::Quit;
    }
    if typing {
        return match key.code {
            KeyCode::Enter => Action::Enter,
            KeyCode::Esc => Action::Back,
            KeyCode::Backspace => Action::Backspace,
            KeyCode::Char(c) if !ctrl => Action::Char(c),
            _ => Action::None,
        };
    }
    match key.code {
        KeyCode::Char('q') | KeyCode::Char('Q') => Action::Quit,
        KeyCode::Tab => Action::NextView,
        KeyCode::BackTab => Action::PrevView,
        KeyCode::Char(c @ '1'..='7') => Action::Goto(c as u8 - b'0'),
        KeyCode::Char('?') | KeyCode::F(1) => Action::Help,
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::Left | KeyCode::Char('h') => Action::Left,
        KeyCode::Right | KeyCode::Char('l') => Action::Right,
        KeyCode::Enter => Action::Enter,
        KeyCode::Esc => Action::Back,
        KeyCode::Char('p') | KeyCode::Char(' ') => Action::Pause,
        KeyCode::Char('n') | KeyCode::Char('.') => Action::Step,
        KeyCode::Char('+') | KeyCode::Char('=') => Action::Slower,
        KeyCode::Char('-') | KeyCode::Char('_') => Action::Faster,
        KeyCode::Char('[') => Action::SpeedDown,
        KeyCode::Char(']') => Action::SpeedUp,
        KeyCode::Char('/') => Action::Filter,
        KeyCode::Char('i') => Action::ZoomIn,
        KeyCode::Char('o') => Action::ZoomOut,
        KeyCode::PageUp | KeyCode::Char('H') => Action::PageBack,
        KeyCode::PageDown | KeyCode::Char('L') => Action::PageForward,
        KeyCode::Home | KeyCode::Char('g') => Action::Oldest,
        KeyCode::End | KeyCode::Char('G') => Action::Newest,
        KeyCode::Char('f') => Action::Fold,
        KeyCode::Char('s') => Action::SeriesNext,
        KeyCode::Char('S') => Action::SeriesPrev,
        KeyCode::Char('w') => Action::WindowLonger,
        KeyCode::Char('W') => Action::WindowShorter,
        _ => Action::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn keys_map_as_the_help_says() {
        assert_eq!(action(k(KeyCode::Char('q')), false), Action::Quit);
        assert_eq!(
            action(
                KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
                true
            ),
            Action::Quit
        );
        assert_eq!(action(k(KeyCode::Char('3')), false), Action::Goto(3));
        assert_eq!(action(k(KeyCode::Char('j')), false), Action::Down);
        assert_eq!(action(k(KeyCode::Char(' ')), false), Action::Pause);
        assert_eq!(action(k(KeyCode::Char('+')), false), Action::Slower);
        assert_eq!(action(k(KeyCode::Char(']')), false), Action::SpeedUp);
        assert_eq!(action(k(KeyCode::Char('7')), false), Action::Goto(7));
        assert_eq!(action(k(KeyCode::Char('i')), false), Action::ZoomIn);
        assert_eq!(action(k(KeyCode::PageDown), false), Action::PageForward);
        assert_eq!(action(k(KeyCode::End), false), Action::Newest);
        assert_eq!(action(k(KeyCode::Char('s')), false), Action::SeriesNext);
        assert_eq!(action(k(KeyCode::Char('W')), false), Action::WindowShorter);
        // Typing: letters are text, q does not quit.
        assert_eq!(action(k(KeyCode::Char('q')), true), Action::Char('q'));
        assert_eq!(action(k(KeyCode::Esc), true), Action::Back);
    }
}
