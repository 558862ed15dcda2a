//! What to do about each finding the plan's layout change leaves behind:
//! the commands that clear it, named for the disk, partition or device
//! they were made for, or why no command can. Every code check can make
//! has its arm here (the match has no wildcard), so a new code does not
//! build until the plan says what it does about it.

use super::boot;
use super::hidden::{self, Voice};
use super::place::Reach;
use crate::findings::{Code, Finding};
use crate::names::shell_word;
use crate::stack::FsKind;
use crate::stack::Layer;

/// What the plan says about one finding it leaves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remedy {
    /// What to do, or why nothing in place fixes it, in words.
    pub why: String,
    /// Commands that run as printed.
    pub commands: Vec<String>,
    /// Running them clears the finding (`check` then no longer reports it).
    pub clears: bool,
    /// There is something for the user to do (commands, or steps said in
    /// words); false where nothing on the disk changes it.
    pub work: bool,
}

impl Remedy {
    /// Steps in words: something to do that no one command does.
    fn said(why: impl Into<String>) -> Remedy {
        Remedy {
            why: why.into(),
            work: true,
            ..Remedy::default()
        }
    }

    /// Nothing to do on the disk: why.
    fn none(why: impl Into<String>) -> Remedy {
        Remedy {
            why: why.into(),
            ..Remedy::default()
        }
    }

    fn run(why: impl Into<String>, commands: Vec<String>) -> Remedy {
        Remedy {
            why: why.into(),
            clears: !commands.is_empty(),
            work: true,
            commands,
        }
    }
}

