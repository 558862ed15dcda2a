//! The sentence of a finding, rendered from its code and facts. Each
//! renderer reads only the facts, so the JSON's numbers and the sentence a
//! person reads cannot disagree.

use super::facts::Facts;
use super::words::{counted, n, text, who};
use super::Code;
use crate::units::{alignment_of, exact, human, KIB};

/// The sentence for `code` from `f`; None for codes whose findings are
/// written as prose where they are made. `kernel-reports-misaligned` is
/// rendered here for a partition; the device-level ones are prose.
pub fn sentence(code: Code, f: &Facts) -> Option<String> {
    let mut s = match code {
        Code::StartMisaligned => start_misaligned(f),
        Code::StartNot4k => start_not_4k(f),
        Code::StartNot1Mib => start_not_1mib(f),
        Code::StartNotOptimal => start_not_optimal(f),
        Code::StartNotDiscard => start_not_discard(f),
        Code::StartNotPreferredWrite => start_not_preferred_write(f),
        Code::LayerStartNotPreferredWrite => layer_start_not_preferred_write(f),
        Code::LuksSectorBelowDeclared => luks_sector_below_declared(f),
        Code::NvmeFormat4kAvailable => nvme_format(f),
        Code::EndNot4k => end_not_4k(f),
        Code::EndNotEraseUnit => end_not_erase_unit(f),
        Code::EndNotPhysical => end_not_physical(f),
        Code::SizeNot4k => size_not_4k(f),
        Code::KernelOffsetDiffers => kernel_offset_differs(f),
        Code::NodeBlockSizeDiffers => node_block_size_differs(f),
        Code::LayerStartMisaligned => layer_start_misaligned(f),
        Code::LayerStartNot4k => layer_start_not_4k(f),
        Code::StartNotEraseUnit => start_not_erase_unit(f),
        Code::LayerStartNotEraseUnit => layer_start_not_erase_unit(f),
        Code::LayerStartNotOptimal => layer_start_not_optimal(f),
        Code::LayerStartNot1Mib => layer_start_not_1mib(f),
        Code::MdChunkBelowPhysical => md_chunk(f),
        Code::BcacheBlockSize => bcache_block(f),
        Code::ZfsAshiftBelowPhysical => zfs_ashift(f),
        Code::ZfsAshiftAbovePhysical => zfs_ashift_above(f),
        Code::BluestoreAllocBelowGrain => super::render_bluestore::alloc_below_grain(f),
        Code::LuksSectorSize => luks_sector(f),
        Code::FsBlockBelowPhysical => fs_block(f),
        Code::FsSectionNotEraseUnit => fs_section(f),
        Code::FsDataNotSdBoundary => fs_sd_boundary(f),
        Code::FsHiddenSectors => fs_hidden_sectors(f),
        Code::FsBeyondPartition => fs_beyond_partition(f),
        Code::FsBackupBootSector => fs_backup_boot_sector(f),
        Code::FsStripeHintsMissing => fs_hints_missing(f),
        Code::FsStripeHintsMismatch => fs_hints_mismatch(f),
        Code::LvmExtentMisaligned => extent(f),
        Code::LvmStripeMisaligned => stripe(f),
        Code::KernelReportsMisaligned => partition_marker(f),
        Code::StraddlingIo => straddling_io(f),
        Code::SubPhysicalWrites => sub_physical_writes(f),
        Code::SplitIo => split_io(f),
        Code::ZoneCrossingWrites => super::render_zones::zone_crossing_writes(f),
        Code::ImageUnitStraddle => image_unit_straddle(f),
        Code::ImageEncrypted => image_encrypted(f),
        Code::ImageSizePartialSector => image_size_partial_sector(f),
        Code::EraseUnitMeasured => erase_unit_measured(f),
        Code::HostMisaligned | Code::HostNotJudged => super::host::sentence(code, f),
        Code::ZoneTableIgnored => super::render_zones::zone_table_ignored(f),
        Code::ZoneMisalignedStart => super::render_zones::zone_misaligned_start(f),
        Code::ZoneMisalignedEnd => super::render_zones::zone_misaligned_end(f),
        Code::ZoneExtentMisaligned => super::render_zones::zone_extent_misaligned(f),
        Code::ZoneFsNotZoned => super::render_zones::zone_fs_not_zoned(f),
        Code::ThinChunkBelowStripe => thin_chunk(f),
        Code::ThinDataStart => thin_data_start(f),
        Code::ThinFsHintsChunk => thin_fs_hints(f),
        Code::MultipathPath => super::render_multipath::multipath_path(f),
        // Written as prose where the rule makes them (a new code lands in
        // one arm or the other, or does not compile).
        Code::LayoutNotPortable
        | Code::ToolsDisagree
        | Code::TableSectorSizeMismatch
        | Code::PartitionOverlap
        | Code::PartitionOutsideDisk
        | Code::PartitionInvalid
        | Code::GptPrimaryInvalid
        | Code::GptBackupInvalid
        | Code::HybridMbr
        | Code::ProtectiveMbrWithoutGpt
        | Code::KernelTableDiffers
        | Code::OptimalIoSuspicious
        | Code::MinimumIoSuspicious
        | Code::NonPowerOfTwoIo
        | Code::Hidden4kSuspected
        | Code::IoctlSysfsMismatch
        | Code::LvmPvMissing
        | Code::MdMembersInconsistent
        | Code::MdMemberMissing
        | Code::LuksContentsUnchecked
        | Code::MetadataInvalid
        | Code::LayerNotFollowed
        | Code::TableNotRead
        | Code::TopologyUnknown => return None,
    };
    if f.extended_container {
        s.push_str(" (extended container: it holds only EBRs, its logical partitions are judged on their own)");
    }
    Some(s)
}

