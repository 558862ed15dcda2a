//! Rules for FAT, exFAT and NTFS volumes, whose clusters start where their
//! own layout says (a FAT's data area, an exFAT's cluster heap), not at
//! the partition's start: that byte is judged on the device below as any
//! layer's data start is, with the share of clusters that straddle and
//! the mkfs option that places it; then the cluster against the blocks
//! below, the start the boot sector records, the volume's end and its
//! backup boot sector.

use super::start::Start;
use crate::findings::{Code, Facts, Finding, Severity};
use crate::stack::{BackupState, FsKind, Layer, Volume};
use crate::units::exact;

/// The rules of a volume `v` of kind `kind` in layer `l`.
pub fn volume_findings(l: &Layer, kind: FsKind, sector: u32, v: &Volume) -> Vec<Finding> {
    let name = v.name();
    let mut out = sizes(l, kind, sector, v);
    out.extend(data_start(l, kind, sector, v));
    out.extend(sd_boundary(l, kind, sector, v));
    let base = Facts {
        region: Some(name.to_string()),
        device: Some(l.device.clone()),
        ..Facts::default()
    };
    if let Some(start) = v.start_sectors.filter(|&s| s != v.hidden_sectors) {
        let recorded_lbs = l.offset_bytes / u64::from(l.below.logical_block_size.max(1));
        // mkfs.fat -S counts hidden sectors in the device's sectors.
        if v.hidden_sectors != recorded_lbs {
            let f = Finding::of(
                Code::FsHiddenSectors,
                Facts {
                    offset_bytes: Some(l.offset_bytes),
                    start_sectors: Some(start),
                    recorded_sectors: Some(v.hidden_sectors),
                    block_size_bytes: Some(sector.into()),
                    ..base.clone()
                },
            );
            // Nothing recorded (mkfs on a file), or a volume at the start
            // of what it is in (an image of a partition, dd or ntfsclone,
            // keeps the start it had there): information.
            out.push(match (v.hidden_sectors, start) {
                (0, _) | (_, 0) => f.severity(Severity::Info),
                _ => f,
            });
        }
    }
    if v.span_bytes > v.region_bytes {
        out.push(Finding::of(
            Code::FsBeyondPartition,
            Facts {
                size_bytes: Some(v.span_bytes),
                region_bytes: Some(v.region_bytes),
                ..base.clone()
            },
        ));
    }
    if matches!(v.backup.state, BackupState::Missing | BackupState::Differs) {
        out.push(Finding::of(
            Code::FsBackupBootSector,
            Facts {
                offset_bytes: v.backup.offset_bytes,
                backup_state: Some(v.backup.state.as_str().to_string()),
                ..base
            },
        ));
    }
    out
}

/// The cluster below the blocks of the device below, and a sector below
/// its logical block (the kernel does not mount that).
fn sizes(l: &Layer, kind: FsKind, sector: u32, v: &Volume) -> Vec<Finding> {
    let b = &l.below;
    let name = v.name();
    let facts = |what: &str, size: u64, fix: String| Facts {
        region: Some(format!("{name} {what}")),
        block_size_bytes: Some(size),
        device: Some(l.device.clone()),
        fix: Some(fix),
        ..Facts::default()
    };
    let (lbs, pbs) = (
        u64::from(b.logical_block_size),
        u64::from(b.physical_block_size),
    );
    if u64::from(sector) < lbs {
        let fix = mkfs_sector(kind, lbs);
        let f = Facts {
            logical_block_bytes: Some(lbs),
            ..facts("sector size", sector.into(), fix)
        };
        return vec![Finding::of(Code::FsBlockBelowPhysical, f).severity(Severity::Error)];
    }
    if v.cluster_bytes < pbs {
        let f = Facts {
            physical_block_bytes: Some(pbs),
            ..facts(
                "cluster size",
                v.cluster_bytes,
                mkfs_cluster(kind, pbs, sector),
            )
        };
        return vec![Finding::of(Code::FsBlockBelowPhysical, f)];
    }
    vec![]
}

