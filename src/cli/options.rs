//! The parsed command line resolved in one step into what the commands run
//! with: the output format and style, the sysfs tree, and each command's
//! library options (like hyperfine's `options.rs`).

use super::args::{Cli, Command, ProbeArgs};
use crate::check::CheckOptions;
use crate::findings::FailOn;
use crate::probe::ProbeOptions;
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
    /// `check --list-columns`.
    ListColumns,
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

impl Options {
    pub fn resolve(cli: Cli) -> Options {
        let mut style = Style::new(cli.color);
        style.width = crate::sys::term::width();
        let sysfs = Sysfs::new(&cli.sysfs_root);
        let mut html = None;
        let mut take = |o: super::args::OutputArgs| {
            html = o.html.clone();
            o.format()
        };
        let (format, task) = match cli.command {
            Command::Topology {
                devices,
                output,
                prometheus,
            } => (
                take(output),
                Task::Topology {
                    sysfs,
                    devices,
                    prometheus,
                },
            ),
            Command::Check {
                list_columns: true,
                output,
                ..
            } => (take(output), Task::ListColumns),
            Command::Check {
                targets,
                output,
                topology,
                fail_on,
                columns,
                quiet,
                verbose,
                list_columns: false,
                prometheus,
            } => {
                style.quiet = quiet;
                style.verbose = verbose;
                style.columns = columns;
                (
                    take(output),
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
                (take(a.output.clone()), probe(a, sysfs))
            }
            Command::Assets(a) => (Format::Human, Task::Assets(a)),
            Command::Report {
                runs,
                output,
                figures,
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
        Options {
            format,
            style,
            html,
            task,
        }
    }
}

fn probe(a: ProbeArgs, sysfs: Sysfs) -> Task {
    // The seed is fixed here, so the report can record it.
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    Task::Probe {
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
    }
}
