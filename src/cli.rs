//! Command-line interface: argument parsing and dispatch. Exit status:
//! 0 clean, 1 findings (any warning or error), 2 could not run.

use crate::check::{self, CheckError, CheckOptions};
use crate::export::json;
use crate::output::{self, style::ColorChoice, Style};
use crate::probe::engine::{EngineChoice, Pattern};
use crate::probe::grid::{GridRequest, Preset};
use crate::topology::{Sysfs, TopologyOverride};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "diskalign",
    version,
    about = "Is my storage aligned? Reads disk topology and partition tables and checks every partition, LVM, md, LUKS and filesystem layer against the device below.",
    after_help = "Exit status: 0 clean, 1 findings (any warning or error), 2 could not run.\nEverything is read-only except probe --write (see probe --help)."
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
    /// Check partitions and every layer above them (LVM, md, LUKS, filesystems) on disks, partitions or image files; several targets together assemble md arrays and volume groups.
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
    /// Measure whether misalignment hurts: a grid of block sizes x offsets on a
    /// disk, a partition, a file, or a scratch file in a directory.
    #[command(after_help = PROBE_HELP)]
    Probe(ProbeArgs),
}

const PROBE_HELP: &str = "Read-only unless --write. Writing to a device also needs --destructive and is refused while the device or one of its partitions is mounted, held (LVM, md, dm) or swap; a partition table, filesystem, LVM, RAID or LUKS signature refuses it too unless --force. A directory gets a scratch file (--size) that has no name, so nothing is left behind even after SIGKILL; a --size the filesystem cannot hold is refused before anything is written. A sparse file is refused.\nExit status: 0 no significant penalty, 1 some misaligned offset was significantly slower, 2 could not run.";

#[derive(clap::Args, Debug)]
pub struct ProbeArgs {
    /// A disk or partition (/dev/sdb, /dev/sdb1), a file, or a directory (a scratch file is made there).
    pub target: PathBuf,
    /// Print JSON (docs/json.md) instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Also write one CSV row per cell to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print the fio job file for the planned grid and exit without doing I/O.
    #[arg(long)]
    pub emit_fio: bool,
    /// How much of the grid to run.
    #[arg(long, value_enum, default_value = "standard")]
    pub preset: Preset,
    /// Block sizes, comma-separated (4k,64k); default: powers of two from the logical block size.
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = size_arg)]
    pub bs: Option<Vec<u64>>,
    /// Byte offsets from an aligned boundary, comma-separated (0,512,4k+512,1m-512); 0 is always added.
    #[arg(long, value_name = "OFFSETS", value_delimiter = ',', value_parser = offset_arg)]
    pub offsets: Option<Vec<u64>>,
    /// Access patterns, comma-separated; default randread, plus randwrite with --write.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub pattern: Option<Vec<Pattern>>,
    /// Allow write patterns (on a device also --destructive).
    #[arg(long)]
    pub write: bool,
    /// Confirm that writing to a device or an existing file may destroy its data.
    #[arg(long)]
    pub destructive: bool,
    /// Write even over a partition table, filesystem, LVM, RAID or LUKS signature.
    #[arg(long)]
    pub force: bool,
    /// Go through the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
    /// fdatasync after every write (with --buffered: the mode that shows 4 KiB writes split into 512-byte pieces).
    #[arg(long)]
    pub fdatasync: bool,
    /// I/Os in flight per job.
    #[arg(long, default_value_t = 32)]
    pub qd: u32,
    /// Parallel jobs, each with its own queue.
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Measured time per cell and round (500ms, 2s); default from the preset.
    #[arg(long, value_parser = duration_arg)]
    pub runtime: Option<Duration>,
    /// Discarded warm-up per cell and round; default from the preset.
    #[arg(long, value_parser = duration_arg)]
    pub warmup: Option<Duration>,
    /// Rounds, each over every cell in a new random order; default from the preset.
    #[arg(long)]
    pub rounds: Option<u32>,
    /// I/O engine.
    #[arg(long, value_enum, default_value = "auto")]
    pub engine: EngineChoice,
    /// Size of the scratch file made in a directory (whole MiB; refused when
    /// above the free space less 1 % of the filesystem, or ulimit -f).
    #[arg(long, value_parser = size_arg, default_value = "1G")]
    pub size: u64,
    /// Seed of the random positions and cell order (default: from the clock; the report records it).
    #[arg(long)]
    pub seed: Option<u64>,
}

fn size_arg(s: &str) -> Result<u64, String> {
    crate::units::parse_size(s).ok_or_else(|| format!("{s:?} is not a size (4096, 4k, 64KiB, 1m)"))
}

fn offset_arg(s: &str) -> Result<u64, String> {
    crate::units::parse_size_expr(s)
        .ok_or_else(|| format!("{s:?} is not an offset (512, 4k, 4k+512, 1m-512)"))
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    crate::units::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration (250ms, 2s, 1m)"))
}

impl ProbeArgs {
    /// The grid these options ask for (one place, for the CLI and the fuzzer).
    pub fn grid_request(&self, seed: u64) -> GridRequest {
        GridRequest {
            preset: self.preset,
            block_sizes: self.bs.clone(),
            offsets: self.offsets.clone(),
            patterns: self.pattern.clone(),
            write: self.write,
            runtime: self.runtime,
            warmup: self.warmup,
            rounds: self.rounds,
            qd: self.qd,
            jobs: self.jobs,
            buffered: self.buffered,
            fdatasync: self.fdatasync,
            seed,
        }
    }
}

/// Parse arguments, run, print, and return the exit status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(usage_error(e)),
    };
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
        Command::Probe(args) => run_probe(sysfs, &args, &style),
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
    warn(&message.split_whitespace().collect::<Vec<_>>().join(" "));
    2
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
    let mut run = check::check_all(&targets, opts);
    for e in &run.errors {
        warn(&format!("{}: {}", e.path, e.message));
    }
    errors.append(&mut run.errors);
    run.errors = errors;
    let text = if as_json {
        json::check(&run) + "\n"
    } else {
        output::check(&run, style)
    };
    (text, status(!run.errors.is_empty(), run.has_problems()))
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
        warn(&format!("{}: {}", e.path, e.message));
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

/// `probe`: returns the report text and the exit status (0 no significant
/// penalty, 1 a penalty, 2 could not run or interrupted).
pub fn run_probe(sysfs: Sysfs, a: &ProbeArgs, style: &Style) -> (String, u8) {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            warn(&format!("cannot catch signal {sig}: {e}"));
        }
    }
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let opts = crate::probe::ProbeOptions {
        target: a.target.clone(),
        grid: a.grid_request(seed),
        engine: a.engine,
        destructive: a.destructive,
        force: a.force,
        scratch_size: a.size,
        sysfs,
    };
    let fail = |e: String| {
        warn(&e);
        (String::new(), 2)
    };
    if a.emit_fio {
        return match crate::probe::emit_fio(&opts, &stop) {
            Ok(text) => (text, 0),
            Err(e) => fail(format!("{}: {e}", a.target.display())),
        };
    }
    let bar = output::progress::Bar::new(!a.json);
    let report = match crate::probe::probe(&opts, &stop, &bar) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if let Some(path) = &a.csv {
        if let Err(e) = std::fs::write(path, crate::export::csv::probe(&report)) {
            return fail(format!("cannot write {}: {e}", path.display()));
        }
    }
    let text = if a.json {
        json::probe(&report) + "\n"
    } else {
        output::probe(&report, style)
    };
    (text, u8::from(report.has_penalty()))
}
