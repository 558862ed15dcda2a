//! The command line as clap parses it; `options` turns it into what the
//! commands run with.

use crate::findings::FailOn;
use crate::probe::{GridRequest, Preset};
use crate::probe::{Pattern, ENGINES};
use crate::report::{self, ColorChoice};
use crate::report::{Format, Listed};
use crate::topology::TopologyOverride;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

const EXIT_HELP: &str = "Exit status is a bitmask: 0 clean; 1 findings at or above check --fail-on (default: warnings), a measured penalty for probe; 2 a target could not be checked or the command could not run (a usage error too); 3 both; 4 for probe: a penalty of --min-effect neither decided nor ruled out (inconclusive, or a unit named only as likely), and for compare: B is worse than A (5 with 1: a regression). Each command's --help lists the statuses it returns.\nEverything is read-only except probe --write (see probe --help).";

/// `topology`'s exit statuses (its `-h`; `--help` and the man page put
/// them after the columns).
const TOPOLOGY_EXIT: &str = "Exit status, a bitmask: 0 every disk read and no finding of warning or above; 1 a finding of warning or above about a disk (a hint to distrust, docs/findings.md); 2 a disk could not be read (or is not a disk: a file, a directory), or an output file could not be written; 3 = 1 + 2.";

/// `check`'s exit statuses.
const CHECK_EXIT: &str = "Exit status, a bitmask: 0 no finding at or above --fail-on; 1 a finding at or above --fail-on (default: warning); 2 a target could not be checked (missing, unreadable, a directory, a file smaller than two sectors), or an output file could not be written; 3 = 1 + 2.";

/// `completions` and `man`.
const ASSET_EXIT: &str =
    "Exit status: 0 printed; 2 a usage error, or standard output could not be written.";

fn topology_long_help() -> String {
    format!(
        "{}\n{TOPOLOGY_EXIT}",
        report::columns_help(Listed::Topology)
    )
}

fn check_long_help() -> String {
    format!("{}\n{CHECK_EXIT}", report::columns_help(Listed::Check))
}

fn probe_long_help() -> String {
    format!("{}\n{PROBE_HELP}", report::columns_help(Listed::Probe))
}

fn compare_long_help() -> String {
    format!("{}\n{COMPARE_HELP}", report::columns_help(Listed::Compare))
}

fn plan_long_help() -> String {
    format!("{}\n{PLAN_HELP}", report::columns_help(Listed::Plan))
}

#[derive(Parser, Debug)]
#[command(
    name = "diskalign",
    version,
    about = "Is my storage aligned? Reads disk topology and partition tables and checks every partition, LVM, md, LUKS and filesystem layer against the device below.",
    after_help = EXIT_HELP
)]
pub struct Cli {
    /// Read disks from this sysfs tree instead of /sys (fixture trees, offline
    /// inspection); device nodes are then not opened.
    #[arg(long, global = true, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: PathBuf,

    /// Colour in the human report.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub color: ColorChoice,

    /// Wrap the human report at N columns and fit its tables to them (0:
    /// never wrap); default: the terminal's width, else $COLUMNS, else 100
    /// when the output is piped (then no column is hidden).
    #[arg(long, global = true, value_name = "N")]
    pub width: Option<usize>,

    #[command(subcommand)]
    pub command: Command,
}

/// Where every command puts its result: standard output in one format,
/// and each file flag adds a file in its own (`cli::outputs`). A command
/// without a format hides its flag and refuses it.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Print in this format [default: human]: human tables, JSON (docs/json.md), CSV (one row per partition, disk, probe cell, comparison or watch device, direction and size bucket; not plan) or one self-contained HTML page with figures (docs/html.md).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// --json alone: print JSON, as --format json. --json=FILE (with the =): also write the JSON document (docs/json.md) to FILE, whatever --format prints.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        require_equals = true
    )]
    pub json: Option<Option<PathBuf>>,
    /// Also write the CSV to FILE, whatever --format prints (the columns -o picks, without a header with -n).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Also write the HTML report (figures and their tables, docs/html.md) to FILE, whatever --format prints; for plan each disk's map now and after the plan, and the steps (not with --new).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the run as Prometheus metrics to FILE (check: the verdicts; topology: the limits and hints; watch: the counts of each device; node_exporter textfile format; docs/prometheus.md).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
}

