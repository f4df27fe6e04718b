//! The terminal: entering raw mode and the alternate screen, and leaving them on every exit
//! path (normal return, error, panic: a panic hook restores the terminal before the message
//! is printed). Also the colours, which honour `NO_COLOR` (https://no-color.org).

use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use ratatui::style::{Color, Modifier, Style};
use ratatui::Terminal;
use std::io::{self, IsTerminal, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// The terminal type the loop draws on.
pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Whether the terminal is in UI mode (raw, alternate screen).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Leaves raw mode and the alternate screen and shows the cursor. Only the first call after
/// entering does anything: leaving the alternate screen twice would move the cursor back
/// over what was printed in between (a panic message).
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = terminal::disable_raw_mode();
    let _ = execute!(io::stdout(), terminal::LeaveAlternateScreen, cursor::Show);
}

static HOOK: Once = Once::new();

fn install_panic_hook() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            prev(info);
        }));
    });
}

/// The terminal in UI mode; dropping it restores the terminal.
pub struct Guard {
    /// The ratatui terminal.
    pub term: Term,
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Checks that stdin and stdout are a terminal, then enters UI mode.
pub fn enter() -> io::Result<Guard> {
    if !io::stdout().is_terminal() || !io::stdin().is_terminal() {
        return Err(io::Error::other(
            "the TUI needs a terminal on stdin and stdout: run it in a terminal, or use `lbscope report` for text",
        ));
    }
    install_panic_hook();
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    if let Err(e) = execute!(io::stdout(), terminal::EnterAlternateScreen, cursor::Hide) {
        restore();
        return Err(e);
    }
    match Terminal::new(CrosstermBackend::new(io::stdout())) {
        Ok(term) => Ok(Guard { term }),
        Err(e) => {
            restore();
            Err(e)
        }
    }
}

/// Styles of the UI, plain when colours are off.
#[derive(Clone, Copy, Debug)]
pub struct Palette {
    /// Colours allowed.
    pub color: bool,
}

impl Palette {
    /// Colours unless `NO_COLOR` is set to anything non-empty.
    pub fn from_env() -> Palette {
        Palette {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    /// Titles and the selected tab.
    pub fn title(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }
    /// The selected row.
    pub fn selected(self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    /// A busy or bad figure.
    pub fn hot(self) -> Style {
        self.fg(Color::Red)
    }
    /// A running CPU.
    pub fn busy(self) -> Style {
        self.fg(Color::Green)
    }
    /// An idle CPU, secondary text.
    pub fn dim(self) -> Style {
        if self.color {
            Style::default().fg(Color::DarkGray)
        } else {
            Style::default()
        }
    }
    /// Histogram bars.
    pub fn bar(self) -> Style {
        self.fg(Color::Cyan)
    }
    /// Warnings.
    pub fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }
}
