//! The finding vocabulary: every code diskalign can report, with its default
//! severity and a one-line summary. Codes are a public interface (JSON
//! `findings[].code`); add new ones, never rename or reuse old ones.
//! docs/findings.md documents each of them (a test keeps the two in sync).

mod facts;
mod host;
mod meaning;
mod render;
mod render_bluestore;
mod render_multipath;
mod render_zones;
mod status;
mod words;

/// What a finding is about, and its typed facts.
pub use facts::{Facts, LegFact, Subject, SubmitterFact, SUBJECT_SEPARATOR};
/// What a code means for the user (its tier).
pub use meaning::Meaning;
/// The status word a set of findings gives, --fail-on, counts by severity.
pub use status::{distinct, Counts, FailOn, Status};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// How bad a finding is: an error hurts every I/O or breaks the layout, a
/// warning is hygiene, info is advice (see `status`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

crate::spelled_as_serde!(Severity);

macro_rules! codes {
    ($( $variant:ident = $text:literal, $sev:ident, $summary:literal; )*) => {
        /// A stable finding code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Code { $( $variant, )* }

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )* ];

            /// The code as it appears in JSON and in the human report.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $text, )* }
            }

            /// The severity a finding with this code has unless a rule says otherwise.
            pub fn default_severity(self) -> Severity {
                match self { $( Code::$variant => Severity::$sev, )* }
            }

            /// One line saying what the code means.
            pub fn summary(self) -> &'static str {
                match self { $( Code::$variant => $summary, )* }
            }
        }
    };
}

