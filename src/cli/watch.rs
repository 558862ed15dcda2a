//! `watch`: runs the session (`watch::session`), drawing its live view
//! over the previous one on a terminal, and writes the summary through
//! the outputs.

use super::{warn, Out};
use crate::report::{Format, Run};
use crate::watch::{self, WatchOptions, WatchRun};
use std::io::{IsTerminal, Write};
use std::path::Path;

/// Returns standard output's text and the exit status: 1 findings, 2 a
/// target could not be watched or tracing could not start or went on.
pub fn run(
    opts: &WatchOptions,
    command: &[String],
    replay: Option<&Path>,
    out: Out,
) -> (String, u8) {
    let live = out.outputs.stdout() == Format::Human
        && !out.style.quiet
        && std::io::stdout().is_terminal();
    let mut draw = |interval: &WatchRun| redraw(&crate::report::watch_live(interval, out.style));
    let draw: Option<&mut dyn FnMut(&WatchRun)> = if live { Some(&mut draw) } else { None };
    match watch::session(opts, command, replay, draw, &warn) {
        Some(run) => out.write(Run::Watch(&run), run.exit_status),
        None => (String::new(), 2),
    }
}

/// The live view, drawn over the previous one.
fn redraw(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = write!(o, "\x1b[H\x1b[2J{text}");
    let _ = o.flush();
}
