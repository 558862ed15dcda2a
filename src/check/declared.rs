//! What the disk itself declares (its identify data, `topology::Declared`)
//! judged where the kernel's limits do not carry it:
//! - a partition's start or a layer's data start that meets the kernel's
//!   grain and 4 KiB but not the NVMe namespace's preferred write
//!   alignment and granularity (NPWA, NPWG; valid only when NSFEAT bit 4
//!   is set). The kernel never reads NPWA, and an older kernel or a cap
//!   by the atomic write size leaves NPWG out of its grain
//!   (drivers/nvme/host/core.c `nvme_update_disk_info`);
//! - a LUKS encryption sector below the physical block the disk declares
//!   where the kernel reports a smaller one;
//! - an NVMe namespace formatted with 512-byte blocks that offers a
//!   4096-byte format at least as fast: advice naming `nvme format`,
//!   which erases the namespace. Nothing is ever run.
//!
//! Images have no `Declared`, so none of these is ever said about them.

use super::start::kernel_offset;
use crate::findings::{Code, Facts, Finding};
use crate::identify::Namespace;
use crate::iolimits::Topology;
use crate::stack::{Layer, LayerKind};
use crate::topology::{Declared, Limit};
use crate::units::{gcd, KIB};

/// The largest encryption sector dm-crypt takes (4096; cryptsetup's
/// `--sector-size` accepts 512 to 4096).
const LUKS_MAX_SECTOR: u64 = 4 * KIB;

/// The NVMe namespace's preferred write unit: NPWA and NPWG in bytes (a
/// start on both grids is on their least common multiple).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteUnit {
    pub npwg_bytes: u64,
    pub npwa_bytes: u64,
}

impl WriteUnit {
    /// NPWG and NPWA of `ns`, when NSFEAT bit 4 says they are valid and
    /// one of them is more than one block.
    pub fn of(ns: &Namespace) -> Option<WriteUnit> {
        if !ns.io_opt_fields() {
            return None;
        }
        let u = WriteUnit {
            npwg_bytes: ns.blocks_bytes(ns.npwg)?,
            npwa_bytes: ns.blocks_bytes(ns.npwa)?,
        };
        (u.bytes() > ns.logical_block_bytes()?).then_some(u)
    }

    /// The grid a start should be on.
    pub fn bytes(self) -> u64 {
        let (g, a) = (self.npwg_bytes.max(1), self.npwa_bytes.max(1));
        (g / gcd(g, a)).saturating_mul(a)
    }
}

/// The declared write unit of a disk, when it has one.
pub fn write_unit(says: Option<&Declared>) -> Option<WriteUnit> {
    WriteUnit::of(says?.nvme.as_ref()?)
}

/// The facts of a start judged against the declared unit, or None when
/// it is on it, or when a start rule of the kernel's limits (its grain,
/// 4 KiB) already speaks for it.
fn off_unit(unit: WriteUnit, topo: &Topology, start: u64) -> Option<Facts> {
    let grain = unit.bytes();
    let miss = start % grain;
    let kernel_silent = start % (4 * KIB) == 0 && kernel_offset(topo, start) == 0;
    (miss != 0 && kernel_silent).then(|| Facts {
        offset_bytes: Some(start),
        grain_bytes: Some(grain),
        misalignment_bytes: Some(miss),
        npwg_bytes: Some(unit.npwg_bytes),
        npwa_bytes: Some(unit.npwa_bytes),
        ..Facts::default()
    })
}

/// `start-not-preferred-write` for a partition starting at `start`.
pub fn partition_start(unit: Option<WriteUnit>, topo: &Topology, start: u64) -> Option<Finding> {
    let facts = off_unit(unit?, topo, start)?;
    Some(Finding::of(Code::StartNotPreferredWrite, facts))
}

