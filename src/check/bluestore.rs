//! Rules for a Ceph BlueStore OSD's device. BlueStore allocates in
//! `min_alloc_size` units from the device's byte 0 (the label, BlueFS's
//! superblock and the first extents are all on that grid), and the unit
//! is fixed at mkfs for the OSD's life (ceph/ceph `BlueStore::mkfs`
//! chooses it, `_open_super_meta` reads it back; ceph PR #44098 asks for
//! a way to see it). A unit below what the device writes in makes every
//! allocation of one unit a partial write there:
//! - its physical block, from the kernel (`bluestore-alloc-below-grain`
//!   with `grain_source` `physical-block`);
//! - its minimum I/O size, from the kernel: an md chunk or an LV stripe
//!   below, a SCSI OPTIMAL TRANSFER LENGTH GRANULARITY (`minimum-io`;
//!   info: the kernel calls it a preference, and only parity RAID reads
//!   before it writes a part of a chunk);
//! - the physical block the disk's identify data declares where the
//!   kernel reports less (`declared-physical-block`: for NVMe, NPWG capped
//!   by the atomic write unit, the kernel's own rule) and the NVMe
//!   namespace's preferred write granularity itself (`nvme-npwg`);
//! - the unit a saved probe run bracketed (`measured`).
//!
//! One finding per OSD, for the largest unit any evidence gives. The fix
//! is a redeploy: no tool changes the unit of an existing OSD.

use super::start::start_findings;
use crate::findings::{Code, Facts, Finding, Severity, Status};
use crate::inspect::Measured;
use crate::stack::{Layer, LayerKind};
use crate::topology::{Declared, Limit};

/// What gave the unit the allocation unit is judged against (the
/// finding's `grain_source`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    Physical,
    MinimumIo,
    Declared(Option<String>),
    Npwg,
    Measured(String),
}

impl Source {
    fn word(&self) -> &'static str {
        match self {
            Source::Physical => "physical-block",
            Source::MinimumIo => "minimum-io",
            Source::Declared(_) => "declared-physical-block",
            Source::Npwg => "nvme-npwg",
            Source::Measured(_) => "measured",
        }
    }
}

/// The kernel's view of the OSD: its start judged as any layer's (an
/// OSD on a partition off 4 KiB inherits that), its unit against the
/// physical block and the minimum I/O size below.
pub fn findings(l: &Layer) -> Vec<Finding> {
    let mut out = start_findings(
        &l.below,
        l.offset_bytes,
        "the BlueStore OSD's allocations (from its byte 0)",
        &l.device,
    );
    let b = &l.below;
    let kernel = [
        (u64::from(b.physical_block_size), Source::Physical),
        (u64::from(b.minimum_io_size), Source::MinimumIo),
    ];
    out.extend(
        kernel
            .into_iter()
            .filter_map(|(g, s)| below(l, g, s))
            .max_by_key(rank),
    );
    out
}

/// The evidence beyond the kernel's limits: the identify data of the disk
/// `device` (for the layers on it) and a saved probe run. A finding for a
/// larger unit than the kernel's replaces it.
pub fn evidence(says: Option<&Declared>, m: Option<&Measured>, device: &str, root: &mut Layer) {
    root.walk_mut(&mut |l| {
        if l.kind != LayerKind::Bluestore {
            return;
        }
        let mut found = Vec::new();
        if let Some(s) = says.filter(|_| l.device == device) {
            let by = s.primary().map(|p| p.to_string());
            if let Some(p) = s.value(Limit::PhysicalBlockSize) {
                found.extend(below(l, p, Source::Declared(by)));
            }
            let npwg = super::declared::write_unit(Some(s)).map(|u| u.npwg_bytes);
            found.extend(npwg.and_then(|g| below(l, g, Source::Npwg)));
        }
        if let Some(m) = m.filter(|m| !m.erase) {
            found.extend(below(l, m.unit_bytes, Source::Measured(m.file.clone())));
        }
        let Some(best) = found.into_iter().max_by_key(rank) else {
            return;
        };
        let said = l
            .findings
            .iter()
            .position(|f| f.code == Code::BluestoreAllocBelowGrain);
        match said {
            Some(i) if rank(&l.findings[i]) >= rank(&best) => return,
            Some(i) => l.findings[i] = best,
            None => l.findings.push(best),
        }
        l.status = l.status.max(Status::of(&l.findings));
        l.aligned = l.status.is_clean();
    });
}

/// Which of two findings on one OSD is said: a warning before an info
/// (the physical block before a stripe's preference), then the larger unit.
fn rank(f: &Finding) -> (Severity, Option<u64>) {
    (f.severity, f.facts.grain_bytes)
}

/// `bluestore-alloc-below-grain` when the OSD's unit is below `grain`, a
/// power of two (BlueStore's unit must be one: `BlueStore::mkfs` refuses
/// others) that a redeploy can ask for.
fn below(l: &Layer, grain: u64, source: Source) -> Option<Finding> {
    let label = l.bluestore()?;
    let unit = label.min_alloc_size_bytes?;
    if unit >= grain || !grain.is_power_of_two() {
        return None;
    }
    let osd = label.whoami().unwrap_or("ID");
    // The device is not named: a layer's `device` is the target it was
    // read from (a whole disk for an OSD in its partition), not what
    // ceph-volume would zap; `--osd-id` finds the OSD's own.
    let fix = format!(
        "redeploy the OSD: `ceph osd out {osd}`, wait until `ceph osd safe-to-destroy osd.{osd}` says it is, stop it, `ceph osd destroy {osd} --yes-i-really-mean-it`, `ceph config set osd.{osd} bluestore_min_alloc_size_ssd {grain}` (`_hdd` where ceph sees a rotational device), `ceph-volume lvm zap --destroy --osd-id {osd}`, then `ceph-volume lvm create --osd-id {osd} --data` with the device it was on (cephadm: `ceph orch osd rm {osd} --replace --zap`, then the same option before it redeploys)"
    );
    let severity = match source {
        Source::MinimumIo => Severity::Info,
        _ => Severity::Warning,
    };
    let mut facts = Facts {
        block_size_bytes: Some(unit),
        grain_bytes: Some(grain),
        grain_source: Some(source.word().to_string()),
        physical_block_bytes: Some(u64::from(l.below.physical_block_size)),
        device: Some(l.device.clone()),
        fix: Some(fix),
        ..Facts::default()
    };
    match source {
        Source::MinimumIo => facts.minimum_io_bytes = Some(grain),
        Source::Declared(by) => facts.declared_by = by,
        Source::Npwg => {
            facts.npwg_bytes = Some(grain);
            facts.declared_by = Some("nvme".into());
        }
        Source::Measured(run) => facts.measured_by = Some(run),
        Source::Physical => {}
    }
    Some(Finding::of(Code::BluestoreAllocBelowGrain, facts).severity(severity))
}

#[cfg(test)]
mod tests;