fn start_misaligned(f: &Facts) -> String {
    let g = n(f.grain_bytes);
    format!(
        "starts at byte {}, which the kernel's rule puts {} bytes off its {g}-byte grain (alignment offset {}): every {} write straddles two physical blocks",
        n(f.offset_bytes),
        n(f.misalignment_bytes),
        f.alignment_offset_bytes.unwrap_or(0),
        exact(g)
    )
}

fn start_not_4k(f: &Facts) -> String {
    let start = n(f.offset_bytes);
    format!("starts at byte {start} = {} x 4 KiB + {}: not 4 KiB aligned, so 4 KiB pages straddle flash pages and 4K sectors", start / (4 * KIB), start % (4 * KIB))
}

fn start_not_1mib(f: &Facts) -> String {
    let start = n(f.offset_bytes);
    format!(
        "starts at byte {start}, a multiple of {} but not of 1 MiB",
        exact(alignment_of(start))
    )
}

/// "not a multiple of the optimal I/O size ...", naming the alignment
/// offset the grid starts from when it is not 0.
fn optimal_grid(f: &Facts) -> String {
    let opt = n(f.optimal_io_bytes);
    match f.alignment_offset_bytes.unwrap_or(0) {
        0 => format!(
            "not a multiple of the optimal I/O size {opt} ({})",
            exact(opt)
        ),
        ao => format!(
            "{} bytes past the optimal I/O grid ({opt} bytes, {}, from the alignment offset {ao})",
            n(f.misalignment_bytes),
            exact(opt)
        ),
    }
}

fn start_not_optimal(f: &Facts) -> String {
    format!(
        "starts at byte {}, {}: full-stripe writes are split across stripes",
        n(f.offset_bytes),
        optimal_grid(f)
    )
}

fn start_not_discard(f: &Facts) -> String {
    format!("starts at byte {}, not aligned to the discard granularity {}: TRIM of the first and last unit of a range is dropped", n(f.offset_bytes), exact(n(f.grain_bytes)))
}

fn end_not_4k(f: &Facts) -> String {
    let end = n(f.end_exclusive_bytes);
    format!(
        "ends at byte {end} (last byte {}), not on a 4 KiB boundary",
        end.saturating_sub(1)
    )
}

fn end_not_erase_unit(f: &Facts) -> String {
    format!(
        "ends at byte {}, {}: the rest of that unit holds nothing of this partition, and whatever starts in it shares the unit with its last blocks",
        n(f.end_exclusive_bytes),
        into_unit(f)
    )
}

fn end_not_physical(f: &Facts) -> String {
    format!(
        "ends at byte {}, not on a {}-byte physical block boundary",
        n(f.end_exclusive_bytes),
        n(f.physical_block_bytes)
    )
}

