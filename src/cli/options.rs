//! The parsed command line resolved in one step into what the commands run
//! with: the output format and style, the sysfs tree, and each command's
//! library options (like hyperfine's `options.rs`).

use super::args::{Cli, Command, ProbeArgs, TableArgs};
use crate::check::CheckOptions;
use crate::findings::FailOn;
use crate::probe::ProbeOptions;
use crate::report::columns;
use crate::report::style::{TableForm, TableMode, View};
use crate::report::{Format, Style};
use crate::topology::Sysfs;
use std::path::PathBuf;

/// What to run and how to print it.
pub struct Options {
    pub format: Format,
    pub style: Style,
    /// `--html FILE`: also write the HTML report there.
    pub html: Option<PathBuf>,
    pub task: Task,
}

pub enum Task {
    Topology {
        sysfs: Sysfs,
        devices: Vec<String>,
        /// Also write Prometheus metrics here.
        prometheus: Option<PathBuf>,
    },
    Check {
        options: CheckOptions,
        targets: Vec<PathBuf>,
        fail_on: FailOn,
        /// Also write Prometheus metrics here.
        prometheus: Option<PathBuf>,
    },
    /// `check --list-columns`, `topology --list-columns`.
    ListColumns(Listed),
    Probe {
        options: Box<ProbeOptions>,
        /// Print the fio job file and do no I/O.
        emit_fio: bool,
        /// Also write the CSV here.
        csv: Option<PathBuf>,
    },
    /// Print the man page or a completion script.
    Assets(super::assets::Asset),
    /// Draw saved runs as one HTML page, to `output` or standard output.
    Report {
        runs: Vec<PathBuf>,
        output: Option<PathBuf>,
        /// Each figure also as DIR/<id>.svg.
        figures: Option<PathBuf>,
    },
    /// Compare two saved runs.
    Compare { a: PathBuf, b: PathBuf },
    /// Plan the fix of disks, or lay out a new one.
    Plan {
        options: CheckOptions,
        targets: Vec<PathBuf>,
        json: bool,
        script: Option<PathBuf>,
        plan: crate::plan::PlanOptions,
        /// `--new DISK` with its sizes and label.
        new: Option<(PathBuf, String, crate::layout::TableKind)>,
    },
}

/// Whose columns `--list-columns` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listed {
    Check,
    Topology,
}

/// Where no terminal says its width (a pipe, a file), the human report
/// wraps at this many columns; no table column is hidden.
const PIPE_WIDTH: usize = 100;

impl Options {
    /// The options, or the one line that refuses them (a usage error:
    /// exit 2, before any target is read).
    pub fn resolve(cli: Cli) -> Result<Options, String> {
        let mut style = Style::new(cli.color);
        (style.width, style.fit) = width(cli.width);
        let sysfs = Sysfs::new(&cli.sysfs_root);
        let mut html = None;
        let mut take = |o: super::args::OutputArgs| {
            html = o.html.clone();
            o.format()
        };
        let (format, task) = match cli.command {
            Command::Topology { table, .. } if table.list_columns => {
                (Format::Human, Task::ListColumns(Listed::Topology))
            }
            Command::Topology {
                devices,
                output,
                table,
                verbose,
                prometheus,
            } => {
                let format = take(output);
                table_style(&mut style, &table, format, "topology")?;
                style.verbose = verbose;
                let shaped = table.columns.is_some() || table.noheadings || table.bytes;
                style.view = match (verbose, shaped || table.wants_table()) {
                    (true, true) => View::Both,
                    (true, false) => View::Report,
                    (false, true) => View::Table,
                    (false, false) if devices.is_empty() => View::Table,
                    (false, false) => View::Report,
                };
                (
                    format,
                    Task::Topology {
                        sysfs,
                        devices,
                        prometheus,
                    },
                )
            }
            Command::Check { table, .. } if table.list_columns => {
                (Format::Human, Task::ListColumns(Listed::Check))
            }
            Command::Check {
                targets,
                output,
                topology,
                fail_on,
                table,
                quiet,
                verbose,
                prometheus,
            } => {
                let format = take(output);
                table_style(&mut style, &table, format, "check")?;
                style.quiet = quiet;
                style.verbose = verbose;
                if table.wants_table() && !verbose {
                    style.view = View::Table;
                }
                (
                    format,
                    Task::Check {
                        options: CheckOptions { sysfs, topology },
                        targets,
                        fail_on,
                        prometheus,
                    },
                )
            }
            Command::Probe(a) => {
                style.verbose = a.verbose;
                (take(a.output.clone()), probe(a, sysfs)?)
            }
            Command::Assets(a) => (Format::Human, Task::Assets(a)),
            Command::Report {
                old_output: Some(file),
                ..
            } => {
                return Err(format!(
                    "report -o {0} is now report --output {0}: -o picks table columns in check and topology",
                    file.display()
                ))
            }
            Command::Report {
                runs,
                output,
                figures,
                old_output: None,
            } => (
                Format::Html,
                Task::Report {
                    runs,
                    output,
                    figures,
                },
            ),
            Command::Plan {
                targets,
                format,
                json,
                topology,
                script,
                throughput,
                new,
                sizes,
                label,
            } => (
                Format::Human,
                Task::Plan {
                    options: CheckOptions { sysfs, topology },
                    targets,
                    json: json || format == super::args::PlanFormat::Json,
                    script,
                    plan: crate::plan::PlanOptions {
                        throughput: throughput.max(1),
                        ..Default::default()
                    },
                    new: new.map(|n| {
                        let label = match label {
                            super::args::Label::Gpt => crate::layout::TableKind::Gpt,
                            super::args::Label::Dos => crate::layout::TableKind::Mbr,
                        };
                        (n, sizes.unwrap_or_default(), label)
                    }),
                },
            ),
            Command::Compare {
                a,
                b,
                output,
                quiet,
                verbose,
            } => {
                style.quiet = quiet;
                style.verbose = verbose;
                (take(output), Task::Compare { a, b })
            }
        };
        Ok(Options {
            format,
            style,
            html,
            task,
        })
    }
}

