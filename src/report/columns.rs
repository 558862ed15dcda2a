//! The column model shared by the human tables and the CSV: each column
//! has a CSV name and a raw value, a human title and a display value, or
//! only one of the two (the human "parted opt/min" is two CSV columns).
//! A table prints in lsblk's modes: aligned (the default), raw (`-r`) or
//! `KEY="value"` pairs (`-P`), with or without its header (`-n`), sizes
//! read by people or in bytes (`-b`).

use super::style::{Style, TableMode};
use crate::check::report::{PartitionReport, TargetReport};
use crate::compare::check::FindingChange;
use crate::compare::probe::CellRatio;
use crate::compare::ProbeComparison;
use crate::errors::TargetError;
use crate::probe::analyse::CellReport;
use crate::probe::env::Environment;
use crate::probe::report::{ProbeReport, TargetInfo};
use crate::topology::device_says::Limit;
use crate::topology::Disk;
use crate::units::human;
use crate::watch::submitters::Submitter;
use crate::watch::summary::Bucket;
use crate::watch::{DeviceSummary, WatchRun};

/// One column over rows of type `R`.
pub struct Column<R: ?Sized> {
    /// The name `-o` selects it by, and the CSV header of a CSV column.
    pub id: &'static str,
    /// The human table's title.
    pub title: &'static str,
    /// In the CSV by default.
    pub csv: bool,
    /// In the human table by default.
    pub human: bool,
    /// A CSV column that stands for part of a human one (`parted_optimal`
    /// of `parted`): selecting that one selects it.
    pub part_of: Option<&'static str>,
    /// What the column means (`--list-columns`).
    pub help: &'static str,
    /// The raw value (bytes, numbers, names) for CSV.
    pub raw: fn(&R) -> String,
    /// The value as people read it; None: the raw value.
    pub shown: Option<fn(&R, &Style) -> String>,
    /// Hidden first when the table is wider than the terminal: 0 never,
    /// higher sooner.
    pub drop: u8,
    /// A size: `-b` shows its raw value (bytes) instead.
    pub size: bool,
    /// A yes/no value (`true`/`false` in CSV), written `1`/`0` by `-r`
    /// and `-P`, as lsblk writes ROTA and RM.
    pub flag: bool,
}

impl<R: ?Sized> Column<R> {
    const fn both(id: &'static str, title: &'static str, raw: fn(&R) -> String) -> Self {
        Column {
            id,
            title,
            csv: true,
            human: true,
            part_of: None,
            help: "",
            raw,
            shown: None,
            drop: 0,
            size: false,
            flag: false,
        }
    }

    const fn csv_only(id: &'static str, raw: fn(&R) -> String) -> Self {
        Column {
            human: false,
            ..Column::both(id, id, raw)
        }
    }

    const fn human_only(id: &'static str, title: &'static str, raw: fn(&R) -> String) -> Self {
        Column {
            csv: false,
            ..Column::both(id, title, raw)
        }
    }

    const fn shown_as(mut self, shown: fn(&R, &Style) -> String) -> Self {
        self.shown = Some(shown);
        self
    }

    const fn help(mut self, help: &'static str) -> Self {
        self.help = help;
        self
    }

    const fn drop(mut self, rank: u8) -> Self {
        self.drop = rank;
        self
    }

    const fn part_of(mut self, id: &'static str) -> Self {
        self.part_of = Some(id);
        self
    }

    /// A size, in bytes with `-b`.
    const fn size(mut self) -> Self {
        self.size = true;
        self
    }

    /// A yes/no value, `1`/`0` in the raw and pair forms.
    const fn flag(mut self) -> Self {
        self.flag = true;
        self
    }

    /// Where the column shows by default: "table, csv", "table", "csv".
    fn shown_in(&self) -> &'static str {
        match (self.human, self.csv) {
            (true, true) => "table, csv",
            (true, false) => "table",
            (false, true) => "csv",
            (false, false) => "on request",
        }
    }

    fn value(&self, r: &R, st: &Style) -> String {
        match self.shown {
            Some(_) if self.size && st.table.bytes => (self.raw)(r),
            Some(f) => f(r, st),
            None => (self.raw)(r),
        }
    }

    /// The value in the forms programs read (`-r`, `-P`), as lsblk
    /// writes its own there: a size as lsblk's `512M` (bytes with `-b`),
    /// a yes/no as `1`/`0`, anything else as the table shows it.
    fn raw_value(&self, r: &R, st: &Style) -> String {
        let raw = (self.raw)(r);
        if self.size && !st.table.bytes {
            return raw.parse().map_or(raw, crate::units::lsblk_size);
        }
        if self.flag {
            return match raw.as_str() {
                "true" => "1".into(),
                "false" => "0".into(),
                _ => raw,
            };
        }
        self.value(r, st)
    }

    /// The key of `-P` and the header of `-r`: the title in upper case,
    /// a space as `-`, as lsblk prints its column names (`PHY-SEC`, the
    /// title of the value shown, so `SIZE="1 GiB"` and with `-b`
    /// `SIZE="1073741824"`, as lsblk -P and -b do).
    fn key(&self) -> String {
        key_of(self.title, self.id)
    }
}

/// The columns `-o` asked for, in its order; `+COL` adds to the default
/// set (`human` or `csv`); None asks for the default set.
pub fn select<'c, R: ?Sized>(
    cols: &'c [Column<R>],
    asked: Option<&[String]>,
    default: fn(&Column<R>) -> bool,
) -> Vec<&'c Column<R>> {
    let Some(asked) = asked else {
        return cols.iter().filter(|c| default(c)).collect();
    };
    let mut out: Vec<&Column<R>> = if asked.iter().all(|a| a.starts_with('+')) {
        cols.iter().filter(|c| default(c)).collect()
    } else {
        vec![]
    };
    for a in asked {
        let id = a.trim_start_matches('+');
        for c in cols.iter().filter(|c| c.id == id) {
            if !out.iter().any(|o| o.id == c.id) {
                out.push(c);
            }
        }
    }
    out
}