fn size_not_4k(f: &Facts) -> String {
    let (size, bs) = (n(f.size_bytes), n(f.block_size_bytes));
    format!("size {size} bytes is not a multiple of 4 KiB, so the kernel gives the partition node a {bs}-byte block size and the page cache works on it in {bs}-byte buffers; buffered 4 KiB writes may then reach the device as {bs}-byte pieces where nothing merges them (read-modify-write on 4K media); `diskalign probe --buffered --fdatasync` on the partition measures it")
}

fn image_unit_straddle(f: &Facts) -> String {
    let start = n(f.offset_bytes);
    let share = f.share.unwrap_or(0.0);
    let unit = text(&f.region);
    format!(
        "starts at byte {start}, {} bytes past a 4 KiB boundary, inside {} {unit}s: {:.1} % of its 4 KiB blocks straddle two {unit}s (each 4 KiB write touches {:.3} {unit}s on average, {} when aligned), so a first write or a snapshot's copy-on-write of such a block allocates or copies one {unit} more",
        start % (4 * KIB),
        exact(n(f.grain_bytes)),
        share * 100.0,
        f.units_touched.unwrap_or(0.0),
        n(f.units_ideal),
    )
}

fn image_encrypted(f: &Facts) -> String {
    format!(
        "the {} is encrypted: its container is described, but its partition table and layers are left unread (decrypt a copy, e.g. with `qemu-img convert --object secret,...`, to check them)",
        text(&f.region)
    )
}

fn image_size_partial_sector(f: &Facts) -> String {
    let size = n(f.size_bytes);
    let sector = n(f.logical_block_bytes).max(1);
    format!(
        "the image is {size} bytes, not a whole number of its {sector}-byte sectors: its last {} bytes are no sector a disk could address (a loop device over it leaves them out, and a table's backup copies are sought before them); was it cut short, or was something appended?",
        size % sector
    )
}

fn erase_unit_measured(f: &Facts) -> String {
    let unit = n(f.grain_bytes);
    let run = f.measured_by.as_deref().unwrap_or("a probe run");
    match f.kernel_value.filter(|&k| k > 0) {
        None => format!(
            "the probe run {run} measured an allocation unit of {} (probe --erase-unit); the kernel declares none, so partitions and data starts are judged against it",
            human(unit)
        ),
        Some(k) if k as u64 == unit => format!(
            "the probe run {run} measured an allocation unit of {}, as the kernel declares (preferred_erase_size)",
            human(unit)
        ),
        Some(k) => format!(
            "the probe run {run} measured an allocation unit of {}; the kernel declares {} (preferred_erase_size), which is kept: check the card's unit again (probe --erase-unit --max-time 5m) before moving anything",
            human(unit),
            human(k as u64)
        ),
    }
}

fn partition_marker(f: &Facts) -> String {
    format!(
        "the kernel reports alignment_offset {} for this partition: it considers it misaligned",
        f.kernel_value.unwrap_or(0)
    )
}

fn kernel_offset_differs(f: &Facts) -> String {
    format!(
        "the kernel reports alignment_offset {} for this partition, diskalign computes {}",
        f.kernel_value.unwrap_or(0),
        n(f.misalignment_bytes)
    )
}

fn node_block_size_differs(f: &Facts) -> String {
    format!("the kernel reports a {}-byte block size for this partition's node (BLKBSZGET), where its size gives {}: something set it since (a mounted filesystem sets its own block size, BLKBSZSET too)", f.kernel_value.unwrap_or(0), n(f.block_size_bytes))
}

/// "<region> starts at byte N of <device>".
fn layer_at(f: &Facts) -> String {
    format!(
        "{} starts at byte {} of {}",
        text(&f.region),
        n(f.offset_bytes),
        text(&f.device)
    )
}

fn layer_start_misaligned(f: &Facts) -> String {
    let (g, k) = (n(f.grain_bytes), n(f.misalignment_bytes));
    format!(
        "{}, {} bytes past the {g}-byte grain the device below aligns to (physical {}, minimum I/O {}, alignment offset {}; the kernel's rule gives {k}){}",
        layer_at(f),
        g.saturating_sub(k),
        n(f.physical_block_bytes),
        n(f.minimum_io_bytes),
        f.alignment_offset_bytes.unwrap_or(0),
        clusters(f)
    )
}

