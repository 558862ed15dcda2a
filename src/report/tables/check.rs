//! `check`'s columns: one row per partition (and per target in the CSV).

use super::{opt_text, problem_codes, yes};
use crate::check::{CheckedPartition, CheckedTarget};
use crate::errors::TargetError;
use crate::report::columns::Column;
use crate::stack::{F2fsAreas, Volume};
use crate::units::human;

/// A row of `check`'s table: a partition with the target it belongs to
/// (the CSV names the target). In the CSV a target without partitions
/// is one row without a partition, and a target that could not be
/// checked one row with its error, so the rows name every target.
pub struct PartitionRow<'a> {
    /// The target as given.
    pub path: &'a str,
    /// None: the target could not be checked (`error`).
    pub target: Option<&'a CheckedTarget>,
    pub partition: Option<&'a CheckedPartition>,
    pub error: Option<&'a TargetError>,
    /// The codes of the warnings and errors at this row's place
    /// (`check::problems`), space-separated.
    pub problems: String,
}

/// `check::problems` as the CSV writes it.
fn problems_text(codes: &[crate::findings::Code]) -> String {
    codes
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

impl<'a> PartitionRow<'a> {
    /// The rows of every partition of `t`, in order.
    pub fn all(t: &'a CheckedTarget) -> Vec<Self> {
        Self::within(t, &[]).collect()
    }

    /// The rows of every partition of `t`, with the problems of what was
    /// `assembled` from each (`check::partition_problems`: the
    /// whole table's at once).
    fn within(
        t: &'a CheckedTarget,
        assembled: &[crate::stack::Layer],
    ) -> impl Iterator<Item = Self> + 'a {
        let problems = crate::check::partition_problems(t, assembled);
        t.partitions
            .iter()
            .zip(problems)
            .map(move |(p, codes)| PartitionRow {
                path: &t.path,
                target: Some(t),
                partition: Some(p),
                error: None,
                problems: problems_text(&codes),
            })
    }

    /// A value of the partition; empty on a row without one.
    fn part(&self, f: fn(&CheckedPartition) -> String) -> String {
        self.partition.map(f).unwrap_or_default()
    }

    /// A value of the checked target; empty for one not checked.
    fn checked(&self, f: fn(&CheckedTarget) -> String) -> String {
        self.target.map(f).unwrap_or_default()
    }

    /// The first FAT, exFAT or NTFS volume in the partition's own layers
    /// (on a target's row without partitions, in the whole device's).
    fn volume(&self) -> Option<&'a Volume> {
        let name = self.partition.map(|p| format!("partition {}", p.number));
        self.target?
            .stack
            .iter()
            .filter(|r| name.as_ref().is_none_or(|n| r.name == *n))
            .flat_map(|r| r.walk())
            .find_map(|l| l.filesystem().and_then(|f| f.volume.as_deref()))
    }

    /// The first f2fs's segments and sections in the partition's own
    /// layers (as `volume`), and where it starts on the target.
    fn f2fs(&self) -> Option<(u64, &'a F2fsAreas)> {
        let name = self.partition.map(|p| format!("partition {}", p.number));
        self.target?
            .stack
            .iter()
            .filter(|r| name.as_ref().is_none_or(|n| r.name == *n))
            .flat_map(|r| r.walk())
            .find_map(|l| {
                let a = l.filesystem()?.f2fs.as_ref()?;
                Some((l.offset_bytes, a))
            })
    }

    /// A fact of the row's volume; empty without one.
    fn vol(&self, f: fn(&Volume) -> String) -> String {
        self.volume().map(f).unwrap_or_default()
    }
}

/// Every partition of every target of a run, in order: the rows of
/// `check`'s one table (`-o`, `-r`, `-P`).
pub fn partition_rows(run: &crate::check::CheckRun) -> Vec<PartitionRow<'_>> {
    run.targets
        .iter()
        .flat_map(|t| PartitionRow::within(t, &run.assembled))
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
                problems: problems_text(&crate::check::problems(t, None, &run.assembled)),
            });
        }
        rows.extend(PartitionRow::within(t, &run.assembled));
    }
    rows.extend(run.errors.iter().map(|e| PartitionRow {
        path: &e.path,
        target: None,
        partition: None,
        error: Some(e),
        problems: String::new(),
    }));
    rows
}

type P<'a> = Column<PartitionRow<'a>>;

