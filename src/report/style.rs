//! ANSI colour, used only when asked for or when stdout is a terminal.

use crate::findings::Severity;
use std::io::IsTerminal;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
    /// Print every explanation (`-v`): the probe's method paragraph.
    pub verbose: bool,
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
            verbose: false,
        }
    }

    pub fn plain() -> Self {
        Style {
            color: false,
            verbose: false,
        }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub fn good(&self, s: &str) -> String {
        self.paint("32", s)
    }
    pub fn bad(&self, s: &str) -> String {
        self.paint("31;1", s)
    }
    pub fn warn(&self, s: &str) -> String {
        self.paint("33", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }

    pub fn severity(&self, sev: Severity) -> String {
        let text = format!("{sev:<7}");
        match sev {
            Severity::Error => self.bad(&text),
            Severity::Warning => self.warn(&text),
            Severity::Info => self.dim(&text),
        }
    }

    /// One finding as a report line: `{indent}{severity} {prefix}{code}: {message}`.
    pub fn finding(&self, indent: &str, prefix: &str, f: &crate::findings::Finding) -> String {
        format!(
            "{indent}{} {prefix}{}: {}\n",
            self.severity(f.severity),
            self.bold(f.code.as_str()),
            f.message
        )
    }
}

/// Lay out rows as left-aligned columns separated by two spaces. Widths are
/// measured on the text without colour codes.
pub fn table(rows: &[Vec<String>]) -> String {
    let visible = |s: &str| {
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
    };
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| visible(s))
                .max()
                .unwrap_or(0)
        })
        .collect();
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

/// The "could not ..." lines for targets that failed.
pub fn errors(errors: &[crate::errors::TargetError], st: &Style, what: &str) -> String {
    errors
        .iter()
        .map(|e| format!("{}: {} {}\n", st.bold(&e.path), st.bad(what), e.message))
        .collect()
}