/// The table of `check`, `topology`, `probe`, `compare` and `plan`, as
/// lsblk prints its own. A command with `-v` refuses `-r` and `-P` with
/// it (its `verbose` says so: not every command has one).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TableArgs {
    /// Print only the table, of these columns, comma-separated, in that order; +COL adds to the default set. A column is named by its id or its title, in any case (physical_block_size, phy-sec, PHY-SEC; --list-columns names them). CSV takes the same columns; JSON and HTML have none.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "COLUMNS",
        value_delimiter = ','
    )]
    pub columns: Option<Vec<String>>,
    /// Print the columns -o accepts, with what each means, and exit.
    #[arg(long)]
    pub list_columns: bool,
    /// Print only the table, without its header line (CSV too).
    #[arg(short = 'n', long)]
    pub noheadings: bool,
    /// Print only the table, raw: one space between columns, no alignment; the header names the columns by their titles in upper case (PHY-SEC, a space as -; the id, NUMBER or START_BYTES, where a title has other characters); spaces and odd bytes in values are escaped as \xNN, as lsblk -r does.
    #[arg(short = 'r', long, conflicts_with = "pairs")]
    pub raw: bool,
    /// Print only the table, one row per line as KEY="value" pairs (keys: the column titles in upper case, PHY-SEC="4096", a space as -, or the id, NUMBER="1", where a title has other characters; quotes, backslashes, $, ` and odd bytes escaped as \xNN), as lsblk -P does.
    #[arg(short = 'P', long)]
    pub pairs: bool,
    /// Print sizes in bytes instead of KiB/MiB/GiB.
    #[arg(short = 'b', long)]
    pub bytes: bool,
}

