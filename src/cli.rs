//! Command-line interface: argument parsing and dispatch. Exit status:
//! 0 clean, 1 findings (any warning or error), 2 could not run.

use crate::check::{self, CheckError, CheckOptions};
use crate::export::json;
use crate::output::{self, style::ColorChoice, Style};
use crate::topology::{Sysfs, TopologyOverride};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "diskalign",
    version,
    about = "Is my storage aligned? Reads disk topology and partition tables and checks every partition against the device below.",
    after_help = "Exit status: 0 clean, 1 findings (any warning or error), 2 could not run.\nEverything is read-only."
)]
pub struct Cli {
    /// Read disks from this sysfs tree instead of /sys (fixture trees, offline
    /// inspection); device nodes are then not opened.
    #[arg(long, global = true, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: PathBuf,

    /// Colour in the human report.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub color: ColorChoice,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show what the kernel reports about each disk (sysfs and ioctls) and flag suspicious hints.
    Topology {
        /// Disks (sda, /dev/nvme0n1); default: every disk except ram and unbacked loop devices.
        devices: Vec<String>,
        /// Print JSON (docs/json.md) instead of the human report.
        #[arg(long)]
        json: bool,
    },
    /// Check partition placement on disks, partitions or image files.
    Check {
        /// Whole disks, partitions or disk image files; default: every disk of this machine.
        targets: Vec<PathBuf>,
        /// Print JSON (docs/json.md) instead of the human report.
        #[arg(long)]
        json: bool,
        /// Override the topology for what-if questions and images, e.g.
        /// lbs=512,pbs=4096,min=4096,opt=33553920,ao=0 (unnamed fields keep
        /// their detected value; min is raised to pbs).
        #[arg(long, value_name = "SPEC")]
        topology: Option<TopologyOverride>,
    },
}

/// Parse arguments, run, print, and return the exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let style = Style::new(cli.color);
    let sysfs = Sysfs::new(&cli.sysfs_root);
    let (text, code) = match cli.command {
        Command::Topology { devices, json } => run_topology(&sysfs, &devices, json, &style),
        Command::Check {
            targets,
            json,
            topology,
        } => {
            let opts = CheckOptions { sysfs, topology };
            run_check(&opts, &targets, json, &style)
        }
    };
    print!("{text}");
    ExitCode::from(code)
}

fn status(errors: bool, problems: bool) -> u8 {
    if errors {
        2
    } else if problems {
        1
    } else {
        0
    }
}

/// `check`: returns the report text and the exit status.
pub fn run_check(
    opts: &CheckOptions,
    targets: &[PathBuf],
    as_json: bool,
    style: &Style,
) -> (String, u8) {
    let mut errors = Vec::new();
    let targets = if targets.is_empty() {
        match check::default_targets(&opts.sysfs) {
            Ok(t) => t,
            Err(e) => {
                errors.push(e);
                vec![]
            }
        }
    } else {
        targets.to_vec()
    };
    let mut reports = Vec::new();
    for t in &targets {
        match check::check(t, opts) {
            Ok(r) => reports.push(r),
            Err(e) => {
                eprintln!("diskalign: {}: {}", e.path, e.message);
                errors.push(e);
            }
        }
    }
    let text = if as_json {
        json::check(&reports, &errors) + "\n"
    } else {
        output::check(&reports, &errors, style)
    };
    let problems = reports.iter().any(|r| r.has_problems());
    (text, status(!errors.is_empty(), problems))
}

/// Map a command-line device to a disk name in the sysfs tree.
fn disk_name(arg: &str, sysfs: &Sysfs) -> Result<String, String> {
    let path = Path::new(arg);
    if sysfs.is_live() {
        if let Ok(meta) = std::fs::metadata(path) {
            return sysfs.resolve_node(&meta).map(|(name, _)| name);
        }
    }
    let name = arg.strip_prefix("/dev/").unwrap_or(arg);
    if sysfs.has_disk(name) {
        Ok(name.to_string())
    } else {
        Err(format!(
            "no such disk under {}/block",
            sysfs.root().display()
        ))
    }
}

/// `topology`: returns the report text and the exit status.
pub fn run_topology(
    sysfs: &Sysfs,
    devices: &[String],
    as_json: bool,
    style: &Style,
) -> (String, u8) {
    let mut errors = Vec::new();
    let names: Vec<String> = if devices.is_empty() {
        sysfs.default_disks().unwrap_or_else(|e| {
            errors.push(CheckError {
                path: sysfs.root().join("block").display().to_string(),
                message: format!("cannot list disks: {e}"),
            });
            vec![]
        })
    } else {
        devices
            .iter()
            .filter_map(|d| {
                disk_name(d, sysfs)
                    .map_err(|message| {
                        errors.push(CheckError {
                            path: d.clone(),
                            message,
                        })
                    })
                    .ok()
            })
            .collect()
    };
    let mut disks = Vec::new();
    for n in names {
        match sysfs.disk(&n) {
            Ok(d) => disks.push(d),
            Err(e) => errors.push(CheckError {
                path: n,
                message: e.to_string(),
            }),
        }
    }
    for e in &errors {
        eprintln!("diskalign: {}: {}", e.path, e.message);
    }
    let text = if as_json {
        json::topology(&disks, &errors) + "\n"
    } else {
        output::topology(&disks, &errors, style)
    };
    let problems = disks
        .iter()
        .any(|d| d.findings.iter().any(|f| f.is_problem()));
    (text, status(!errors.is_empty(), problems))
}