/// The columns of a table of `items` things (targets, disks), with the
/// column `id` that names each first when there are several and it was
/// not picked: every row of a table of several disks says which one it
/// is of, as lsblk's rows carry NAME whatever `-o` asked for.
pub fn naming_rows<'c, R: ?Sized>(
    all: &'c [Column<R>],
    mut picked: Vec<&'c Column<R>>,
    id: &str,
    items: usize,
) -> Vec<&'c Column<R>> {
    if items > 1 && !picked.iter().any(|c| c.id == id) {
        picked.splice(0..0, all.iter().filter(|c| c.id == id));
    }
    picked
}

type PP = Column<crate::plan::PartPlan>;

/// The last sector of an extent.
fn last_sector(e: &crate::plan::Extent) -> String {
    e.start_sector
        .saturating_add(e.sectors.max(1) - 1)
        .to_string()
}

/// `plan`'s table of each partition now and after (for people only: the
/// JSON has every number).
pub fn plan_partitions() -> Vec<PP> {
    vec![
        PP::human_only("number", "#", |p| p.number.to_string()),
        PP::human_only("content", "content", |p| p.content.clone()).drop(1),
        PP::human_only("start", "start", |p| p.before.start_sector.to_string()),
        PP::human_only("end", "end", |p| last_sector(&p.before)).drop(3),
        PP::human_only("new_start", "new start", |p| {
            p.after.start_sector.to_string()
        }),
        PP::human_only("new_end", "new end", |p| last_sector(&p.after)).drop(2),
        PP::human_only("change", "change", super::plan::change),
    ]
}

/// `check --list-columns`.
pub fn check_list(st: &Style) -> String {
    list(&partitions(), "check", st)
}

/// `topology --list-columns`.
pub fn topology_list(st: &Style) -> String {
    list(DISKS, "topology", st)
}

/// `--list-columns`: each column's id, its title in the table, where it
/// shows by default, and what it means (wrapped to the terminal).
fn list<R: ?Sized>(cols: &[Column<R>], command: &str, st: &Style) -> String {
    let id_w = cols.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let title_w = cols.iter().map(|c| c.title.len()).max().unwrap_or(0);
    let mut out = st.line(
        "",
        &format!("Columns of `{command}` (-o COL,COL picks them in that order; -o +COL adds to the default set):"),
        "",
    );
    for c in cols {
        let head = format!(
            "  {:id_w$}  {:title_w$}  {:10}  ",
            c.id,
            c.title,
            c.shown_in()
        );
        let hang = " ".repeat(head.len());
        out.push_str(&st.line(&head, c.help, &hang));
    }
    out
}

/// `check --help` and its part of the man page.
pub fn check_help() -> String {
    help(&partitions())
}

/// `topology --help` and its part of the man page.
pub fn topology_help() -> String {
    help(DISKS)
}

/// The columns for `--help` and the man page: one paragraph per column,
/// which reflows wherever it is shown.
fn help<R: ?Sized>(cols: &[Column<R>]) -> String {
    let mut out = String::from(
        "Columns (-o COL,COL picks them in that order; -o +COL adds to the default set):\n",
    );
    for c in cols {
        out.push_str(&format!(
            "\n{} (\"{}\"; {}): {}\n",
            c.id,
            c.title,
            c.shown_in(),
            c.help
        ));
    }
    out
}

/// Every column `-o` accepts for `check`: (id, title).
pub fn check_ids() -> Vec<(&'static str, &'static str)> {
    partitions().iter().map(|c| (c.id, c.title)).collect()
}

/// Every column `-o` accepts for `topology`: (id, title).
pub fn topology_ids() -> Vec<(&'static str, &'static str)> {
    DISKS.iter().map(|c| (c.id, c.title)).collect()
}

/// A title as a `-P` key and `-r` header: upper case, a space as `-`.
/// A title with other characters (`#`, `start(bytes)`, `parted opt/min`)
/// would make a key a shell cannot read back, so the column's id stands
/// in for it, upper case (`NUMBER`, `START_BYTES`): the value under it is
/// still the one shown.
fn key_of(title: &str, id: &str) -> String {
    let key = title.to_ascii_uppercase().replace(' ', "-");
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if !key.is_empty() && key.chars().all(plain) {
        key
    } else {
        id.to_ascii_uppercase()
    }
}

/// `-o` as typed (`COL` or `+COL`) as column ids. A column is named by
/// its id (`physical_block_size`), its title (`phy-sec`) or its key
/// (`PHY-SEC`, `PARTED-OPT/MIN`), in any case, as lsblk's `-o` takes
/// `NAME` or `phy-sec`; an id wins over another column's title. Err: the
/// one line that refuses the first name no column has.
pub fn resolve(
    asked: &[String],
    cols: &[(&'static str, &'static str)],
    command: &str,
) -> Result<Vec<String>, String> {
    asked
        .iter()
        .map(|a| {
            let name = a.trim_start_matches('+');
            let plus = &a[..a.len() - name.len()];
            let is = |s: &str| s.eq_ignore_ascii_case(name);
            let by_id = cols.iter().find(|(id, _)| is(id));
            let by_title = || {
                cols.iter()
                    .find(|(id, t)| is(t) || is(&t.replace(' ', "-")) || is(&key_of(t, id)))
            };
            match by_id.or_else(by_title) {
                Some((id, _)) => Ok(format!("{plus}{id}")),
                None => {
                    Err(format!(
                    "{a:?} is not a column of {command}; {command} --list-columns names them ({})",
                    cols.iter().map(|(id, _)| *id).collect::<Vec<_>>().join(", ")
                ))
                }
            }
        })
        .collect()
}

/// The human table of `cols`: a dimmed title row, then one row per item.
pub fn table_rows<R: ?Sized>(cols: &[&Column<R>], rows: &[&R], st: &Style) -> Vec<Vec<String>> {
    let mut out = vec![cols.iter().map(|c| st.dim(c.title)).collect::<Vec<_>>()];
    for r in rows {
        out.push(cols.iter().map(|c| c.value(r, st)).collect());
    }
    out
}

