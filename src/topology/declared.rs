//! What the device itself declares, beside what the kernel made of it: the
//! identify data `sys::passthrough` fetches, parsed by `identify/`, each
//! value set against the kernel's limit it feeds and the kernel's own rule
//! for it, and the disagreements said in sentences.
//!
//! The kernel's rules, unchanged from the 5.x sources through 6.18 (so in
//! Debian 12's 6.1 too; only where the limits are stored moved, from
//! `blk_queue_*` calls to `queue_limits`):
//! - NVMe, drivers/nvme/host/core.c `nvme_update_disk_info`: the logical
//!   block is the LBA data size of the format in use; only when NSFEAT
//!   bit 4 is set, the physical block is the LBA size × (1 + NPWG) and
//!   io_opt the LBA size × (1 + NOWS), else they stay one block and 0;
//!   io_min is that same NPWG size; the physical block is then capped by
//!   the atomic write size: (1 + NAWUPF) blocks when NABO is 0 and NSFEAT
//!   bit 1 is set and NAWUPF is not 0, else (1 + the controller's AWUPF)
//!   blocks when NABO is 0, else one block. NPWA, NPDG and NPDA are not
//!   read by the host driver at all.
//! - SCSI, drivers/scsi/sd.c: the logical block and the physical block
//!   (2^LBPPBE of them) and the alignment offset (LALBA blocks) from READ
//!   CAPACITY(16) (`read_capacity_16`); io_min from OTLG and io_opt from
//!   OTL of the Block Limits page (`sd_read_block_limits`), each only when
//!   `sd_validate_min_xfer_size`/`sd_validate_opt_xfer_size` accept it.
//! - ATA through libata (drivers/ata/libata-scsi.c): libata answers READ
//!   CAPACITY(16) from IDENTIFY words 106, 117-118 and 209 itself, and puts
//!   no optimal transfer length in its Block Limits page. A USB bridge
//!   answers for the drive with its own translation, which is where a
//!   512/512 drive can turn into 512/4096 with an io_opt of 33553920.

use super::Transport;
use crate::bytes::ParseError;
use crate::identify::ScsiSays;
use crate::identify::{self};
use crate::iolimits::Topology;
use crate::sys;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What the device declares (the topology document's `device_says` of
/// a disk): each command set's parsed data (null when it did not apply or
/// did not answer), each value set against the kernel's limit, the fields
/// the kernel does not read, and notes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Declared {
    pub nvme: Option<identify::Namespace>,
    pub scsi: Option<ScsiSays>,
    pub ata: Option<identify::Identify>,
    /// Each limit the device's data gives, beside the kernel's.
    pub limits: Vec<DeclaredLimit>,
    /// Fields the device declared that no kernel limit carries (NVMe's
    /// `npwa`, `npdg`, `npda`), spelled as their keys.
    pub kernel_ignores: Vec<String>,
    /// Disagreements explained, and what did not answer.
    pub notes: Vec<String>,
}

/// Where a value came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdentifyProtocol {
    #[default]
    Nvme,
    Ata,
    Scsi,
}

/// The kernel's limit a value feeds (the keys of the disk's `topology`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    #[default]
    LogicalBlockSize,
    PhysicalBlockSize,
    MinimumIoSize,
    OptimalIoSize,
    AlignmentOffset,
}

crate::spelled_as_serde!(IdentifyProtocol, Limit);

impl Limit {
    fn words(self) -> &'static str {
        match self {
            Limit::LogicalBlockSize => "logical block",
            Limit::PhysicalBlockSize => "physical block",
            Limit::MinimumIoSize => "minimum I/O",
            Limit::OptimalIoSize => "optimal I/O",
            Limit::AlignmentOffset => "alignment offset",
        }
    }

    fn of(self, t: &Topology) -> i64 {
        match self {
            Limit::LogicalBlockSize => t.logical_block_size.into(),
            Limit::PhysicalBlockSize => t.physical_block_size.into(),
            Limit::MinimumIoSize => t.minimum_io_size.into(),
            Limit::OptimalIoSize => t.optimal_io_size.into(),
            Limit::AlignmentOffset => t.alignment_offset,
        }
    }
}

