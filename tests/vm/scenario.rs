//! The scenario language of the kernel-in-the-loop tests: one small text
//! file per case (tests/vm/README.md describes it), parsed here, and the
//! expectations evaluated against what the guest sent back.

use serde_json::Value;
use std::collections::BTreeMap;

/// A disk attached to a boot. Its image lives in the scenario's work
/// folder, so a later boot of the same scenario sees what an earlier one
/// wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Disk {
    pub name: String,
    pub size: u64,
    pub bus: Bus,
    /// qemu device properties, `key=value` each.
    pub props: Vec<String>,
    pub backing: Backing,
}

/// What is behind a disk on the host side.
#[derive(Debug, Clone, PartialEq)]
pub enum Backing {
    /// A sparse image file (`disk`).
    Image,
    /// No file (`nulldisk`): a qemu `null-co` node, which completes every
    /// request after `latency-ns` (reads return zeros, writes are
    /// dropped), under a `blkdebug` node whose `align` is the unit qemu's
    /// block layer pads requests to: a misaligned write becomes a
    /// read-modify-write, a misaligned read a longer read. A device with a
    /// known internal unit and a real misalignment penalty.
    Null {
        /// `null-co` properties, `key=value` each (`latency-ns`, `read-zeroes`).
        null: Vec<String>,
        /// `blkdebug` properties (`align`, `max-transfer`, ...).
        blkdebug: Vec<String>,
    },
    /// No file (`nbddisk`): an nbdkit server on the host running
    /// tests/vm/costdisk.py on a Unix socket in the scenario's work folder,
    /// attached through qemu's nbd block driver. Each request costs a
    /// chosen latency, longer by a chosen percentage when it covers part
    /// of the unit: a device with a small, known misalignment penalty.
    Nbd(NbdCost),
}

/// The cost model of an `nbddisk` (tests/vm/costdisk.py's parameters).
#[derive(Debug, Clone, PartialEq)]
pub struct NbdCost {
    /// The internal unit in bytes.
    pub unit: u64,
    /// How much longer, in per cent, a write (a read) covering part of a
    /// unit takes than the base latency.
    pub write_pct: f64,
    pub read_pct: f64,
    /// The latency of every request, in microseconds (default 10000).
    pub base_us: u64,
    /// Jitter: per-slot lognormal factor of this SD in per cent (0: none),
    /// slots of `jitter_ms`, on for `jitter_on_s` and off for
    /// `jitter_off_s` in turn (off 0: always on).
    pub jitter_pct: f64,
    pub jitter_ms: f64,
    pub jitter_on_s: f64,
    pub jitter_off_s: f64,
    /// An erase unit: a read lying in two units of `cross` bytes (0: none)
    /// takes `cross_pct` per cent longer, as a flash card's reads do.
    pub cross: u64,
    pub cross_pct: f64,
}

impl NbdCost {
    /// The costdisk.py parameters, `key=value` each.
    pub fn args(&self) -> Vec<String> {
        vec![
            format!("unit={}", self.unit),
            format!("write-pct={}", self.write_pct),
            format!("read-pct={}", self.read_pct),
            format!("base-us={}", self.base_us),
            format!("jitter-pct={}", self.jitter_pct),
            format!("jitter-ms={}", self.jitter_ms),
            format!("jitter-on-s={}", self.jitter_on_s),
            format!("jitter-off-s={}", self.jitter_off_s),
            format!("cross={}", self.cross),
            format!("cross-pct={}", self.cross_pct),
        ]
    }
}

/// The `nbddisk` parameters; `unit` or `cross` is required.
const NBD_PROPS: &[&str] = &[
    "unit",
    "write-pct",
    "read-pct",
    "base-us",
    "jitter-pct",
    "jitter-ms",
    "jitter-on-s",
    "jitter-off-s",
    "cross",
    "cross-pct",
];
pub const NBD_DEFAULT_BASE_US: u64 = 10_000;

/// The `nulldisk` node properties and the qemu node each belongs to.
const NULL_CO_PROPS: &[&str] = &["latency-ns", "read-zeroes"];
const BLKDEBUG_PROPS: &[&str] = &[
    "align",
    "max-transfer",
    "opt-write-zero",
    "max-write-zero",
    "opt-discard",
    "max-discard",
];

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bus {
    /// virtio-blk-pci: passes every block property through exactly.
    Virtio,
    /// scsi-hd on virtio-scsi: the sd driver, as a SATA/SAS disk looks.
    Scsi,
    /// qemu's NVMe controller with the image as namespace 1 (the
    /// properties go to the controller, which passes the block sizes on).
    Nvme,
    /// ide-hd on the q35 machine's AHCI controller: libata, ATA IDENTIFY
    /// through SAT. Needs `kernel generic` (the cloud kernel has no ahci).
    Ahci,
    /// qemu's NVMe controller with the image as a zoned namespace
    /// (nvme-ns `zoned=on`, NVMe ZNS: host-managed to the kernel); the
    /// properties go to the namespace (`zoned.zone_size=4M`). Needs
    /// `kernel generic` (nvme).
    Zns,
    /// qemu's SD card (`sd-card`) on an SDHCI controller of its own
    /// (`sdhci-pci`): the mmc core reads its CID, CSD and SD Status. Needs
    /// `kernel generic` (sdhci-pci, mmc_block); no serial (the guest finds
    /// the mmcblk disk); qemu takes only a power-of-two size.
    Sd,
}

