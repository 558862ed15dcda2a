//! The width of the terminal the report goes to.

use std::io::IsTerminal;

/// Columns of the terminal on stdout (TIOCGWINSZ); else `COLUMNS` when
/// set; None when output goes to a pipe or file without it (no wrapping).
pub fn terminal_width() -> Option<usize> {
    let out = std::io::stdout();
    let tty = out
        .is_terminal()
        .then(|| rustix::termios::tcgetwinsize(&out).ok())
        .flatten()
        .map(|w| usize::from(w.ws_col))
        .filter(|&w| w > 0);
    tty.or_else(|| {
        std::env::var("COLUMNS")
            .ok()?
            .trim()
            .parse()
            .ok()
            .filter(|&w: &usize| w > 0)
    })
}