/// The remedy of `f`, about `layer` (None for a partition's or the
/// disk's own finding) reached as `reach`, on `disk`.
pub fn remedy(f: &Finding, layer: Option<&Layer>, reach: &Reach, disk: &boot::Disk) -> Remedy {
    use Code::*;
    match f.code {
        // The placement of a partition: the script's moves fix it; left
        // where the plan places it so on purpose (its start grain, a
        // content its tool shifted, an end its content reaches: each with
        // its own note above).
        StartMisaligned | StartNot4k | StartNotOptimal | StartNotPreferredWrite | StartNot1Mib
        | StartNotEraseUnit
        | StartNotDiscard | LayoutNotPortable | ImageUnitStraddle | EndNot4k | EndNotPhysical
        | SizeNot4k | EndNotEraseUnit => Remedy::none(
            "where the plan places it (the grain in its first line says why, a note above when the content keeps it there)",
        ),
        GptBackupInvalid => gpt_backup(disk),
        KernelTableDiffers | KernelOffsetDiffers | KernelReportsMisaligned | NodeBlockSizeDiffers => {
            kernel_view(disk)
        }
        TableSectorSizeMismatch | PartitionOverlap | PartitionOutsideDisk | PartitionInvalid
        | GptPrimaryInvalid | ProtectiveMbrWithoutGpt | MetadataInvalid => Remedy::said(
            "damage to repair with the tool that made it (sgdisk, sfdisk, vgcfgrestore, mdadm, fsck) before anything is moved: the plan does not rewrite damaged metadata",
        ),
        OptimalIoSuspicious | MinimumIoSuspicious | NonPowerOfTwoIo | Hidden4kSuspected
        | IoctlSysfsMismatch | NvmeFormat4kAvailable | HybridMbr | ToolsDisagree | TableNotRead
        | TopologyUnknown | ImageEncrypted | ImageSizePartialSector | EraseUnitMeasured => Remedy::none(
            "what the device reports or how it was read: nothing on the disk changes it (give --topology to judge with the values it should report)",
        ),
        LvmPvMissing | MdMemberMissing | LayerNotFollowed | LuksContentsUnchecked => Remedy::none(
            "not followed: give every member's device or image (or open the container) and check again",
        ),
        ZoneTableIgnored | ZoneMisalignedStart | ZoneMisalignedEnd | ZoneExtentMisaligned
        | ZoneFsNotZoned => Remedy::said(super::recipes::zoned(f).join("; ")),
        ZfsAshiftBelowPhysical | ZfsAshiftAbovePhysical => {
            Remedy::said(super::recipes::new_zfs_vdev(f).join("; "))
        }
        LayerStartMisaligned | LayerStartNot4k | LayerStartNotOptimal | LayerStartNot1Mib
        | LayerStartNotEraseUnit
        | LayerStartNotPreferredWrite | LvmStripeMisaligned => layer_start(f, layer),
        LvmExtentMisaligned => Remedy::said(
            "the VG's extent size is fixed for its LVs: vgchange -s NEW_SIZE VG changes it only while every LV's size is a multiple of the new one; otherwise make the VG again with vgcreate -s (its data moved elsewhere first)",
        ),
        MdChunkBelowPhysical | MdMembersInconsistent => Remedy::said(
            "an md array's chunk and data offsets are fixed when it is made: back up its data, make it again (mdadm --create --chunk, --data-offset) on aligned members, and restore",
        ),
        BcacheBlockSize => Remedy::said(
            "a bcache device's block size is fixed when it is made: detach it, make it again with make-bcache --block 4k, and attach it",
        ),
        BluestoreAllocBelowGrain => Remedy::said(format!(
            "a BlueStore OSD's allocation unit is fixed when it is made: {}",
            f.facts.fix.as_deref().unwrap_or("redeploy the OSD")
        )),
        LuksSectorSize | LuksSectorBelowDeclared => Remedy::said(
            "the encryption sector size of a LUKS2 container changes only by re-encrypting it (cryptsetup reencrypt --sector-size 4096, with a filesystem above whose block is at least that; a backup first): a long operation the plan does not print as one command",
        ),
        FsBlockBelowPhysical => Remedy::said(
            "a filesystem's block size is fixed when it is made: back up its data, make it again with a block of the physical block or more (mkfs.ext4 -b 4096, mkfs.xfs -b size=4096 -s size=4096), and restore",
        ),
        FsDataNotSdBoundary => Remedy::none(
            "the SD table's recommendation, not the card's own unit: made again with the fix named, the data area follows it (after a backup)",
        ),
        FsSectionNotEraseUnit => Remedy::said(
            "an f2fs's section size is fixed when it is made: back up its data, make it again with sections of whole units (mkfs.f2fs -s, segments per section), and restore",
        ),
        FsStripeHintsMissing | FsStripeHintsMismatch => stripe_hints(f, layer, reach),
        FsHiddenSectors => hidden_sectors(f, layer, reach),
        FsBeyondPartition => Remedy::said(
            "the volume counts more sectors than its partition holds: make the partition end at or after the volume's end again (sfdisk -N), or copy what is readable off it and make the volume again; the plan moves no volume cut short",
        ),
        FsBackupBootSector => Remedy::said(
            "check the main boot sector first (fsck.fat -n, ntfsinfo -m, fsck.exfat -n), then write the backup from it: a FAT32's with fsck.fat -r -w answering 1, \"Copy original to backup\" (fsck.fat -a leaves it: \"Not automatically fixing this\"); an NTFS's with ntfsfix, which rewrites the alternate boot sector; an exFAT's by copying its main boot region (sectors 0 to 11) over the backup (12 to 23) with dd, as fsck.exfat (exfatprogs 1.2.0) neither checks nor writes it",
        ),
        ThinChunkBelowStripe | ThinDataStart | ThinFsHintsChunk => Remedy::said(f.facts.fix.clone().unwrap_or_else(|| {
            "a thin pool's chunk and its data LV's place are fixed when it is made: a new pool (lvcreate --type thin-pool --chunksize) on a stripe, and each thin LV copied into it".into()
        })),
        HostMisaligned => Remedy::said(
            "where the image file lies on the host disk is the host's layout, not the guest's: copy the image to a filesystem on an aligned host partition (qemu-img convert, or cp), or plan the host disk itself (diskalign plan on the disk the finding names)",
        ),
        HostNotJudged => Remedy::none(
            "how the image's host was read: nothing in the image changes it",
        ),
        MultipathPath => Remedy::none(
            "a path of a multipath map: the map is the disk, plan it (diskalign plan on the map's node the finding names) and change the table there, never on a path",
        ),
        StraddlingIo | SubPhysicalWrites | SplitIo | ZoneCrossingWrites => Remedy::none(
            "watch's finding: the plan of what check finds places the layers; the workload's own I/O sizes are the application's",
        ),
    }
}

/// A damaged or misplaced backup GPT: sgdisk writes both copies anew,
/// the backup at the disk's last LBA.
fn gpt_backup(disk: &boot::Disk) -> Remedy {
    let why =
        "sgdisk -e writes the GPT's backup anew at the disk's last LBA (from the sound primary)";
    match disk {
        boot::Disk::Live(d) | boot::Disk::Image(d) => {
            Remedy::run(why, vec![format!("sgdisk -e {}", shell_word(d))])
        }
        boot::Disk::Container { raw, .. } => Remedy::said(format!(
            "{why}: on the raw copy, {raw}, after sh fix.sh and before it is converted back (sgdisk -e {})",
            shell_word(raw)
        )),
    }
}

