//! ANSI colour, used only when asked for or when stdout is a terminal.
//!
//! The styles are anstyle's, which renders each as its escape sequences
//! and the reset after it. Whether to colour stays decided here (stdout a
//! terminal and no NO_COLOR), not by anstream's detection, which also reads
//! CLICOLOR, CLICOLOR_FORCE and TERM and so would colour where diskalign
//! has not; and the report is built as strings, measured by [`visible`],
//! before anything is written, so there is no stream to wrap.

use crate::findings::{Severity, Status};
use anstyle::{AnsiColor, Effects};
use std::io::IsTerminal;

const BOLD: anstyle::Style = anstyle::Style::new().effects(Effects::BOLD);
const GOOD: anstyle::Style = AnsiColor::Green.on_default();
const BAD: anstyle::Style = AnsiColor::Red.on_default().effects(Effects::BOLD);
const WARN: anstyle::Style = AnsiColor::Yellow.on_default();
const DIM: anstyle::Style = anstyle::Style::new().effects(Effects::DIMMED);

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Debug, Default)]
pub struct Style {
    pub color: bool,
    /// Print every explanation (`-v`): info findings, the probe's method paragraph.
    pub verbose: bool,
    /// Print the verdicts only (`-q`).
    pub quiet: bool,
    /// Wrap lines at this many columns (the terminal's, `--width`, or 100
    /// for a pipe); None: never wrap (`--width 0`).
    pub width: Option<usize>,
    /// Hide table columns to fit `width` (a terminal or `--width`); a pipe
    /// gets every column.
    pub fit: bool,
    /// The table and CSV columns asked for with `-o` (ids, validated).
    pub columns: Option<Vec<String>>,
    /// How the tables are printed (`-n`, `-r`, `-P`, `-b`).
    pub table: TableForm,
    /// The report, its table alone, or both (`check -o`, `topology`).
    pub view: View,
    /// Standard output is a terminal: hints for people go there, else to
    /// standard error when that is one (see [`Style::hint`]).
    pub terminal: bool,
    /// Standard error is a terminal.
    pub stderr_terminal: bool,
}

/// What `check`, `topology`, `probe`, `compare` and `plan` print for
/// people.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum View {
    /// The whole report (check's default, topology's details).
    #[default]
    Report,
    /// The table alone, as lsblk prints it (`-o`, topology's default).
    Table,
    /// The table, then the report (topology `-v -o`).
    Both,
}

/// How a table is printed, as lsblk's output modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableForm {
    pub mode: TableMode,
    /// A header line (not with `-n`; never in `Pairs`).
    pub headings: bool,
    /// Sizes in bytes (`-b`).
    pub bytes: bool,
}

impl Default for TableForm {
    fn default() -> Self {
        TableForm {
            mode: TableMode::Aligned,
            headings: true,
            bytes: false,
        }
    }
}

/// lsblk's default, `-r` and `-P`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableMode {
    /// Columns aligned, two spaces apart.
    #[default]
    Aligned,
    /// One space between values, odd bytes escaped (`-r`).
    Raw,
    /// `KEY="value"` pairs (`-P`).
    Pairs,
}

