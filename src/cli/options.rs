//! The parsed command line resolved in one step into what the commands run
//! with: the outputs as (format, destination) pairs, the style, the sysfs
//! tree, and each command's library options (like hyperfine's
//! `options.rs`).

use super::args::{Cli, Command, OutputArgs, ProbeArgs, TableArgs, WatchArgs};
use super::outputs::Outputs;
use crate::check::CheckOptions;
use crate::findings::FailOn;
use crate::probe::ProbeOptions;
pub use crate::report::Listed;
use crate::report::Table;
use crate::report::{Format, Kind, Style};
use crate::report::{TableForm, TableMode, View};
use crate::topology::Sysfs;
use std::path::{Path, PathBuf};

/// What to run and where its outputs go.
pub struct Options {
    /// Standard output's format and every file asked for.
    pub outputs: Outputs,
    pub style: Style,
    pub task: Task,
}

pub enum Task {
    Topology {
        sysfs: Sysfs,
        devices: Vec<String>,
    },
    Check {
        options: CheckOptions,
        targets: Vec<PathBuf>,
        fail_on: FailOn,
        /// `--stats`: what reading cost, on stderr.
        stats: bool,
    },
    /// `COMMAND --list-columns`.
    ListColumns(Listed),
    Probe {
        options: Box<ProbeOptions>,
        /// Print the fio job file and do no I/O.
        emit_fio: bool,
    },
    /// Print the man page or a completion script.
    Assets(super::args::Asset),
    /// Draw saved runs as one HTML page, to the outputs (standard
    /// output, or `--output FILE` instead).
    Report {
        runs: Vec<PathBuf>,
        /// Each figure also as DIR/<id>.svg.
        figures: Option<PathBuf>,
    },
    /// Compare two saved runs.
    Compare {
        a: PathBuf,
        b: PathBuf,
        /// `-o` as typed: which table it picks from is known once the
        /// runs are read (`Table::compared`).
        columns: Option<Vec<String>>,
    },
    /// Plan the fix of disks, or lay out a new one.
    Plan {
        options: CheckOptions,
        targets: Vec<PathBuf>,
        plan: crate::plan::PlanOptions,
        /// `--new DISK` with its sizes and label.
        new: Option<(PathBuf, String, crate::layout::TableKind)>,
    },
    /// Watch the I/O of devices.
    Watch {
        options: crate::watch::WatchOptions,
        /// `-- COMMAND ARGS...`: run it and watch until it ends.
        command: Vec<String>,
        /// Recorded snapshots played instead of the kernel's (tests).
        replay: Option<PathBuf>,
    },
}

impl Task {
    /// The files this task reads, which no output may replace.
    pub fn inputs(&self) -> Vec<&Path> {
        match self {
            Task::Check { targets, .. } => targets.iter().map(PathBuf::as_path).collect(),
            Task::Plan { targets, new, .. } => targets
                .iter()
                .map(PathBuf::as_path)
                .chain(new.as_ref().map(|n| n.0.as_path()))
                .collect(),
            Task::Probe { options, .. } => options.targets.iter().map(PathBuf::as_path).collect(),
            Task::Report { runs, .. } => runs.iter().map(PathBuf::as_path).collect(),
            Task::Compare { a, b, .. } => vec![a.as_path(), b.as_path()],
            Task::Watch { replay, .. } => replay.iter().map(PathBuf::as_path).collect(),
            Task::Topology { .. } | Task::ListColumns(_) | Task::Assets(_) => Vec::new(),
        }
    }
}

impl Task {
    /// The kind of run whose formats are checked before it; None for
    /// `report`, whose one output is its HTML page (on standard output or
    /// in `--output FILE`, checked before the run like every file), and
    /// the assets, which print their one text.
    fn kind(&self) -> Option<Kind> {
        Some(match self {
            Task::Topology { .. } => Kind::Topology,
            Task::Check { .. } => Kind::Check,
            Task::ListColumns(_) => Kind::Columns,
            Task::Probe { .. } => Kind::Probe,
            Task::Compare { .. } => Kind::Compare,
            Task::Plan { new: None, .. } => Kind::Plan,
            Task::Plan { new: Some(_), .. } => Kind::NewDisk,
            Task::Watch { .. } => Kind::Watch,
            Task::Assets(_) | Task::Report { .. } => return None,
        })
    }
}