/// The partition table of `check`.
pub fn partitions<'a>() -> Vec<P<'a>> {
    vec![
        P::csv_only("target", |r| r.path.to_string())
            .help("the target as given (a disk, a partition, an image)"),
        P::both("number", "#", |r| r.part(|p| p.number.to_string()))
            .help("the partition's number")
            .num(),
        P::both("kind", "kind", |r| r.part(|p| p.kind.as_str().into()))
            .help("gpt; primary, extended or logical (MBR); registered: the kernel's view, the table not read")
            .drop(8),
        P::both("start_sector", "start(sector)", |r| r.part(|p| p.start_sector.to_string()))
        .num()
        .help("the first sector, in the table's sector size")
        .drop(9),
        P::both("start_bytes", "start(bytes)", |r| r.part(|p| p.start_bytes.to_string()))
        .num()
        .help("the first byte"),
        P::both("end_bytes", "end(last byte)", |r| r.part(|p| p.end_bytes.to_string()))
        .num()
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
        .num()
        .help("the kernel's rule (g + ao - start mod g) mod g with g = max(physical block, minimum I/O) and ao the disk's alignment offset: 0 = aligned, else the bytes to the next aligned start")
        .drop(1),
        P::both("device_block_size", "node-bs", |r| r.part(|p| p.device_block_size.to_string()))
        .num()
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
        .drop(6)
        .not_in_html(),
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
            .drop(4)
            .not_in_html(),
        P::both("sgdisk", "sgdisk", |r| r.part(|p| p.tools.sgdisk.to_string()))
            .shown_as(|r, _| r.part(|p| yes(p.tools.sgdisk).into()))
            .help("sgdisk -v would not warn about this partition's start or end")
            .drop(5)
            .not_in_html(),
        P::both("aligned", "verdict", |r| r.part(|p| p.aligned.to_string()))
            .shown_as(|r, st| r.partition.map_or(String::new(), |p| st.status(p.status)))
            .class(|r| r.partition.map(|p| format!("status-{}", p.status.as_str())))
            .help("aligned; untidy: an end or size off 4 KiB or a start off the stripe width (hygiene, a warning); MISALIGNED: the start off its grain (an error: every I/O pays). CSV: true when aligned"),
        P::csv_only("problems", |r| r.problems.clone())
            .help("the codes of the warnings and errors of the partition (or, on a target's row without partitions, the whole device): its placement's, every layer's inside it, and those of the md arrays and volume groups assembled from it; each code once, space-separated"),
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
            .help("the partition's identity, as blkid's PARTUUID")
            .in_html()
            .long("PARTUUID"),
        P::csv_only("partlabel", |r| r.part(|p| opt_text(&p.name)))
            .help("the GPT partition name, as blkid's PARTLABEL")
            .in_html()
            .long("name"),
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
        P::csv_only("type_id", |r| r.part(|p| p.type_id.clone()))
            .help("the partition's type: the GPT type GUID, or the DOS type byte (0x83)")
            .in_html()
            .long("type"),
        P::csv_only("volume", |r| r.vol(|v| v.name().into()))
            .help("the FAT, exFAT or NTFS volume in the partition (or the whole device): FAT12, FAT16, FAT32, exFAT or NTFS; the volume_ columns are its facts, empty without one"),
        P::csv_only("volume_cluster_bytes", |r| r.vol(|v| v.cluster_bytes.to_string()))
            .help("the volume's cluster size"),
        P::csv_only("volume_data_start_bytes", |r| r.vol(|v| v.data_start_bytes.to_string()))
            .help("where its cluster 2 starts on the target (a FAT's data area, an exFAT's cluster heap; an NTFS's start)"),
        P::csv_only("volume_fat_offset_bytes", |r| r.vol(|v| opt_text(&v.fat_offset_bytes)))
            .help("where its first FAT starts, from the volume's start (FAT, exFAT)"),
        P::csv_only("volume_hidden_sectors", |r| r.vol(|v| v.hidden_sectors.to_string()))
            .help("the start its boot sector records, in sectors (hidden sectors; exFAT's PartitionOffset)"),
        P::csv_only("volume_start_sectors", |r| r.vol(|v| opt_text(&v.start_sectors)))
            .help("where it really starts, in its own sectors"),
        P::csv_only("volume_size_bytes", |r| r.vol(|v| v.span_bytes.to_string()))
            .help("the bytes the volume spans (NTFS: with its backup boot sector)"),
        P::csv_only("volume_region_bytes", |r| r.vol(|v| v.region_bytes.to_string()))
            .help("the bytes of what it is in (the partition, the whole device): volume_size_bytes above it is fs-beyond-partition"),
        P::csv_only("volume_label", |r| r.vol(|v| opt_text(&v.label)))
            .help("its label, as blkid reads it"),
        P::csv_only("volume_serial", |r| r.vol(|v| opt_text(&v.serial)))
            .help("its serial, as blkid spells it (XXXX-XXXX; 16 hex digits for NTFS)"),
        P::csv_only("f2fs_segment0_bytes", |r| {
            r.f2fs()
                .map(|(at, a)| (at + a.segment0_offset_bytes).to_string())
                .unwrap_or_default()
        })
        .help("where an f2fs in the partition (or the whole device) starts its segments (segment 0), on the target; empty without one"),
        P::csv_only("f2fs_section_bytes", |r| {
            r.f2fs().map(|(_, a)| a.section_bytes.to_string()).unwrap_or_default()
        })
        .help("that f2fs's section (segments per section x segment), what its cleaner frees at once"),
    ]
}