/// One limit as the device's data gives it, beside the kernel's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeclaredLimit {
    pub limit: Limit,
    pub source: IdentifyProtocol,
    /// The fields it is derived from, as the specification names them.
    pub fields: String,
    /// The value the kernel's rule gives from these fields.
    pub device_bytes: u64,
    /// The kernel's value (sysfs).
    pub kernel_bytes: i64,
    /// The kernel's value follows from these fields by its rule.
    pub follows: bool,
}

/// The raw answers, as `sys::passthrough` returned them: bytes, or the
/// note on why not (the node did not open, or the device did not answer
/// the command); None where the question was not asked.
#[derive(Clone, Debug, Default)]
pub struct Answers {
    pub nvme: Option<Result<Vec<u8>, String>>,
    pub vpd_b0: Option<Vec<u8>>,
    pub vpd_83: Option<Vec<u8>>,
    pub read_capacity: Option<Result<Vec<u8>, String>>,
    pub ata: Option<Result<Vec<u8>, String>>,
    /// A USB bridge stands between the drive and the kernel.
    pub usb: bool,
}

/// Ask the device at `node` (whose sysfs directory is `block_dir`) what
/// it says, by its transport: NVMe Identify Namespace; for SCSI, SATA and
/// USB disks the VPD pages in sysfs, READ CAPACITY(16) and ATA IDENTIFY.
/// `live` false (a sysfs tree other than /sys) opens no node: only the VPD
/// pages of the tree are read. Err: nothing is asked, and why.
pub fn ask(
    block_dir: &Path,
    node: &Path,
    transport: Transport,
    live: bool,
) -> Result<Answers, String> {
    let not_sent = || {
        format!(
            "not asked: {} not opened (the sysfs root is not /sys)",
            node.display()
        )
    };
    match transport {
        Transport::Nvme if live => Ok(Answers {
            nvme: answer("Identify Namespace", sys::nvme_identify_namespace(node)),
            ..Answers::default()
        }),
        Transport::Nvme => Err(not_sent()),
        Transport::Sata
        | Transport::Scsi
        | Transport::UsbUas
        | Transport::UsbStorage
        | Transport::Usb => {
            let mut a = Answers {
                vpd_b0: sys::vpd_page(block_dir, 0xb0),
                vpd_83: sys::vpd_page(block_dir, 0x83),
                usb: matches!(
                    transport,
                    Transport::UsbUas | Transport::UsbStorage | Transport::Usb
                ),
                ..Answers::default()
            };
            if live {
                a.read_capacity = answer("READ CAPACITY(16)", sys::scsi_read_capacity16(node));
                a.ata = answer("IDENTIFY", sys::ata_identify(node));
            } else if a.vpd_b0.is_none() && a.vpd_83.is_none() {
                return Err(not_sent());
            }
            Ok(a)
        }
        Transport::Loop | Transport::Dm | Transport::Md | Transport::Zram | Transport::Nbd => Err(
            format!("the kernel makes {transport} devices itself: no identify data to ask for"),
        ),
        Transport::Unknown => Err("not asked: the transport is unknown".into()),
        other => Err(format!(
            "not asked: {other} disks answer none of the NVMe, SCSI or ATA identify commands"
        )),
    }
}

/// A command's bytes, or the note on why there are none.
fn answer(
    command: &str,
    r: Result<Vec<u8>, sys::PassthroughError>,
) -> Option<Result<Vec<u8>, String>> {
    Some(r.map_err(|e| match e {
        sys::PassthroughError::Open { .. } => e.to_string(),
        sys::PassthroughError::Command(_) => {
            format!("the device did not answer {command}: {e}")
        }
    }))
}

/// What the answers say, set against the kernel's limits `kernel`.
/// Err: nothing could be read, and why (one line).
pub fn read_declared(a: &Answers, kernel: &Topology) -> Result<Declared, String> {
    let mut says = Declared::default();
    let mut failed = Vec::new();
    if let Some(r) = &a.nvme {
        says.nvme = parsed(r, "Identify Namespace", identify::parse_nvme, &mut failed);
    }
    if let Some(r) = &a.ata {
        says.ata = parsed(r, "IDENTIFY", identify::parse_ata, &mut failed);
    }
    says.scsi = scsi_says(a, &mut failed);
    if says.nvme.is_none() && says.ata.is_none() && says.scsi.is_none() {
        return Err(if failed.is_empty() {
            "nothing was asked".to_string()
        } else {
            failed.join("; ")
        });
    }
    if let Some(ns) = &says.nvme {
        says.kernel_ignores = nvme_limits(ns, kernel, &mut says.limits);
    }
    if let Some(id) = &says.ata {
        ata_limits(id, kernel, &mut says.limits);
    }
    if let Some(s) = &says.scsi {
        scsi_limits(s, kernel, &mut says.limits);
    }
    says.notes = notes(&says, a.usb, kernel);
    says.notes.extend(failed);
    Ok(says)
}