/// The declared-unit and declared-physical-block findings of each layer
/// in `root`'s tree whose offsets are on the disk `device` itself.
pub fn layer_findings(says: Option<&Declared>, device: &str, root: &mut Layer) {
    let Some(says) = says else {
        return;
    };
    let unit = write_unit(Some(says));
    let physical = says.value(Limit::PhysicalBlockSize);
    let declared_by = says.primary().map(|s| s.to_string());
    root.walk_mut(&mut |l| {
        if l.device != device || l.kind == LayerKind::Partition {
            return;
        }
        let mut found = Vec::new();
        if let (Some(u), Some(start)) = (unit, l.data_start()) {
            found.extend(off_unit(u, &l.below, start).map(|f| {
                Finding::of(
                    Code::LayerStartNotPreferredWrite,
                    Facts {
                        region: Some(format!("{} data start", l.name)),
                        device: Some(device.to_string()),
                        ..f
                    },
                )
            }));
        }
        if let Some(p) = physical {
            found.extend(luks_sector(l, p, declared_by.clone()));
            found.extend(zfs_ashift(l, p, Evidence::Declared(declared_by.clone())));
        }
        if !found.is_empty() {
            l.findings.extend(found);
            restatus(l);
        }
    });
}

/// A layer's status and verdict again, from its findings.
fn restatus(l: &mut Layer) {
    l.status = l.status.max(crate::findings::Status::of(&l.findings));
    l.aligned = l.status.is_clean();
}

/// `zfs-ashift-above-physical`, said once all the evidence is in: a ZFS
/// member's allocation unit above the largest physical block that the
/// kernel reports, the disk declares (for the layers on the disk `device`
/// itself) or a saved probe run bracketed. Info: OpenZFS rounds each block
/// up to the unit (`vdev_default_asize` in `module/zfs/vdev.c`), so a
/// block of that size takes `amplification` times its space. Where the
/// kernel's block is not known (`kernel_known` false: an image judged with
/// the image default topology) only evidence can say it: ashift 12 is
/// what OpenZFS advises for any disk that may be 4 KiB.
pub fn ashift_above(
    says: Option<&Declared>,
    m: Option<&crate::inspect::Measured>,
    device: &str,
    kernel_known: bool,
    root: &mut Layer,
) {
    let declared = says.and_then(|s| {
        let by = s.primary().map(|p| p.to_string());
        Some((s.value(Limit::PhysicalBlockSize)?, Evidence::Declared(by)))
    });
    let measured = m.map(|m| (m.unit_bytes, Evidence::Measured(m.file.clone())));
    root.walk_mut(&mut |l| {
        let Some(unit) = zfs_unit(l) else { return };
        let kernel = u64::from(l.below.physical_block_size);
        let own = l.device == device;
        let evidence = [declared.clone().filter(|_| own), measured.clone()]
            .into_iter()
            .flatten()
            .filter(|(v, _)| *v > kernel)
            .max_by_key(|(v, _)| *v);
        let (needed, by) = match evidence {
            Some((v, e)) => (v, Some(e)),
            None if kernel_known => (kernel, None),
            None => return,
        };
        if unit <= needed {
            return;
        }
        let mut facts = Facts {
            block_size_bytes: Some(unit),
            physical_block_bytes: Some(needed),
            amplification: Some(unit as f64 / needed.max(1) as f64),
            device: Some(l.device.clone()),
            ..Facts::default()
        };
        if let Some(e) = by {
            facts.kernel_value = i64::try_from(kernel).ok();
            e.credit(&mut facts);
        }
        l.findings
            .push(Finding::of(Code::ZfsAshiftAbovePhysical, facts));
        restatus(l);
    });
}

/// A ZFS member's allocation unit, 2^ashift (None past 2^63).
fn zfs_unit(l: &Layer) -> Option<u64> {
    if l.kind != LayerKind::ZfsMember {
        return None;
    }
    1u64.checked_shl(u32::try_from(l.zfs()?.ashift()?).ok()?)
}

/// `luks-sector-below-declared`: a LUKS layer's encryption sector below
/// the physical block the disk declares (capped at the largest sector
/// dm-crypt takes), where the kernel's physical block did not already
/// give `luks-sector-size`.
fn luks_sector(l: &Layer, declared: u64, declared_by: Option<String>) -> Option<Finding> {
    if l.kind != LayerKind::Luks {
        return None;
    }
    let h = l.luks()?;
    let ss = u64::from(h.sector_size);
    let kernel = u64::from(l.below.physical_block_size);
    let want = declared.min(LUKS_MAX_SECTOR);
    if ss >= want || ss < kernel.min(LUKS_MAX_SECTOR) || want <= kernel {
        return None;
    }
    let fix = if h.version == 1 {
        format!("LUKS1 always uses 512; `cryptsetup convert --type luks2` then `cryptsetup reencrypt --sector-size {want}` changes it")
    } else {
        format!("`cryptsetup reencrypt --sector-size {want}` changes it")
    };
    Some(Finding::of(
        Code::LuksSectorBelowDeclared,
        Facts {
            block_size_bytes: Some(ss),
            physical_block_bytes: Some(declared),
            kernel_value: i64::try_from(kernel).ok(),
            declared_by,
            device: Some(l.device.clone()),
            fix: Some(fix),
            ..Facts::default()
        },
    ))
}