impl TableArgs {
    /// A table form was asked for: columns, no header, raw or pairs.
    pub fn wants_table(&self) -> bool {
        self.columns.is_some() || self.noheadings || self.raw || self.pairs
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show what the kernel reports about each disk (sysfs and ioctls) and flag suspicious hints: one row per disk, as lsblk -t; a disk named, or -v, shows every limit, a zoned disk's zones (model, size, count, conventional), the ioctls' view and the findings explained.
    #[command(after_help = TOPOLOGY_EXIT, after_long_help = topology_long_help())]
    Topology {
        /// Disks (sda, /dev/nvme0n1); default: every disk except ram and unbacked loop devices.
        devices: Vec<String>,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        table: TableArgs,
        /// The details of each disk (every limit, the ioctls' view, the findings explained); with -o, -n or -b after the table.
        #[arg(short, long, conflicts_with_all = ["raw", "pairs"])]
        verbose: bool,
    },
    #[command(after_help = CHECK_EXIT, after_long_help = check_long_help())]
    /// Check partitions and every layer above them (LVM, md, LUKS, bcache, ZFS, Ceph BlueStore, and ext4, XFS, btrfs, f2fs, FAT, exFAT and NTFS filesystems) on disks, partitions or image files; several targets together assemble md arrays and volume groups.
    Check {
        /// Whole disks, partitions or disk image files (raw, or qcow2, VMDK, VHDX, VDI, VHD read through their container, told by magic); default: every disk of this machine, but the device-mapper devices inside another layer (LVM sub-LVs such as a thin pool's _tmeta/_tdata, dm-crypt mappings, kpartx partition maps), which are shown in their disk's stack.
        targets: Vec<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
        /// Override the topology for what-if questions and images, e.g.
        /// lbs=512,pbs=4096,min=4096,opt=33553920,ao=0 (unnamed fields keep
        /// their detected value; min is raised to pbs); erase=4M judges an
        /// image as an SD card with that allocation unit.
        #[arg(long, value_name = "SPEC", value_parser = topology_arg)]
        topology: Option<TopologyOverride>,
        /// For an image file: judge where its bytes lie on the host disk under it against this grain (4k, 64k, a RAID stripe) instead of the host device's own (the largest of 4 KiB, its physical block and minimum I/O).
        #[arg(long, value_name = "SIZE", value_parser = size_arg)]
        host_grain: Option<u64>,
        /// A saved probe run (probe --json=FILE) of a device checked here: the unit it bracketed is evidence beside the kernel's limits and the disk's identify data (a ZFS ashift below it is an error, a BlueStore allocation unit below it a warning, saying which evidence decided). Repeat for several runs.
        #[arg(long = "probe", value_name = "RUN.json")]
        probe: Vec<PathBuf>,
        /// Which findings make the exit status 1: errors (a start off its grain, a broken layout), warnings too (hygiene such as an end off 4 KiB), info too, or never.
        #[arg(long, value_enum, value_name = "TIER", default_value = "warning")]
        fail_on: FailOn,
        #[command(flatten)]
        table: TableArgs,
        /// Print each target's verdict only, and the summary line.
        #[arg(short, long, conflicts_with_all = ["verbose", "columns", "noheadings", "raw", "pairs"])]
        quiet: bool,
        /// Print every explanation: info findings too (why the tools disagree, portability); with -o, -n or -b the whole report, its tables of those columns.
        #[arg(short, long, conflicts_with_all = ["raw", "pairs"])]
        verbose: bool,
        /// Also print on stderr what reading cost: per target the device reads, the bytes they asked for and the sysfs attributes read, then the whole run with its wall time (the JSON's `run` section has the same counts).
        #[arg(long)]
        stats: bool,
    },
    /// Measure whether misalignment hurts: a grid of block sizes x offsets on a
    /// disk, a partition, a file, or a scratch file in a directory.
    #[command(
        override_usage = "diskalign probe [OPTIONS] <TARGETS>...\n       diskalign probe --list-columns",
        after_help = PROBE_HELP,
        after_long_help = probe_long_help(),
        mut_arg("prometheus", |a| a.hide(true))
    )]
    Probe(ProbeArgs),
    /// Draw saved runs as one self-contained HTML page: the JSON of check, topology, probe, compare or watch (--json), or fio's JSON output for a probe --emit-fio job file.
    #[command(after_help = REPORT_HELP)]
    Report {
        /// Saved runs (`diskalign ... --json > run.json`, or `fio --output-format=json`); - reads standard input.
        #[arg(required = true, num_args = 1.., value_name = "RUN.json")]
        runs: Vec<PathBuf>,
        /// Write the page to FILE (replaced atomically) instead of standard output.
        #[arg(long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// Was `-o FILE`; refused, since -o picks table columns in check, topology, probe, compare and plan.
        #[arg(short = 'o', hide = true, value_name = "FILE")]
        old_output: Option<PathBuf>,
        /// Also write each figure as its own SVG file into DIR (DIR/<figure id>.svg), to put in a wiki page or a ticket.
        #[arg(long, value_name = "DIR")]
        figures: Option<PathBuf>,
    },
    /// Compare two saved runs: two probe runs (or fio results) cell by cell, B/A with its 95 % CI; two check runs finding by finding; two watch runs device by device.
    #[command(
        override_usage = "diskalign compare [OPTIONS] <A.json> <B.json>\n       diskalign compare --list-columns",
        after_help = COMPARE_HELP,
        after_long_help = compare_long_help(),
        mut_arg("prometheus", |a| a.hide(true))
    )]
    Compare {
        /// The reference run (A): a saved probe, check or watch JSON, or fio's JSON.
        #[arg(value_name = "A.json", required_unless_present = "list_columns")]
        a: Option<PathBuf>,
        /// The run compared with it (B).
        #[arg(value_name = "B.json", required_unless_present = "list_columns")]
        b: Option<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
        // -o picks the columns of the CSV's table: two probe runs' cells,
        // or the findings two check or watch runs changed; -o, -n, -r and
        // -P print that table alone.
        #[command(flatten)]
        table: TableArgs,
        /// Print only the answer (probe runs: B/A over every cell with its interval), the summary line and the outcome line (what improved and regressed, and the exit status).
        #[arg(short, long, conflicts_with_all = ["verbose", "columns", "noheadings", "raw", "pairs"])]
        quiet: bool,
        /// Also list the environment fields that are the same.
        #[arg(short, long, conflicts_with_all = ["columns", "noheadings", "raw", "pairs"])]
        verbose: bool,
    },
    /// Propose the fix that keeps the data: new partition starts on 1 MiB (or a stripe width), ends on 4 KiB where that is free, the moves and table changes in a safe order, and what must be done by hand. Never writes to a disk; --script writes a POSIX sh script for you to read and run.
    #[command(
        after_help = PLAN_HELP,
        after_long_help = plan_long_help(),
        mut_arg("csv", |a| a.hide(true)),
        mut_arg("prometheus", |a| a.hide(true))
    )]
    Plan {
        /// Whole disks or disk image files.
        #[arg(required_unless_present_any = ["new", "list_columns"], value_name = "DISK")]
        targets: Vec<PathBuf>,
        // Human: a before/after table per disk; JSON (docs/json.md); HTML:
        // each disk's map now and after, and the steps (not with --new).
        #[command(flatten)]
        output: OutputArgs,
        // -o picks the columns of the before/after table (of every disk
        // in one), or with --new of the layout's.
        #[command(flatten)]
        table: TableArgs,
        /// Override the topology for what-if questions and images (as for check).
        #[arg(long, value_name = "SPEC", value_parser = topology_arg)]
        topology: Option<TopologyOverride>,
        /// A saved probe run of a device planned here, as for check: the by-hand notes follow what it measured.
        #[arg(long = "probe", value_name = "RUN.json")]
        probe: Vec<PathBuf>,
        /// Write the plan as a POSIX sh script to FILE (replaced atomically); one disk only. A plan that cannot keep the data writes nothing.
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// The copy rate the time estimate assumes, per second (100M, 1G).
        #[arg(long, value_name = "RATE", default_value = "100M", value_parser = size_arg)]
        throughput: u64,
        /// Lay out an empty disk instead (with --sizes): an sfdisk script.
        #[arg(
            long,
            value_name = "DISK",
            conflicts_with = "targets",
            requires = "sizes"
        )]
        new: Option<PathBuf>,
        /// Partition sizes for --new, comma-separated; the last may be "rest" (512M,100G,rest).
        #[arg(long, value_name = "LIST", requires = "new", value_parser = sizes_arg)]
        sizes: Option<String>,
        /// The label --new writes.
        #[arg(long, value_enum, default_value = "gpt", requires = "new")]
        label: Label,
    },
    /// Watch the real I/O, live: at each layer of the stack (partition, dm, md, loop, disk), how many requests straddle a 4 KiB or grain boundary, are smaller than the physical block or are split, where a dm or md device's I/O lands on each device below it, and whether straddling ones take longer. Observes the kernel's block tracepoints; reads the disks' partition tables and layer headers before it starts counting (to name causes), and issues no I/O while it counts.
    #[command(after_help = WATCH_HELP)]
    Watch(WatchArgs),
    /// `completions SHELL` and `man`.
    #[command(flatten)]
    Assets(Asset),
}