/// The table in the form `st.table` asks for, each line after `indent`:
/// aligned under dimmed titles, raw (`-r`) or as pairs (`-P`).
pub fn render<R: ?Sized>(cols: &[&Column<R>], rows: &[&R], st: &Style, indent: &str) -> String {
    let form = st.table;
    // Raw and pairs are read by programs: never coloured.
    let plain = Style {
        color: false,
        ..st.clone()
    };
    let lines: Vec<String> = match form.mode {
        TableMode::Aligned => {
            let mut t = table_rows(cols, rows, st);
            if !form.headings {
                t.remove(0);
            }
            super::style::table(&t)
                .lines()
                .map(str::to_string)
                .collect()
        }
        TableMode::Raw => {
            let head = form
                .headings
                .then(|| cols.iter().map(|c| c.key()).collect::<Vec<_>>().join(" "));
            let body = rows.iter().map(|r| {
                let v: Vec<String> = cols
                    .iter()
                    .map(|c| raw_escape(&c.raw_value(r, &plain)))
                    .collect();
                v.join(" ")
            });
            head.into_iter().chain(body).collect()
        }
        TableMode::Pairs => rows
            .iter()
            .map(|r| {
                let v: Vec<String> = cols
                    .iter()
                    .map(|c| format!("{}=\"{}\"", c.key(), pair_escape(&c.raw_value(r, &plain))))
                    .collect();
                v.join(" ")
            })
            .collect(),
    };
    lines.iter().map(|l| format!("{indent}{l}\n")).collect()
}

/// `-r`: a value with no space in it, so the columns split on spaces.
/// Whitespace, control characters and the backslash become `\xNN`, one
/// per byte, as lsblk's raw mode writes them; other characters stay.
pub fn raw_escape(s: &str) -> String {
    escape(s, |c| c.is_whitespace() || c.is_control() || c == '\\')
}

/// `-P`: a value safe between double quotes, also for a shell's `eval`:
/// quotes, backslashes, `$`, backticks and control characters become
/// `\xNN`, as lsblk's pairs mode writes them.
pub fn pair_escape(s: &str) -> String {
    escape(s, |c| c.is_control() || matches!(c, '"' | '\\' | '$' | '`'))
}

fn escape(s: &str, odd: fn(char) -> bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if odd(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The columns left when the table must fit `width`: the highest drop
/// rank goes first, then the next. Returns what is kept and the titles
/// hidden.
pub fn fit<'c, R: ?Sized>(
    cols: Vec<&'c Column<R>>,
    rows: &[&R],
    st: &Style,
    width: usize,
) -> (Vec<&'c Column<R>>, Vec<&'static str>) {
    let mut kept = cols;
    let mut hidden = Vec::new();
    loop {
        let widths = super::style::column_widths(&table_rows(&kept, rows, st));
        let total: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        let worst = kept
            .iter()
            .enumerate()
            .filter(|(_, c)| c.drop > 0)
            .max_by_key(|(_, c)| c.drop)
            .map(|(i, _)| i);
        match worst {
            Some(i) if total > width => hidden.push(kept.remove(i).title),
            _ => return (kept, hidden),
        }
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: the header, then one line per row, of the columns `-o` asked for
/// (a human-only column brings the CSV columns that are part of it).
pub fn csv<R: ?Sized>(cols: &[Column<R>], rows: &[&R], asked: Option<&[String]>) -> String {
    csv_with(cols, rows, asked, true)
}

/// [`csv`], the header line only with `headings` (`-n` leaves it out).
pub fn csv_with<R: ?Sized>(
    cols: &[Column<R>],
    rows: &[&R],
    asked: Option<&[String]>,
    headings: bool,
) -> String {
    let mut picked: Vec<&Column<R>> = Vec::new();
    for p in select(cols, asked, |c| c.csv) {
        let parts = cols.iter().filter(|c| c.part_of == Some(p.id));
        for c in std::iter::once(p).filter(|p| p.csv).chain(parts) {
            if !picked.iter().any(|x| x.id == c.id) {
                picked.push(c);
            }
        }
    }
    let mut out = String::new();
    if headings {
        out = picked.iter().map(|c| c.id).collect::<Vec<_>>().join(",");
        out.push('\n');
    }
    for r in rows {
        let line: Vec<String> = picked.iter().map(|c| field(&(c.raw)(r))).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

fn yes(b: bool) -> &'static str {
    if b {
        "ok"
    } else {
        "NO"
    }
}

/// A row of `check`'s table: a partition with the target it belongs to
/// (the CSV names the target). In the CSV a target without partitions
/// is one row without a partition, and a target that could not be
/// checked one row with its error, so the rows name every target.
pub struct PartitionRow<'a> {
    /// The target as given.
    pub path: &'a str,
    /// None: the target could not be checked (`error`).
    pub target: Option<&'a TargetReport>,
    pub partition: Option<&'a PartitionReport>,
    pub error: Option<&'a TargetError>,
}

impl<'a> PartitionRow<'a> {
    /// The row of partition `p` of `t`.
    pub fn of(t: &'a TargetReport, p: &'a PartitionReport) -> Self {
        PartitionRow {
            path: &t.path,
            target: Some(t),
            partition: Some(p),
            error: None,
        }
    }

    /// A value of the partition; empty on a row without one.
    fn part(&self, f: fn(&PartitionReport) -> String) -> String {
        self.partition.map(f).unwrap_or_default()
    }

    /// A value of the checked target; empty for one not checked.
    fn checked(&self, f: fn(&TargetReport) -> String) -> String {
        self.target.map(f).unwrap_or_default()
    }
}

/// Every partition of every target of a run, in order: the rows of
/// `check`'s one table (`-o`, `-r`, `-P`).
pub fn partition_rows(run: &crate::check::CheckRun) -> Vec<PartitionRow<'_>> {
    run.targets
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| PartitionRow::of(t, p)))
        .collect()
}

/// The rows of `check`'s CSV: every partition, and one row for each
/// target without partitions and for each that could not be checked
/// (its `error`): the targets checked, then those that were not, so a
/// fleet's rows name every target it asked for.
pub fn target_rows(run: &crate::check::CheckRun) -> Vec<PartitionRow<'_>> {
    let mut rows: Vec<PartitionRow> = Vec::new();
    for t in &run.targets {
        if t.partitions.is_empty() {
            rows.push(PartitionRow {
                path: &t.path,
                target: Some(t),
                partition: None,
                error: None,
            });
        }
        rows.extend(t.partitions.iter().map(|p| PartitionRow::of(t, p)));
    }
    rows.extend(run.errors.iter().map(|e| PartitionRow {
        path: &e.path,
        target: None,
        partition: None,
        error: Some(e),
    }));
    rows
}