/// "1 MiB into a 4 MiB allocation unit": the unit and where in it.
fn into_unit(f: &Facts) -> String {
    let unit = exact(n(f.grain_bytes));
    // Read aloud: "an 8 MiB", "an 11 MiB", "an 18 MiB".
    let an = unit.starts_with('8') || unit.starts_with("11 ") || unit.starts_with("18 ");
    format!(
        "{} into {} {unit} allocation unit of the flash card",
        exact(n(f.misalignment_bytes)),
        if an { "an" } else { "a" }
    )
}

fn start_not_erase_unit(f: &Facts) -> String {
    format!(
        "starts at byte {}, {}: the unit that holds its first blocks is shared with what comes before, and the card erases and rewrites whole units",
        n(f.offset_bytes),
        into_unit(f)
    )
}

fn layer_start_not_erase_unit(f: &Facts) -> String {
    format!(
        "{}, {}: the unit that holds its first clusters or extents is shared with the metadata before them, so writes to both make the card rewrite that unit{}",
        layer_at(f),
        into_unit(f),
        f.fix
            .as_ref()
            .map(|x| format!("; made again with {x}, it starts on the unit"))
            .unwrap_or_default()
    )
}

fn layer_start_not_4k(f: &Facts) -> String {
    format!("{}, {} bytes past a 4 KiB boundary: on any 4K drive every block it writes straddles two physical sectors{}", layer_at(f), n(f.misalignment_bytes), clusters(f))
}

fn layer_start_not_optimal(f: &Facts) -> String {
    format!(
        "{}, {} below: full-stripe writes are split across two stripes{}",
        layer_at(f),
        optimal_grid(f),
        clusters(f)
    )
}

fn layer_start_not_1mib(f: &Facts) -> String {
    format!("{}, not on a 1 MiB boundary (aligned today, but not under a larger RAID chunk or erase block){}", layer_at(f), clusters(f))
}

/// A FAT, exFAT or NTFS data start's tail: the share of its clusters
/// that straddle the grid, and the mkfs options that place it.
fn clusters(f: &Facts) -> String {
    let (Some(share), Some(c)) = (f.share, f.block_size_bytes) else {
        return String::new();
    };
    let g = n(f.grain_bytes);
    let mut s = if c >= g {
        format!(
            "; {:.1} % of its {c}-byte clusters straddle two {g}-byte units",
            share * 100.0
        )
    } else {
        format!(
            "; its {c}-byte clusters are smaller than that, and {:.1} % of the runs of {} of them counted from cluster 2 (a file's {g}-byte pieces, when it starts on one) straddle two",
            share * 100.0,
            g / c.max(1)
        )
    };
    if let Some(fix) = &f.fix {
        s.push_str(&format!(
            "; made again with {fix}, its clusters start on the grid"
        ));
    }
    s
}

fn fs_hidden_sectors(f: &Facts) -> String {
    let (rec, at) = (n(f.recorded_sectors), n(f.start_sectors));
    let why = if rec == 0 {
        "it records none, as mkfs does on an image file or a loop device: only boot code reads it, and a volume to boot from needs it"
    } else if at == 0 {
        "it is at the start of what it is in, as an image of a partition is (dd, ntfsclone): it keeps the start it had there, right again once it is written back to a partition at that start"
    } else {
        "a moved or copied volume: boot code and Windows, which read it to find the volume, look in the wrong place"
    };
    format!(
        "the {} boot sector records its start on the disk as sector {rec} (hidden sectors), but it starts at sector {at} ({}-byte sectors) of {}: {why}",
        text(&f.region),
        n(f.block_size_bytes),
        text(&f.device)
    )
}

fn fs_beyond_partition(f: &Facts) -> String {
    format!(
        "the {} volume needs {} bytes from its start, but what it is in holds {}: its last {} bytes are cut off (a partition made smaller under it, or an image cut short)",
        text(&f.region),
        n(f.size_bytes),
        n(f.region_bytes),
        n(f.size_bytes).saturating_sub(n(f.region_bytes))
    )
}

fn fs_backup_boot_sector(f: &Facts) -> String {
    let state = f.backup_state.as_deref().unwrap_or("missing");
    let what = if state == "differs" {
        "says something other than the main one"
    } else {
        "is not there (zeros or past the end)"
    };
    let region = text(&f.region);
    let tools = match region {
        "NTFS" => "ntfsfix, chkdsk",
        "exFAT" => "fsck.exfat, chkdsk",
        _ => "fsck.fat, chkdsk",
    };
    format!(
        "the {region} backup boot sector at byte {} of the volume {what}: a repair that falls back to it ({tools}) restores that",
        n(f.offset_bytes)
    )
}