const WATCH_HELP: &str = "Each target is followed down to its disks (a dm or md device's slaves, a partition's disk; a disk brings its partitions), and each device's I/O is judged against its grain (max of physical block and minimum I/O, or --unit). A partition's I/O is also mapped onto its disk: a write aligned inside a partition at sector 63 is off 4 KiB on the disk, and is shown as such. A terminal gets a table refreshed every --interval; the summary (the table, the histograms, the latency of aligned against straddling requests, the findings) is printed when the run ends: Ctrl-C, --for, or the end of COMMAND (whose exit status is reported, not returned). docs/watch.md explains it.\nNeeds root (or CAP_BPF and CAP_PERFMON).\nExit status, a bitmask: 0 nothing found; 1 straddling, sub-physical or split I/O found (warnings or errors, docs/findings.md); 2 a target could not be watched, tracing could not start or stopped, or an output file could not be written; 3 = 1 + 2: found before tracing stopped (the summary holds what was counted).";

/// `diskalign watch`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// Disks, partitions, dm, md or loop devices (/dev/sdb1, dm-0), or a directory (the device of its filesystem); default: every disk and its partitions.
    pub targets: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Stop after this long (30s, 5m); default: at Ctrl-C or the end of COMMAND.
    #[arg(long = "for", value_name = "DURATION", value_parser = duration_arg)]
    pub duration: Option<Duration>,
    /// How often the live view is refreshed.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration_arg)]
    pub interval: Duration,
    /// Judge every device against this unit instead of its physical block and minimum I/O (a multiple of 512: the unit probe found, a RAID chunk).
    #[arg(long, value_name = "SIZE", value_parser = size_arg)]
    pub unit: Option<u64>,
    /// Show this many submitters (processes, kernel threads) per device and direction, those that misaligned the most I/Os first; the rest are summed as other.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// No live view; print the summary without its histograms and latency: what was watched and how, the table and the findings.
    #[arg(short, long)]
    pub quiet: bool,
    /// Play snapshots recorded in FILE instead of tracing (tests).
    #[arg(long, value_name = "FILE", hide = true)]
    pub replay: Option<PathBuf>,
    /// Run COMMAND with its arguments and watch until it ends.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `plan --new --label`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    Gpt,
    Dos,
}