/// Problem codes of a finding list, space-separated.
fn problem_codes(f: &[crate::findings::Finding]) -> String {
    f.iter()
        .filter(|f| f.is_problem())
        .map(|f| f.code.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

type P<'a> = Column<PartitionRow<'a>>;

/// The partition table of `check`.
pub fn partitions<'a>() -> Vec<P<'a>> {
    vec![
        P::csv_only("target", |r| r.path.to_string())
            .help("the target as given (a disk, a partition, an image)"),
        P::both("number", "#", |r| r.part(|p| p.number.to_string()))
            .help("the partition's number"),
        P::both("kind", "kind", |r| r.part(|p| p.kind.as_str().into()))
            .help("gpt; primary, extended or logical (MBR); registered: the kernel's view, the table not read")
            .drop(8),
        P::both("start_sector", "start(sector)", |r| r.part(|p| p.start_sector.to_string()))
        .help("the first sector, in the table's sector size")
        .drop(9),
        P::both("start_bytes", "start(bytes)", |r| r.part(|p| p.start_bytes.to_string()))
        .help("the first byte"),
        P::both("end_bytes", "end(last byte)", |r| r.part(|p| p.end_bytes.to_string()))
        .help("the last byte (inclusive); the end judged against 4 KiB is this + 1")
        .drop(7),
        P::both("size_bytes", "size", |r| r.part(|p| p.size_bytes.to_string()))
            .shown_as(|r, _| r.part(|p| human(p.size_bytes)))
            .size()
            .help("the size (bytes in CSV and with -b)"),
        P::both("start_alignment", "start on", |r| r.part(|p| p.start_alignment.to_string()))
        .shown_as(|r, _| r.part(|p| human(p.start_alignment)))
        .size()
        .help("the largest power of two, up to 1 MiB, that divides the start: 512 B means only sector-aligned")
        .drop(2),
        P::both("kernel_offset", "k-off", |r| r.part(|p| p.kernel_offset.to_string()))
        .help("the kernel's rule (g + ao - start mod g) mod g with g = max(physical block, minimum I/O) and ao the disk's alignment offset: 0 = aligned, else the bytes to the next aligned start")
        .drop(1),
        P::both("device_block_size", "node-bs", |r| r.part(|p| p.device_block_size.to_string()))
        .help("the block size the kernel gives the partition's device node: the logical block doubled while the size stays a multiple, up to 4096; below 4096 buffered I/O works in smaller pieces")
        .drop(3),
        P::human_only("parted", "parted opt/min", |r| {
            r.part(|p| {
                format!(
                    "{}/{}",
                    yes(p.tools.parted_optimal),
                    yes(p.tools.parted_minimal)
                )
            })
        })
        .help("parted's align-check optimal / minimal on this disk (CSV: parted_optimal, parted_minimal)")
        .drop(6),
        P::csv_only("parted_optimal", |r| {
            r.part(|p| p.tools.parted_optimal.to_string())
        })
        .part_of("parted")
        .flag()
        .help("parted align-check optimal says aligned"),
        P::csv_only("parted_minimal", |r| {
            r.part(|p| p.tools.parted_minimal.to_string())
        })
        .part_of("parted")
        .flag()
        .help("parted align-check minimal says aligned"),
        P::both("fdisk", "fdisk", |r| r.part(|p| p.tools.fdisk.to_string()))
            .shown_as(|r, _| r.part(|p| yes(p.tools.fdisk).into()))
            .help("fdisk/sfdisk would not warn about this partition's start")
            .drop(4),
        P::both("sgdisk", "sgdisk", |r| r.part(|p| p.tools.sgdisk.to_string()))
            .shown_as(|r, _| r.part(|p| yes(p.tools.sgdisk).into()))
            .help("sgdisk -v would not warn about this partition's start or end")
            .drop(5),
        P::both("aligned", "verdict", |r| r.part(|p| p.aligned.to_string()))
            .shown_as(|r, st| r.partition.map_or(String::new(), |p| st.status(p.status)))
            .help("aligned; untidy: an end or size off 4 KiB or a start off the stripe width (hygiene, a warning); MISALIGNED: the start off its grain (an error: every I/O pays). CSV: true when aligned"),
        P::csv_only("problems", |r| r.part(|p| problem_codes(&p.findings)))
            .help("the codes of its warnings and errors, space-separated"),
        P::csv_only("status", |r| r.part(|p| p.status.as_str().into()))
            .help("aligned, untidy or misaligned"),
        P::csv_only("target_status", |r| r.checked(|t| t.summary.status.as_str().into()))
            .help("the whole target's status: damaged when its partition table is (an invalid GPT header), misaligned when any partition or layer is"),
        P::csv_only("target_problems", |r| r.checked(|t| problem_codes(&t.findings)))
            .help("the codes of the target's own warnings and errors (the partition table, the kernel's view, the topology hints), space-separated"),
        P::csv_only("disk", |r| r.checked(|t| opt_text(&t.disk)))
            .help("the whole disk's kernel name (sda; empty for an image)"),
        P::csv_only("model", |r| r.checked(|t| opt_text(&t.model)))
            .help("the disk's model (sysfs)"),
        P::csv_only("serial", |r| r.checked(|t| opt_text(&t.serial)))
            .help("the disk's serial number (sysfs)"),
        P::csv_only("wwn", |r| r.checked(|t| opt_text(&t.wwn)))
            .help("the disk's world-wide identifier (sysfs wwid)"),
        P::csv_only("ptuuid", |r| r.checked(|t| opt_text(&t.partition_table.ptuuid)))
            .help("the partition table's identity: the GPT disk GUID or the DOS disk signature, as blkid's PTUUID"),
        P::csv_only("partuuid", |r| r.part(|p| opt_text(&p.partuuid)))
            .help("the partition's identity, as blkid's PARTUUID"),
        P::csv_only("partlabel", |r| r.part(|p| opt_text(&p.name)))
            .help("the GPT partition name, as blkid's PARTLABEL"),
        P::csv_only("error", |r| r.error.map(|e| e.message.clone()).unwrap_or_default())
            .help("why the target could not be checked (its row has no status); empty when it was"),
        P::csv_only("container", |r| {
            r.checked(|t| opt_text(&t.container.as_ref().map(|c| c.format)))
        })
        .help("the image's container format (qcow2, vmdk, vhdx, vdi, vhd); empty for a device or a raw image"),
        P::csv_only("container_unit", |r| {
            r.checked(|t| opt_text(&t.container.as_ref().and_then(|c| c.subunit_bytes.or(c.unit_bytes))))
        })
        .help("the container's allocation unit in bytes: the qcow2 cluster (its subcluster with extended L2), the VMDK grain, the VHDX, VDI or VHD block"),
    ]
}

fn opt_text<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(T::to_string).unwrap_or_default()
}

type D = Column<Disk>;

/// One row per disk: `topology`'s table, as lsblk -t, and its CSV.
pub const DISKS: &[Column<Disk>] = &[
    D::both("name", "name", |d| d.name.clone())
        .help("the kernel's name of the disk (sda, nvme0n1)"),
    D::csv_only("device", |d| d.device.display().to_string())
        .help("its device node"),
    D::both("size_bytes", "size", |d| d.size_bytes.to_string())
        .shown_as(|d, _| human(d.size_bytes))
        .size()
        .help("the size (bytes in CSV and with -b)"),
    D::both("transport", "tran", |d| d.transport.as_str().into())
        .help("how it is attached: sata, nvme, usb-uas, usb-storage, virtio, loop...")
        .drop(2),
    D::both("logical_block_size", "log-sec", |d| {
        d.topology.logical_block_size.to_string()
    })
    .help("the logical block size: the smallest unit the disk addresses"),
    D::both("physical_block_size", "phy-sec", |d| {
        d.topology.physical_block_size.to_string()
    })
    .help("the physical block size: below it, a write is read-modify-write"),
    D::both("minimum_io_size", "min-io", |d| {
        d.topology.minimum_io_size.to_string()
    })
    .help("the minimum I/O size the disk prefers (a RAID chunk, or the physical block)"),
    D::both("optimal_io_size", "opt-io", |d| {
        d.topology.optimal_io_size.to_string()
    })
    .help("the optimal I/O size (a RAID stripe width; 0: none given)"),
    D::both("alignment_offset", "alignment", |d| {
        d.topology.alignment_offset.to_string()
    })
    .help("the alignment offset: the bytes from the start of the disk to its first aligned block (-1: misaligned)"),
    D::both("discard_granularity", "disc-gran", |d| {
        d.topology.discard_granularity.to_string()
    })
    .help("the discard granularity (0: no discard)")
    .drop(1),
    D::csv_only("discard_alignment", |d| {
        d.topology.discard_alignment.to_string()
    })
    .help("the discard alignment"),
    D::both("rotational", "rota", |d| opt_text(&d.rotational))
        .flag()
        .help("true for a spinning disk, as the kernel says (1 with -r and -P, as lsblk's ROTA); empty when unknown")
        .drop(3),
    D::csv_only("removable", |d| opt_text(&d.removable))
        .flag()
        .help("true for removable media"),
    D::csv_only("vendor", |d| opt_text(&d.vendor)).help("the vendor the disk reports"),
    D::csv_only("model", |d| opt_text(&d.model))
        .help("the model the disk reports"),
    D::csv_only("serial", |d| opt_text(&d.serial)).help("the serial number"),
    D::both("problems", "problems", |d| problem_codes(&d.findings))
        .help("the codes of its suspicious hints (`topology DISK` explains them), space-separated"),
    D::csv_only("wwn", |d| opt_text(&d.wwn))
        .help("the world-wide identifier (sysfs wwid)"),
    D::csv_only("device_log_sec", |d| said(d, Limit::LogicalBlockSize))
        .help("the logical block the device itself says (its identify data; empty: it said nothing)"),
    D::csv_only("device_phy_sec", |d| said(d, Limit::PhysicalBlockSize))
        .help("the physical block the device says (NVMe NPWG, ATA IDENTIFY, SCSI LBPPBE)"),
    D::csv_only("device_min_io", |d| said(d, Limit::MinimumIoSize))
        .help("the minimum I/O the device says (NVMe NPWG, SCSI OTLG)"),
    D::csv_only("device_opt_io", |d| said(d, Limit::OptimalIoSize))
        .help("the optimal I/O the device says (NVMe NOWS, SCSI OTL)"),
    D::csv_only("device_disagrees", |d| {
        d.device_says
            .as_ref()
            .map(|s| {
                let l: Vec<&str> = s.disagreements().iter().map(|l| l.as_str()).collect();
                l.join(" ")
            })
            .unwrap_or_default()
    })
    .help("the kernel's limits that do not follow from what the device says (topology DISK explains them)"),
];

/// A limit as the disk itself gives it (`topology::DeviceSays::value`).
fn said(d: &Disk, limit: Limit) -> String {
    opt_text(&d.device_says.as_ref().and_then(|s| s.value(limit)))
}

fn opt4(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_default()
}

/// A probe cell with the run it belongs to (its CSV row names the target,
/// the device, the seed and the time, so two files can be told apart).
pub struct CellRow<'a> {
    pub report: &'a ProbeReport,
    /// The target the cell belongs to (one of several, perhaps).
    pub target: &'a TargetInfo,
    pub environment: &'a Environment,
    pub cell: &'a CellReport,
}