/// `zfs-ashift-below-physical` from the unit a saved probe run bracketed
/// on this device (`--probe`), where neither the kernel's physical block
/// nor the disk's identify data already said it.
pub fn measured_findings(m: Option<&crate::inspect::Measured>, root: &mut Layer) {
    let Some(m) = m else { return };
    root.walk_mut(&mut |l| {
        if l.findings
            .iter()
            .any(|f| f.code == Code::ZfsAshiftBelowPhysical)
        {
            return;
        }
        if let Some(f) = zfs_ashift(l, m.unit_bytes, Evidence::Measured(m.file.clone())) {
            l.findings.push(f);
            restatus(l);
        }
    });
}

/// What says a device's physical block is larger than the kernel reports:
/// its identify data (which one, when known), or a saved probe run.
#[derive(Clone)]
enum Evidence {
    Declared(Option<String>),
    Measured(String),
}

impl Evidence {
    /// Names itself in `facts`: `declared_by` or `measured_by`.
    fn credit(self, facts: &mut Facts) {
        match self {
            Evidence::Declared(by) => facts.declared_by = by,
            Evidence::Measured(run) => facts.measured_by = Some(run),
        }
    }
}

/// `zfs-ashift-below-physical` from what the disk declares: a ZFS
/// member's allocation unit (2^ashift) below the physical block its
/// identify data gives, where the kernel reports a smaller one that the
/// unit meets (the case the seed's bridges make: ZFS picks the ashift
/// from what the kernel reports). `declared_by` says which evidence
/// decided, `kernel_value` what the kernel said.
fn zfs_ashift(l: &Layer, declared: u64, evidence: Evidence) -> Option<Finding> {
    let unit = zfs_unit(l)?;
    let kernel = u64::from(l.below.physical_block_size);
    if unit >= declared || unit < kernel || declared <= kernel {
        return None;
    }
    let mut facts = Facts {
        block_size_bytes: Some(unit),
        physical_block_bytes: Some(declared),
        share: Some(1.0 - unit as f64 / declared as f64),
        kernel_value: i64::try_from(kernel).ok(),
        device: Some(l.device.clone()),
        pool: l.zfs().and_then(|z| z.pool_name.clone()),
        fix: Some(format!("-o ashift={}", declared.trailing_zeros())),
        ..Facts::default()
    };
    evidence.credit(&mut facts);
    Some(Finding::of(Code::ZfsAshiftBelowPhysical, facts))
}

/// The 4096-byte format to move an NVMe namespace formatted with smaller
/// blocks to: data 4096 bytes, the metadata size of the format in use, a
/// Relative Performance at least as good; the best of them.
pub fn better_format(ns: &Namespace) -> Option<(u8, u64)> {
    let used = ns.in_use()?;
    let now = used.data_bytes?;
    if now >= 4 * KIB {
        return None;
    }
    ns.formats_at_least_as_fast()
        .into_iter()
        .filter(|f| f.data_bytes == Some(4 * KIB) && f.metadata_bytes == used.metadata_bytes)
        .min_by_key(|f| (f.relative_performance, f.index))
        .map(|f| (f.index, now))
}

/// `nvme-format-4k-available` for the disk at `node` (`/dev/nvme0n1`).
pub fn format_advice(says: Option<&Declared>, node: &str) -> Option<Finding> {
    let (index, now) = better_format(says?.nvme.as_ref()?)?;
    Some(Finding::of(
        Code::NvmeFormat4kAvailable,
        Facts {
            logical_block_bytes: Some(now),
            block_size_bytes: Some(4 * KIB),
            lba_format: Some(index),
            device: Some(node.to_string()),
            fix: Some(format_command(index, node)),
            ..Facts::default()
        },
    ))
}

/// The command that switches the namespace to format `index`.
pub fn format_command(index: u8, node: &str) -> String {
    format!("nvme format --lbaf={index} {node}")
}

#[cfg(test)]
pub(crate) mod tests;