/// The parsed answer, or a note on why there is none.
fn parsed<T>(
    r: &Result<Vec<u8>, String>,
    command: &str,
    parse: fn(&[u8]) -> Result<T, ParseError>,
    failed: &mut Vec<String>,
) -> Option<T> {
    match r {
        Ok(bytes) => parse(bytes)
            .map_err(|e| failed.push(format!("the {command} data could not be read: {e}")))
            .ok(),
        Err(e) => {
            // One node that did not open is one note, however many
            // commands it was to carry.
            if !failed.contains(e) {
                failed.push(e.clone());
            }
            None
        }
    }
}

/// The SCSI parts: the VPD pages and READ CAPACITY(16); None when none of
/// them gave anything.
fn scsi_says(a: &Answers, failed: &mut Vec<String>) -> Option<ScsiSays> {
    let mut s = ScsiSays::default();
    let mut any = false;
    if let Some(b) = &a.vpd_b0 {
        match identify::block_limits(b) {
            Ok(l) => {
                (s.otlg, s.mtl, s.otl) = (Some(l.otlg), Some(l.mtl), Some(l.otl));
                any = true;
            }
            Err(e) => failed.push(format!("the Block Limits VPD page could not be read: {e}")),
        }
    }
    if let Some(b) = &a.vpd_83 {
        match identify::naa_wwn(b) {
            Ok(w) => {
                any |= w.is_some();
                s.wwn = w;
            }
            Err(e) => failed.push(format!(
                "the Device Identification VPD page could not be read: {e}"
            )),
        }
    }
    if let Some(r) = &a.read_capacity {
        if let Some(c) = parsed(r, "READ CAPACITY(16)", identify::read_capacity16, failed) {
            s.logical_block_bytes = Some(c.logical_block_bytes);
            s.lbppbe = Some(c.lbppbe);
            s.lalba = Some(c.lalba);
            any = true;
        }
    }
    any.then_some(s)
}

fn said(
    limit: Limit,
    source: IdentifyProtocol,
    fields: &str,
    device: u64,
    kernel: &Topology,
) -> DeclaredLimit {
    let k = limit.of(kernel);
    DeclaredLimit {
        limit,
        source,
        fields: fields.to_string(),
        device_bytes: device,
        kernel_bytes: k,
        follows: i64::try_from(device).is_ok_and(|d| d == k),
    }
}

/// The NVMe namespace's limits by `nvme_update_disk_info`'s rule; the
/// fields it declared that the kernel does not read.
fn nvme_limits(
    ns: &identify::Namespace,
    kernel: &Topology,
    out: &mut Vec<DeclaredLimit>,
) -> Vec<String> {
    let Some(bs) = ns.logical_block_bytes() else {
        return Vec::new();
    };
    out.push(said(
        Limit::LogicalBlockSize,
        IdentifyProtocol::Nvme,
        "LBADS",
        bs,
        kernel,
    ));
    if !ns.io_opt_fields() {
        let why = "LBADS (NSFEAT bit 4 clear)";
        out.push(said(
            Limit::PhysicalBlockSize,
            IdentifyProtocol::Nvme,
            why,
            bs,
            kernel,
        ));
        out.push(said(
            Limit::MinimumIoSize,
            IdentifyProtocol::Nvme,
            why,
            bs,
            kernel,
        ));
        out.push(said(
            Limit::OptimalIoSize,
            IdentifyProtocol::Nvme,
            why,
            0,
            kernel,
        ));
        return Vec::new();
    }
    let phys = ns.blocks_bytes(ns.npwg).unwrap_or(u64::MAX);
    let atomic = if ns.nabo != 0 {
        Some((bs, "NPWG, capped at one block (NABO not 0)"))
    } else if ns.atomics() && ns.nawupf != 0 {
        ns.blocks_bytes(ns.nawupf)
            .map(|a| (a, "NPWG, capped by NAWUPF"))
    } else {
        None
    };
    let mut p = match atomic {
        Some((a, fields)) => said(
            Limit::PhysicalBlockSize,
            IdentifyProtocol::Nvme,
            fields,
            phys.min(a),
            kernel,
        ),
        None => said(
            Limit::PhysicalBlockSize,
            IdentifyProtocol::Nvme,
            "NPWG, capped by the controller's AWUPF",
            phys,
            kernel,
        ),
    };
    if atomic.is_none() {
        // min(NPWG, the controller's AWUPF): any whole number of blocks up to NPWG.
        let k = p.kernel_bytes;
        p.follows =
            u64::try_from(k).is_ok_and(|k| k == phys || (k < phys && k >= bs && k % bs == 0));
    }
    out.push(p);
    out.push(said(
        Limit::MinimumIoSize,
        IdentifyProtocol::Nvme,
        "NPWG",
        phys,
        kernel,
    ));
    let opt = ns.blocks_bytes(ns.nows).unwrap_or(u64::MAX);
    out.push(said(
        Limit::OptimalIoSize,
        IdentifyProtocol::Nvme,
        "NOWS",
        opt,
        kernel,
    ));
    ["npwa", "npdg", "npda"].map(String::from).to_vec()
}