type C<'a> = Column<CellRow<'a>>;

/// One row per probe cell (`probe --format csv`, `--csv FILE`).
pub fn cells<'a>() -> Vec<C<'a>> {
    vec![
        C::csv_only("pattern", |r| r.cell.cell.pattern.as_str().into()),
        C::csv_only("block_size", |r| r.cell.cell.block_size.to_string()),
        C::csv_only("offset", |r| r.cell.cell.offset.to_string()),
        C::csv_only("iops_median", |r| format!("{:.1}", r.cell.iops.median)),
        C::csv_only("iops_ci95_lo", |r| format!("{:.1}", r.cell.iops.ci95[0])),
        C::csv_only("iops_ci95_hi", |r| format!("{:.1}", r.cell.iops.ci95[1])),
        C::csv_only("mib_s_median", |r| format!("{:.3}", r.cell.mib_s.median)),
        C::csv_only("lat_us_p50", |r| format!("{:.2}", r.cell.lat_us.p50)),
        C::csv_only("lat_us_p99", |r| format!("{:.2}", r.cell.lat_us.p99)),
        C::csv_only("lat_us_p999", |r| format!("{:.2}", r.cell.lat_us.p999)),
        C::csv_only("ratio", |r| opt4(r.cell.relative.as_ref().map(|x| x.ratio))),
        C::csv_only("ratio_ci95_lo", |r| {
            opt4(r.cell.relative.as_ref().map(|x| x.ci95[0]))
        }),
        C::csv_only("ratio_ci95_hi", |r| {
            opt4(r.cell.relative.as_ref().map(|x| x.ci95[1]))
        }),
        C::csv_only("p_adjusted", |r| {
            opt4(r.cell.relative.as_ref().map(|x| x.p_adjusted))
        }),
        C::csv_only("significant", |r| {
            r.cell
                .relative
                .as_ref()
                .map(|x| x.significant.to_string())
                .unwrap_or_default()
        }),
        C::csv_only("decision", |r| {
            r.cell
                .relative
                .as_ref()
                .map(|x| x.decision.as_str().to_string())
                .unwrap_or_default()
        }),
        C::csv_only("rounds", |r| r.cell.rounds.len().to_string()),
        C::csv_only("target", |r| r.target.path.display().to_string()),
        C::csv_only("disk", |r| opt_text(&r.environment.disk)),
        C::csv_only("model", |r| opt_text(&r.environment.model)),
        C::csv_only("firmware", |r| opt_text(&r.environment.firmware)),
        C::csv_only("seed", |r| r.report.plan.seed.to_string()),
        C::csv_only("started_unix", |r| r.report.started_unix.to_string()),
        C::csv_only("partial", |r| r.report.partial.to_string()),
    ]
}