impl Style {
    pub fn new(choice: ColorChoice) -> Self {
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        };
        Style {
            color,
            terminal: std::io::stdout().is_terminal(),
            stderr_terminal: std::io::stderr().is_terminal(),
            ..Style::default()
        }
    }

    pub fn plain() -> Self {
        Style::default()
    }

    fn paint(&self, style: anstyle::Style, s: &str) -> String {
        if self.color {
            format!("{style}{s}{style:#}")
        } else {
            s.to_string()
        }
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint(BOLD, s)
    }
    pub fn good(&self, s: &str) -> String {
        self.paint(GOOD, s)
    }
    pub fn bad(&self, s: &str) -> String {
        self.paint(BAD, s)
    }
    pub fn warn(&self, s: &str) -> String {
        self.paint(WARN, s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.paint(DIM, s)
    }

    /// A status word in the colour of its tier.
    pub fn status(&self, s: Status) -> String {
        let w = s.word();
        match s {
            Status::Aligned => self.good(w),
            Status::Incomplete | Status::Untidy => self.warn(w),
            Status::Inherits | Status::Damaged | Status::Misaligned => self.bad(w),
        }
    }

    pub fn severity(&self, sev: Severity) -> String {
        let text = format!("{sev:<7}");
        match sev {
            Severity::Error => self.bad(&text),
            Severity::Warning => self.warn(&text),
            Severity::Info => self.dim(&text),
        }
    }

    /// One finding as a report line: `{indent}{severity} {prefix}{code}:
    /// {message}`, wrapped to the width under the message's start.
    pub fn finding(&self, indent: &str, prefix: &str, f: &crate::findings::Finding) -> String {
        let head = format!(
            "{indent}{} {prefix}{}: ",
            self.severity(f.severity),
            self.bold(f.code.as_str())
        );
        // Continuation lines start under the severity word's end.
        let hang = " ".repeat(visible(indent) + 8);
        wrap(&head, &f.message, &hang, self.width)
    }

    /// A hint for people (where the details are, how to pick columns),
    /// dimmed: part of the text on a terminal; otherwise a program reads
    /// the table (a pipe, a file) and gets it alone, as lsblk prints
    /// nothing else, and the hint goes to standard error when a person
    /// sees that, and nowhere when nobody does (a timer, cron's mail).
    pub fn hint(&self, head: &str, text: &str, hang: &str) -> String {
        let line = self.line(head, &self.dim(text), hang);
        if self.terminal {
            return line;
        }
        if self.stderr_terminal {
            use std::io::Write;
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
        String::new()
    }

    /// A line of prose wrapped to the width, continuation lines indented by `hang`.
    pub fn line(&self, head: &str, text: &str, hang: &str) -> String {
        wrap(head, text, hang, self.width)
    }
}

/// Joins two words that `wrap` must keep on one line (a name and its
/// value); printed as a plain space.
pub const GLUE: char = '\u{a0}';

/// `head` then `text`, broken at spaces (not at `GLUE`) so no line passes
/// `width` (a word longer than a line stands alone); ends with a newline.
pub fn wrap(head: &str, text: &str, hang: &str, width: Option<usize>) -> String {
    let Some(width) = width else {
        return format!("{head}{text}\n").replace(GLUE, " ");
    };
    let mut out = head.to_string();
    let mut col = visible(head);
    let mut first = true;
    for word in text.split(' ') {
        let w = visible(word);
        if !first && col + 1 + w > width {
            out.push('\n');
            out.push_str(hang);
            col = visible(hang);
        } else if !first {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += w;
        first = false;
    }
    out.push('\n');
    out.replace(GLUE, " ")
}

/// The width of `s` on a terminal: characters, colour codes left out.
pub fn visible(s: &str) -> usize {
    let mut n = 0;
    let mut in_esc = false;
    for c in s.chars() {
        match (in_esc, c) {
            (false, '\x1b') => in_esc = true,
            (true, 'm') => in_esc = false,
            (false, _) => n += 1,
            _ => {}
        }
    }
    n
}

/// Lay out rows as left-aligned columns separated by two spaces. Widths are
/// measured on the text without colour codes.
pub fn table(rows: &[Vec<String>]) -> String {
    let widths = column_widths(rows);
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < r.len() {
                line.push_str(&" ".repeat(widths[c] - visible(cell) + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The widest cell of each column.
pub fn column_widths(rows: &[Vec<String>]) -> Vec<usize> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| visible(s))
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// The "could not ..." lines for targets that failed.
pub fn errors(errors: &[crate::errors::TargetError], st: &Style, what: &str) -> String {
    errors
        .iter()
        .map(|e| format!("{}: {} {}\n", st.bold(&e.path), st.bad(what), e.message))
        .collect()
}

#[cfg(test)]
mod tests {

    /// A hint is part of the text on a terminal, and never of a table a
    /// program reads.
    #[test]
    fn a_hint_is_for_a_terminal_only() {
        let mut st = Style::plain();
        st.width = Some(100);
        st.terminal = true;
        assert_eq!(st.hint("", "(hint)", ""), "(hint)\n");
        st.terminal = false;
        assert_eq!(st.hint("", "(hint)", ""), "");
    }

    use super::*;

    /// The bytes a terminal gets; `visible` skips them all.
    #[test]
    fn colours_are_sgr_sequences_with_a_reset() {
        let st = Style::new(ColorChoice::Always);
        assert_eq!(st.bold("x"), "\x1b[1mx\x1b[0m");
        assert_eq!(st.good("x"), "\x1b[32mx\x1b[0m");
        assert_eq!(st.bad("x"), "\x1b[1m\x1b[31mx\x1b[0m");
        assert_eq!(st.warn("x"), "\x1b[33mx\x1b[0m");
        assert_eq!(st.dim("x"), "\x1b[2mx\x1b[0m");
        assert_eq!(visible(&st.bad("word")), 4);
        assert_eq!(Style::new(ColorChoice::Never).bad("x"), "x");
    }

    #[test]
    fn glued_words_stay_on_one_line_and_print_as_spaces() {
        let text = format!("aaaa b{GLUE}c");
        assert_eq!(wrap("", &text, "  ", Some(7)), "aaaa\n  b c\n");
        assert_eq!(wrap("", &text, "  ", None), "aaaa b c\n");
    }
}