/// The (format, destination) pairs the output flags ask for: standard
/// output in `--format` (or JSON for a bare `--json`), and a file for
/// each file flag. A new destination is one flag in `OutputArgs` and one
/// line here.
fn outputs(o: OutputArgs) -> Result<Outputs, String> {
    let bare_json = matches!(o.json, Some(None));
    let stdout = match (o.format, bare_json) {
        (Some(f), true) if f != Format::Json => {
            return Err(format!(
                "--json alone prints JSON, and --format {f} was given: give --json=FILE to write the JSON to a file beside it"
            ))
        }
        (_, true) => Format::Json,
        (f, false) => f.unwrap_or(Format::Human),
    };
    let mut out = Outputs::new(stdout);
    out.add_file(Format::Json, o.json.flatten(), "--json");
    out.add_file(Format::Csv, o.csv, "--csv");
    out.add_file(Format::Html, o.html, "--html");
    out.add_file(Format::Prometheus, o.prometheus, "--prometheus");
    Ok(out)
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
        // --list-columns prints its list whatever --format says.
        let listing = |o: OutputArgs| outputs(o).map(|o| o.with_stdout(Format::Human));
        let (outputs, task) = match cli.command {
            Command::Topology { table, output, .. } if table.list_columns => {
                (listing(output)?, Task::ListColumns(Listed::Topology))
            }
            Command::Topology {
                devices,
                output,
                table,
                verbose,
            } => {
                let outputs = outputs(output)?;
                table_style(&mut style, &table, outputs.stdout(), Table::Topology)?;
                style.verbose = verbose;
                let shaped = table.columns.is_some() || table.noheadings || table.bytes;
                style.view = match (verbose, shaped || table.wants_table()) {
                    (true, true) => View::Both,
                    (true, false) => View::Report,
                    (false, true) => View::Table,
                    (false, false) if devices.is_empty() => View::Table,
                    (false, false) => View::Report,
                };
                (outputs, Task::Topology { sysfs, devices })
            }
            Command::Check { table, output, .. } if table.list_columns => {
                (listing(output)?, Task::ListColumns(Listed::Check))
            }
            Command::Check {
                targets,
                output,
                topology,
                host_grain,
                probe,
                fail_on,
                table,
                quiet,
                verbose,
                stats,
            } => {
                let outputs = outputs(output)?;
                table_style(&mut style, &table, outputs.stdout(), Table::Check)?;
                style.quiet = quiet;
                style.verbose = verbose;
                if table.wants_table() && !verbose {
                    style.view = View::Table;
                }
                (
                    outputs,
                    Task::Check {
                        options: CheckOptions {
                            sysfs,
                            topology,
                            measured: super::runs::measured(&probe)?,
                            command: crate::inspect::ReadFor::Check,
                            host_grain,
                        },
                        targets,
                        fail_on,
                        stats,
                    },
                )
            }
            Command::Probe(a) if a.table.list_columns => {
                (listing(a.output)?, Task::ListColumns(Listed::Probe))
            }
            Command::Probe(a) => {
                style.verbose = a.verbose;
                let outputs = outputs(a.output.clone())?;
                table_style(&mut style, &a.table, outputs.stdout(), Table::Probe)?;
                table_view(&mut style, &a.table);
                let shaped = a.table.wants_table() || a.table.bytes;
                let task = probe(a, sysfs)?;
                if let Task::Probe { emit_fio: true, .. } = task {
                    if !outputs.is_plain() {
                        return Err("--emit-fio prints a fio job file and measures nothing: --format, --json, --csv and --html do not apply".into());
                    }
                    if shaped {
                        return Err("--emit-fio prints a fio job file and measures nothing: -o, -n, -r, -P and -b, which shape the table of cells, do not apply".into());
                    }
                }
                (outputs, task)
            }
            Command::Assets(a) => (Outputs::new(Format::Human), Task::Assets(a)),
            Command::Watch(a) => {
                style.quiet = a.quiet;
                (outputs(a.output.clone())?, watch(a, sysfs)?)
            }
            Command::Report {
                old_output: Some(file),
                ..
            } => {
                return Err(format!(
                    "report -o {0} is now report --output {0}: -o picks table columns in check, topology, probe, compare and plan",
                    file.display()
                ))
            }
            Command::Report {
                runs,
                output,
                figures,
                old_output: None,
            } => {
                let mut outputs = Outputs::new(Format::Html);
                outputs.stdout_to_file(output, "--output");
                (outputs, Task::Report { runs, figures })
            }
            Command::Plan { table, output, .. } if table.list_columns => {
                (listing(output)?, Task::ListColumns(Listed::Plan))
            }
            Command::Plan {
                targets,
                output,
                table,
                topology,
                probe,
                script,
                throughput,
                new,
                sizes,
                label,
            } => (
                {
                    let mut o = outputs(output)?;
                    o.add_file(Format::Script, script, "--script");
                    // A format plan lacks (CSV) is said as such, before
                    // what the table flags would make of it.
                    let (kind, shown) = match new {
                        None => (Kind::Plan, Table::Plan),
                        Some(_) => (Kind::NewDisk, Table::NewDisk),
                    };
                    o.refuse(kind)?;
                    table_style(&mut style, &table, o.stdout(), shown)?;
                    table_view(&mut style, &table);
                    o
                },
                {
                    let options = CheckOptions {
                        sysfs,
                        topology,
                        measured: super::runs::measured(&probe)?,
                        command: crate::inspect::ReadFor::Plan,
                        host_grain: None,
                    };
                    let again = crate::plan::next_options(&options);
                    Task::Plan {
                        options,
                        targets,
                        plan: crate::plan::PlanOptions {
                            throughput: throughput.max(1),
                            again,
                            ..Default::default()
                        },
                    new: new.map(|n| {
                        let label = match label {
                            super::args::Label::Gpt => crate::layout::TableKind::Gpt,
                            super::args::Label::Dos => crate::layout::TableKind::Mbr,
                        };
                        (n, sizes.unwrap_or_default(), label)
                    }),
                    }
                },
            ),
            Command::Compare { table, output, .. } if table.list_columns => {
                (listing(output)?, Task::ListColumns(Listed::Compare))
            }
            Command::Compare {
                a,
                b,
                output,
                table,
                quiet,
                verbose,
            } => {
                style.quiet = quiet;
                style.verbose = verbose;
                let outputs = outputs(output)?;
                // The columns are named once the runs are read.
                table_form(&mut style, &table, outputs.stdout(), "compare")?;
                table_view(&mut style, &table);
                let (Some(a), Some(b)) = (a, b) else {
                    return Err("compare needs two saved runs: compare A.json B.json".into());
                };
                let columns = table.columns;
                (outputs, Task::Compare { a, b, columns })
            }
        };
        if let Some(kind) = task.kind() {
            outputs.refuse(kind)?;
        }
        Ok(Options {
            outputs,
            style,
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
        None => match crate::sys::terminal_width() {
            Some(w) => (Some(w), true),
            None => (Some(PIPE_WIDTH), false),
        },
    }
}

/// `-o`, `-n`, `-r`, `-P` and `-b` into the style, or the line that
/// refuses them: a column `table` does not have, a table flag for a
/// format without a table (JSON, HTML), `-r`/`-P` for CSV.
fn table_style(st: &mut Style, t: &TableArgs, format: Format, table: Table) -> Result<(), String> {
    let named = table.named(t.columns.as_deref())?;
    table_form(st, t, format, table.command())?;
    st.columns = named;
    Ok(())
}

/// `-n`, `-r`, `-P` and `-b` into the style, or the line that refuses a
/// table flag for a format without a table (JSON, HTML), `-r`/`-P` for
/// CSV.
fn table_form(st: &mut Style, t: &TableArgs, format: Format, command: &str) -> Result<(), String> {
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

/// `-o`, `-n`, `-r` and `-P` print the table alone (probe's cells,
/// compare's cells or findings changed, plan's partitions), as check's.
fn table_view(st: &mut Style, t: &TableArgs) {
    if t.wants_table() {
        st.view = View::Table;
    }
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
    if a.erase_unit && a.bs.as_ref().is_some_and(|b| b.len() > 1) {
        return Err("probe --erase-unit reads one block size: give one --bs (16k)".into());
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
            engine: crate::probe::by_name(&a.engine),
            destructive: a.destructive,
            force: a.force,
            scratch_size: a.size,
            sysfs,
            erase_unit: a.erase_unit,
        }),
        emit_fio: a.emit_fio,
    })
}