/// A cell of a probe comparison, with the comparison (for its target's path).
pub struct RatioRow<'a> {
    pub comparison: &'a ProbeComparison,
    pub cell: &'a CellRatio,
}

type RR<'a> = Column<RatioRow<'a>>;

/// One row per cell both runs measured (`compare --format csv`, probe runs).
pub fn ratios<'a>() -> Vec<RR<'a>> {
    vec![
        RR::csv_only("target", |r| {
            r.comparison.target_path(r.cell.key.target).to_string()
        }),
        RR::csv_only("pattern", |r| r.cell.key.pattern.as_str().into()),
        RR::csv_only("block_size", |r| r.cell.key.block_size.to_string()),
        RR::csv_only("offset", |r| r.cell.key.offset.to_string()),
        RR::csv_only("a_iops", |r| format!("{:.1}", r.cell.a_iops)),
        RR::csv_only("b_iops", |r| format!("{:.1}", r.cell.b_iops)),
        RR::csv_only("a_rounds", |r| r.cell.a_rounds.to_string()),
        RR::csv_only("b_rounds", |r| r.cell.b_rounds.to_string()),
        RR::csv_only("ratio", |r| opt4(r.cell.ratio)),
        RR::csv_only("ci_lo", |r| opt4(r.cell.ci95.map(|c| c[0]))),
        RR::csv_only("ci_hi", |r| opt4(r.cell.ci95.map(|c| c[1]))),
        RR::csv_only("ci_level", |r| opt4(r.cell.ci_level)),
        RR::csv_only("p_value", |r| opt4(r.cell.p_value)),
        RR::csv_only("p_adjusted", |r| opt4(r.cell.p_adjusted)),
        RR::csv_only("significant", |r| r.cell.significant.to_string()),
        RR::csv_only("decision", |r| r.cell.decision.as_str().into()),
    ]
}

type FC = Column<FindingChange>;

/// One row per finding that appeared, disappeared or changed
/// (`compare --format csv`, check runs).
pub fn changes() -> Vec<FC> {
    vec![
        FC::csv_only("change", |f| f.change.as_str().into()),
        FC::csv_only("target", |f| opt_text(&f.target)),
        FC::csv_only("partition", |f| opt_text(&f.partition)),
        FC::csv_only("layer", |f| opt_text(&f.layer)),
        FC::csv_only("code", |f| f.code.clone()),
        FC::csv_only("severity_a", |f| opt_text(&f.severity_a)),
        FC::csv_only("severity_b", |f| opt_text(&f.severity_b)),
        FC::csv_only("message_a", |f| opt_text(&f.message_a)),
        FC::csv_only("message_b", |f| opt_text(&f.message_b)),
    ]
}

type WD = Column<DeviceSummary>;

fn dir_of(s: &DeviceSummary) -> String {
    s.direction
        .map(|d| d.as_str().to_string())
        .unwrap_or_default()
}

/// `watch`'s table, like iostat -x: one row per device and direction.
pub fn watch_devices() -> Vec<WD> {
    vec![
        WD::both("device", "DEVICE", |s| s.device.clone()),
        WD::both("layer", "LAYER", |s| s.layer.as_str().into()).drop(3),
        WD::both("direction", "DIR", dir_of),
        WD::both("ios", "IOS", |s| s.ios.to_string()),
        WD::both("bytes", "BYTES", |s| s.bytes.to_string())
            .shown_as(|s, _| human(s.bytes))
            .size()
            .drop(2),
        WD::human_only("average", "AVG", |s| {
            s.bytes.checked_div(s.ios).map_or("-".into(), human)
        })
        .drop(1),
        WD::both("straddling", "STRADDLING", |s| s.straddling.to_string())
            .help("the I/Os straddling here or, at a partition, starting off 4 KiB on its disk: the larger of X-4K, X-GRAIN and OFF-4K-DISK, which STRADDLE is the share of"),
        WD::human_only("share", "STRADDLE", |s| {
            if s.ios == 0 {
                "-".into()
            } else {
                format!("{:.1}%", 100.0 * s.straddle_share)
            }
        }),
        WD::both("straddle_4k", "X-4K", |s| s.straddle_4k.to_string()),
        WD::both("straddle_grain", "X-GRAIN", |s| {
            s.straddle_grain.to_string()
        })
        .drop(2),
        WD::human_only("off_4k_on_disk", "OFF-4K-DISK", |s| {
            s.off_4k_on_disk.map_or("-".into(), |n| n.to_string())
        }),
        WD::both("sub_physical", "SUB-PHYS", |s| s.sub_physical.to_string()),
        WD::both("splits", "SPLITS", |s| s.splits.to_string()).drop(1),
        WD::both("merges", "MERGES", |s| s.merges.to_string()).drop(1),
        WD::both("grain_bytes", "GRAIN", |s| s.grain_bytes.to_string())
            .shown_as(|s, _| human(s.grain_bytes))
            .size()
            .drop(3),
        WD::human_only("diskstats_ios", "IOSTAT", |s| match s.diskstats {
            Some(k) if k.ios != s.ios => k.ios.to_string(),
            Some(_) => "=".into(),
            None => "-".into(),
        })
        .help("I/Os as the kernel's statistics count them (/proc/diskstats, iostat), where they differ from IOS (the summary says why); = where they agree"),
        WD::human_only("top_submitter", "TOP SUBMITTER", |s| {
            s.submitters
                .iter()
                .find(|x| x.is_task())
                .map_or("-".into(), |x| x.name.clone())
        })
        .drop(2),
    ]
}