/// What the kernel registered differs from the disk: it reads the table
/// again when nothing on the disk is in use.
fn kernel_view(disk: &boot::Disk) -> Remedy {
    match disk {
        boot::Disk::Live(d) => Remedy::run(
            "the kernel still has the old table: make it read the table again (partx refuses a partition in use: unmount it first)",
            vec![format!("partx -u {}", shell_word(d))],
        ),
        _ => Remedy::none("the kernel's view of a live disk: an image has none"),
    }
}

/// A volume whose boot sectors record another start than where it is:
/// the command that writes that start into them (and into the backup
/// that says what the main one says), where the volume is; in words
/// where no command reaches it.
fn hidden_sectors(f: &Finding, layer: Option<&Layer>, reach: &Reach) -> Remedy {
    // A volume at the start of its image (a partition's copy) keeps the
    // start it had on its disk: writing 0 there would break it.
    if f.facts.start_sectors == Some(0) {
        return Remedy::none(
            "the volume is at the start of what it is in, an image of a partition: the start it records is its partition's, right once it is written back there",
        );
    }
    let why = "write the volume's start into its boot sector's hidden sectors (BPB offset 0x1C; exFAT: PartitionOffset at byte 64, which changes its boot checksum) and into its backup; only boot code reads it: a volume no one boots from can keep it";
    let h = layer
        .and_then(|l| hidden::BootVolume::of(l, 0))
        .zip(f.facts.recorded_sectors.zip(f.facts.start_sectors))
        .and_then(|(b, (from, to))| hidden::fixing(&b, from, to));
    let Some(h) = h else {
        return Remedy::said(why);
    };
    let (s, they) = match h.at_bytes.len() {
        1 => ("", "it"),
        _ => ("s", "they"),
    };
    let why = format!(
        "write the volume's start, {}, into its {} boot sector{s} ({} {}, which {they} still record): the command checks first that {they} are the volume read; only boot code reads it, so a volume no one boots from can keep it",
        h.to,
        h.volume,
        h.field_name(),
        h.from,
    );
    match reach {
        Reach::Node { node, offset } => Remedy::run(
            why,
            vec![h.write_command(&shell_word(node), *offset, Voice::Printed)],
        ),
        Reach::File { path, offset, .. } => Remedy::run(
            why,
            vec![h.write_command(&shell_word(path), *offset, Voice::Printed)],
        ),
        Reach::Not(reason) => Remedy::said(format!("{why}; {reason}")),
    }
}

/// A layer whose data start is off: it moves only with its data. A FAT's
/// data area or an exFAT's cluster heap is placed by the mkfs that made
/// it (check's `fix` names the options).
fn layer_start(f: &Finding, layer: Option<&Layer>) -> Remedy {
    let fs = layer.and_then(|l| l.filesystem());
    if let (Some(fs), Some(fix)) = (fs, f.facts.fix.as_deref()) {
        if matches!(fs.kind, FsKind::Vfat | FsKind::Exfat) {
            let name = fs.volume.as_deref().map_or("volume", |v| v.name());
            let again = match fs.kind {
                FsKind::Exfat => {
                    "mkfs.exfat -L LABEL keeps the label, and tune.exfat -I SERIAL then the serial"
                }
                _ => "mkfs.fat -n LABEL -i SERIAL keeps the label and the serial",
            };
            return Remedy::said(format!(
                "where the {name}'s clusters start is fixed when it is made: copy its files off, make it again ({fix}; {again} that /etc/fstab's UUID= names), and copy the files back"
            ));
        }
    }
    let name = layer.map_or("", |l| l.name.as_str());
    if name.contains("PV ") || name.starts_with("segment ") {
        return Remedy::said(format!(
            "move the extents to a PV made aligned and drop this one: {}",
            super::recipes::pvmove_to_a_new_pv().join("; ")
        ));
    }
    if name.contains("LUKS") {
        return Remedy::said(super::recipes::recreate_luks().join("; "));
    }
    Remedy::said(
        "a layer's data start is fixed in its own metadata: back up its data, make the layer again on an aligned start, and restore",
    )
}