const PLAN_HELP: &str = "Each partition keeps its data: it never becomes smaller than what lives in it (a filesystem's size from its superblock, a PV's from its header; LUKS, an md member or anything unrecognised needs the whole partition, unless it is empty: its first MiB and the bytes cut zero), partitions only move up, and the moves run from the last partition to the first. An end off 4 KiB comes down when its content ends before it; an ext4 reaching it is shrunk first, a PV gets its pvresize command to run by hand. Ends sgdisk found aligned stay on its alignment where the room is free, so no tool column of check says NO where it said ok. When the disk has no other room, an ext4 with free space is shrunk first (e2fsck -f, resize2fs; the script asks resize2fs -P before). A plan that would need more room than that, or a filesystem that cannot shrink (XFS), is refused and no script is written. A PV or LUKS whose tool shifted its data for a misaligned start keeps its data aligned: its partition stays off 4 KiB, and the plan says why.\nThe script checks before each step (also when resumed) that it is on the disk the plan was made for (its size, the table's PTUUID, a live disk's serial and WWN), that the table is as planned and nothing on the disk is mounted, swap or held; it names an image by its absolute path (a raw one: for a qcow2, VMDK, VHDX, VDI or VHD container no script is written, and the by-hand notes give the qemu-img commands that fix a raw copy and convert it back), backs the table up first (sfdisk --dump, sgdisk --backup, vgcfgbackup), rebuilds a damaged primary GPT from its sound backup (sgdisk -e) before anything else, and run again after an interruption it skips what is done and resumes a copy where it stopped. Moving a BIOS boot, EFI system or FAT/NTFS partition adds what that means for booting to the by-hand notes (a FAT/NTFS boot sector's new start as a command that writes only while the field reads the old one; for an image, no grub-install or efibootmgr command, which would act on this host). Every command printed to run by hand names the disk or raw image planned; for a container, its raw copy, in the step where it runs. docs/plan.md explains it.\nOutput: what to take offline, then the steps numbered as the script numbers them; a disk that cannot be planned is one line on stderr.\nExit status, a bitmask: 0 nothing to change; 1 a plan with changes or commands to run by hand first (check names this command as its next step then; plan --new: the layout to write); 2 a target could not be read or planned (the plan cannot keep its data), the --script asked for was not written, or an output file could not be written; 3 = 1 + 2: a plan with changes beside one of those (another disk refused; --script for a container image, whose fix is by hand and gets no script).";

const PROBE_HELP: &str = "Read-only unless --write. Writing to a device also needs --destructive and is refused while the device or one of its partitions is mounted, held (LVM, md, dm) or swap; a partition table, filesystem, LVM, RAID or LUKS signature refuses it too unless --force. A directory gets a scratch file (--size) that has no name, so nothing is left behind even after SIGKILL; a --size the filesystem cannot hold is refused before anything is written. A file whose reads would not reach the device is refused, in one line naming the share: sparse (holes), fallocated and never written (unwritten extents), or just written and still in the page cache (delayed allocation).\nSeveral targets run the same grid with their cells shuffled together in every round; each further target is compared with the first, cell by cell. Ctrl-C stops after the I/Os in flight and still reports what was measured (marked partial).\nExit status, a bitmask: 0 no penalty (no penalty of --min-effect or more at any offset); 1 a misaligned offset (or a smaller block size) was decided slower; 2 could not run (refused, bad arguments), was interrupted, or an output file could not be written; 3 = 1 + 2: interrupted after a penalty was decided; 4 a penalty of --min-effect neither decided nor ruled out at some offset (too noisy, too few rounds, or a unit named only as likely); 5 = 1 + 4: a penalty decided at one offset (or target) and another left open; 6 = 4 + 2; 7 = 1 + 2 + 4.";