/// One submitter of one device and direction (`watch`'s table of who
/// submitted the I/O).
pub struct SubmitterRow<'a> {
    pub summary: &'a DeviceSummary,
    pub submitter: &'a Submitter,
}

/// Every submitter row of a watch run, in the document's order.
pub fn submitter_rows(run: &WatchRun) -> Vec<SubmitterRow<'_>> {
    run.devices
        .iter()
        .flat_map(|s| {
            s.submitters.iter().map(move |x| SubmitterRow {
                summary: s,
                submitter: x,
            })
        })
        .collect()
}

type SR<'a> = Column<SubmitterRow<'a>>;

fn count_share(n: u64, ios: u64) -> String {
    if ios == 0 {
        "-".into()
    } else {
        format!("{n} ({:.1}%)", 100.0 * n as f64 / ios as f64)
    }
}

/// `watch`'s table of submitters, one row per device, direction and
/// submitter.
pub fn watch_submitters<'a>() -> Vec<SR<'a>> {
    vec![
        SR::human_only("device", "DEVICE", |r| r.summary.device.clone()),
        SR::human_only("direction", "DIR", |r| dir_of(r.summary)),
        SR::human_only("submitter", "SUBMITTER", |r| r.submitter.name.clone()),
        SR::human_only("cgroup", "CGROUP", |r| {
            r.submitter.cgroup.clone().unwrap_or_else(|| "-".into())
        }),
        SR::human_only("ios", "IOS", |r| r.submitter.ios.to_string()),
        SR::human_only("straddling", "STRADDLING", |r| {
            count_share(r.submitter.straddling, r.submitter.ios)
        }),
        SR::human_only("sub_physical", "SUB-PHYS", |r| {
            count_share(r.submitter.sub_physical, r.submitter.ios)
        }),
        SR::human_only("splits", "SPLITS", |r| r.submitter.splits.to_string()),
    ]
}

/// One device, direction and request-size bucket (`watch --format
/// csv`); a summary without sizes (only splits or merges) is one row
/// with the size columns empty. Each submitter of the device and
/// direction is a row of its own, its size columns empty.
pub struct WatchRow<'a> {
    pub summary: &'a DeviceSummary,
    pub bucket: Option<&'a Bucket>,
    pub submitter: Option<&'a Submitter>,
}

/// Every row of a watch run's CSV, in the document's order.
pub fn watch_rows(run: &WatchRun) -> Vec<WatchRow<'_>> {
    let mut out = Vec::new();
    for s in &run.devices {
        if s.size_histogram.is_empty() {
            out.push(WatchRow {
                summary: s,
                bucket: None,
                submitter: None,
            });
        }
        out.extend(s.size_histogram.iter().map(|b| WatchRow {
            summary: s,
            bucket: Some(b),
            submitter: None,
        }));
        out.extend(s.submitters.iter().map(|x| WatchRow {
            summary: s,
            bucket: None,
            submitter: Some(x),
        }));
    }
    out
}

/// A submitter's number in a CSV row (empty in the other rows).
fn sub_num(r: &WatchRow, f: fn(&Submitter) -> u64) -> String {
    opt_num(r.submitter.map(f))
}

type WR<'a> = Column<WatchRow<'a>>;

fn opt_num(v: Option<u64>) -> String {
    v.map(|n| n.to_string()).unwrap_or_default()
}