fn md_chunk(f: &Facts) -> String {
    format!("chunk {} is not a multiple of the {}-byte physical block of {}: chunk-sized writes are read-modify-write on the drive", exact(n(f.chunk_bytes)), n(f.physical_block_bytes), text(&f.device))
}

fn bcache_block(f: &Facts) -> String {
    let bs = n(f.block_size_bytes);
    format!(
        "bcache block size {bs} is below the device's {}-byte physical block: each {} write is a read-modify-write below; `{}` when the device is made again",
        n(f.physical_block_bytes),
        exact(bs),
        text(&f.fix)
    )
}

fn zfs_ashift(f: &Facts) -> String {
    let unit = n(f.block_size_bytes);
    let pbs = n(f.physical_block_bytes);
    // Which evidence decided: the kernel's limits, or what the disk
    // declares (its identify data) where the kernel reports less.
    let device = match (&f.measured_by, &f.declared_by, f.kernel_value) {
        (Some(run), _, Some(k)) => format!(
            "a device whose probe bracketed a {pbs}-byte unit ({run}; it reports a {k}-byte physical block, and ZFS picks its ashift from what is reported)"
        ),
        (None, Some(by), Some(k)) => format!(
            "a device that declares a {pbs}-byte physical block ({by}; the kernel reports {k}, and ZFS picks its ashift from what the kernel reports)"
        ),
        _ => format!("a device with a {pbs}-byte physical block"),
    };
    format!(
        "ZFS allocates in {unit}-byte units (ashift {}) on {device}: every write below {} and {:.0} % of {} writes (those that start off a block) are read-modify-writes there; an ashift is fixed when the vdev is made, so only a new vdev made with `{}` fits",
        unit.trailing_zeros(),
        exact(pbs),
        100.0 * f.share.unwrap_or(0.0),
        exact(pbs),
        text(&f.fix)
    )
}

/// The space an allocation unit above the physical block costs: a block
/// of the physical size takes `amplification` times its space (OpenZFS
/// rounds each block's size up to 2^ashift: `vdev_default_asize` in
/// `module/zfs/vdev.c`). A new leaf whose own ashift (from its logical
/// sector) is larger than its top-level vdev's is refused (EDOM in
/// `spa_vdev_attach`, `module/zfs/spa.c`): a larger ashift keeps 4Kn
/// replacements possible.
fn zfs_ashift_above(f: &Facts) -> String {
    let unit = n(f.block_size_bytes);
    let pbs = n(f.physical_block_bytes);
    let evidence = match (&f.measured_by, &f.declared_by) {
        (Some(run), _) => format!(" (the unit the probe bracketed, {run})"),
        (None, Some(by)) => format!(" (as the disk declares, {by})"),
        _ => String::new(),
    };
    format!(
        "ZFS allocates in {unit}-byte units (ashift {}) where {pbs}-byte blocks would do{evidence}: a block of {} or less (a small file, a compressed record, metadata) takes {} of space, {:.0}x; no write is a read-modify-write, and only a vdev of ashift 12 or more can later take a 4Kn disk (4096-byte logical sectors) as a replacement",
        unit.trailing_zeros(),
        exact(pbs),
        exact(unit),
        f.amplification.unwrap_or(0.0),
    )
}

fn luks_sector(f: &Facts) -> String {
    let ss = n(f.block_size_bytes);
    match f.logical_block_bytes {
        Some(lbs) => format!("encryption sector size {ss} is below the device's {lbs}-byte logical block: the kernel refuses to open it"),
        None => format!("encryption sector size {ss} is below the {}-byte physical block: every encrypted sector written is a read-modify-write on the drive ({})", n(f.physical_block_bytes), text(&f.fix)),
    }
}

/// "NPWG 16 KiB, NPWA 16 KiB": what the namespace declared.
fn preferred_write(f: &Facts) -> String {
    format!(
        "the namespace's preferred write granularity {} and alignment {} (NPWG, NPWA)",
        exact(n(f.npwg_bytes)),
        exact(n(f.npwa_bytes))
    )
}

fn start_not_preferred_write(f: &Facts) -> String {
    format!(
        "starts at byte {}, {} bytes off the {}-byte grid of {}: on the kernel's grain, but writes there straddle the device's own write unit, which the kernel does not carry",
        n(f.offset_bytes),
        n(f.misalignment_bytes),
        n(f.grain_bytes),
        preferred_write(f)
    )
}