/// The guest kernel of a boot.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Kernel {
    /// Debian's cloud kernel (the default: boots fastest, no libata).
    #[default]
    Cloud,
    /// Debian's generic kernel (linux-image-amd64): has ahci.
    Generic,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A preparation command; the scenario stops when it fails.
    Run(String),
    /// A command whose stdout and exit status go back to the host.
    Capture(String, String),
    /// `set NAME CMD`: a guest variable for later steps (the scenario
    /// stops when CMD fails).
    Set(String, String),
    /// `differential KEY NODE LBS SIZE COUNT`: generated layouts compared
    /// with the real tools (tests/vm/differential.rs).
    Differential(Differential),
}

/// A generated differential on one guest disk: `count` random layouts,
/// each written and judged in the guest, compared on the host. Every
/// disagreement fails the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Differential {
    /// Names the topology in the report; the captures are `KEY-1` ...
    pub key: String,
    /// The disk's node as the guest shell sees it: `$usb`, `$sd`.
    pub node: String,
    /// The disk's logical sector size and size in bytes (the layouts are
    /// generated on the host).
    pub lbs: u64,
    pub size: u64,
    pub count: usize,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Boot {
    pub disks: Vec<Disk>,
    /// `host CMD`: run on the host (sh, in the scenario's work folder)
    /// before this boot starts, in order: a disk image made by a host
    /// tool (a zfs-fuse pool) for a `disk` of the same name to attach.
    pub host: Vec<String>,
    pub steps: Vec<Step>,
    pub timeout_s: u64,
    pub kernel: Kernel,
}

