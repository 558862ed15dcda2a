//! The generated differential of the kernel-in-the-loop tests: a
//! `differential` scenario line turns into hundreds of random partition
//! layouts (GPT, and DOS with an extended partition and logicals) written
//! one after the other on one guest disk. For each, the guest sends back
//! diskalign's JSON next to parted's align-check verdicts, fdisk's and
//! sgdisk's warnings, the kernel's per-partition alignment_offset and the
//! partition nodes' block size (tests/vm/lib.sh `difflayout`); here they are
//! compared partition by partition and counted per comparison.
//!
//! Layouts are deterministic from a seed (`DISKALIGN_VM_SEED`, printed) and
//! the differential's key, so a failure reproduces.

use crate::scenario::Differential;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The seed when `DISKALIGN_VM_SEED` is not set: CI sees the same layouts
/// every run; `DISKALIGN_VM_SEED=random` explores.
pub const DEFAULT_SEED: u64 = 0x00d1_5ca1_1900_0011;

const MIB: u64 = 1 << 20;

/// One partition of a generated layout, in the disk's logical sectors.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub number: u32,
    pub start: u64,
    pub size: u64,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A GPT partition or a DOS primary.
    Data,
    Extended,
    Logical,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Table {
    Gpt,
    Dos,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub index: usize,
    pub table: Table,
    pub parts: Vec<Part>,
}

impl Layout {
    /// `gpt 34+1000 2048+20481` (start+size in sectors; `e` extended, `l` logical).
    pub fn describe(&self) -> String {
        let mut s = String::from(match self.table {
            Table::Gpt => "gpt",
            Table::Dos => "dos",
        });
        for p in &self.parts {
            let tag = match p.kind {
                Kind::Data => "",
                Kind::Extended => "e",
                Kind::Logical => "l",
            };
            let _ = write!(s, " {}{tag}:{}+{}", p.number, p.start, p.size);
        }
        s
    }

    /// The sfdisk script that writes this layout: sectors, explicit starts
    /// and sizes, the partition number from the name before the colon
    /// (libfdisk takes the trailing digits), logicals last.
    pub fn sfdisk_script(&self, lbs: u64) -> String {
        let mut s = String::new();
        match self.table {
            Table::Gpt => {
                let _ = writeln!(s, "label: gpt\nfirst-lba: {}", gpt_first_usable(lbs));
            }
            Table::Dos => s.push_str("label: dos\n"),
        }
        let mut ordered: Vec<&Part> = self
            .parts
            .iter()
            .filter(|p| p.kind != Kind::Logical)
            .collect();
        ordered.extend(self.parts.iter().filter(|p| p.kind == Kind::Logical));
        for p in ordered {
            let ty = match (self.table, p.kind) {
                (Table::Gpt, _) => "",
                (Table::Dos, Kind::Extended) => ", type=5",
                (Table::Dos, _) => ", type=83",
            };
            let _ = writeln!(
                s,
                "/dev/p{} : start={}, size={}{ty}",
                p.number, p.start, p.size
            );
        }
        s
    }
}

pub fn gpt_first_usable(lbs: u64) -> u64 {
    2 + 16384 / lbs
}

/// The seed for one differential: the run's seed mixed with its key.
pub fn seed_for(run_seed: u64, key: &str) -> u64 {
    key.bytes().fold(run_seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The run's seed: `DISKALIGN_VM_SEED` (decimal, 0x-hex or `random`), else
/// the fixed default.
pub fn run_seed() -> u64 {
    match std::env::var("DISKALIGN_VM_SEED") {
        Ok(v) if v == "random" => fastrand::u64(..),
        Ok(v) => {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => v.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("DISKALIGN_VM_SEED `{v}`: a number or `random`"))
        }
        Err(_) => DEFAULT_SEED,
    }
}

/// Byte grains the starts and sizes are drawn around: 4 KiB pages, the
/// non-power-of-two 12288 and 196608, 16 KiB, 1 MiB, the USB bridges'
/// 65535-sector values, ...
const GRAINS: &[u64] = &[
    4096,
    8192,
    12288,
    16384,
    65536,
    196608,
    MIB,
    4 * MIB,
    33553920,
    268431360,
];
/// Byte offsets added to a grain multiple: alignment offsets 3584
/// (lowest_aligned 7 at 512), 512, 1536, 4096.
const OFFSETS: &[u64] = &[0, 0, 0, 512, 1024, 1536, 3584, 4096, 8192];
/// Sector numbers worth trying as they are.
const LITERALS: &[u64] = &[
    1, 2, 6, 7, 8, 9, 24, 34, 40, 48, 63, 64, 384, 2047, 2048, 2049, 4096, 6144, 16384, 65535,
    65536, 131070, 196608, 524288,
];

struct Gen<'a> {
    rng: &'a mut fastrand::Rng,
    lbs: u64,
    sectors: u64,
}

