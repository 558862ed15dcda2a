//! Command-line interface: parsing, then each command run and printed
//! through the one output interface. Exit status, a bitmask: 1 findings
//! (at or above `--fail-on`) or a penalty, 2 a target could not be checked
//! or the command could not run, 3 both.

mod args;
mod assets;
mod check;
mod options;
mod outputs;
mod plan;
mod runs;
mod textfile;
mod watch;

pub use args::{Cli, Command, OutputArgs, ProbeArgs, WatchArgs};
pub use options::{Options, Task};

use crate::report::{self, Run, Stamp, Style};
use crate::topology::Sysfs;
use clap::Parser;
use outputs::Outputs;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

/// Parse arguments, run, print, and return the exit status.
pub fn main() -> ExitCode {
    crate::sys::keep_freed_heap();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(usage_error(e)),
    };
    // Where and when, once for every output of this run.
    let stamp = Stamp {
        host: crate::sys::host_name(),
        started: SystemTime::now(),
    };
    let opts = match Options::resolve(cli) {
        Ok(o) => o,
        Err(e) => {
            warn(&format!("error: {e}"));
            return ExitCode::from(2);
        }
    };
    // A bad destination is refused before any work.
    if let Err(e) = opts.outputs.check_files(&opts.task.inputs()) {
        warn(&format!("error: {e}"));
        return ExitCode::from(2);
    }
    let out = Out {
        outputs: &opts.outputs,
        style: &opts.style,
        stamp: &stamp,
    };
    let (text, code) = match opts.task {
        Task::Topology { sysfs, devices } => run_topology(&sysfs, &devices, &out),
        Task::Check {
            options,
            targets,
            fail_on,
            stats,
        } => check::run(&options, &targets, fail_on, stats, &out),
        Task::ListColumns(listed) => out.write(Run::Columns(listed), 0),
        Task::Probe { options, emit_fio } => run_probe(&options, emit_fio, &out),
        Task::Assets(a) => (assets::render(a), 0),
        Task::Report { runs, figures } => runs::report(&runs, figures.as_deref(), &out),
        Task::Compare { a, b, columns } => runs::compare(&a, &b, columns.as_deref(), &out),
        Task::Plan {
            options,
            targets,
            plan,
            new,
        } => plan::run(&options, &targets, &plan, new, out),
        Task::Watch {
            options,
            command,
            replay,
        } => watch::run(&options, &command, replay.as_deref(), out),
    };
    ExitCode::from(emit(&text, code))
}

/// Help and version go out as clap writes them; a usage error is one line
/// on stderr (`diskalign: error: ...`) and status 2, like every other
/// refusal, so scripts and logs get the problem on one line.
fn usage_error(e: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.use_stderr() { 2 } else { 0 };
    }
    let text = e.render().to_string();
    let message = text.split("\n\n").next().unwrap_or_default();
    let mut line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(similar) = did_you_mean(&e) {
        line.push_str(&format!("; did you mean {similar}?"));
    }
    warn(&line);
    2
}

/// What clap found similar to a misspelt subcommand, option or value
/// (its "tip: a similar ... exists", which the one line would cut off).
fn did_you_mean(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let kinds = [
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
    ];
    let words: Vec<String> = kinds
        .iter()
        .filter_map(|k| match e.get(*k) {
            Some(ContextValue::String(s)) => Some(vec![s.clone()]),
            Some(ContextValue::Strings(v)) => Some(v.clone()),
            _ => None,
        })
        .flatten()
        .map(|w| format!("'{w}'"))
        .collect();
    match words.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(format!("one of {}", many.join(", "))),
    }
}

/// Writes the report to stdout. A reader that went away (`| head -1`)
/// ends the program quietly with the status it had, as other Unix tools
/// do; any other failure (a full disk) is one line on stderr and status 2.
/// Rust ignores SIGPIPE, so without this `print!` would panic.
fn emit(text: &str, code: u8) -> u8 {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => code,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => code,
        Err(e) => {
            warn(&format!("cannot write the report to standard output: {e}"));
            2
        }
    }
}

/// One line on stderr; a stderr that cannot be written is ignored.
fn warn(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "diskalign: {line}");
}

/// The exit status bitmask: 1 findings (or a penalty), 2 something could
/// not be checked, 3 both.
fn status(errors: bool, problems: bool) -> u8 {
    u8::from(problems) | if errors { 2 } else { 0 }
}

/// Where a run's outputs go and what shapes them, for every command.
#[derive(Clone, Copy)]
pub struct Out<'a> {
    outputs: &'a Outputs,
    style: &'a Style,
    stamp: &'a Stamp,
}

impl Out<'_> {
    /// Writes `run` to every file asked for and returns standard output's
    /// text, with `code` and 2 when a file could not be written.
    fn write(&self, run: Run, code: u8) -> (String, u8) {
        self.outputs.write(run, self.style, self.stamp, code)
    }
}

/// `topology`: returns the report text and the exit status.
fn run_topology(sysfs: &Sysfs, devices: &[String], out: &Out) -> (String, u8) {
    let survey = crate::topology::survey(sysfs, devices);
    for e in &survey.errors {
        warn(&e.to_string());
    }
    let code = status(!survey.errors.is_empty(), survey.has_problems());
    out.write(Run::Topology(&survey), code)
}

/// `probe`: returns the report text and the exit status (0 no significant
/// penalty, 1 a penalty, 2 could not run or interrupted).
fn run_probe(opts: &crate::probe::ProbeOptions, emit_fio: bool, out: &Out) -> (String, u8) {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            warn(&format!("cannot catch signal {sig}: {e}"));
        }
    }
    let fail = |e: String| {
        warn(&e);
        (String::new(), 2)
    };
    if emit_fio {
        return match crate::probe::emit_fio(opts, &stop) {
            Ok(text) => (text, 0),
            Err(e) => fail(e),
        };
    }
    // Progress and the plan go to stderr whenever it is a terminal.
    let bar = report::Progress::new(true);
    let report = match crate::probe::probe(opts, &stop, &bar) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if report.partial {
        warn(&format!(
            "{}: interrupted after {} round(s): the report holds what was measured until then (marked partial)",
            report.target.path.display(),
            report.rounds_run
        ));
        let (text, _) = out.write(Run::Probe(&report), 0);
        return (text, 2 | report.exit_bits());
    }
    out.write(Run::Probe(&report), report.exit_bits())
}