/// The drive's own sectors from IDENTIFY.
fn ata_limits(id: &identify::Identify, kernel: &Topology, out: &mut Vec<DeclaredLimit>) {
    let l = id.logical_sector_bytes;
    out.push(said(
        Limit::LogicalBlockSize,
        IdentifyProtocol::Ata,
        "IDENTIFY words 106, 117-118",
        l,
        kernel,
    ));
    out.push(said(
        Limit::PhysicalBlockSize,
        IdentifyProtocol::Ata,
        "IDENTIFY word 106",
        id.physical_sector_bytes,
        kernel,
    ));
    out.push(said(
        Limit::AlignmentOffset,
        IdentifyProtocol::Ata,
        "IDENTIFY word 209",
        id.alignment_offset_bytes,
        kernel,
    ));
}

/// READ CAPACITY(16) and the Block Limits page, in bytes of the logical
/// block READ CAPACITY gives (else the kernel's).
fn scsi_limits(s: &ScsiSays, kernel: &Topology, out: &mut Vec<DeclaredLimit>) {
    let lbs = s
        .logical_block_bytes
        .map_or(u64::from(kernel.logical_block_size), u64::from);
    if let Some(l) = s.logical_block_bytes {
        out.push(said(
            Limit::LogicalBlockSize,
            IdentifyProtocol::Scsi,
            "READ CAPACITY(16) LOGICAL BLOCK LENGTH",
            l.into(),
            kernel,
        ));
    }
    if let Some(p) = s.physical_block_bytes() {
        out.push(said(
            Limit::PhysicalBlockSize,
            IdentifyProtocol::Scsi,
            "READ CAPACITY(16) LBPPBE",
            p,
            kernel,
        ));
    }
    if let Some(a) = s.alignment_offset_bytes() {
        out.push(said(
            Limit::AlignmentOffset,
            IdentifyProtocol::Scsi,
            "READ CAPACITY(16) LALBA",
            a,
            kernel,
        ));
    }
    if let Some(g) = s.otlg.filter(|&g| g > 0) {
        out.push(said(
            Limit::MinimumIoSize,
            IdentifyProtocol::Scsi,
            "VPD B0h OTLG",
            u64::from(g) * lbs,
            kernel,
        ));
    }
    if let Some(o) = s.otl.filter(|&o| o > 0) {
        out.push(said(
            Limit::OptimalIoSize,
            IdentifyProtocol::Scsi,
            "VPD B0h OTL",
            u64::from(o) * lbs,
            kernel,
        ));
    }
}

impl Declared {
    /// The source that speaks for the medium: NVMe, else the ATA drive
    /// (a SCSI answer in front of it is libata's or a bridge's
    /// translation), else SCSI.
    pub fn primary(&self) -> Option<IdentifyProtocol> {
        if self.nvme.is_some() {
            Some(IdentifyProtocol::Nvme)
        } else if self.ata.is_some() {
            Some(IdentifyProtocol::Ata)
        } else if self.scsi.is_some() {
            Some(IdentifyProtocol::Scsi)
        } else {
            None
        }
    }