impl Gen<'_> {
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.rng.usize(..v.len())]
    }

    /// A start at or after `from` (sectors).
    fn start(&mut self, from: u64) -> u64 {
        let lbs = self.lbs;
        let mut s = match self.rng.u32(..100) {
            0..=39 => {
                let g = self.pick(GRAINS);
                let off = self.pick(OFFSETS);
                if g % lbs != 0 || off % lbs != 0 {
                    from
                } else {
                    let from_b = from * lbs;
                    let k = from_b.saturating_sub(off).div_ceil(g) + self.rng.u64(..3);
                    (k * g + off) / lbs
                }
            }
            40..=54 => {
                let l = self.pick(LITERALS);
                if l >= from {
                    l
                } else {
                    from
                }
            }
            55..=66 => from,
            // Far out: large sector numbers (the disks are sparse files).
            67..=69 => from + self.rng.u64(..self.sectors.saturating_sub(from) / 2 + 1),
            _ => {
                let bits = self.rng.u32(1..22);
                from + self.rng.u64(..1u64 << bits)
            }
        };
        if self.rng.u32(..4) == 0 {
            s = if self.rng.bool() {
                s + 1
            } else {
                s.saturating_sub(1)
            };
        }
        s.max(from)
    }

    /// A size in sectors (at least 1).
    fn size(&mut self) -> u64 {
        let lbs = self.lbs;
        let mut n = match self.rng.u32(..100) {
            0..=44 => {
                let g = self.pick(GRAINS).min(64 * MIB);
                (g * self.rng.u64(1..5)).div_ceil(lbs)
            }
            45..=54 => self.rng.u64(1..17),
            _ => {
                let bits = self.rng.u32(4..22);
                1 + self.rng.u64(..1u64 << bits)
            }
        };
        if self.rng.u32(..3) == 0 {
            n = if self.rng.bool() {
                n + 1
            } else {
                n.saturating_sub(1)
            };
        }
        n.max(1)
    }
}

/// `count` layouts for a disk of `bytes` with `lbs`-byte sectors,
/// alternating at random between GPT and DOS.
pub fn generate(seed: u64, lbs: u64, bytes: u64, count: usize) -> Vec<Layout> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let sectors = bytes / lbs;
    (0..count)
        .map(|index| {
            let mut g = Gen {
                rng: &mut rng,
                lbs,
                sectors,
            };
            loop {
                let l = if g.rng.bool() {
                    gpt_layout(&mut g, index, sectors)
                } else {
                    dos_layout(&mut g, index, sectors)
                };
                if !l.parts.is_empty() {
                    break renumber(&mut g, l);
                }
            }
        })
        .collect()
}

/// Half the time, the partitions (DOS: the primaries and the extended
/// one) take other entries than 1, 2, 3 in disk order: gaps and tables
/// "not in disk order", where each tool numbers partitions its own way.
fn renumber(g: &mut Gen, mut l: Layout) -> Layout {
    if g.rng.bool() {
        return l;
    }
    let slots = match l.table {
        Table::Gpt => 8,
        Table::Dos => 4,
    };
    let mut numbers: Vec<u32> = (1..=slots).collect();
    g.rng.shuffle(&mut numbers);
    let mut it = numbers.into_iter();
    for p in l.parts.iter_mut().filter(|p| p.kind != Kind::Logical) {
        p.number = it.next().expect("at most 4 primaries, 6 GPT partitions");
    }
    l
}

fn gpt_layout(g: &mut Gen, index: usize, sectors: u64) -> Layout {
    let first = gpt_first_usable(g.lbs);
    let last = sectors - first; // inclusive: the backup entries follow
    let mut cursor = first;
    let mut parts = Vec::new();
    for n in 1..=1 + g.rng.u32(..6) {
        let start = g.start(cursor);
        let size = g.size();
        if start + size - 1 > last {
            break;
        }
        parts.push(Part {
            number: n,
            start,
            size,
            kind: Kind::Data,
        });
        cursor = start + size;
    }
    Layout {
        index,
        table: Table::Gpt,
        parts,
    }
}