const REPORT_HELP: &str = "The page opens offline in any browser: its CSS and SVG are inline and it loads nothing from anywhere. Several runs make one page, one section each, in the order given. The page goes to --output FILE (there is no -o: elsewhere -o picks table columns, so report -o is refused with a line naming --output). Exit status: 0 written; 2 a run could not be read or --output FILE cannot be written (one line on stderr, nothing written), or a --figures file could not be written.";

const COMPARE_HELP: &str = "Probe runs: the answer first, B/A over every cell both runs measured as a geometric mean with its 95 % interval (\"B is 6.1× slower than A in every cell, [5.4, 6.9]\"), then each pattern's; then the environment differences (kernel, a loop device's direct I/O and backing filesystem, transport, bridge, scheduler, firmware, engine, queue depth, preset), then every cell both runs measured with B/A, its 95 % interval from the rounds and a decision corrected over the cells compared; cells only in one run are named. One fio pass has no replicates, so its cells get no interval and no test. Check runs: the findings that appeared, disappeared or changed, per target, partition and layer. Watch runs: each device and direction's I/Os and shares straddling and below the physical block in A and B (shown, not tested: the workloads may differ), and the findings that appeared, disappeared or changed.\nThe last line is the outcome: what improved, regressed and stayed (targets for check runs, cells for probe runs, findings for watch runs), as the JSON's outcome. Two check runs whose disk under one name has another serial, WWN, size or PTUUID are compared with a warning.\nExit status, a bitmask: 0 no difference; 1 a cell decided slower or faster or a finding changed; 5 = 1 + 4: B is worse than A, a regression; 2 a run could not be read or the two cannot be compared, or an output file could not be written; 3 = 1 + 2: a difference, and an output file not written; 7 = 5 + 2: a regression, and an output file not written.";

#[derive(clap::Args, Debug)]
pub struct ProbeArgs {
    /// Disks or partitions (/dev/sdb, /dev/sdb1), files, or directories (a scratch file is made there); several are probed together, their cells shuffled in every round and each compared with the first's.
    #[arg(required_unless_present = "list_columns", num_args = 1..)]
    pub targets: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    // -o picks the columns of the table of cells (the CSV's rows), which
    // -o, -n, -r and -P print alone instead of the grids.
    #[command(flatten)]
    pub table: TableArgs,
    /// Print the fio job file for the planned grid and exit without doing I/O.
    #[arg(long)]
    pub emit_fio: bool,
    /// Search the device's erase (allocation) unit instead of the grid, reading only: 16 KiB reads (--bs) that end at, straddle and start at boundaries of 64 KiB to 64 MiB, 12 and 24 MiB, the three reads of each place back to back, in shuffled rounds; the unit is the smallest boundary whose straddling reads are --min-effect slower, with its interval. One target: a flash card, USB stick or eMMC (a partition's reads are placed on the device's boundaries).
    #[arg(long, conflicts_with_all = ["write", "offsets", "pattern", "buffered", "fdatasync", "jobs", "emit_fio", "preset"])]
    pub erase_unit: bool,
    /// Also print how the comparisons are made (the method paragraph).
    #[arg(short, long, conflicts_with_all = ["columns", "noheadings", "raw", "pairs"])]
    pub verbose: bool,
    /// How much of the grid to run: auto searches the unit adaptively and stops each comparison once decided.
    #[arg(long, value_enum, default_value = "auto")]
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
    /// I/Os in flight per job (default 32; 1 with --erase-unit, as a card serves one command at a time).
    #[arg(long)]
    pub qd: Option<u32>,
    /// Parallel jobs, each with its own queue.
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Shortest measured time per cell and round (500ms, 2s); default from the preset. Auto lengthens the windows (up to 8 times this) when the jitter measured inside them, which longer windows average out, outweighs the drift, which they do not; the report says what it chose and why.
    #[arg(long, value_parser = duration_arg)]
    pub runtime: Option<Duration>,
    /// Discarded warm-up per cell and round; default from the preset.
    #[arg(long, value_parser = duration_arg)]
    pub warmup: Option<Duration>,
    /// Most rounds per comparison (each round runs the open cells in a new random order; a decided comparison stops; rounds set aside as a high-noise period do not count); default from the preset, auto: as many as the budget holds.
    #[arg(long)]
    pub rounds: Option<u32>,
    /// The smallest penalty you care about, in percent (default 10): "no difference" means every offset's interval excludes a penalty this large; comparisons stay open until they can be decided at this size or --max-time is spent.
    #[arg(long, value_name = "PCT", value_parser = min_effect_arg)]
    pub min_effect: Option<f64>,
    /// A time budget for the whole run (90s, 5m): no round starts that would not end within it; without --rounds, the rounds are as many as fit. Default for the auto preset without --bs, --offsets or --rounds: 2m per target. Refused when shorter than one round.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub max_time: Option<Duration>,
    /// I/O engine.
    #[arg(long, default_value = "auto", value_parser = engine_names())]
    pub engine: String,
    /// Size of the scratch file made in a directory (whole MiB; refused when
    /// above the free space less 1 % of the filesystem, or ulimit -f).
    #[arg(long, value_parser = size_arg, default_value = "1G")]
    pub size: u64,
    /// Seed of the random positions and cell order (default: from the clock; the report records it).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `auto` and every registered engine, with what each means.
fn engine_names() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    let auto = PossibleValue::new("auto").help("the first engine that starts, in this order");
    let each = ENGINES.iter().map(|d| {
        PossibleValue::new(d.kind.as_str()).help(if d.depth_is_threads {
            "queue depth = threads doing blocking I/O"
        } else {
            "one asynchronous queue per job"
        })
    });
    std::iter::once(auto).chain(each).collect::<Vec<_>>().into()
}