/// The CSV columns of `watch`.
pub fn watch_buckets<'a>() -> Vec<WR<'a>> {
    vec![
        WR::csv_only("device", |r| r.summary.device.clone()),
        WR::csv_only("layer", |r| r.summary.layer.as_str().into()),
        WR::csv_only("direction", |r| dir_of(r.summary)),
        WR::csv_only("stage", |r| {
            r.summary
                .stage
                .map(|s| s.as_str().to_string())
                .unwrap_or_default()
        }),
        WR::csv_only("size_from_bytes", |r| {
            opt_num(r.bucket.map(|b| b.from_bytes))
        }),
        WR::csv_only("size_ios", |r| opt_num(r.bucket.map(|b| b.ios))),
        WR::csv_only("ios", |r| r.summary.ios.to_string()),
        WR::csv_only("bytes", |r| r.summary.bytes.to_string()),
        WR::csv_only("straddle_4k", |r| r.summary.straddle_4k.to_string()),
        WR::csv_only("straddle_grain", |r| r.summary.straddle_grain.to_string()),
        WR::csv_only("sub_physical", |r| r.summary.sub_physical.to_string()),
        WR::csv_only("splits", |r| r.summary.splits.to_string()),
        WR::csv_only("merges", |r| r.summary.merges.to_string()),
        WR::csv_only("off_4k", |r| r.summary.off_4k.to_string()),
        WR::csv_only("off_4k_on_disk", |r| opt_num(r.summary.off_4k_on_disk)),
        WR::csv_only("grain_bytes", |r| r.summary.grain_bytes.to_string()),
        WR::csv_only("physical_block_bytes", |r| {
            r.summary.physical_block_bytes.to_string()
        }),
        WR::csv_only("straddling", |r| r.summary.straddling.to_string()),
        WR::csv_only("unattributed", |r| r.summary.unattributed.to_string()),
        WR::csv_only("untimed", |r| r.summary.untimed.to_string()),
        WR::csv_only("submitter", |r| {
            r.submitter.map(|x| x.name.clone()).unwrap_or_default()
        }),
        WR::csv_only("submitter_kind", |r| {
            r.submitter
                .map(|x| x.kind.as_str().to_string())
                .unwrap_or_default()
        }),
        WR::csv_only("comm", |r| {
            r.submitter.map(|x| x.comm.clone()).unwrap_or_default()
        }),
        WR::csv_only("cgroup", |r| {
            r.submitter
                .and_then(|x| x.cgroup.clone())
                .unwrap_or_default()
        }),
        WR::csv_only("submitter_ios", |r| sub_num(r, |x| x.ios)),
        WR::csv_only("submitter_bytes", |r| sub_num(r, |x| x.bytes)),
        WR::csv_only("submitter_straddle_4k", |r| sub_num(r, |x| x.straddle_4k)),
        WR::csv_only("submitter_straddle_grain", |r| {
            sub_num(r, |x| x.straddle_grain)
        }),
        WR::csv_only("submitter_off_4k_on_disk", |r| {
            opt_num(r.submitter.and_then(|x| x.off_4k_on_disk))
        }),
        WR::csv_only("submitter_sub_physical", |r| sub_num(r, |x| x.sub_physical)),
        WR::csv_only("submitter_splits", |r| sub_num(r, |x| x.splits)),
        WR::csv_only("diskstats_ios", |r| {
            opt_num(r.summary.diskstats.map(|k| k.ios))
        }),
        WR::csv_only("diskstats_merges", |r| {
            opt_num(r.summary.diskstats.map(|k| k.merges))
        }),
        WR::csv_only("diskstats_bytes", |r| {
            opt_num(r.summary.diskstats.map(|k| k.bytes))
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/csv.md names every CSV column.
    #[test]
    fn every_csv_column_is_documented() {
        let doc = include_str!("../../docs/csv.md");
        let names = partitions()
            .iter()
            .filter(|c| c.csv)
            .map(|c| c.id)
            .chain(DISKS.iter().filter(|c| c.csv).map(|c| c.id))
            .chain(cells().iter().filter(|c| c.csv).map(|c| c.id))
            .chain(ratios().iter().filter(|c| c.csv).map(|c| c.id))
            .chain(changes().iter().filter(|c| c.csv).map(|c| c.id))
            .chain(watch_buckets().iter().filter(|c| c.csv).map(|c| c.id))
            .collect::<Vec<_>>();
        for n in names {
            assert!(doc.contains(&format!("`{n}`")), "docs/csv.md lacks {n}");
        }
    }

    /// lsblk's escapes: raw leaves no space in a value, pairs nothing a
    /// shell would expand between double quotes.
    #[test]
    fn raw_and_pair_values_are_escaped_as_lsblk_does() {
        assert_eq!(raw_escape("931.5 GiB"), "931.5\\x20GiB");
        assert_eq!(raw_escape("a\tb\\c\n"), "a\\x09b\\x5cc\\x0a");
        assert_eq!(raw_escape("é-ok"), "é-ok");
        assert_eq!(
            pair_escape("say \"hi\" $HOME `x`"),
            "say \\x22hi\\x22 \\x24HOME \\x60x\\x60"
        );
        assert_eq!(pair_escape("a b"), "a b");
        assert_eq!(pair_escape("\u{7f}"), "\\x7f");
    }

    /// The three forms of one table, with and without header, sizes in
    /// bytes or not.
    #[test]
    fn a_table_prints_in_lsblks_forms() {
        use crate::report::style::{TableForm, TableMode};
        type T = Column<(&'static str, u64)>;
        let cols = [
            T::both("name", "name", |r| r.0.to_string()),
            T::both("size_bytes", "size", |r| r.1.to_string())
                .shown_as(|r, _| human(r.1))
                .size(),
        ];
        let picked: Vec<&T> = cols.iter().collect();
        let rows = [("a disk", 1u64 << 30), ("b", 512)];
        let rows: Vec<&(&str, u64)> = rows.iter().collect();
        let mut st = Style::plain();
        let form = |mode, headings, bytes| TableForm {
            mode,
            headings,
            bytes,
        };
        st.table = form(TableMode::Aligned, true, false);
        assert_eq!(
            render(&picked, &rows, &st, "  "),
            "  name    size\n  a disk  1 GiB\n  b       512 B\n"
        );
        st.table = form(TableMode::Aligned, false, true);
        assert_eq!(
            render(&picked, &rows, &st, ""),
            "a disk  1073741824\nb       512\n"
        );
        st.table = form(TableMode::Raw, true, false);
        assert_eq!(
            render(&picked, &rows, &st, ""),
            "NAME SIZE\na\\x20disk 1G\nb 512B\n"
        );
        st.table = form(TableMode::Pairs, true, true);
        st.color = true;
        assert_eq!(
            render(&picked, &rows, &st, ""),
            "NAME=\"a disk\" SIZE=\"1073741824\"\nNAME=\"b\" SIZE=\"512\"\n"
        );
        // The key is the title of the value shown, as lsblk's SIZE is,
        // and the value lsblk's form of it.
        st.table = form(TableMode::Pairs, true, false);
        assert_eq!(
            render(&picked, &rows[1..], &st, ""),
            "NAME=\"b\" SIZE=\"512B\"\n"
        );
    }

    /// Topology's columns are all known to `-o`, and its default table
    /// is the lsblk -t set.
    #[test]
    fn topology_columns() {
        let shown: Vec<&str> = DISKS.iter().filter(|c| c.human).map(|c| c.id).collect();
        assert_eq!(shown[0], "name");
        assert!(shown.contains(&"physical_block_size") && shown.contains(&"problems"));
        let ids = topology_ids();
        assert_eq!(
            resolve(&["+model".into()], &ids, "topology"),
            Ok(vec!["+model".to_string()])
        );
        let e = resolve(&["number".into()], &ids, "topology").unwrap_err();
        assert!(
            e.starts_with("\"number\" is not a column of topology"),
            "{e}"
        );
    }

    /// `-o` takes a column by id, title or key, in any case, as lsblk's
    /// does (`NAME`, `phy-sec`); an id wins over another's title.
    #[test]
    fn columns_are_named_by_id_title_or_key() {
        let typed = ["NAME", "phy-sec", "+MIN-IO", "Size", "physical_block_size"];
        let typed: Vec<String> = typed.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            resolve(&typed, &topology_ids(), "topology").unwrap(),
            [
                "name",
                "physical_block_size",
                "+minimum_io_size",
                "size_bytes",
                "physical_block_size"
            ]
        );
        let typed = ["#".to_string(), "parted-opt/min".into(), "verdict".into()];
        assert_eq!(
            resolve(&typed, &check_ids(), "check").unwrap(),
            ["number", "parted", "aligned"]
        );
    }

    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