/// Up to `count` primaries from `cursor` on, numbered from `number`; stops
/// at the first that would not fit before `last`.
fn primaries(
    g: &mut Gen,
    count: u32,
    last: u64,
    cursor: &mut u64,
    number: &mut u32,
    parts: &mut Vec<Part>,
) {
    for _ in 0..count {
        let start = g.start(*cursor);
        let size = g.size();
        if start + size - 1 > last {
            break;
        }
        parts.push(Part {
            number: *number,
            start,
            size,
            kind: Kind::Data,
        });
        *number += 1;
        *cursor = start + size;
    }
}

fn dos_layout(g: &mut Gen, index: usize, sectors: u64) -> Layout {
    let last = sectors.min(u64::from(u32::MAX)) - 1;
    let mut cursor = 1;
    let mut parts = Vec::new();
    let before = g.rng.u32(..3);
    let extended = g.rng.u32(..5) != 0;
    let after = if extended {
        g.rng.u32(..2)
    } else {
        1 + g.rng.u32(..2)
    };
    let mut number = 1;
    let mut logicals = Vec::new();
    let push = |parts: &mut Vec<Part>, start: u64, size: u64, kind: Kind, number: u32| {
        parts.push(Part {
            number,
            start,
            size,
            kind,
        })
    };
    primaries(g, before, last, &mut cursor, &mut number, &mut parts);
    if extended {
        // The first EBR sits at the extended start, the next ones in the
        // gap before each logical: leave at least one sector there.
        let ext_start = g.start(cursor);
        let mut c = ext_start + 1;
        let mut ext_end = ext_start;
        let count = 1 + g.rng.u32(..4);
        for (i, lnum) in (0..count).zip(5..) {
            let start = if i == 0 { g.start(c) } else { g.start(c + 1) };
            let size = g.size();
            if start + size - 1 > last {
                break;
            }
            logicals.push(Part {
                number: lnum,
                start,
                size,
                kind: Kind::Logical,
            });
            c = start + size;
            ext_end = start + size - 1;
        }
        if !logicals.is_empty() {
            let slack = match g.rng.u32(..3) {
                0 => 0,
                1 => g.rng.u64(1..64),
                _ => g.size(),
            };
            let end = (ext_end + slack).min(last);
            push(
                &mut parts,
                ext_start,
                end - ext_start + 1,
                Kind::Extended,
                number,
            );
            number += 1;
            cursor = end + 1;
        }
    }
    primaries(g, after, last, &mut cursor, &mut number, &mut parts);
    parts.extend(logicals);
    Layout {
        index,
        table: Table::Dos,
        parts,
    }
}