/// The wrap width and whether tables are fitted to it: `--width N` (0:
/// never wrap), else the terminal's (or $COLUMNS), else [`PIPE_WIDTH`]
/// with every column kept.
fn width(asked: Option<usize>) -> (Option<usize>, bool) {
    match asked {
        Some(0) => (None, false),
        Some(n) => (Some(n), true),
        None => match crate::sys::term::width() {
            Some(w) => (Some(w), true),
            None => (Some(PIPE_WIDTH), false),
        },
    }
}

/// `-o`, `-n`, `-r`, `-P` and `-b` into the style, or the line that
/// refuses them: a column the command does not have, a table flag for a
/// format without a table (JSON, HTML), `-r`/`-P` for CSV.
fn table_style(st: &mut Style, t: &TableArgs, format: Format, command: &str) -> Result<(), String> {
    let ids = match command {
        "check" => columns::check_ids(),
        _ => columns::topology_ids(),
    };
    let named = t
        .columns
        .as_ref()
        .map(|c| columns::resolve(c, &ids, command))
        .transpose()?;
    let flags = [
        (t.columns.is_some(), "-o"),
        (t.noheadings, "-n"),
        (t.raw, "-r"),
        (t.pairs, "-P"),
        (t.bytes, "-b"),
    ];
    let given = |from: usize| flags[from..].iter().find(|(on, _)| *on).map(|(_, f)| *f);
    match (format, given(0)) {
        (Format::Json | Format::Html, Some(f)) => {
            return Err(format!(
                "{command} {f} shapes the table, and --format {format} has none (its sizes are always in bytes); use --format csv or the human table"
            ))
        }
        (Format::Csv, _) => {
            if let Some(f) = given(2).filter(|f| *f != "-b") {
                return Err(format!(
                    "{command} {f} is a form of the human table; --format csv is its own (-o and -n apply to it)"
                ));
            }
        }
        _ => {}
    }
    st.columns = named;
    st.table = TableForm {
        mode: match (t.raw, t.pairs) {
            (true, _) => TableMode::Raw,
            (_, true) => TableMode::Pairs,
            _ => TableMode::Aligned,
        },
        headings: !t.noheadings,
        bytes: t.bytes,
    };
    Ok(())
}

/// `--destructive` and `--force` only mean something with `--write`:
/// without it they are refused, not ignored, so nobody believes a
/// read-only probe was the write test they asked for.
fn probe(a: ProbeArgs, sysfs: Sysfs) -> Result<Task, String> {
    for (given, flag) in [(a.destructive, "--destructive"), (a.force, "--force")] {
        if given && !a.write {
            return Err(format!(
                "probe {flag} without --write: the probe would only read; add --write for a write test, or leave {flag} out"
            ));
        }
    }
    // The seed is fixed here, so the report can record it.
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    Ok(Task::Probe {
        options: Box::new(ProbeOptions {
            targets: a.targets.clone(),
            grid: a.grid_request(seed),
            // `auto` (or anything clap let through that no engine has) is None.
            engine: crate::probe::engine::by_name(&a.engine),
            destructive: a.destructive,
            force: a.force,
            scratch_size: a.size,
            sysfs,
        }),
        emit_fio: a.emit_fio,
        csv: a.csv,
    })
}