/// The mkfs option that makes clusters of `bytes`.
fn mkfs_cluster(kind: FsKind, bytes: u64, sector: u32) -> String {
    match kind {
        FsKind::Exfat => format!("mkfs.exfat -c {bytes}"),
        FsKind::Ntfs => format!("mkntfs -c {bytes}"),
        _ => format!(
            "mkfs.fat -s {}",
            (bytes / u64::from(sector.max(1))).clamp(1, 128)
        ),
    }
}

fn mkfs_sector(kind: FsKind, bytes: u64) -> String {
    match kind {
        FsKind::Exfat => "mkfs.exfat (it takes the device's sector size)".to_string(),
        FsKind::Ntfs => format!("mkntfs -s {bytes}"),
        _ => format!("mkfs.fat -S {bytes}"),
    }
}

/// Where cluster 2 starts, judged as a layer's data start: the kernel's
/// grain, 4 KiB, the optimal I/O size. On the grid of the partition it
/// inherits the partition's start (check::inherit); off it, its findings
/// carry the share of clusters that straddle and the mkfs option.
fn data_start(l: &Layer, kind: FsKind, sector: u32, v: &Volume) -> Vec<Finding> {
    let what = match kind {
        FsKind::Exfat => format!("the exFAT cluster heap ({} in)", exact(v.data_offset_bytes)),
        FsKind::Ntfs => "the NTFS volume (its clusters count from its boot sector)".to_string(),
        _ => format!(
            "the {} data area (cluster 2, {} in)",
            v.name(),
            exact(v.data_offset_bytes)
        ),
    };
    let start = l.offset_bytes.saturating_add(v.data_offset_bytes);
    let base = Facts {
        region: Some(what),
        device: Some(l.device.clone()),
        ..Facts::default()
    };
    Start::judge(&l.below, start)
        .layer_findings(&l.below, &base)
        .into_iter()
        .map(|f| match f.facts.grain_bytes.filter(|&g| g > 0) {
            Some(grain) => {
                // On a flash card's unit, mkfs.exfat places the heap by
                // itself (-b); a FAT32's data area there needs the
                // reserved sectors that make up the distance (-a -R).
                let fix = match f.code {
                    Code::LayerStartNotEraseUnit if kind == FsKind::Vfat => {
                        unit_fix(l.offset_bytes, v, sector, grain)
                    }
                    Code::LayerStartNotEraseUnit if kind != FsKind::Exfat => None,
                    _ => placing_fix(kind, v, sector, grain),
                };
                let facts = Facts {
                    share: Some(straddling_share(start, v.cluster_bytes, grain)),
                    block_size_bytes: Some(v.cluster_bytes),
                    fix,
                    ..f.facts
                };
                Finding::of(f.code, facts).severity(f.severity)
            }
            None => f,
        })
        .collect()
}

/// A FAT32's data area on a flash card's unit: mkfs.fat with the
/// reserved sectors that make up the distance (`fat_reserved`), for its
/// partition's size (mkfs.fat sizes the volume to it), its cluster and
/// start. FAT12/16 have their root
/// directory between, and no answer.
fn unit_fix(start: u64, v: &Volume, sector: u32, unit: u64) -> Option<String> {
    if v.fat_type != Some(crate::stack::FatType::Fat32) {
        return None;
    }
    let bps = u64::from(sector.max(1));
    let spc = (v.cluster_bytes / bps).max(1);
    let r = super::fat_reserved::fat32_reserved(v.region_bytes / bps, bps, spc, start, unit)?;
    Some(format!(
        "mkfs.fat -F 32 -s {spc} -a -R {r} (with -a the data area starts exactly after these reserved sectors and the FATs, on the unit for this partition's size and start; run on the partition's node), after a backup"
    ))
}