/// The layouts of one differential in this run (`DISKALIGN_VM_LAYOUTS`
/// overrides the scenario's count).
pub fn layouts(d: &Differential, run_seed: u64) -> Vec<Layout> {
    let count = std::env::var("DISKALIGN_VM_LAYOUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d.count);
    generate(seed_for(run_seed, &d.key), d.lbs, d.size, count)
}

/// The partition whose `parted -s align-check` exit statuses are also
/// taken (every fourth layout: two more parted runs each), or None.
pub fn exit_sample(l: &Layout) -> Option<u32> {
    (l.index % 4 == 0).then(|| l.parts[(l.index / 4) % l.parts.len()].number)
}

/// The guest lines of one differential: one `capture KEY-N` per layout.
pub fn guest_lines(d: &Differential, layouts: &[Layout], quote: impl Fn(&str) -> String) -> String {
    let mut s = String::new();
    for l in layouts {
        let script = l.sfdisk_script(d.lbs).replace('\n', "\\n");
        let mut cmd = format!("difflayout \"{}\" {}", d.node, quote(&script));
        if let Some(n) = exit_sample(l) {
            let _ = write!(cmd, " {n}");
        }
        let _ = writeln!(s, "capture {}-{} {}", d.key, l.index + 1, quote(&cmd));
    }
    s
}

/// A partition as the guest kernel registered it.
#[derive(Debug, Clone)]
struct KernelPart {
    name: String,
    start: u64,
    size: u64,
    alignment_offset: i64,
}

/// What `difflayout` printed for one layout.
#[derive(Debug, Default)]
struct Observed {
    sfdisk_status: Option<i32>,
    sfdisk: String,
    check: Option<Value>,
    check_text: String,
    fdisk: String,
    sgdisk: Option<String>,
    kernel: BTreeMap<u64, KernelPart>,
    /// ("opt" | "min", partition) -> aligned, from interactive parted.
    parted: BTreeMap<(String, u64), bool>,
    parted_text: String,
    exit: BTreeMap<(String, u64), i32>,
    bsz: BTreeMap<u64, String>,
    ended: bool,
}

fn parse_observed(text: &str) -> Observed {
    let mut o = Observed::default();
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("@@ ") {
            sections.push((h.to_string(), String::new()));
        } else if let Some((_, body)) = sections.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    for (head, body) in sections {
        let mut words = head.split_whitespace();
        match words.next().unwrap_or("") {
            "sfdisk" => o.sfdisk = body,
            "status" => o.sfdisk_status = words.next().and_then(|w| w.parse().ok()),
            "check" => {
                o.check = serde_json::from_str(&body).ok();
                o.check_text = body;
            }
            "fdisk" => o.fdisk = body,
            "sgdisk" => o.sgdisk = Some(body),
            "sysfs" => {
                for l in body.lines() {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    if let [pn, name, start, size, ao] = f.as_slice() {
                        if let (Ok(pn), Ok(start), Ok(size), Ok(ao)) =
                            (pn.parse(), start.parse(), size.parse(), ao.parse())
                        {
                            o.kernel.insert(
                                pn,
                                KernelPart {
                                    name: name.to_string(),
                                    start,
                                    size,
                                    alignment_offset: ao,
                                },
                            );
                        }
                    }
                }
            }
            "parted" => {
                o.parted = parse_parted(&body);
                o.parted_text = body;
            }
            "exit" => {
                for l in body.lines() {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    if let [kind, n, st] = f.as_slice() {
                        if let (Ok(n), Ok(st)) = (n.parse(), st.parse()) {
                            o.exit.insert((kind.to_string(), n), st);
                        }
                    }
                }
            }
            "bsz" => {
                let nums: Vec<u64> = words.filter_map(|w| w.parse().ok()).collect();
                let vals: Vec<&str> = body.lines().map(str::trim).collect();
                for (i, n) in nums.iter().enumerate() {
                    let v = if nums.len() == vals.len() {
                        vals[i].to_string()
                    } else {
                        format!("(blockdev said {:?})", body.trim())
                    };
                    o.bsz.insert(*n, v);
                }
            }
            "end" => o.ended = true,
            _ => {}
        }
    }
    o
}

/// Interactive parted echoes each command ("(parted) align-check opt 5",
/// behind prompt escapes) and answers "5 aligned" or "5 not aligned: ...".
fn parse_parted(text: &str) -> BTreeMap<(String, u64), bool> {
    let mut out = BTreeMap::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut pending: Option<(String, u64)> = None;
    for (i, w) in words.iter().enumerate() {
        if w.ends_with("align-check") {
            pending = match (
                words.get(i + 1),
                words.get(i + 2).and_then(|n| n.parse().ok()),
            ) {
                (Some(k), Some(n)) => Some((k.to_string(), n)),
                _ => None,
            };
        } else if w.trim_end_matches(':') == "aligned" && i > 0 {
            let not = words[i - 1] == "not";
            let num = if not { i.checked_sub(2) } else { Some(i - 1) };
            let num: Option<u64> = num.and_then(|j| words[j].parse().ok());
            if let (Some((kind, n)), Some(num)) = (pending.take(), num) {
                if n == num {
                    out.insert((kind, n), !not);
                }
            }
        }
    }
    out
}

/// The comparisons, in report order.
pub const COMPARISONS: &[&str] = &[
    "kernel-table",
    "kernel-ao",
    "bsz",
    "bsz-read",
    "parted-opt",
    "parted-min",
    "parted-exit",
    "fdisk",
    "sgdisk",
];

/// The outcome of one differential.
#[derive(Debug, Default)]
pub struct Outcome {
    /// comparison -> (agreed, compared)
    pub counts: BTreeMap<&'static str, (usize, usize)>,
    pub disagreements: Vec<Disagreement>,
    pub layouts: usize,
    /// Layouts whose table came out as generated.
    pub as_generated: usize,
    pub gpt: usize,
    pub dos: usize,
    pub partitions: usize,
    /// The disk's limits as diskalign read them in the guest:
    /// `lbs/pbs/min/opt ao N`.
    pub topology: Option<String>,
    /// Layouts sfdisk refused (not compared), with its message.
    pub refused: Vec<String>,
    /// Layouts whose capture is missing or unreadable: a failure.
    pub broken: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Disagreement {
    pub comparison: &'static str,
    pub text: String,
}

impl Outcome {
    fn tally(&mut self, what: &'static str, agree: bool, text: impl FnOnce() -> String) {
        let c = self.counts.entry(what).or_default();
        c.1 += 1;
        if agree {
            c.0 += 1;
        } else {
            self.disagreements.push(Disagreement {
                comparison: what,
                text: text(),
            });
        }
    }

    pub fn failed(&self) -> bool {
        !self.disagreements.is_empty() || !self.broken.is_empty()
    }
}

fn first_line_with<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    text.lines().find(|l| l.contains(needle)).map(str::trim)
}

/// Compares every layout of a differential with what its capture says.
pub fn compare(
    d: &Differential,
    layouts: &[Layout],
    captured: impl Fn(&str) -> Option<String>,
) -> Outcome {
    let mut out = Outcome {
        layouts: layouts.len(),
        ..Outcome::default()
    };
    for l in layouts {
        let key = format!("{}-{}", d.key, l.index + 1);
        let Some(text) = captured(&key) else {
            out.broken
                .push(format!("{key}: no capture ({})", l.describe()));
            continue;
        };
        let o = parse_observed(&text);
        if !o.ended {
            out.broken
                .push(format!("{key}: the output stops early ({})", l.describe()));
            continue;
        }
        if o.sfdisk_status != Some(0) {
            out.refused.push(format!(
                "{key} {}: {}",
                l.describe(),
                o.sfdisk.trim().replace('\n', " / ")
            ));
            continue;
        }
        let Some(check) = &o.check else {
            out.broken.push(format!(
                "{key}: diskalign's JSON does not parse ({}):\n{}",
                l.describe(),
                o.check_text
            ));
            continue;
        };
        if out.topology.is_none() {
            let t = &check["targets"][0]["topology"];
            out.topology = Some(format!(
                "{}/{}/{}/{} ao {}",
                t["logical_block_size"],
                t["physical_block_size"],
                t["minimum_io_size"],
                t["optimal_io_size"],
                t["alignment_offset"]
            ));
        }
        compare_layout(d, l, &key, &o, check, &mut out);
    }
    out
}

fn compare_layout(
    d: &Differential,
    l: &Layout,
    key: &str,
    o: &Observed,
    check: &Value,
    out: &mut Outcome,
) {
    let target = &check["targets"][0];
    let parts = target["partitions"].as_array().cloned().unwrap_or_default();
    match l.table {
        Table::Gpt => out.gpt += 1,
        Table::Dos => out.dos += 1,
    }
    let ours: Vec<(u64, u64, u64)> = parts
        .iter()
        .map(|p| {
            (
                p["number"].as_u64().unwrap_or(0),
                p["start_sector"].as_u64().unwrap_or(0),
                p["sectors"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let mut generated: Vec<(u64, u64, u64)> = l
        .parts
        .iter()
        .map(|p| (u64::from(p.number), p.start, p.size))
        .collect();
    generated.sort();
    let mut sorted = ours.clone();
    sorted.sort();
    if sorted == generated {
        out.as_generated += 1;
    }
    let ctx = |n: u64| {
        let p = parts.iter().find(|p| p["number"].as_u64() == Some(n));
        let (start, sectors, kind) = p
            .map(|p| {
                (
                    p["start_sector"].as_u64().unwrap_or(0),
                    p["sectors"].as_u64().unwrap_or(0),
                    p["kind"].as_str().unwrap_or("?"),
                )
            })
            .unwrap_or((0, 0, "?"));
        format!(
            "{} {key} [{}] partition {n} ({kind}, start {start}, {sectors} sectors)",
            d.key,
            l.describe()
        )
    };
    // The kernel registered the partitions diskalign read.
    for (n, kp) in &o.kernel {
        if !parts.iter().any(|p| p["number"].as_u64() == Some(*n)) {
            out.tally("kernel-table", false, || {
                format!(
                    "{} {key} [{}]: the kernel has partition {n} ({} at {} x 512, {} x 512), diskalign has none",
                    d.key,
                    l.describe(),
                    kp.name,
                    kp.start,
                    kp.size
                )
            });
        }
    }
    for p in &parts {
        let n = p["number"].as_u64().unwrap_or(0);
        out.partitions += 1;
        let extended = p["kind"] == "extended";
        let start_b = p["start_bytes"].as_u64().unwrap_or(0);
        let size_b = p["size_bytes"].as_u64().unwrap_or(0);
        let Some(kp) = o.kernel.get(&n) else {
            out.tally("kernel-table", false, || {
                format!("{}: the kernel registered no such partition", ctx(n))
            });
            continue;
        };
        // The kernel registers an extended partition as max(lbs/512, 2)
        // sectors (its EBR); only its start says anything.
        let same = kp.start * 512 == start_b && (extended || kp.size * 512 == size_b);
        out.tally("kernel-table", same, || {
            format!(
                "{}: kernel {} start {} size {} (512-byte units), diskalign {} + {} bytes",
                ctx(n),
                kp.name,
                kp.start,
                kp.size,
                start_b,
                size_b
            )
        });
        let ours_ao = p["kernel_offset"].as_i64().unwrap_or(-999);
        out.tally("kernel-ao", ours_ao == kp.alignment_offset, || {
            format!(
                "{}: kernel_offset {ours_ao}, kernel's alignment_offset {}",
                ctx(n),
                kp.alignment_offset
            )
        });
        let real_bsz = o.bsz.get(&n).cloned().unwrap_or_else(|| "(none)".into());
        let ours_bsz = p["device_block_size"].to_string();
        out.tally("bsz", ours_bsz == real_bsz, || {
            format!(
                "{}: device_block_size {ours_bsz}, blockdev --getbsz {} {real_bsz}",
                ctx(n),
                kp.name
            )
        });
        let read_bsz = p["device_block_size_kernel"].to_string();
        out.tally("bsz-read", read_bsz == real_bsz, || {
            format!(
                "{}: device_block_size_kernel {read_bsz}, blockdev --getbsz {} {real_bsz}",
                ctx(n),
                kp.name
            )
        });
        let tools = &p["tools"];
        for (kind, field, what) in [
            ("opt", "parted_optimal", "parted-opt"),
            ("min", "parted_minimal", "parted-min"),
        ] {
            let ours = tools[field].as_bool();
            let real = o.parted.get(&(kind.to_string(), n)).copied();
            out.tally(what, ours.is_some() && ours == real, || {
                format!(
                    "{}: {field} {}, parted align-check {kind} {n} says {}",
                    ctx(n),
                    tools[field],
                    match real {
                        Some(true) => "aligned".to_string(),
                        Some(false) => "not aligned".to_string(),
                        None => format!("nothing; parted printed:\n{}", o.parted_text),
                    }
                )
            });
            if let Some(st) = o.exit.get(&(kind.to_string(), n)) {
                out.tally("parted-exit", ours == Some(*st == 0) && real == Some(*st == 0), || {
                    format!(
                        "{}: {field} {}, `parted -s align-check {kind} {n}` exits {st}, interactive parted says {real:?}",
                        ctx(n),
                        tools[field]
                    )
                });
            }
        }
        let fdisk_msg = format!("Partition {n} does not start on physical sector boundary");
        let fdisk_ok = !o.fdisk.contains(&fdisk_msg);
        let ours = tools["fdisk"].as_bool();
        out.tally("fdisk", ours == Some(fdisk_ok), || {
            format!(
                "{}: fdisk {}, fdisk -l {}",
                ctx(n),
                tools["fdisk"],
                if fdisk_ok {
                    "has no warning".to_string()
                } else {
                    format!("says \"{fdisk_msg}.\"")
                }
            )
        });
        if let Some(sg) = &o.sgdisk {
            let needle = format!("Partition {n} doesn't");
            let sg_ok = !sg.contains(&needle);
            let ours = tools["sgdisk"].as_bool();
            out.tally("sgdisk", ours == Some(sg_ok), || {
                format!(
                    "{}: sgdisk {}, sgdisk -v {}",
                    ctx(n),
                    tools["sgdisk"],
                    first_line_with(sg, &needle)
                        .map(|l| format!("says \"{l}\""))
                        .unwrap_or_else(|| "has no caution".into())
                )
            });
        }
    }
}

/// The agreement table of a scenario's differentials: one row per
/// topology, one column per comparison (`agreed/compared`).
pub fn report(seed: u64, rows: &[(String, &Outcome)]) -> String {
    let mut s = format!("differential, seed {seed:#x} (DISKALIGN_VM_SEED reproduces it)\n");
    let mut head = format!("{:<12} {:>7} {:>6}", "topology", "layouts", "parts");
    for c in COMPARISONS {
        let _ = write!(head, " {c:>13}");
    }
    s.push_str(&head);
    s.push('\n');
    let mut total: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let (mut tl, mut tp) = (0, 0);
    let row =
        |name: &str, layouts: String, parts: usize, counts: &BTreeMap<&str, (usize, usize)>| {
            let mut r = format!("{name:<12} {layouts:>7} {parts:>6}");
            for c in COMPARISONS {
                let cell = counts
                    .get(c)
                    .map(|(a, n)| format!("{a}/{n}"))
                    .unwrap_or_else(|| "-".into());
                let _ = write!(r, " {cell:>13}");
            }
            r.push('\n');
            r
        };
    for (name, o) in rows {
        let compared = o.layouts - o.refused.len() - o.broken.len();
        s.push_str(&row(name, compared.to_string(), o.partitions, &o.counts));
        tl += compared;
        tp += o.partitions;
        for (k, (a, n)) in &o.counts {
            let t = total.entry(k).or_default();
            t.0 += a;
            t.1 += n;
        }
    }
    s.push_str(&row("all", tl.to_string(), tp, &total));
    for (name, o) in rows {
        let _ = writeln!(
            s,
            "{name} (lbs/pbs/min/opt {}): {} GPT and {} DOS layouts compared, {} exactly as generated, {} refused by sfdisk",
            o.topology.as_deref().unwrap_or("?"),
            o.gpt,
            o.dos,
            o.as_generated,
            o.refused.len()
        );
        for r in &o.refused {
            let _ = writeln!(s, "  refused: {r}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_valid(l: &Layout, lbs: u64, sectors: u64) {
        let mut spans: Vec<(u64, u64)> = Vec::new();
        let ext = l.parts.iter().find(|p| p.kind == Kind::Extended);
        for p in &l.parts {
            assert!(p.size >= 1, "{}", l.describe());
            let end = p.start + p.size - 1;
            match l.table {
                Table::Gpt => {
                    assert!(p.start >= gpt_first_usable(lbs), "{}", l.describe());
                    assert!(end <= sectors - gpt_first_usable(lbs), "{}", l.describe());
                }
                Table::Dos => assert!(p.start >= 1 && end < sectors, "{}", l.describe()),
            }
            if p.kind == Kind::Logical {
                let e = ext.expect("a logical needs an extended partition");
                // Its EBR needs a sector before it inside the extended one.
                assert!(
                    p.start > e.start && end < e.start + e.size,
                    "{}",
                    l.describe()
                );
            } else {
                spans.push((p.start, end));
            }
        }
        let mut numbers: Vec<u32> = l.parts.iter().map(|p| p.number).collect();
        numbers.sort();
        numbers.dedup();
        assert_eq!(numbers.len(), l.parts.len(), "{}", l.describe());
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].1 < w[1].0, "overlap in {}", l.describe());
        }
    }

    #[test]
    fn layouts_are_deterministic_valid_and_varied() {
        for (lbs, bytes) in [(512, 8u64 << 30), (4096, 16 << 30), (512, 256 << 20)] {
            let a = generate(seed_for(7, "k"), lbs, bytes, 200);
            assert_eq!(a, generate(seed_for(7, "k"), lbs, bytes, 200));
            assert_ne!(a, generate(seed_for(7, "other"), lbs, bytes, 200));
            for l in &a {
                check_valid(l, lbs, bytes / lbs);
            }
            let logicals = a
                .iter()
                .flat_map(|l| &l.parts)
                .filter(|p| p.kind == Kind::Logical)
                .count();
            assert!(logicals > 50, "{logicals} logical partitions");
            assert!(a.iter().any(|l| l.table == Table::Gpt));
            let starts: Vec<u64> = a.iter().flat_map(|l| &l.parts).map(|p| p.start).collect();
            // Some starts sit on the odd grains, some just off them.
            if lbs == 512 {
                assert!(starts
                    .iter()
                    .any(|s| s % 24 == 0 && s % 8 == 0 && s % 16 != 0));
                assert!(starts.iter().any(|s| s % 2048 == 1 || s % 2048 == 2047));
            }
        }
    }

    #[test]
    fn sfdisk_scripts() {
        let l = Layout {
            index: 0,
            table: Table::Dos,
            parts: vec![
                Part {
                    number: 1,
                    start: 63,
                    size: 100,
                    kind: Kind::Data,
                },
                Part {
                    number: 2,
                    start: 2048,
                    size: 4096,
                    kind: Kind::Extended,
                },
                Part {
                    number: 5,
                    start: 2049,
                    size: 10,
                    kind: Kind::Logical,
                },
                Part {
                    number: 3,
                    start: 8192,
                    size: 8,
                    kind: Kind::Data,
                },
            ],
        };
        assert_eq!(
            l.sfdisk_script(512),
            "label: dos\n/dev/p1 : start=63, size=100, type=83\n\
             /dev/p2 : start=2048, size=4096, type=5\n/dev/p3 : start=8192, size=8, type=83\n\
             /dev/p5 : start=2049, size=10, type=83\n"
        );
        assert_eq!(
            l.describe(),
            "dos 1:63+100 2e:2048+4096 5l:2049+10 3:8192+8"
        );
        let g = Layout {
            index: 0,
            table: Table::Gpt,
            parts: vec![Part {
                number: 1,
                start: 6,
                size: 1,
                kind: Kind::Data,
            }],
        };
        assert_eq!(
            g.sfdisk_script(4096),
            "label: gpt\nfirst-lba: 6\n/dev/p1 : start=6, size=1\n"
        );
    }

    #[test]
    fn parted_interactive_output() {
        let text = "\u{1b}[?7l  (parted) align-check opt 1\n1 not aligned: 44s % 2048s != 7s\n\
                    (parted) align-check min 1\n1 aligned\n\
                    (parted) align-check opt 12\n(parted) align-check min 5\n5 aligned\n";
        let v = parse_parted(text);
        assert_eq!(v.get(&("opt".into(), 1)), Some(&false));
        assert_eq!(v.get(&("min".into(), 1)), Some(&true));
        // No answer for opt 12: nothing recorded, the next answer is min 5's.
        assert_eq!(v.get(&("opt".into(), 12)), None);
        assert_eq!(v.get(&("min".into(), 5)), Some(&true));
    }

    fn differential() -> Differential {
        Differential {
            key: "t".into(),
            node: "$t".into(),
            lbs: 512,
            size: 1 << 30,
            count: 1,
        }
    }

    #[test]
    fn a_layout_is_compared_partition_by_partition() {
        let l = Layout {
            index: 0,
            table: Table::Gpt,
            parts: vec![Part {
                number: 1,
                start: 63,
                size: 8,
                kind: Kind::Data,
            }],
        };
        let check = r#"{"targets":[{"partitions":[{"number":1,"kind":"gpt","start_sector":63,
            "sectors":8,"start_bytes":32256,"size_bytes":4096,"kernel_offset":512,
            "device_block_size":4096,"device_block_size_kernel":4096,
            "tools":{"parted_optimal":false,"parted_minimal":true,"fdisk":false,"sgdisk":false}}]}]}"#;
        let text = format!(
            "@@ sfdisk\n@@ status 0\n@@ check\n{check}\n@@ fdisk\n\
             Partition 1 does not start on physical sector boundary.\n@@ sgdisk\n\
             Caution: Partition 1 doesn't begin on a 8-sector boundary. This may\n\
             @@ sysfs\n1 vdb1 63 8 512\n@@ parted\n(parted) align-check opt 1\n\
             1 not aligned: x\n(parted) align-check min 1\n1 aligned\n@@ exit\nopt 1 1\nmin 1 0\n\
             @@ bsz 1\n4096\n@@ end\n"
        );
        let o = compare(&differential(), std::slice::from_ref(&l), |_| {
            Some(text.clone())
        });
        assert!(!o.failed(), "{:?}", o.disagreements);
        assert_eq!(o.counts["parted-exit"], (2, 2));
        assert_eq!(o.counts["fdisk"], (1, 1));
        // The kernel disagreeing on the offset and fdisk staying silent.
        let bad = text.replace("1 vdb1 63 8 512", "1 vdb1 63 8 0").replace(
            "Partition 1 does not start on physical sector boundary.\n",
            "",
        );
        let o = compare(&differential(), &[l], |_| Some(bad.clone()));
        let what: Vec<&str> = o.disagreements.iter().map(|d| d.comparison).collect();
        assert_eq!(what, ["kernel-ao", "fdisk"]);
        assert!(o.disagreements[0]
            .text
            .contains("kernel_offset 512, kernel's alignment_offset 0"));
    }

    #[test]
    fn refused_and_broken_layouts() {
        let l = Layout {
            index: 0,
            table: Table::Dos,
            parts: vec![Part {
                number: 1,
                start: 1,
                size: 1,
                kind: Kind::Data,
            }],
        };
        let o = compare(&differential(), std::slice::from_ref(&l), |_| {
            Some("@@ sfdisk\nNo free sectors available.\n@@ status 1\n@@ end\n".into())
        });
        assert_eq!(o.refused.len(), 1);
        assert!(!o.failed());
        let o = compare(&differential(), std::slice::from_ref(&l), |_| None);
        assert!(o.failed());
        let o = compare(&differential(), &[l], |_| {
            Some("@@ sfdisk\n@@ status 0\n".into())
        });
        assert!(o.failed(), "output cut short");
    }
}