fn layer_start_not_preferred_write(f: &Facts) -> String {
    format!(
        "{} at byte {} of {} is {} bytes off the {}-byte grid of {}: on the kernel's grain, but writes there straddle the device's own write unit, which the kernel does not carry",
        text(&f.region),
        n(f.offset_bytes),
        text(&f.device),
        n(f.misalignment_bytes),
        n(f.grain_bytes),
        preferred_write(f)
    )
}

fn luks_sector_below_declared(f: &Facts) -> String {
    format!(
        "encryption sector size {} is below the {}-byte physical block {} itself declares ({} identify data; the kernel reports {}): every encrypted sector written is a read-modify-write on the drive ({})",
        n(f.block_size_bytes),
        n(f.physical_block_bytes),
        text(&f.device),
        text(&f.declared_by),
        f.kernel_value.unwrap_or(0),
        text(&f.fix)
    )
}

fn nvme_format(f: &Facts) -> String {
    format!(
        "{} is formatted with {}-byte blocks and offers LBA format {} with {}-byte blocks and a Relative Performance at least as good: `{}` switches to it, which erases the whole namespace (diskalign never runs it)",
        text(&f.device),
        n(f.logical_block_bytes),
        f.lba_format.unwrap_or(0),
        n(f.block_size_bytes),
        text(&f.fix)
    )
}

fn fs_block(f: &Facts) -> String {
    let (what, v, dev) = (text(&f.region), n(f.block_size_bytes), text(&f.device));
    let said = match f.logical_block_bytes {
        Some(lbs) => {
            format!("{what} {v} is below the {lbs}-byte logical block of {dev}: it cannot be mounted there")
        }
        None => format!("{what} {v} is below the {}-byte physical block of {dev}: its small writes are read-modify-write on the drive", n(f.physical_block_bytes)),
    };
    match &f.fix {
        Some(fix) => format!("{said}; made again with {fix}, it is not"),
        None => said,
    }
}

fn fs_section(f: &Facts) -> String {
    let said = format!(
        "{} on {} are {}, not a whole number of its {} allocation units: the cleaner frees a section, and a freed section leaves part of a unit in use, which the card copies before it erases",
        text(&f.region),
        text(&f.device),
        exact(n(f.block_size_bytes)),
        exact(n(f.grain_bytes))
    );
    match &f.fix {
        Some(fix) => format!("{said}; made again with {fix}, they are"),
        None => said,
    }
}

fn fs_sd_boundary(f: &Facts) -> String {
    let said = format!(
        "{} starts at byte {}, {} into the {} boundary unit the SD specification's table gives a card of this capacity (where the SD Association's formatter puts it)",
        text(&f.region),
        n(f.offset_bytes),
        exact(n(f.misalignment_bytes)),
        exact(n(f.grain_bytes))
    );
    match &f.fix {
        Some(fix) => format!("{said}; made again with {fix}, it is"),
        None => said,
    }
}

fn fs_hints_missing(f: &Facts) -> String {
    format!("{} is striped (chunk {}, stripe width {}) but the {} filesystem has no stripe hints, so it cannot place data and metadata on stripe boundaries: {}", text(&f.device), exact(n(f.chunk_bytes)), exact(n(f.stripe_width_bytes)), text(&f.region), text(&f.fix))
}

fn fs_hints_mismatch(f: &Facts) -> String {
    let (name, unit, width) = (text(&f.region), n(f.hint_unit_bytes), n(f.hint_width_bytes));
    match &f.fix {
        Some(fix) => format!("the {name} stripe hints say unit {unit} and width {width} bytes, the device below has chunk {} and stripe width {}: {fix}", n(f.chunk_bytes), n(f.stripe_width_bytes)),
        None => format!("the {name} filesystem has stripe hints (unit {unit}, width {width} bytes) but {} reports no stripe geometry (minimum I/O {}, optimal I/O {}); harmless if it sits on hardware RAID that does not report one", text(&f.device), n(f.minimum_io_bytes), n(f.optimal_io_bytes)),
    }
}

fn thin_chunk(f: &Facts) -> String {
    format!(
        "{} provisions chunks of {}, not a multiple of the full stripe {} of {}: each new chunk is a partial-stripe write there; the chunk is fixed when a pool is made: {}",
        text(&f.region),
        exact(n(f.chunk_bytes)),
        exact(n(f.stripe_width_bytes)),
        text(&f.device),
        text(&f.fix)
    )
}