/// An SD card's data area against its capacity's boundary unit in the
/// SD table, where that is not already the card's own unit (judged above,
/// and a warning there when off it): an info, naming the mkfs that
/// follows the table.
fn sd_boundary(l: &Layer, kind: FsKind, sector: u32, v: &Volume) -> Option<Finding> {
    let (bu, eu) = (l.below.sd_boundary_unit_bytes, l.below.erase_unit_bytes);
    let start = l.offset_bytes.saturating_add(v.data_offset_bytes);
    if bu == 0 || kind == FsKind::Ntfs || start % bu == 0 {
        return None;
    }
    if eu > 0 && (eu % bu == 0 || start % eu != 0) {
        return None;
    }
    let fix = match kind {
        FsKind::Exfat => Some(format!("mkfs.exfat -b {bu}, after a backup")),
        _ => unit_fix(l.offset_bytes, v, sector, bu),
    };
    Some(Finding::of(
        Code::FsDataNotSdBoundary,
        Facts {
            region: Some(format!("the {} data area", v.name())),
            offset_bytes: Some(start),
            grain_bytes: Some(bu),
            misalignment_bytes: Some(start % bu),
            device: Some(l.device.clone()),
            fix,
            ..Facts::default()
        },
    ))
}

/// The share of the units of `cluster` bytes, or of `grain` bytes when
/// clusters are smaller (runs of clusters counted from cluster 2, as a
/// file's 4 KiB pages are when it starts on one), laid from `start`, that
/// cross a multiple of `grain`. Cluster and grain are powers of two: a
/// unit of whole grains is off where its start is, so all or none are.
pub fn straddling_share(start: u64, cluster: u64, grain: u64) -> f64 {
    let unit = cluster.max(grain);
    if grain == 0 || (start % grain == 0 && unit % grain == 0) {
        0.0
    } else {
        1.0
    }
}