codes! {
    // Partition placement against the device below.
    StartMisaligned = "start-misaligned", Error,
        "The start breaks the kernel's rule (g + ao - start mod g) mod g with g = max(pbs, min).";
    StartNot4k = "start-not-4k", Error,
        "The start is not a multiple of 4 KiB: 4K media (every SSD, every disk since 2011, whatever it reports) splits every 4 KiB I/O in two.";
    StartNot1Mib = "start-not-1mib", Info,
        "The start is not a multiple of 1 MiB, the grain every current tool uses.";
    StartNotOptimal = "start-not-optimal", Warning,
        "The start is not a multiple of a sane optimal I/O size (RAID stripe width).";
    StartNotDiscard = "start-not-discard", Info,
        "The start is not aligned to the discard (TRIM) granularity.";
    StartNotPreferredWrite = "start-not-preferred-write", Warning,
        "The start meets the kernel's grain and 4 KiB but not the NVMe namespace's declared preferred write alignment and granularity (NPWA, NPWG).";
    EndNot4k = "end-not-4k", Warning,
        "The end (last byte + 1) is not a multiple of 4 KiB.";
    EndNotPhysical = "end-not-physical", Warning,
        "The end (last byte + 1) is not a multiple of a physical block larger than 4 KiB.";
    EndNotEraseUnit = "end-not-erase-unit", Info,
        "A partition on flash ends inside the card's allocation unit: the rest of that unit holds nothing of it, and what starts there (a partition: start-not-erase-unit) shares the unit with its last blocks.";
    SizeNot4k = "size-not-4k", Warning,
        "The size is not a multiple of 4 KiB: the kernel gives the partition node a block size below 4096.";
    LayoutNotPortable = "layout-not-portable", Info,
        "Some start or end is not a multiple of 1 MiB, so the layout may misalign under another topology.";
    // What the tools would say.
    ToolsDisagree = "tools-disagree", Info,
        "parted, fdisk and sgdisk reach different verdicts or first starts on this disk; the message says why.";
    // The partition table itself.
    TableSectorSizeMismatch = "table-sector-size-mismatch", Error,
        "The partition table was written for another logical sector size than the device presents.";
    PartitionOverlap = "partition-overlap", Error,
        "Two partitions share sectors.";
    PartitionOutsideDisk = "partition-outside-disk", Error,
        "A partition ends beyond the device (or outside the GPT usable area).";
    PartitionInvalid = "partition-invalid", Error,
        "A partition entry is malformed (end before start, zero size).";
    GptPrimaryInvalid = "gpt-primary-invalid", Error,
        "The primary GPT header or entry array is damaged; the backup was used.";
    GptBackupInvalid = "gpt-backup-invalid", Error,
        "The backup GPT header or entry array is missing or damaged.";
    HybridMbr = "hybrid-mbr", Info,
        "The MBR holds real partitions next to the GPT protective entry (a hybrid MBR).";
    ProtectiveMbrWithoutGpt = "protective-mbr-without-gpt", Error,
        "The MBR says GPT but no GPT header was found at LBA 1 for 512 or 4096-byte sectors.";
    // What the device itself declares.
    NvmeFormat4kAvailable = "nvme-format-4k-available", Info,
        "The NVMe namespace uses 512-byte blocks and offers a 4096-byte LBA format at least as fast: `nvme format --lbaf=N` switches to it and erases the namespace (never run by diskalign).";
    // What the kernel says.
    KernelReportsMisaligned = "kernel-reports-misaligned", Error,
        "The kernel itself reports a misalignment: alignment_offset -1 / 4294967295 (misaligned stacking), or a dm/md device it places off the physical grid below (alignment_offset > 0).";
    KernelOffsetDiffers = "kernel-offset-differs", Warning,
        "The kernel's per-partition alignment_offset differs from diskalign's computation.";
    NodeBlockSizeDiffers = "node-block-size-differs", Info,
        "The partition node's block size read back with BLKBSZGET differs from the one the kernel picks for its size: something set it (a mounted filesystem sets its own block size, or BLKBSZSET).";
    KernelTableDiffers = "kernel-table-differs", Warning,
        "The partitions the kernel registered differ from the table on disk.";
    // Zoned disks (issue 40).
    ZoneTableIgnored = "zone-table-ignored", Warning,
        "The disk is host-managed zoned: the kernel ignores its partition table and refuses partitions on it, so its partitions are not judged.";
    ZoneMisalignedStart = "zone-misaligned-start", Warning,
        "A partition on a host-aware zoned disk starts off a zone boundary: it shares its first zone with what lies before it.";
    ZoneMisalignedEnd = "zone-misaligned-end", Warning,
        "A partition on a host-aware zoned disk ends (last byte + 1) off a zone boundary before the end of the disk: it shares its last zone with what follows.";
    ZoneExtentMisaligned = "zone-extent-misaligned", Error,
        "An LVM PV on a zoned disk whose data start or extent size is not a multiple of the zone size: device-mapper refuses to map an LV segment off the zones, so its LVs cannot be activated.";
    ZoneFsNotZoned = "zone-fs-not-zoned", Error,
        "A btrfs or f2fs without zoned mode on a host-managed zoned disk: the kernel does not mount it.";
    // Topology hints.
    OptimalIoSuspicious = "optimal-io-suspicious", Warning,
        "optimal_io_size is implausible (65535 x logical block, not a multiple of pbs or min).";
    MinimumIoSuspicious = "minimum-io-suspicious", Warning,
        "minimum_io_size is not a multiple of the physical block size.";
    NonPowerOfTwoIo = "non-power-of-two-io", Warning,
        "An I/O hint is not a power of two while nothing is stacked underneath.";
    Hidden4kSuspected = "hidden-4k-suspected", Warning,
        "A disk larger than 2 TB reports 512-byte physical sectors; it is probably a 4K drive behind a bridge that hides it.";
    IoctlSysfsMismatch = "ioctl-sysfs-mismatch", Warning,
        "The ioctl and sysfs views of the same limit disagree.";
    // Layers above the partition table (LVM, md, LUKS, filesystems).
    LayerStartMisaligned = "layer-start-misaligned", Error,
        "A layer's data start (pe_start, md data_offset, LUKS payload, LV leg) breaks the kernel's rule of the device below.";
    LayerStartNot4k = "layer-start-not-4k", Error,
        "A layer's data start is not a multiple of 4 KiB on the device below.";
    LayerStartNotOptimal = "layer-start-not-optimal", Warning,
        "A layer's data start is not a multiple of the optimal I/O size (RAID stripe width) of the device below.";
    LayerStartNot1Mib = "layer-start-not-1mib", Info,
        "A layer's data start is not a multiple of 1 MiB on the device below.";
    StartNotEraseUnit = "start-not-erase-unit", Warning,
        "A partition does not start on a multiple of the flash card's allocation unit (an SD card's AU, an eMMC's erase group: the mmc core's preferred_erase_size, or --topology erase=): the unit that holds its first blocks is shared with what comes before, and the card erases and rewrites whole units. A warning on removable flash (SD cards, and what --topology erase= describes), an info on eMMC.";
    LayerStartNotEraseUnit = "layer-start-not-erase-unit", Warning,
        "A layer's data start (a FAT's data area, an exFAT's cluster heap, a PV's first extent, ...) is not on a multiple of the flash card's allocation unit below; a warning on removable flash, an info on eMMC. The SD Association's formatter puts a FAT's data area on the unit.";
    LayerStartNotPreferredWrite = "layer-start-not-preferred-write", Warning,
        "A layer's data start meets the kernel's grain and 4 KiB but not the NVMe namespace's declared preferred write alignment and granularity (NPWA, NPWG).";
    LvmStripeMisaligned = "lvm-stripe-misaligned", Error,
        "The legs of a striped LV start off the physical unit or off each other: each stripe write touches more units than it should.";
    LvmExtentMisaligned = "lvm-extent-misaligned", Warning,
        "The VG's extent size is not a multiple of an LV's stripe size or of the optimal I/O size below.";
    LvmPvMissing = "lvm-pv-missing", Info,
        "A PV of the volume group is not among the targets, so LVs on it cannot be followed.";
    MdChunkBelowPhysical = "md-chunk-below-physical", Warning,
        "The md chunk size is smaller than, or not a multiple of, the members' physical block size.";
    MdMembersInconsistent = "md-members-inconsistent", Warning,
        "The md members disagree on geometry or their data areas are not equally aligned.";
    MdMemberMissing = "md-member-missing", Info,
        "An md array slot has no member among the targets.";
    LuksContentsUnchecked = "luks-contents-unchecked", Info,
        "The LUKS payload is encrypted: layers inside cannot be checked without opening it.";
    BcacheBlockSize = "bcache-block-size", Warning,
        "A bcache device's block size is below the physical block of the device below, so its writes are read-modify-writes there.";
    ZfsAshiftBelowPhysical = "zfs-ashift-below-physical", Error,
        "A ZFS vdev's allocation unit (2^ashift) is below the physical block of the device below, so its writes are read-modify-writes there, for the life of the vdev.";
    ZfsAshiftAbovePhysical = "zfs-ashift-above-physical", Info,
        "A ZFS vdev's allocation unit (2^ashift) is above the physical block the device needs: every block smaller than the unit (a small file, a compressed record, metadata) takes a whole unit of space.";
    BluestoreAllocBelowGrain = "bluestore-alloc-below-grain", Warning,
        "A Ceph BlueStore OSD's allocation unit (min_alloc_size, the label's bfm_bytes_per_block) is below the unit the device writes in (its physical block, NVMe preferred write granularity, a measured unit; info for a RAID chunk or LV stripe's minimum I/O): each one-unit allocation is a partial write there, for the OSD's life.";
    LuksSectorSize = "luks-sector-size", Warning,
        "The LUKS2 encryption sector size is below the logical (error) or physical (warning) block size of the device below.";
    LuksSectorBelowDeclared = "luks-sector-below-declared", Warning,
        "The LUKS encryption sector size is below the physical block the disk itself declares (NVMe Identify, ATA IDENTIFY, SCSI READ CAPACITY(16)), where the kernel reports a smaller one.";
    FsBlockBelowPhysical = "fs-block-below-physical", Warning,
        "The filesystem block or sector size is below the physical (warning) or logical (error) block size of the device below.";
    FsSectionNotEraseUnit = "fs-section-not-erase-unit", Warning,
        "An f2fs's sections (what its cleaner frees at once) are not a whole number of the flash card's allocation units: a freed section leaves part of a unit in use, so the card still copies it before erasing.";
    FsDataNotSdBoundary = "fs-data-not-sd-boundary", Info,
        "An SD card's FAT data area or exFAT cluster heap is on the card's allocation unit but not on the boundary unit the SD specification's table gives its capacity, where the SD Association's formatter puts it.";
    FsHiddenSectors = "fs-hidden-sectors", Warning,
        "A FAT, exFAT or NTFS boot sector records a start on the disk (hidden sectors; exFAT's PartitionOffset) other than where the volume starts: boot code and Windows, which read it, look in the wrong place (a moved or copied volume). Info when it records 0 (mkfs on an image file or a loop device), and when the volume is at the start of what it is in (an image of a partition, made by dd or ntfsclone, keeps its partition's start; plan then prints no command): only boot code reads it.";
    FsBeyondPartition = "fs-beyond-partition", Error,
        "A FAT, exFAT or NTFS volume counts more bytes (NTFS: with its backup boot sector after them) than the partition or device it is in holds: its end is cut off.";
    FsBackupBootSector = "fs-backup-boot-sector", Warning,
        "A FAT32, exFAT or NTFS volume's backup boot sector (exFAT: boot region) is missing or differs from the main one, so a repair tool that falls back to it restores something else.";
    FsStripeHintsMissing = "fs-stripe-hints-missing", Warning,
        "The device below is striped but the filesystem has no stripe hints (ext4 stride/stripe_width, XFS sunit/swidth).";
    FsStripeHintsMismatch = "fs-stripe-hints-mismatch", Warning,
        "The filesystem's stripe hints differ from the chunk and stripe width of the device below.";
    MetadataInvalid = "metadata-invalid", Error,
        "Metadata of a layer (LVM label or text, md superblock, LUKS header, filesystem superblock) is damaged; the message names the byte.";
    LayerNotFollowed = "layer-not-followed", Info,
        "A layer's contents could not be read from the targets given (a member missing, an unsupported layout).";
    TableNotRead = "table-not-read", Info,
        "The device node could not be opened (no permission, a container, a --sysfs-root tree): the partitions are judged from the kernel's view in sysfs, and the layers inside them are not checked.";
    TopologyUnknown = "topology-unknown", Info,
        "The target is an image: the disk its guest is given is unknown, so it is judged against 4 KiB and 1 MiB anyway (where the file lies on the host disk is judged apart: host-misaligned).";
    // The image container a guest disk is read through.
    ImageUnitStraddle = "image-unit-straddle", Warning,
        "A start off 4 KiB inside an image container makes some 4 KiB guest blocks straddle two of the container's allocation units (qcow2 cluster or subcluster, VMDK grain, VHDX, VDI or VHD block): a first write or a snapshot's copy-on-write of such a block allocates or copies two units.";
    ImageEncrypted = "image-encrypted", Info,
        "The image is encrypted: its container is described, its guest disk is left unread.";
    ImageSizePartialSector = "image-size-partial-sector", Info,
        "The image's size is not a whole number of its sectors: its last bytes are no sector a disk could address (a loop device leaves them out).";
    EraseUnitMeasured = "erase-unit-measured", Info,
        "A flash allocation unit measured by a saved `probe --erase-unit` run (`check --probe`) is the grain of the erase-unit rules where the kernel declares none; where it declares one, the two are set side by side and the kernel's is kept.";
    // The host under an image file (issue 52).
    HostMisaligned = "host-misaligned", Warning,
        "Aligned in the image, misaligned on the host disk: the image file's extents put guest starts (and the 4 KiB blocks from them) off the grain of the disk under the host filesystem (a host partition at sector 63), so every guest I/O there straddles two host blocks.";
    HostNotJudged = "host-not-judged", Info,
        "Where an image file lies on the host disk is not judged, for the reason given: its filesystem's extents are not bytes of one block device (btrfs, ZFS, NFS, tmpfs, overlayfs, FUSE), or its extents have no fixed place (unwritten, delayed, shared, encoded, inline).";
    // What `watch` saw the real I/O do.
    StraddlingIo = "straddling-io", Error,
        "A share of the I/O reaching a device straddles its 4 KiB or grain boundary (or, at a partition, starts off 4 KiB on the disk below): each such I/O touches one unit more than it needs (watch).";
    SubPhysicalWrites = "sub-physical-writes", Error,
        "A share of the writes reaching a device are smaller than its physical block: on a 512e drive each is a read-modify-write of the whole block (watch).";
    SplitIo = "split-io", Warning,
        "A share of the I/O to a device was split by the kernel before reaching the driver (watch).";
    ZoneCrossingWrites = "zone-crossing-writes", Error,
        "A share of the writes reaching a zoned device cross a zone boundary: the kernel splits each into one write per zone, and on a host-managed device the part that starts a sequential-write-required zone fails unless that zone is empty; a warning on a host-aware device, which accepts them (watch).";
    // LVM thin pools (issue 52).
    ThinChunkBelowStripe = "thin-chunk-below-stripe", Warning,
        "A thin pool's chunk is not a multiple of the full stripe of what its data LV sits on (an md array's chunk times its data disks, a striped LV's stripe size times its stripes): every chunk the pool provisions is a partial-stripe write there, a read-modify-write on parity RAID. The chunk is fixed when the pool is made.";
    ThinDataStart = "thin-data-start", Warning,
        "A thin pool's chunk is a multiple of the full stripe below, but its data LV does not start on a stripe: every chunk straddles two stripes.";
    ThinFsHintsChunk = "thin-fs-hints-chunk", Warning,
        "A filesystem inside a thin LV has stripe hints wider than, or not dividing, the pool's chunk: the pool places each chunk anywhere, so the full stripes the hints describe are not stripes below.";
    // Many paths, one disk (issue 53).
    MultipathPath = "multipath-path", Info,
        "The target is one path of a multipath map: the map is the disk (the default targets hold the map, with its paths listed under it, and no path); a path is judged only when named, and its fixes are made on the map.";
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read back from a saved document. A code this diskalign does not know
/// (one a newer version added) is refused by name: a finding is not
/// dropped without a word.
impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Code::named(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown finding code {text:?}")))
    }
}