impl Boot {
    /// Whether a `run`, `set` or `capture` command of this boot names the
    /// program `word`: as a whole word or a path's last part (`fio -`,
    /// `x | /usr/bin/fio`), not inside another word (`fio.json`, `myfio`).
    pub fn calls(&self, word: &str) -> bool {
        self.steps.iter().any(|s| match s {
            Step::Run(cmd) | Step::Capture(_, cmd) | Step::Set(_, cmd) => cmd
                .split(|c: char| c.is_whitespace() || ";|&()`$".contains(c))
                .any(|w| w == word || w.rsplit('/').next() == Some(word)),
            Step::Differential(_) => false,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// `$KEY`, `$KEY/json/pointer` (`*` matches every element), `$KEY.status`.
    Ref {
        key: String,
        pointer: Option<String>,
        status: bool,
    },
    Literal(Value),
    /// `K * $REF` (right side only): a number times a captured number.
    Scaled(f64, Box<Operand>),
}

impl Operand {
    /// The capture this operand reads, if any.
    fn key(&self) -> Option<&str> {
        match self {
            Operand::Ref { key, .. } => Some(key),
            Operand::Scaled(_, of) => of.key(),
            Operand::Literal(_) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Eq,
    Ne,
    Contains,
    Lacks,
    /// `in [A, B, ...]`: the left value is one of the right array's.
    In,
    Ge,
    Le,
    /// `within P%`: both numbers, |left - right| <= P % of |right| (the
    /// right side is the reference).
    Within(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    pub line: usize,
    pub text: String,
    pub left: Operand,
    pub op: Op,
    pub right: Operand,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub boots: Vec<Boot>,
    pub expects: Vec<Expect>,
    /// `alone`: no other guest runs beside this scenario's (its timings
    /// are the measurement, and its load slows the other guests).
    pub alone: bool,
    /// `attempts N` (1 to 3, default 1): a scenario whose expectations are
    /// timings may run again when it fails, each failed attempt printed.
    /// Not for what every run must hold (a wrong unit is never retried).
    pub attempts: u32,
}

/// What one capture sent back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Captured {
    pub stdout: String,
    pub status: i32,
}

pub const DEFAULT_TIMEOUT_S: u64 = 150;

pub fn parse(name: &str, text: &str) -> Result<Scenario, String> {
    let mut boots: Vec<Boot> = Vec::new();
    let mut expects = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut differentials = 0;
    let mut alone = false;
    let mut attempts = 1;
    let mut pending = String::new();
    let mut first_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        if pending.is_empty() {
            first_line = line_no;
        }
        let trimmed = raw.trim();
        if let Some(head) = trimmed.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let line = std::mem::take(&mut pending);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |m: String| format!("{name}:{first_line}: {m}");
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        if word == "boot" {
            boots.push(Boot {
                timeout_s: DEFAULT_TIMEOUT_S,
                ..Boot::default()
            });
            continue;
        }
        if word == "expect" {
            expects.push(parse_expect(first_line, rest).map_err(err)?);
            continue;
        }
        if word == "alone" && rest.is_empty() {
            alone = true;
            continue;
        }
        if word == "attempts" {
            attempts = rest
                .parse()
                .ok()
                .filter(|n| (1..=3).contains(n))
                .ok_or_else(|| err(format!("`attempts {rest}`: 1, 2 or 3")))?;
            continue;
        }
        let Some(boot) = boots.last_mut() else {
            return Err(err(format!("`{word}` before the first `boot`")));
        };
        match word {
            "disk" => boot.disks.push(parse_disk(rest).map_err(err)?),
            "nulldisk" => boot.disks.push(parse_nulldisk(rest).map_err(err)?),
            "nbddisk" => boot.disks.push(parse_nbddisk(rest).map_err(err)?),
            "kernel" => {
                boot.kernel = match rest {
                    "cloud" => Kernel::Cloud,
                    "generic" => Kernel::Generic,
                    _ => return Err(err(format!("kernel `{rest}`: cloud or generic"))),
                }
            }
            "timeout" => {
                boot.timeout_s = rest
                    .parse()
                    .map_err(|_| err(format!("timeout `{rest}` is not a number of seconds")))?
            }
            "run" if !rest.is_empty() => boot.steps.push(Step::Run(rest.to_string())),
            "host" if !rest.is_empty() => boot.host.push(rest.to_string()),
            "set" => {
                let (var, cmd) = rest
                    .split_once(char::is_whitespace)
                    .ok_or_else(|| err("set needs a variable and a command".into()))?;
                if !shell_ident(var) {
                    return Err(err(format!("set `{var}`: not a shell variable name")));
                }
                boot.steps
                    .push(Step::Set(var.to_string(), cmd.trim().to_string()));
            }
            "differential" => {
                let d = parse_differential(rest).map_err(err)?;
                if keys.contains(&d.key) {
                    return Err(err(format!("key `{}` is used twice", d.key)));
                }
                keys.push(d.key.clone());
                differentials += 1;
                boot.steps.push(Step::Differential(d));
            }
            "capture" => {
                let (key, cmd) = rest
                    .split_once(char::is_whitespace)
                    .ok_or_else(|| err("capture needs a key and a command".into()))?;
                if !valid_key(key) {
                    return Err(err(format!(
                        "capture key `{key}`: use letters, digits, _ and -"
                    )));
                }
                if keys.iter().any(|k| k == key) {
                    return Err(err(format!("capture key `{key}` is used twice")));
                }
                keys.push(key.to_string());
                boot.steps
                    .push(Step::Capture(key.to_string(), cmd.trim().to_string()));
            }
            _ => return Err(err(format!("unknown line `{line}`"))),
        }
    }
    if boots.is_empty() {
        return Err(format!("{name}: no `boot`"));
    }
    if expects.is_empty() && differentials == 0 {
        return Err(format!(
            "{name}: no `expect` or `differential`: a scenario must assert something"
        ));
    }
    for e in &expects {
        for o in [&e.left, &e.right] {
            if let Some(key) = o.key() {
                if !keys.iter().any(|k| k == key) {
                    return Err(format!(
                        "{name}:{}: `{key}` is not captured by any boot",
                        e.line
                    ));
                }
            }
        }
    }
    Ok(Scenario {
        name: name.to_string(),
        boots,
        expects,
        alone,
        attempts,
    })
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn shell_ident(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 20
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

fn parse_differential(rest: &str) -> Result<Differential, String> {
    let usage = "differential KEY NODE LBS SIZE COUNT";
    let w: Vec<&str> = rest.split_whitespace().collect();
    let [key, node, lbs, size, count] = w.as_slice() else {
        return Err(format!("expected `{usage}`"));
    };
    if !valid_key(key) || key.contains('-') {
        return Err(format!(
            "differential key `{key}`: use letters, digits and _"
        ));
    }
    if !node.starts_with('$') || !shell_ident(&node[1..]) {
        return Err(format!("node `{node}`: a guest variable such as $usb"));
    }
    let lbs: u64 = lbs
        .parse()
        .ok()
        .filter(|l: &u64| *l >= 512 && l.is_power_of_two())
        .ok_or_else(|| format!("LBS `{lbs}`: 512, 4096, ..."))?;
    let size = parse_size(size)
        .filter(|s| *s >= 16 << 20 && s % lbs == 0)
        .ok_or_else(|| format!("SIZE `{size}`: at least 16M, a multiple of LBS"))?;
    let count = count
        .parse()
        .ok()
        .filter(|c| *c > 0)
        .ok_or_else(|| format!("COUNT `{count}`: how many layouts"))?;
    Ok(Differential {
        key: key.to_string(),
        node: node.to_string(),
        lbs,
        size,
        count,
    })
}

fn parse_disk(rest: &str) -> Result<Disk, String> {
    let mut it = rest.split_whitespace();
    let usage = "disk NAME SIZE virtio|scsi|nvme|ahci|zns|sd [prop=value,...]";
    let (Some(name), Some(size), Some(bus)) = (it.next(), it.next(), it.next()) else {
        return Err(format!("expected `{usage}`"));
    };
    if !shell_ident(name) {
        return Err(format!(
            "disk name `{name}`: a shell identifier of at most 20 characters (it is the disk's serial and the guest variable holding its node)"
        ));
    }
    let size = parse_size(size)
        .filter(|&s| s > 0 && s % 4096 == 0)
        .ok_or_else(|| format!("disk size `{size}`: a multiple of 4 KiB such as 64M or 8G"))?;
    let bus = match bus {
        "virtio" => Bus::Virtio,
        "scsi" => Bus::Scsi,
        "nvme" => Bus::Nvme,
        "ahci" => Bus::Ahci,
        "zns" => Bus::Zns,
        "sd" => Bus::Sd,
        _ => return Err(format!("bus `{bus}`: virtio, scsi, nvme, ahci, zns or sd")),
    };
    if bus == Bus::Sd && !size.is_power_of_two() {
        return Err(format!(
            "disk size `{size}`: qemu's SD card takes a power of two only"
        ));
    }
    Ok(Disk {
        name: name.to_string(),
        size,
        bus,
        props: parse_props(it)?,
        backing: Backing::Image,
    })
}

/// `key=value` items, comma-separated, from the remaining words.
fn parse_props<'a>(words: impl Iterator<Item = &'a str>) -> Result<Vec<String>, String> {
    let mut props = Vec::new();
    for p in words.flat_map(|p| p.split(',')).filter(|p| !p.is_empty()) {
        if p.split_once('=')
            .is_none_or(|(k, v)| k.is_empty() || v.is_empty())
        {
            return Err(format!("property `{p}`: expected key=value"));
        }
        props.push(p.to_string());
    }
    Ok(props)
}

fn parse_nulldisk(rest: &str) -> Result<Disk, String> {
    let mut it = rest.split_whitespace();
    let usage = "nulldisk NAME SIZE NODEPROPS [DEVICEPROPS]";
    let (Some(name), Some(size), Some(node)) = (it.next(), it.next(), it.next()) else {
        return Err(format!("expected `{usage}`"));
    };
    let disk = parse_disk(&format!("{name} {size} virtio"))?;
    let mut null = Vec::new();
    let mut blkdebug = Vec::new();
    for p in parse_props(std::iter::once(node))? {
        let key = p.split_once('=').map_or("", |(k, _)| k);
        if NULL_CO_PROPS.contains(&key) {
            null.push(p);
        } else if BLKDEBUG_PROPS.contains(&key) {
            blkdebug.push(p);
        } else {
            return Err(format!(
                "node property `{p}`: one of {} (null-co) or {} (blkdebug)",
                NULL_CO_PROPS.join(", "),
                BLKDEBUG_PROPS.join(", ")
            ));
        }
    }
    Ok(Disk {
        props: parse_props(it)?,
        backing: Backing::Null { null, blkdebug },
        ..disk
    })
}

fn parse_nbddisk(rest: &str) -> Result<Disk, String> {
    let mut it = rest.split_whitespace();
    let usage = "nbddisk NAME SIZE unit=BYTES|cross=BYTES[,write-pct=P][,read-pct=P][,base-us=US][,jitter-pct=P,jitter-ms=MS,jitter-on-s=S,jitter-off-s=S][,cross-pct=P] [DEVICEPROPS]";
    let (Some(name), Some(size), Some(node)) = (it.next(), it.next(), it.next()) else {
        return Err(format!("expected `{usage}`"));
    };
    let disk = parse_disk(&format!("{name} {size} virtio"))?;
    let mut cost = NbdCost {
        unit: 0,
        write_pct: 0.0,
        read_pct: 0.0,
        base_us: NBD_DEFAULT_BASE_US,
        jitter_pct: 0.0,
        jitter_ms: 20.0,
        jitter_on_s: 0.0,
        jitter_off_s: 0.0,
        cross: 0,
        cross_pct: 0.0,
    };
    for p in parse_props(std::iter::once(node))? {
        let (key, value) = p.split_once('=').unwrap_or(("", ""));
        let bad = || format!("`{p}`: not a valid value");
        match key {
            // Not only powers of two: flash cards have 12 MiB erase units.
            "unit" | "cross" => {
                *(if key == "unit" {
                    &mut cost.unit
                } else {
                    &mut cost.cross
                }) = value
                    .parse()
                    .ok()
                    .filter(|u: &u64| *u >= 512 && u % 512 == 0)
                    .ok_or_else(|| format!("`{p}`: a multiple of 512 bytes"))?
            }
            "write-pct" | "read-pct" | "jitter-pct" | "jitter-ms" | "jitter-on-s"
            | "jitter-off-s" | "cross-pct" => {
                let v: f64 = value
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .filter(|v: &f64| key != "jitter-ms" || *v > 0.0)
                    .ok_or_else(bad)?;
                *(match key {
                    "write-pct" => &mut cost.write_pct,
                    "read-pct" => &mut cost.read_pct,
                    "jitter-pct" => &mut cost.jitter_pct,
                    "jitter-ms" => &mut cost.jitter_ms,
                    "jitter-on-s" => &mut cost.jitter_on_s,
                    "jitter-off-s" => &mut cost.jitter_off_s,
                    _ => &mut cost.cross_pct,
                }) = v;
            }
            "base-us" => cost.base_us = value.parse().map_err(|_| bad())?,
            _ => {
                return Err(format!(
                    "node property `{p}`: one of {}",
                    NBD_PROPS.join(", ")
                ))
            }
        }
    }
    if cost.unit == 0 && cost.cross == 0 {
        return Err(format!(
            "nbddisk needs unit=BYTES or cross=BYTES: `{usage}`"
        ));
    }
    // An erase-unit device needs no write unit: costdisk.py's 4096, which
    // costs nothing without write-pct or read-pct.
    cost.unit = Some(cost.unit).filter(|&u| u > 0).unwrap_or(4096);
    Ok(Disk {
        props: parse_props(it)?,
        backing: Backing::Nbd(cost),
        ..disk
    })
}

fn parse_operand(s: &str) -> Result<Operand, String> {
    // `K * $REF`; any other text with " * " stays a literal string.
    if let Some((k, r)) = s
        .split_once(" * ")
        .filter(|(_, r)| r.trim_start().starts_with('$'))
    {
        let k: f64 = k
            .trim()
            .parse()
            .map_err(|_| format!("`{s}`: K * $REF needs a number K"))?;
        return Ok(Operand::Scaled(k, Box::new(parse_operand(r.trim())?)));
    }
    if let Some(r) = s.strip_prefix('$') {
        let (key, pointer, status) = if let Some(k) = r.strip_suffix(".status") {
            (k, None, true)
        } else if let Some(i) = r.find('/') {
            (&r[..i], Some(r[i..].to_string()), false)
        } else {
            (r, None, false)
        };
        if !valid_key(key) {
            return Err(format!("`{s}`: bad capture key"));
        }
        return Ok(Operand::Ref {
            key: key.to_string(),
            pointer,
            status,
        });
    }
    Ok(Operand::Literal(literal(s)))
}

fn literal(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string()))
}

fn parse_expect(line: usize, rest: &str) -> Result<Expect, String> {
    let ops = [
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("contains", Op::Contains),
        ("lacks", Op::Lacks),
        ("in", Op::In),
    ];
    let (left, tail) = rest
        .split_once(char::is_whitespace)
        .ok_or_else(|| "expected `expect $REF OP VALUE`".to_string())?;
    let tail = tail.trim();
    let (op_word, right) = tail.split_once(char::is_whitespace).unwrap_or((tail, ""));
    let mut right = right.trim();
    let op = if op_word == "within" {
        let (pct, rest) = right.split_once(char::is_whitespace).unwrap_or((right, ""));
        right = rest.trim();
        let p = pct
            .strip_suffix('%')
            .and_then(|p| p.parse::<f64>().ok())
            .filter(|p| p.is_finite() && *p >= 0.0)
            .ok_or_else(|| format!("`within {pct}`: a tolerance such as 10%"))?;
        Op::Within(p)
    } else {
        ops.iter()
            .find(|(w, _)| *w == op_word)
            .map(|&(_, o)| o)
            .ok_or_else(|| {
                format!("operator `{op_word}`: one of == != >= <= contains lacks in within")
            })?
    };
    if right.is_empty() {
        return Err("expect has no right-hand side".into());
    }
    let left = parse_operand(left)?;
    if !matches!(left, Operand::Ref { .. }) {
        return Err("the left side of expect must be a $capture".into());
    }
    Ok(Expect {
        line,
        text: rest.to_string(),
        left,
        op,
        right: parse_operand(right)?,
    })
}

/// A JSON pointer where a `*` segment matches every element (the result
/// is then an array of what each element gave) and a `[path=value]`
/// segment picks the one array element whose field at the dotted `path`
/// is `value` (`[array.level=raid5]`; several conditions, all to hold,
/// separated by commas: `[pattern=randread,block_size=65536]`): none or
/// several such elements is an error.
fn select(v: &Value, pointer: &str) -> Option<Value> {
    let segs: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    select_segs(v, &segs)
}

fn select_segs(v: &Value, segs: &[String]) -> Option<Value> {
    let Some((first, rest)) = segs.split_first() else {
        return Some(v.clone());
    };
    if first == "*" {
        let items: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            Value::Object(o) => o.values().collect(),
            _ => return None,
        };
        let mut out = Vec::new();
        for item in items {
            match select_segs(item, rest)? {
                Value::Array(a) if rest.iter().any(|s| s == "*") => out.extend(a),
                x => out.push(x),
            }
        }
        return Some(Value::Array(out));
    }
    if let Some(filter) = first.strip_prefix('[').and_then(|f| f.strip_suffix(']')) {
        let mut conds = Vec::new();
        for cond in filter.split(',') {
            let (path, want) = cond.split_once('=')?;
            conds.push((path, literal(want)));
        }
        let hits: Vec<&Value> = v
            .as_array()?
            .iter()
            .filter(|item| {
                conds.iter().all(|(path, want)| {
                    path.split('.')
                        .try_fold(*item, |cur, k| cur.get(k))
                        .is_some_and(|x| same(x, want))
                })
            })
            .collect();
        return match hits.as_slice() {
            [one] => select_segs(one, rest),
            _ => None,
        };
    }
    let next = match v {
        Value::Array(a) => a.get(first.parse::<usize>().ok()?)?,
        Value::Object(o) => o.get(first)?,
        _ => return None,
    };
    select_segs(next, rest)
}

fn resolve(o: &Operand, caps: &BTreeMap<String, Captured>) -> Result<Value, String> {
    match o {
        Operand::Literal(v) => Ok(v.clone()),
        Operand::Scaled(k, of) => Ok(Value::from(k * number(&resolve(of, caps)?)?)),
        Operand::Ref {
            key,
            pointer,
            status,
        } => {
            let c = caps
                .get(key)
                .ok_or_else(|| format!("${key} was not captured (the boot stopped before it?)"))?;
            if *status {
                return Ok(Value::from(c.status));
            }
            let text = c.stdout.trim();
            match pointer {
                None => Ok(literal(text)),
                Some(p) => {
                    let doc: Value = serde_json::from_str(text)
                        .map_err(|e| format!("${key} is not JSON ({e})"))?;
                    select(&doc, p).ok_or_else(|| format!("${key}{p} is not in the document"))
                }
            }
        }
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

fn contains(hay: &Value, needle: &Value) -> Result<bool, String> {
    match (hay, needle) {
        (Value::Array(a), n) => Ok(a.iter().any(|x| same(x, n))),
        (Value::String(s), Value::String(n)) => Ok(s.contains(n.as_str())),
        (Value::String(s), n) => Ok(s.contains(&n.to_string())),
        _ => Err(format!("`contains` needs an array or a string, got {hay}")),
    }
}

fn number(v: &Value) -> Result<f64, String> {
    v.as_f64().ok_or_else(|| format!("{v} is not a number"))
}

/// Ok(()) when the expectation holds, else why not (with the values seen).
pub fn evaluate(e: &Expect, caps: &BTreeMap<String, Captured>) -> Result<(), String> {
    let l = resolve(&e.left, caps)?;
    let r = resolve(&e.right, caps)?;
    let ok = match e.op {
        Op::Eq => same(&l, &r),
        Op::Ne => !same(&l, &r),
        Op::Contains => contains(&l, &r)?,
        Op::Lacks => !contains(&l, &r)?,
        Op::In => contains(&r, &l)?,
        Op::Ge => number(&l)? >= number(&r)?,
        Op::Le => number(&l)? <= number(&r)?,
        Op::Within(pct) => {
            let (a, b) = (number(&l)?, number(&r)?);
            if (a - b).abs() > pct / 100.0 * b.abs() {
                let off = if b == 0.0 {
                    "infinitely".to_string()
                } else {
                    format!("{:+.1} %", (a - b) / b.abs() * 100.0)
                };
                return Err(format!(
                    "left is {l}, right is {r}: left is off by {off} (allowed {pct} %)"
                ));
            }
            true
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!("left is {l}, right is {r}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> BTreeMap<String, Captured> {
        let mut m = BTreeMap::new();
        m.insert(
            "check".to_string(),
            Captured {
                stdout: r#"{"targets":[{"findings":[{"code":"a","k":1},{"code":"b","k":1},{"code":"b","k":2}],"n":4096}]}"#.into(),
                status: 1,
            },
        );
        m.insert(
            "ao".to_string(),
            Captured {
                stdout: "3584\r\n".into(),
                status: 0,
            },
        );
        m.insert(
            "text".to_string(),
            Captured {
                stdout: "Partition 1 does not start on physical sector boundary.\n".into(),
                status: 0,
            },
        );
        m
    }

    fn check(line: &str) -> Result<(), String> {
        let s = parse(
            "t",
            &format!("boot\ncapture check x\ncapture ao x\ncapture text x\nexpect {line}\n"),
        )?;
        evaluate(&s.expects[0], &caps())
    }

    #[test]
    fn expectations() {
        assert!(check("$check/targets/0/n == 4096").is_ok());
        assert!(check("$check/targets/0/n == 4096.0").is_ok());
        assert!(check("$check/targets/0/n == $check/targets/0/n").is_ok());
        assert!(check("$check/targets/0/n != 512").is_ok());
        assert!(check("$check/targets/0/n >= 4096").is_ok());
        assert!(check("$check/targets/0/n <= 4095").is_err());
        assert!(check("$check.status == 1").is_ok());
        assert!(check("$ao == 3584").is_ok());
        assert!(check("$check/targets/*/findings/*/code contains b").is_ok());
        assert!(check("$check/targets/*/findings/*/code == [\"a\",\"b\",\"b\"]").is_ok());
        assert!(check("$check/targets/0/findings/*/code lacks c").is_ok());
        assert!(check("$check/targets/0/findings/*/code lacks a").is_err());
        assert!(check("$text contains does not start on physical").is_ok());
        assert!(check("$ao in [3584, null]").is_ok());
        assert!(check("$ao in [512, null]").is_err());
        assert!(check("$check/targets/0/findings/0/code in [\"a\", \"c\"]").is_ok());
        assert!(check("$ao in 3584").is_err());
        assert!(check("$check/targets/0/findings/[code=a]/k == 1").is_ok());
        // Two findings are b: the filter must pick one.
        assert!(check("$check/targets/0/findings/[code=b]/k == 1").is_err());
        assert!(check("$check/targets/0/findings/[code=b,k=2]/k == 2").is_ok());
        assert!(check("$check/targets/0/findings/[k=1,code=b]/code == b").is_ok());
        assert!(check("$check/targets/0/findings/[code=c]/code == c").is_err());
        let e = check("$check/targets/1/n == 1").unwrap_err();
        assert!(e.contains("not in the document"), "{e}");
    }

    #[test]
    fn parse_errors_name_the_line() {
        let e = parse("t", "boot\ndisk 1a 8G virtio\n").unwrap_err();
        assert!(e.starts_with("t:2:"), "{e}");
        let e = parse("t", "boot\ncapture k x\nexpect $nope == 1\n").unwrap_err();
        assert!(e.contains("not captured"), "{e}");
        let e = parse("t", "run x\n").unwrap_err();
        assert!(e.contains("before the first `boot`"), "{e}");
        let s = parse(
            "t",
            "boot\ndisk d 8G virtio logical_block_size=4096,\\\n  physical_block_size=4096\ncapture k x\nexpect $k == 1\n",
        )
        .unwrap();
        assert_eq!(s.boots[0].disks[0].props.len(), 2);
        assert_eq!(s.boots[0].disks[0].size, 8 << 30);
        assert_eq!(s.boots[0].disks[0].backing, Backing::Image);
        assert_eq!(s.attempts, 1);
        let s = parse(
            "t",
            "alone\nattempts 2\nboot\ncapture k x\nexpect $k == 1\n",
        )
        .unwrap();
        assert_eq!((s.alone, s.attempts), (true, 2));
        let e = parse("t", "attempts 5\nboot\n").unwrap_err();
        assert!(e.contains("1, 2 or 3"), "{e}");
    }

    #[test]
    fn nvme_and_ahci_disks_and_the_generic_kernel() {
        let s = parse(
            "t",
            "boot\nkernel generic\ndisk nv 1G nvme physical_block_size=4096\ndisk sata 1G ahci\ncapture k x\nexpect $k == 1\nboot\ncapture j x\n",
        )
        .unwrap();
        assert_eq!(s.boots[0].kernel, Kernel::Generic);
        assert_eq!(s.boots[1].kernel, Kernel::Cloud);
        assert_eq!(s.boots[0].disks[0].bus, Bus::Nvme);
        assert_eq!(s.boots[0].disks[1].bus, Bus::Ahci);
        let e = parse("t", "boot\nkernel rt\ncapture k x\nexpect $k == 1\n").unwrap_err();
        assert!(e.contains("cloud or generic"), "{e}");
        let e = parse("t", "boot\ndisk d 1G ide\ncapture k x\nexpect $k == 1\n").unwrap_err();
        assert!(e.contains("virtio, scsi, nvme, ahci, zns or sd"), "{e}");
    }

    #[test]
    fn nulldisk_splits_its_node_properties() {
        let s = parse(
            "t",
            "boot\nnulldisk u4k 4G align=4096,latency-ns=2000000,max-transfer=65536 physical_block_size=4096\ncapture k x\nexpect $k == 1\n",
        )
        .unwrap();
        let d = &s.boots[0].disks[0];
        assert_eq!(d.name, "u4k");
        assert_eq!(d.size, 4 << 30);
        assert_eq!(d.bus, Bus::Virtio);
        assert_eq!(d.props, ["physical_block_size=4096"]);
        assert_eq!(
            d.backing,
            Backing::Null {
                null: vec!["latency-ns=2000000".into()],
                blkdebug: vec!["align=4096".into(), "max-transfer=65536".into()],
            }
        );
        let d = parse_nulldisk("n 1G latency-ns=0").unwrap();
        assert!(d.props.is_empty());
        let e = parse_nulldisk("n 1G size=5").unwrap_err();
        assert!(e.contains("one of latency-ns"), "{e}");
        let e = parse_nulldisk("n 1G").unwrap_err();
        assert!(e.contains("NODEPROPS"), "{e}");
        let e = parse_nulldisk("n 1000 align=4096").unwrap_err();
        assert!(e.contains("multiple of 4 KiB"), "{e}");
    }

    #[test]
    fn nbddisk_takes_its_cost_model() {
        let s = parse(
            "t",
            "boot\nnbddisk w16 4G unit=16384,write-pct=5,read-pct=3,base-us=2000 physical_block_size=4096\ncapture k x\nexpect $k == 1\n",
        )
        .unwrap();
        let d = &s.boots[0].disks[0];
        assert_eq!(d.name, "w16");
        assert_eq!(d.props, ["physical_block_size=4096"]);
        assert_eq!(
            d.backing,
            Backing::Nbd(NbdCost {
                unit: 16384,
                write_pct: 5.0,
                read_pct: 3.0,
                base_us: 2000,
                jitter_pct: 0.0,
                jitter_ms: 20.0,
                jitter_on_s: 0.0,
                jitter_off_s: 0.0,
                cross: 0,
                cross_pct: 0.0,
            })
        );
        let d = parse_nbddisk("n 1G unit=4096").unwrap();
        let Backing::Nbd(plain) = &d.backing else {
            panic!("{d:?}")
        };
        assert_eq!(
            (plain.unit, plain.write_pct, plain.read_pct),
            (4096, 0.0, 0.0)
        );
        assert_eq!(plain.base_us, NBD_DEFAULT_BASE_US);
        // Jitter switched on and off, as costdisk.py takes it.
        let d = parse_nbddisk(
            "j 1G unit=65536,write-pct=3,jitter-pct=12,jitter-on-s=20,jitter-off-s=20",
        )
        .unwrap();
        let Backing::Nbd(j) = &d.backing else {
            panic!("{d:?}")
        };
        assert!(
            j.args().contains(&"jitter-pct=12".to_string()),
            "{:?}",
            j.args()
        );
        assert!(
            j.args().contains(&"jitter-off-s=20".to_string()),
            "{:?}",
            j.args()
        );
        assert!(parse_nbddisk("j 1G unit=4096,jitter-ms=0").is_err());
        // An erase unit of 12 MiB, no write unit: costdisk.py's 4096.
        let d = parse_nbddisk("e 4G cross=12582912,cross-pct=20,base-us=2000").unwrap();
        let Backing::Nbd(e) = &d.backing else {
            panic!("{d:?}")
        };
        assert_eq!((e.unit, e.cross, e.cross_pct), (4096, 12 << 20, 20.0));
        assert!(e.args().contains(&"cross=12582912".to_string()));
        assert!(e.args().contains(&"cross-pct=20".to_string()));
        assert!(parse_nbddisk("e 1G cross=1000").is_err());
        assert!(parse_nbddisk("e 1G cross=4096,cross-pct=-5").is_err());
        let e = parse_nbddisk("n 1G write-pct=5").unwrap_err();
        assert!(e.contains("needs unit"), "{e}");
        let e = parse_nbddisk("n 1G unit=1000").unwrap_err();
        assert!(e.contains("multiple of 512"), "{e}");
        let e = parse_nbddisk("n 1G unit=4096,write-pct=-1").unwrap_err();
        assert!(e.contains("not a valid value"), "{e}");
        let e = parse_nbddisk("n 1G unit=4096,latency-ns=5").unwrap_err();
        assert!(e.contains("one of unit"), "{e}");
        let e = parse_nbddisk("n 1G").unwrap_err();
        assert!(e.contains("expected"), "{e}");
    }

    #[test]
    fn within_a_tolerance_of_the_right_side() {
        let mut c = caps();
        c.insert(
            "fio".into(),
            Captured {
                stdout: r#"{"jobs":[{"read":{"iops":1000.5}}]}"#.into(),
                status: 0,
            },
        );
        let check = |line: &str| {
            let s = parse(
                "t",
                &format!("boot\ncapture fio x\ncapture ao x\nexpect {line}\n"),
            )?;
            evaluate(&s.expects[0], &c)
        };
        assert!(check("$fio/jobs/0/read/iops within 10% 1000").is_ok());
        assert!(check("$fio/jobs/0/read/iops within 10% 1100").is_ok());
        assert!(check("$fio/jobs/0/read/iops within 10% 910").is_ok());
        assert!(check("$fio/jobs/0/read/iops within 0% 1000.5").is_ok());
        let e = check("$fio/jobs/0/read/iops within 10% 900").unwrap_err();
        assert!(e.contains("off by +11.2 % (allowed 10 %)"), "{e}");
        let e = check("$fio/jobs/0/read/iops within 10% 1200").unwrap_err();
        assert!(e.contains("off by -16.6 %"), "{e}");
        assert!(check("$ao within 1% $fio/jobs/0/read/iops").is_err());
        assert!(check("$ao within 1% 3584").is_ok());
        let e = check("$ao within 10 3584").unwrap_err();
        assert!(e.contains("a tolerance such as 10%"), "{e}");
        let e = check("$ao within 10%").unwrap_err();
        assert!(e.contains("no right-hand side"), "{e}");
        let e = check("$fio within 10% 1").unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        let e = check("$ao within 5% 0").unwrap_err();
        assert!(e.contains("infinitely"), "{e}");
    }

    #[test]
    fn a_number_times_a_capture() {
        assert!(check("$ao <= 0.5 * $check/targets/0/n").is_err());
        assert!(check("$ao <= 0.9 * $check/targets/0/n").is_ok());
        assert!(check("$ao >= 0.875 * $check/targets/0/n").is_ok());
        assert!(check("$ao == 0.875 * $check/targets/0/n").is_ok());
        let e = check("$ao <= 0.5 * $check/targets/0/n").unwrap_err();
        assert!(e.contains("right is 2048"), "{e}");
        let e = check("$ao <= x * $check/targets/0/n").unwrap_err();
        assert!(e.contains("needs a number"), "{e}");
        assert!(check("$text contains a * b").is_err());
        assert!(check("$text lacks a * b").is_ok());
        let e = check("$ao <= 2 * $text").unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        let e = check("$ao <= 2 * $nope").unwrap_err();
        assert!(e.contains("not captured"), "{e}");
    }

    #[test]
    fn a_boot_calls_a_program_by_word() {
        let s = parse(
            "t",
            "boot\nrun echo x > /tmp/fio.json\ncapture k myfio\nexpect $k == 1\nboot\nset v x | /usr/bin/fio --name=a\nboot\ncapture f t=$(fio -)\n",
        )
        .unwrap();
        assert!(!s.boots[0].calls("fio"));
        assert!(s.boots[1].calls("fio"));
        assert!(s.boots[2].calls("fio"));
    }
}