/// The mkfs options that put cluster 2 on `grain` when the volume's own
/// start is on it, or None where no option does:
/// - mkfs.fat without `-a` pads its reserved sectors to a whole cluster
///   (dosfstools `src/mkfs.fat.c`, what its `-a` turns off; seen with
///   dosfstools 4.2: `-s 8 -R 33` makes 40 reserved sectors), so clusters
///   of at least the grain do; but it leaves volumes of about 4 MiB
///   unpadded (seen: 4,100 KiB keeps 1 reserved sector, 4,160 KiB gets
///   8), and its clusters stop at 64 KiB (128 sectors);
/// - mkfs.exfat's `-b` aligns the FAT and the heap to a boundary counted
///   from the disk's start when it runs on the partition's node
///   (exfatprogs `mkfs/mkfs.c`; seen with 1.2.0: on a partition at sector
///   63, `-b 64K` put the heap at byte 327,680 of the disk), a power of
///   two only ("boundary align(12582912) is not a power of 2");
/// - an NTFS's clusters start with the volume: only a move aligns it.
fn placing_fix(kind: FsKind, v: &Volume, sector: u32, grain: u64) -> Option<String> {
    match kind {
        FsKind::Exfat if grain.is_power_of_two() => Some(format!(
            "mkfs.exfat -b {grain} (run on the partition's node, whose start it counts from), after a backup"
        )),
        FsKind::Exfat | FsKind::Ntfs => None,
        _ => {
            let spc = (v.cluster_bytes.max(grain) / u64::from(sector.max(1))).clamp(1, 128);
            let fat = match v.fat_type {
                Some(crate::stack::FatType::Fat12) => 12,
                Some(crate::stack::FatType::Fat16) => 16,
                _ => 32,
            };
            let padded = v.span_bytes >= 8 * crate::units::MIB;
            (padded && spc * u64::from(sector) >= grain).then(|| {
                format!(
                    "mkfs.fat -F {fat} -s {spc} without -a, which pads the reserved sectors to a whole cluster, after a backup"
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iolimits::Topology;
    use crate::stack::{Backup, Detail, FatType, Filesystem, LayerKind};
    use crate::units::MIB;

    fn fat32(offset: u64, data: u64, cluster: u64, hidden: u64) -> Layer {
        let t = Topology {
            physical_block_size: 4096,
            ..Topology::IMAGE_DEFAULT
        };
        let mut l = Layer::new(LayerKind::Filesystem, "FAT32", "d", offset, 64 * MIB, t);
        let v = Volume {
            fat_type: Some(FatType::Fat32),
            cluster_bytes: cluster,
            cluster_count: 1000,
            fat_offset_bytes: Some(16384),
            data_offset_bytes: data,
            data_start_bytes: offset + data,
            mft_offset_bytes: None,
            hidden_sectors: hidden,
            start_sectors: Some(offset / 512),
            span_bytes: 64 * MIB,
            region_bytes: 64 * MIB,
            label: None,
            serial: None,
            backup: Backup::default(),
        };
        l.detail = Some(Detail::Filesystem(Filesystem {
            kind: FsKind::Vfat,
            block_size: cluster as u32,
            sector_size: 512,
            stripe_unit_blocks: 0,
            stripe_width_blocks: 0,
            size_bytes: 64 * MIB,
            free_bytes: None,
            zoned: false,
            volume: Some(Box::new(v)),
            f2fs: None,
        }));
        l
    }

    fn judged(l: &Layer) -> Vec<Finding> {
        let f = l.filesystem().unwrap();
        volume_findings(l, f.kind, f.sector_size, f.volume.as_deref().unwrap())
    }

    /// An SDXC card of 4 MiB units whose table row says 16 MiB: a data
    /// area on 4 MiB but not 16 MiB is an info naming the table's unit;
    /// on 16 MiB nothing; off 4 MiB the card's own unit speaks alone.
    #[test]
    fn the_sd_tables_boundary_unit_is_an_info_beside_the_cards_unit() {
        let card = |data_at: u64| {
            let mut l = fat32(4 * MIB, data_at - 4 * MIB, 32768, 8192);
            l.below.erase_unit_bytes = 4 * MIB;
            l.below.removable_flash = true;
            l.below.sd_boundary_unit_bytes = 16 * MIB;
            judged(&l)
        };
        let f = card(8 * MIB);
        let sd = f
            .iter()
            .find(|f| f.code == Code::FsDataNotSdBoundary)
            .unwrap();
        assert_eq!(sd.severity, Severity::Info);
        assert_eq!(sd.facts.grain_bytes, Some(16 * MIB));
        assert_eq!(sd.facts.misalignment_bytes, Some(8 * MIB));
        assert!(
            sd.message.contains("16 MiB boundary unit"),
            "{}",
            sd.message
        );
        assert!(card(16 * MIB)
            .iter()
            .all(|f| f.code != Code::FsDataNotSdBoundary));
        let off = card(8 * MIB + 8192);
        assert!(
            off.iter().all(|f| f.code != Code::FsDataNotSdBoundary),
            "{off:?}"
        );
        assert!(off.iter().any(|f| f.code == Code::LayerStartNotEraseUnit));
        // A card unit and no table (an eMMC, --topology erase=): nothing.
        let mut l = fat32(4 * MIB, 4 * MIB, 32768, 8192);
        l.below.erase_unit_bytes = 4 * MIB;
        assert!(judged(&l)
            .iter()
            .all(|f| f.code != Code::FsDataNotSdBoundary));
    }

    /// The card: a FAT32 at 4 MiB whose data area is 2560 bytes
    /// past 4 KiB (mkfs.fat -s 8 -a -R 33) is an error naming 2560, every
    /// cluster straddling, and the mkfs.fat options that place it.
    #[test]
    fn a_data_area_off_4k_is_judged_with_its_share_and_fix() {
        let l = fat32(4 * MIB, 1_064_960 + 2560, 4096, 8192);
        let f = judged(&l);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, Code::LayerStartMisaligned);
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[0].facts.misalignment_bytes, Some(4096 - 2560));
        assert_eq!(f[0].facts.share, Some(1.0));
        let fix = f[0].facts.fix.as_deref().unwrap();
        assert!(fix.starts_with("mkfs.fat -F 32 -s 8 without -a"), "{fix}");
        assert!(f[0]
            .message
            .contains("100.0 % of its 4096-byte clusters straddle"));
        // On 4 KiB but not on 1 MiB (mkfs.fat's default): info only.
        let ok = judged(&fat32(4 * MIB, 1_064_960, 4096, 8192));
        assert_eq!(ok.len(), 1, "{ok:?}");
        assert_eq!(
            (ok[0].code, ok[0].severity),
            (Code::LayerStartNot1Mib, Severity::Info)
        );
    }

    #[test]
    fn hidden_sectors_are_a_warning_when_wrong_and_info_when_never_set() {
        let moved = judged(&fat32(MIB, MIB, 4096, 63));
        assert_eq!(moved.len(), 1);
        assert_eq!(
            (moved[0].code, moved[0].severity),
            (Code::FsHiddenSectors, Severity::Warning)
        );
        assert_eq!(moved[0].facts.recorded_sectors, Some(63));
        assert_eq!(moved[0].facts.start_sectors, Some(2048));
        let unset = judged(&fat32(MIB, MIB, 4096, 0));
        assert_eq!(unset[0].severity, Severity::Info);
    }

    #[test]
    fn a_volume_past_its_partition_and_a_bad_backup_are_named() {
        let mut l = fat32(MIB, MIB, 4096, 2048);
        if let Some(Detail::Filesystem(f)) = &mut l.detail {
            let v = f.volume.as_mut().unwrap();
            v.region_bytes = 32 * MIB;
            v.backup = Backup {
                state: BackupState::Differs,
                offset_bytes: Some(3072),
            };
        }
        let codes: Vec<Code> = judged(&l).iter().map(|f| f.code).collect();
        assert_eq!(codes, [Code::FsBeyondPartition, Code::FsBackupBootSector]);
    }

    #[test]
    fn small_clusters_below_the_physical_block_get_the_mkfs_option() {
        let f = judged(&fat32(MIB, MIB, 512, 2048));
        assert_eq!(f[0].code, Code::FsBlockBelowPhysical);
        assert_eq!(f[0].facts.fix.as_deref(), Some("mkfs.fat -s 8"));
    }

    /// No fix is printed where none does it: mkfs.fat leaves a volume of
    /// about 4 MiB unpadded, its clusters stop at 64 KiB, and mkfs.exfat
    /// takes no boundary that is not a power of two.
    #[test]
    fn no_fix_is_claimed_where_mkfs_cannot_place_it() {
        let mut l = fat32(4 * MIB, 1_064_960 + 2560, 4096, 8192);
        let small = |l: &mut Layer, span: u64| {
            if let Some(Detail::Filesystem(f)) = &mut l.detail {
                f.volume.as_mut().unwrap().span_bytes = span;
            }
        };
        small(&mut l, 4 * MIB);
        assert_eq!(judged(&l)[0].facts.fix, None);
        small(&mut l, 64 * MIB);
        assert!(judged(&l)[0].facts.fix.is_some());
        let v = l.filesystem().unwrap().volume.as_deref().unwrap();
        assert_eq!(placing_fix(FsKind::Vfat, v, 512, MIB), None);
        assert_eq!(placing_fix(FsKind::Exfat, v, 512, 12 * MIB), None);
        assert_eq!(
            placing_fix(FsKind::Exfat, v, 512, 4 * MIB).as_deref(),
            Some("mkfs.exfat -b 4194304 (run on the partition's node, whose start it counts from), after a backup")
        );
    }

    /// A volume at the start of an image that records another start is an
    /// image of a partition: information, not a moved volume.
    #[test]
    fn a_partition_image_keeps_its_partitions_start_as_info() {
        let mut l = fat32(0, MIB, 4096, 2048);
        if let Some(Detail::Filesystem(f)) = &mut l.detail {
            f.volume.as_mut().unwrap().start_sectors = Some(0);
        }
        let f = judged(&l);
        let h = f.iter().find(|f| f.code == Code::FsHiddenSectors).unwrap();
        assert_eq!(h.severity, Severity::Info);
        assert!(
            h.message.contains("an image of a partition"),
            "{}",
            h.message
        );
    }

    #[test]
    fn the_share_is_of_whole_units() {
        assert_eq!(straddling_share(4096, 4096, 4096), 0.0);
        assert_eq!(straddling_share(4096 + 512, 4096, 4096), 1.0);
        assert_eq!(straddling_share(1024, 512, 4096), 1.0);
        assert_eq!(straddling_share(65536, 4096, 65536), 0.0);
    }
}