/// `--topology SPEC`, parsed and checked on its own (the fields it names
/// over the least demanding device), so a value no kernel could report
/// is one usage error before any target is read. What depends on the
/// detected device (pbs=512 on a 4Kn disk) is still said per target.
fn topology_arg(s: &str) -> Result<TopologyOverride, String> {
    let o: TopologyOverride = s.parse().map_err(|e| format!("{e}"))?;
    o.check().map_err(|e| e.to_string())?;
    Ok(o)
}

fn size_arg(s: &str) -> Result<u64, String> {
    crate::units::parse_size(s).ok_or_else(|| format!("{s:?} is not a size (4096, 4k, 64KiB, 1m)"))
}

fn sizes_arg(s: &str) -> Result<String, String> {
    crate::plan::parse_sizes(s).map(|_| s.to_string())
}

fn offset_arg(s: &str) -> Result<u64, String> {
    crate::units::parse_size_expr(s)
        .ok_or_else(|| format!("{s:?} is not an offset (512, 4k, 4k+512, 1m-512)"))
}

fn min_effect_arg(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage (5, 10, 2.5)"))?;
    if v > 0.0 && v < 100.0 {
        Ok(v)
    } else {
        Err(format!("{s:?}: give a percentage above 0 and below 100"))
    }
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    crate::units::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration (250ms, 2s, 1m)"))
}

impl ProbeArgs {
    /// The grid these options ask for (one place, for the CLI and the fuzzer).
    pub fn grid_request(&self, seed: u64) -> GridRequest {
        let req = GridRequest {
            preset: self.preset,
            block_sizes: self.bs.clone(),
            offsets: self.offsets.clone(),
            patterns: self.pattern.clone(),
            write: self.write,
            runtime: self.runtime,
            warmup: self.warmup,
            rounds: self.rounds,
            min_effect: self.min_effect.map(|p| p / 100.0),
            max_time: self.max_time,
            qd: self.qd.unwrap_or(if self.erase_unit {
                crate::probe::ERASE_QD
            } else {
                32
            }),
            jobs: self.jobs,
            buffered: self.buffered,
            fdatasync: self.fdatasync,
            seed,
        };
        GridRequest {
            max_time: crate::probe::budget(&req, self.targets.len()),
            ..req
        }
    }
}

/// The commands that print an asset (flattened into `Command`; their
/// text is made in `assets`).
#[derive(clap::Subcommand, Debug, Clone, Copy)]
pub enum Asset {
    /// Print the shell completion script for SHELL to stdout.
    #[command(after_help = ASSET_EXIT)]
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff) to stdout: every command and option, and the
    /// exit status (diskalign man | man -l -).
    #[command(after_help = ASSET_EXIT)]
    Man,
}

/// The shells the package installs a completion for.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}