    /// The value of `limit` the primary source gives.
    pub fn value(&self, limit: Limit) -> Option<u64> {
        let src = self.primary()?;
        self.limits
            .iter()
            .find(|l| l.limit == limit && l.source == src)
            .map(|l| l.device_bytes)
    }

    /// The limits where the kernel's value does not follow from the
    /// primary source.
    pub fn disagreements(&self) -> Vec<Limit> {
        let src = self.primary();
        let mut out: Vec<Limit> = Vec::new();
        for l in self
            .limits
            .iter()
            .filter(|l| Some(l.source) == src && !l.follows)
        {
            if !out.contains(&l.limit) {
                out.push(l.limit);
            }
        }
        out
    }
}

/// The sentences: each limit the kernel does not take from the device,
/// and the bridge's part where a drive speaks through one.
fn notes(says: &Declared, usb: bool, kernel: &Topology) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(id), Some(s)) = (&says.ata, &says.scsi) {
        bridge_notes(id, s, usb, kernel, &mut out);
    }
    let src = says.primary();
    for l in says
        .limits
        .iter()
        .filter(|l| Some(l.source) == src && !l.follows)
    {
        out.push(format!(
            "the kernel's {} is {} bytes; {} gives {} ({})",
            l.limit.words(),
            l.kernel_bytes,
            source_words(l.source),
            l.device_bytes,
            l.fields
        ));
    }
    if let Some(ns) = &says.nvme {
        nvme_notes(ns, &mut out);
    }
    out
}

fn source_words(s: IdentifyProtocol) -> &'static str {
    match s {
        IdentifyProtocol::Nvme => "the namespace's Identify data",
        IdentifyProtocol::Ata => "the drive's IDENTIFY",
        IdentifyProtocol::Scsi => "the SCSI device",
    }
}

/// Where the drive (IDENTIFY) and what answers for it (READ CAPACITY(16),
/// the Block Limits page: libata or a bridge) say different things.
fn bridge_notes(
    id: &identify::Identify,
    s: &ScsiSays,
    usb: bool,
    kernel: &Topology,
    out: &mut Vec<String>,
) {
    let who = if usb {
        "the USB bridge"
    } else {
        "the SCSI-to-ATA translation"
    };
    if let (Some(l), Some(p)) = (s.logical_block_bytes, s.physical_block_bytes()) {
        if (u64::from(l), p) != (id.logical_sector_bytes, id.physical_sector_bytes) {
            let took = u64::from(kernel.physical_block_size) == p
                && u64::from(kernel.logical_block_size) == u64::from(l);
            out.push(format!(
                "the drive says {}/{} (logical/physical, IDENTIFY); {who} reports {l}/{p} (READ CAPACITY(16)){}",
                id.logical_sector_bytes,
                id.physical_sector_bytes,
                if took { ", which the kernel took" } else { "" }
            ));
        }
    }
    let lbs = s
        .logical_block_bytes
        .map_or(u64::from(kernel.logical_block_size), u64::from);
    if let Some(o) = s.otl.filter(|&o| o > 0) {
        if u64::from(kernel.optimal_io_size) == u64::from(o) * lbs {
            out.push(format!(
                "the optimal I/O of {} bytes is {who}'s optimal transfer length ({o} blocks of {lbs} bytes, VPD page B0h): an ATA drive declares none",
                kernel.optimal_io_size
            ));
        }
    }
}

/// What the NVMe fields mean for the kernel: unused when NSFEAT bit 4 is
/// clear; NPWA never read.
fn nvme_notes(ns: &identify::Namespace, out: &mut Vec<String>) {
    if !ns.io_opt_fields() {
        out.push(
            "NSFEAT bit 4 is clear: the namespace declares no preferred write granularity or optimal write size (NPWG, NOWS), so the kernel's limits come from the LBA size alone".into(),
        );
        return;
    }
    if let Some(a) = ns.blocks_bytes(ns.npwa) {
        out.push(format!(
            "NPWA says writes are best aligned to {a} bytes; the kernel does not read NPWA (nor NPDG, NPDA), so no limit carries it"
        ));
    }
}

#[cfg(test)]
mod tests;