fn thin_data_start(f: &Facts) -> String {
    format!(
        "{} has chunks of {}, a multiple of the full stripe {}, but its data starts at byte {} of {}, {} bytes into a stripe: every chunk straddles two stripes",
        text(&f.region),
        exact(n(f.chunk_bytes)),
        exact(n(f.stripe_width_bytes)),
        n(f.offset_bytes),
        text(&f.device),
        n(f.misalignment_bytes)
    )
}

fn thin_fs_hints(f: &Facts) -> String {
    format!(
        "the {} stripe hints (unit {}, width {} bytes) do not fit in the thin pool's chunk of {}: the pool places each chunk anywhere, so what the filesystem takes for a full stripe is not one below; {}",
        text(&f.region),
        n(f.hint_unit_bytes),
        n(f.hint_width_bytes),
        exact(n(f.chunk_bytes)),
        text(&f.fix)
    )
}

fn extent(f: &Facts) -> String {
    let es = exact(n(f.size_bytes));
    match f.chunk_bytes {
        Some(ss) => format!("extent size {es} is not a multiple of the stripe size {}: stripes straddle extent boundaries", exact(ss)),
        None => format!("extent size {es} is not a multiple of the optimal I/O size {} of a PV's device: extents start at different places in the stripe", exact(n(f.optimal_io_bytes))),
    }
}

/// A count as a whole number when it is one, else with two decimals.
fn count(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2} on average")
    }
}

fn stripe(f: &Facts) -> String {
    let unit = n(f.grain_bytes);
    let amp = format!("{:.2}", f.amplification.unwrap_or(1.0));
    let legs: Vec<String> = f
        .legs
        .iter()
        .map(|g| {
            format!(
                "stripe {} at byte {} of {} (+{} off {})",
                g.stripe,
                g.offset_bytes,
                g.device,
                g.misalignment_bytes,
                exact(unit)
            )
        })
        .collect();
    format!(
        "segment {}: each {} stripe write touches {} × {} units instead of {}: {}× write amplification ({})",
        f.segment.unwrap_or(0),
        exact(n(f.chunk_bytes)),
        count(f.units_touched.unwrap_or(0.0)),
        exact(unit),
        n(f.units_ideal),
        amp.trim_end_matches('0').trim_end_matches('.'),
        legs.join("; ")
    )
}

/// The direction's I/Os in words: "writes", "reads", "discard I/Os".
fn ios_of(f: &Facts) -> String {
    match f.direction.as_deref() {
        Some("read") => "reads".into(),
        Some("write") => "writes".into(),
        Some(d) => format!("{d} I/Os"),
        None => "I/Os".into(),
    }
}

/// Who submitted them, what `check` says caused it, and the fix, when
/// known.
fn cause_and_fix(f: &Facts) -> String {
    let mut s = who(f);
    if !f.causes.is_empty() {
        let codes: Vec<&str> = f.causes.iter().map(|c| c.as_str()).collect();
        s.push_str(&format!("; check finds {}", codes.join(", ")));
    }
    if let Some(fix) = &f.fix {
        s.push_str(&format!("; `{fix}` proposes the fix"));
    }
    s
}

fn straddling_io(f: &Facts) -> String {
    let (at, on) = match f.offset_bytes {
        Some(o) => (
            format!(" (it starts at byte {o} of the disk)"),
            " on the disk",
        ),
        None => (String::new(), ""),
    };
    format!(
        "{} to {}{at} straddle a {} boundary{on}: each touches one unit more than it needs{}",
        counted(f, &ios_of(f)),
        text(&f.device),
        exact(n(f.grain_bytes)),
        cause_and_fix(f)
    )
}

fn sub_physical_writes(f: &Facts) -> String {
    format!(
        "{} to {} are smaller than its {}-byte physical block: the drive reads, modifies and writes the whole block for each{}",
        counted(f, "writes"),
        text(&f.device),
        n(f.physical_block_bytes),
        cause_and_fix(f)
    )
}

fn split_io(f: &Facts) -> String {
    format!(
        "{} to {} were split by the kernel before reaching the driver{}",
        counted(f, &ios_of(f)),
        text(&f.device),
        cause_and_fix(f)
    )
}