impl Code {
    /// The code spelled `text` in JSON, if there is one.
    pub fn named(text: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == text)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One verdict: a stable code, a severity, what it is about, the facts the
/// rule judged and the sentence rendered from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub code: Code,
    pub severity: Severity,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Subject::is_empty")]
    pub subject: Subject,
    #[serde(default)]
    pub facts: Facts,
    /// Another finding on the same subject that names the same cause (a
    /// start off 4 KiB that also breaks the kernel's 4 KiB rule): kept for
    /// its code, but counted and printed once, under that code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_cause_as: Option<Code>,
}

impl Finding {
    /// A finding written as prose where it is made, with the code's
    /// default severity; `with_facts` adds the numbers it names.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Finding {
            code,
            severity: code.default_severity(),
            message: message.into(),
            subject: Subject::default(),
            facts: Facts::default(),
            same_cause_as: None,
        }
    }

    /// A finding whose sentence is rendered from its facts.
    pub fn of(code: Code, facts: Facts) -> Self {
        let message = render::sentence(code, &facts).unwrap_or_else(|| code.summary().into());
        Finding {
            facts,
            ..Finding::new(code, message)
        }
    }

    /// The same finding carrying these facts (the message stays).
    pub fn with_facts(mut self, facts: Facts) -> Self {
        self.facts = facts;
        self
    }

    /// The same finding with another severity.
    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    /// The same finding, told to repeat the cause `code` names.
    pub fn same_cause_as(mut self, code: Code) -> Self {
        self.same_cause_as = Some(code);
        self
    }

    /// False for a finding that repeats another's cause: it is counted
    /// and printed once, under the other's code.
    pub fn counts(&self) -> bool {
        self.same_cause_as.is_none()
    }

    /// True for findings that make the exit status 1.
    pub fn is_problem(&self) -> bool {
        self.severity >= Severity::Warning
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.as_str()), "duplicate {}", c);
            assert!(c
                .as_str()
                .chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-'));
        }
    }

    /// docs/findings.md's table gives each code's default severity.
    #[test]
    fn documented_severities_match() {
        let doc = include_str!("../../docs/findings.md");
        for c in Code::ALL {
            let row = format!("| `{}` | {} |", c.as_str(), c.default_severity().as_str());
            assert!(doc.contains(&row), "docs/findings.md: want the row {row}");
        }
    }

    #[test]
    fn every_code_is_documented() {
        let doc = include_str!("../../docs/findings.md");
        for c in Code::ALL {
            assert!(
                doc.contains(&format!("`{}`", c.as_str())),
                "docs/findings.md does not document {}",
                c
            );
        }
    }
}