/// `watch`'s options; a duration, interval or unit no run could use is
/// refused here, in one line.
fn watch(a: WatchArgs, sysfs: Sysfs) -> Result<Task, String> {
    if a.duration.is_some_and(|d| d.is_zero()) {
        return Err("watch --for 0: give a duration above 0 (30s, 5m), or leave --for out to watch until Ctrl-C".into());
    }
    if a.interval.is_zero() {
        return Err("watch --interval 0: give an interval above 0 (1s, 500ms)".into());
    }
    if let Some(u) = a.unit {
        if u == 0 || u % 512 != 0 {
            return Err(format!(
                "watch --unit {u}: give a multiple of 512 bytes (4k, 64k)"
            ));
        }
    }
    if a.top == 0 {
        return Err("watch --top 0: give how many submitters to show per device, 1 or more (the rest are summed as other)".into());
    }
    Ok(Task::Watch {
        options: crate::watch::WatchOptions {
            sysfs,
            targets: a.targets,
            duration: a.duration,
            interval: a.interval,
            unit: a.unit,
            top: a.top,
        },
        command: a.command,
        replay: a.replay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn resolve(args: &[&str]) -> Result<Options, String> {
        let mut all = vec!["diskalign", "--color", "never"];
        all.extend_from_slice(args);
        Options::resolve(Cli::try_parse_from(all).map_err(|e| e.to_string())?)
    }

    /// `probe`, `compare` and `plan` take check's table flags: `-o`
    /// names columns of their table, and prints it alone.
    #[test]
    fn probe_compare_and_plan_take_the_table_flags() {
        let o = resolve(&["probe", "f.img", "-o", "bs,IOPS,+seed", "-r"]).unwrap();
        assert_eq!(o.style.view, View::Table);
        assert_eq!(o.style.table.mode, TableMode::Raw);
        let ids = ["block_size", "iops_median", "+seed"];
        assert_eq!(o.style.columns.as_deref(), Some(&ids.map(String::from)[..]));
        let o = resolve(&["plan", "a.img", "-P", "-b", "-o", "#,change"]).unwrap();
        assert_eq!(o.style.view, View::Table);
        assert!(o.style.table.bytes && o.style.table.mode == TableMode::Pairs);
        let o = resolve(&["plan", "--new", "a.img", "--sizes", "1G", "-o", "size"]).unwrap();
        assert_eq!(o.style.columns, Some(vec!["size_bytes".to_string()]));
        let e = resolve(&["plan", "--new", "a.img", "--sizes", "1G", "-o", "change"]);
        assert!(e.is_err_and(|e| e.starts_with("\"change\" is not a column of plan --new;")));
        // compare names its columns once it knows the runs' kind.
        let o = resolve(&["compare", "a.json", "b.json", "-n", "-o", "whatever"]).unwrap();
        assert!(matches!(&o.task, Task::Compare { columns: Some(c), .. } if c == &["whatever"]));
        assert!(!o.style.table.headings && o.style.view == View::Table);
        // -b alone shapes the sizes of the whole report.
        let o = resolve(&["probe", "f.img", "-b"]).unwrap();
        assert!(o.style.table.bytes && o.style.view == View::Report);
    }

    /// Every invocation these commands took before means what it meant.
    #[test]
    fn what_probe_compare_and_plan_took_before_is_unchanged() {
        for args in [
            &["probe", "f.img", "--bs", "4k", "-v"][..],
            &["compare", "a.json", "b.json", "-v"],
            &["compare", "a.json", "b.json", "-q", "--csv", "c.csv"],
            &["plan", "a.img", "--script", "fix.sh"],
            &["plan", "--new", "a.img", "--sizes", "512M,rest"],
        ] {
            let o = resolve(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(o.style.view, View::Report, "{args:?}");
            assert_eq!(o.style.columns, None, "{args:?}");
            assert_eq!(o.style.table, TableForm::default(), "{args:?}");
        }
        let e = resolve(&["report", "run.json", "-o", "page.html"]);
        assert!(e.is_err_and(|e| e.contains("is now report --output")));
    }

    /// `--list-columns` needs no target or run; the flags that cannot go
    /// with a table are refused, in one line.
    #[test]
    fn list_columns_alone_and_conflicts_refused() {
        for (args, listed) in [
            (&["probe", "--list-columns"][..], Listed::Probe),
            (&["compare", "--list-columns"], Listed::Compare),
            (&["plan", "--list-columns"], Listed::Plan),
        ] {
            let o = resolve(args).unwrap();
            assert!(
                matches!(o.task, Task::ListColumns(l) if l == listed),
                "{args:?}"
            );
        }
        for args in [
            &["probe", "f.img", "-v", "-o", "bs"][..],
            &["compare", "a.json", "b.json", "-q", "-r"],
            &["compare", "a.json", "b.json", "-v", "-P"],
            &["check", "a.img", "-v", "-r"],
            &["topology", "-v", "-P"],
            &["plan", "a.img", "-r", "-P"],
            &["probe", "f.img", "--emit-fio", "-o", "bs"],
            &["probe", "f.img", "--format", "json", "-n"],
            &["plan", "a.img", "--format", "csv", "-r"],
            &["probe"],
            &["compare", "a.json"],
        ] {
            assert!(resolve(args).is_err(), "{args:?}");
        }
        let e = resolve(&["plan", "a.img", "--format", "csv", "-r"]).err();
        assert_eq!(e.as_deref(), Some("plan has no CSV output (--format csv)"));
    }
}
