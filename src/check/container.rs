//! The image container a guest disk is read through (docs/images.md): a
//! start off 4 KiB makes some 4 KiB guest blocks straddle two of the
//! container's allocation units, so a first write or a snapshot's
//! copy-on-write of such a block allocates or copies two units.

use crate::findings::{Code, Facts, Finding};
use crate::image::{Container, ContainerFormat};
use crate::stack::Layer;
use crate::units::KIB;

/// The guest block judged: the page every filesystem and database writes.
const BLOCK: u64 = 4 * KIB;

/// How many blocks of the repeating pattern are counted at most; a unit
/// that is not a power of two (none of qemu-img's are) could make the
/// pattern long, and the first blocks are a fair sample of it.
const MAX_PERIOD: u64 = 1 << 20;

/// What 4 KiB blocks from one start cost in a container's units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Straddle {
    /// The share of blocks touching one unit more than an aligned block.
    pub share: f64,
    /// Units an average block touches.
    pub touched: f64,
    /// Units a block touches from an aligned start.
    pub ideal: u64,
}

/// The unit a guest write allocates or copies in `c`, with its name: the
/// qcow2 subcluster where the image has them (extended L2), else the
/// format's own unit. None for a flat container (nothing is allocated).
pub fn write_unit(c: &Container) -> Option<(u64, &'static str)> {
    let name = match (c.format, c.subunit_bytes) {
        (ContainerFormat::Qcow2, Some(_)) => "qcow2 subcluster",
        (ContainerFormat::Qcow2, None) => "qcow2 cluster",
        (ContainerFormat::Vmdk, _) => "VMDK grain",
        (ContainerFormat::Vhdx, _) => "VHDX block",
        (ContainerFormat::Vdi, _) => "VDI block",
        (ContainerFormat::Vhd, _) => "VHD block",
        (ContainerFormat::Raw, _) => return None,
    };
    let unit = c.subunit_bytes.or(c.unit_bytes).filter(|&u| u > 0)?;
    Some((unit, name))
}

/// The blocks of `BLOCK` bytes laid from `offset` on, against units of
/// `unit` bytes: counted over one period of the pattern they repeat in.
pub fn straddle(offset: u64, unit: u64) -> Straddle {
    let unit = unit.max(1);
    let period = (unit / crate::units::gcd(unit, BLOCK)).clamp(1, MAX_PERIOD);
    let ideal = BLOCK.div_ceil(unit);
    let (mut over, mut sum) = (0u64, 0u64);
    for k in 0..period {
        let at = (offset % unit + (k % unit) * (BLOCK % unit)) % unit;
        let touched = (at + BLOCK).div_ceil(unit);
        sum += touched;
        over += u64::from(touched > ideal);
    }
    Straddle {
        share: over as f64 / period as f64,
        touched: sum as f64 / period as f64,
        ideal,
    }
}

/// The finding for a start at `offset` bytes of the guest disk, when some
/// of its 4 KiB blocks straddle two units of `c`.
pub fn start_finding(c: &Container, offset: u64) -> Option<Finding> {
    let (unit, name) = write_unit(c)?;
    let s = straddle(offset, unit);
    (s.share > 0.0).then(|| {
        Finding::of(
            Code::ImageUnitStraddle,
            Facts {
                offset_bytes: Some(offset),
                grain_bytes: Some(unit),
                block_size_bytes: Some(BLOCK),
                share: Some(s.share),
                units_touched: Some(s.touched),
                units_ideal: Some(s.ideal),
                region: Some(name.to_string()),
                ..Facts::default()
            },
        )
    })
}

/// The findings of the layers on the guest disk itself (a PV's data area,
/// a LUKS payload, an md data area, a filesystem) whose data start makes
/// 4 KiB blocks straddle units, below a partition that starts on 4 KiB
/// (when the partition does not, its own finding says it once).
pub fn layer_findings(c: &Container, disk: &str, part_on_4k: bool, root: &mut Layer) {
    if !part_on_4k {
        return;
    }
    root.walk_mut(&mut |l| {
        if l.device == disk {
            let start = l
                .offset_bytes
                .saturating_add(l.data_offset_bytes.unwrap_or(0));
            l.findings.extend(start_finding(c, start));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qcow2(cluster: u64, sub: Option<u64>) -> Container {
        Container {
            format: ContainerFormat::Qcow2,
            unit_bytes: Some(cluster),
            subunit_bytes: sub,
            ..Container::default()
        }
    }

    #[test]
    fn sector_63_in_64k_clusters_straddles_one_block_in_16() {
        let s = straddle(63 * 512, 64 * KIB);
        assert_eq!(s.share, 1.0 / 16.0);
        assert_eq!(s.ideal, 1);
        assert_eq!(s.touched, 1.0 + 1.0 / 16.0);
        let f = start_finding(&qcow2(64 * KIB, None), 63 * 512).unwrap();
        assert_eq!(f.code, Code::ImageUnitStraddle);
        assert!(f.message.contains("6.2 %"), "{}", f.message);
        assert!(f.message.contains("qcow2 cluster"), "{}", f.message);
    }

    #[test]
    fn aligned_starts_straddle_nothing() {
        for unit in [512, 4096, 64 * KIB, 2 << 20, 32 << 20] {
            assert_eq!(straddle(1 << 20, unit).share, 0.0, "{unit}");
            assert_eq!(straddle(0, unit).share, 0.0, "{unit}");
        }
        assert!(start_finding(&qcow2(64 * KIB, None), 1 << 20).is_none());
    }

    #[test]
    fn units_below_4k_cost_one_more_only_off_their_own_grid() {
        // 512-byte clusters: a 4 KiB block always touches 8; from sector 63
        // still 8 (the start is on the 512-byte grid); from byte 100, 9.
        let s = straddle(63 * 512, 512);
        assert_eq!((s.share, s.ideal), (0.0, 8));
        let s = straddle(100, 512);
        assert_eq!((s.share, s.touched), (1.0, 9.0));
    }

    #[test]
    fn the_subcluster_is_the_unit_judged_when_the_image_has_them() {
        let c = qcow2(2 << 20, Some(64 * KIB));
        assert_eq!(write_unit(&c), Some((64 * KIB, "qcow2 subcluster")));
        let f = start_finding(&c, 63 * 512).unwrap();
        assert_eq!(f.facts.share, Some(1.0 / 16.0));
        // Flat containers allocate nothing: no unit, no finding.
        let flat = Container {
            format: ContainerFormat::Vhd,
            ..Container::default()
        };
        assert!(start_finding(&flat, 63 * 512).is_none());
    }
}