/// Stripe hints: tune2fs sets an ext4's in place; an XFS takes them at
/// its next mount.
fn stripe_hints(f: &Finding, layer: Option<&Layer>, reach: &Reach) -> Remedy {
    let fs = layer.and_then(|l| l.filesystem());
    let (Some(fs), Some(chunk), Some(width)) =
        (fs, f.facts.chunk_bytes, f.facts.stripe_width_bytes)
    else {
        return Remedy::said(f.facts.fix.clone().unwrap_or_default());
    };
    match fs.kind {
        FsKind::Ext4 => {
            let block = u64::from(fs.block_size).max(1);
            let (stride, stripe_width) = (chunk / block, width / block);
            let why = format!(
                "set the ext4's stripe hints in place: stride {stride} and stripe width {stripe_width} blocks of {block} bytes (chunk {chunk}, stripe width {width} bytes)"
            );
            match (reach.e2fs(), reach.reason()) {
                (Some(name), _) => Remedy::run(
                    why,
                    vec![format!(
                        "tune2fs -E stride={stride},stripe_width={stripe_width} {name}"
                    )],
                ),
                (None, reason) => Remedy::said(format!(
                    "{why} with tune2fs -E stride={stride},stripe_width={stripe_width} on its device; {}",
                    reason.unwrap_or_default()
                )),
            }
        }
        _ => Remedy::said(format!(
            "an XFS takes stripe hints at its next mount and keeps them in its superblock: mount it once with -o sunit={},swidth={} (512-byte units), or make it again with mkfs.xfs -d su={chunk},sw={}",
            chunk / 512,
            width / 512,
            width / chunk.max(1)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Facts;
    use crate::plan::hidden::tests::{disk_with, fixture, layer, put, sh};

    const MIB: u64 = 1 << 20;

    /// A FAT32 whose boot sectors record 63 while it lies at sector 63
    /// of a file that is then read at another offset (a volume copied):
    /// the command writes the start check found, where the volume is,
    /// and clears the finding; where no command reaches it, words.
    #[test]
    fn hidden_sectors_get_the_command_where_the_volume_is() {
        let disk = disk_with(&fixture("fat32-s1"), 6, &|b| {
            put(b, 0x1c, &63u32.to_le_bytes())
        });
        let l = layer(&disk, 63 * 512, 2 * MIB);
        let f = Finding::of(
            Code::FsHiddenSectors,
            Facts {
                recorded_sectors: Some(63),
                start_sectors: Some(4096),
                ..Facts::default()
            },
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.img");
        std::fs::write(&path, &disk).unwrap();
        let reach = Reach::File {
            path: path.display().to_string(),
            offset: 63 * 512,
            copy: false,
        };
        let d = boot::Disk::Image(path.display().to_string());
        let r = remedy(&f, Some(&l), &reach, &d);
        assert!(r.clears && r.work, "{r:?}");
        assert!(
            r.why.starts_with("write the volume's start, 4096, into its FAT32 boot sectors (hidden sectors 63, which they still record)"),
            "{}",
            r.why
        );
        let (code, out) = sh(&r.commands[0]);
        assert_eq!(code, 0, "{out}");
        let b = std::fs::read(&path).unwrap();
        for at in [63 * 512 + 0x1c, 69 * 512 + 0x1c] {
            assert_eq!(b[at..at + 4], 4096u32.to_le_bytes(), "{at}");
        }
        let not = remedy(&f, Some(&l), &Reach::Not("no device".into()), &d);
        assert!(!not.clears && not.commands.is_empty() && not.why.ends_with("; no device"));
        assert!(!remedy(&f, None, &reach, &d).clears);
    }

    /// A FAT's data area off the grain: check's mkfs options, with the
    /// files copied off and back; another layer's keeps its sentence.
    #[test]
    fn a_fat_data_area_is_made_again_with_check_s_options() {
        let disk = disk_with(&fixture("fat32-s8-a-R33"), 6, &|_| {});
        let l = layer(&disk, 63 * 512, 2 * MIB);
        let fix = "mkfs.fat -F 32 -s 8 without -a, which pads the reserved sectors to a whole cluster, after a backup";
        let f = Finding::of(
            Code::LayerStartNot4k,
            Facts {
                fix: Some(fix.into()),
                ..Facts::default()
            },
        );
        let d = boot::Disk::Image("d.img".into());
        let r = remedy(&f, Some(&l), &Reach::Not(String::new()), &d);
        assert!(r.work && !r.clears && r.commands.is_empty());
        assert!(
            r.why
                .contains(&format!("copy its files off, make it again ({fix};")),
            "{}",
            r.why
        );
        assert!(r.why.contains("mkfs.fat -n LABEL -i SERIAL"), "{}", r.why);
        let plain = Finding::of(Code::LayerStartNot4k, Facts::default());
        let r = remedy(&plain, Some(&l), &Reach::Not(String::new()), &d);
        assert!(
            r.why.starts_with("a layer's data start is fixed"),
            "{}",
            r.why
        );
    }
}
