//! Sanity checks on the hints a disk reports, and sysfs/ioctl disagreements.

use super::{is_misaligned_marker, Disk, IoctlValues, Transport};
use crate::findings::{Code, Facts, Finding};
use crate::iolimits::Topology;
use crate::units::{bridge_opt_why, human, is_bridge_opt};

/// Two terabytes: disks above this with 512-byte physical sectors are suspect.
const TWO_TB: u64 = 2_000_000_000_000;

/// Findings about one disk: its limits, then any sysfs/ioctl disagreement.
pub fn hints(disk: &Disk) -> Vec<Finding> {
    let virtual_dev = matches!(disk.transport, Transport::Loop | Transport::Zram);
    let mut out = limit_hints(
        &disk.name,
        &disk.topology,
        disk.size_bytes,
        !disk.slaves.is_empty(),
        virtual_dev,
    );
    if let Some(io) = &disk.ioctl {
        out.extend(ioctl_mismatches(&disk.topology, disk.size_bytes, io));
    }
    out
}

/// Findings about a set of limits: `name` is what the messages call the
/// device, `stacked` says whether something lies underneath (md, dm),
/// `virtual_dev` exempts loop/zram from the hidden-4K size rule.
pub fn limit_hints(
    name: &str,
    t: &Topology,
    size_bytes: u64,
    stacked: bool,
    virtual_dev: bool,
) -> Vec<Finding> {
    let facts = Facts {
        device: Some(name.to_string()),
        size_bytes: Some(size_bytes),
        logical_block_bytes: Some(t.logical_block_size.into()),
        physical_block_bytes: Some(t.physical_block_size.into()),
        minimum_io_bytes: Some(t.minimum_io_size.into()),
        optimal_io_bytes: Some(t.optimal_io_size.into()),
        alignment_offset_bytes: Some(t.alignment_offset),
        ..Facts::default()
    };
    prose_hints(name, t, size_bytes, stacked, virtual_dev)
        .into_iter()
        .map(|f| f.with_facts(facts.clone()))
        .collect()
}

/// The hints' sentences; `limit_hints` adds the limits as facts.
fn prose_hints(
    name: &str,
    t: &Topology,
    size_bytes: u64,
    stacked: bool,
    virtual_dev: bool,
) -> Vec<Finding> {
    let (lbs, pbs, min, opt) = (
        u64::from(t.logical_block_size),
        u64::from(t.physical_block_size),
        u64::from(t.minimum_io_size),
        u64::from(t.optimal_io_size),
    );
    let mut out = Vec::new();
    if opt != 0 {
        if is_bridge_opt(opt, lbs) {
            out.push(Finding::new(
                Code::OptimalIoSuspicious,
                format!(
                    "optimal_io_size {opt} is 65535 x {lbs}: a USB bridge filling in its maximum transfer length, not a real stripe; {}",
                    bridge_opt_why(opt, lbs, pbs)
                ),
            ));
        } else if pbs != 0 && opt % pbs != 0 {
            out.push(Finding::new(
                Code::OptimalIoSuspicious,
                format!("optimal_io_size {opt} is not a multiple of the physical block size {pbs}; tools that follow it place partitions off the physical grid"),
            ));
        } else if min != 0 && opt % min != 0 {
            out.push(Finding::new(
                Code::OptimalIoSuspicious,
                format!("optimal_io_size {opt} is not a multiple of minimum_io_size {min}"),
            ));
        }
    }
    if min != 0 && pbs != 0 && min % pbs != 0 {
        out.push(Finding::new(
            Code::MinimumIoSuspicious,
            format!("minimum_io_size {min} is not a multiple of the physical block size {pbs}"),
        ));
    }
    if !stacked {
        for (what, v) in [("minimum_io_size", min), ("optimal_io_size", opt)] {
            if v != 0
                && !v.is_power_of_two()
                && !(what == "optimal_io_size" && is_bridge_opt(opt, lbs))
            {
                out.push(Finding::new(
                    Code::NonPowerOfTwoIo,
                    format!("{what} {v} is not a power of two, yet nothing is stacked under {name}: only RAID/LVM stripes explain such values"),
                ));
            }
        }
    }
    if pbs == 512 && size_bytes > TWO_TB && !virtual_dev {
        out.push(Finding::new(
            Code::Hidden4kSuspected,
            format!(
                "{name} is {} but reports 512-byte physical sectors: disks this large are almost always 4K drives; a bridge or controller may be hiding it, so align to 4 KiB anyway",
                human(size_bytes)
            ),
        ));
    }
    if is_misaligned_marker(t.alignment_offset) {
        out.push(Finding::new(
            Code::KernelReportsMisaligned,
            format!("the kernel reports alignment_offset {} for {name}: a layer below starts off its device's physical grid", t.alignment_offset),
        ));
    } else if stacked && t.alignment_offset > 0 {
        // A disk may legitimately report an offset (old 512e drives with
        // lowest_aligned); a dm/md device reports one only when it starts
        // off the physical grid of what lies under it.
        out.push(Finding::new(
            Code::KernelReportsMisaligned,
            stacked_offset_why(name, t),
        ));
    }
    out
}

/// Why a dm/md device with a positive alignment_offset is misaligned: the
/// kernel says its byte `ao` is the first on the grid below, so it starts
/// `grain - ao` bytes past a boundary.
pub fn stacked_offset_why(name: &str, t: &Topology) -> String {
    format!(
        "the kernel reports alignment_offset {} for {name}: it starts {} bytes past a {}-byte boundary of the device below, so whatever sits at its start is misaligned",
        t.alignment_offset,
        t.grain().saturating_sub(t.alignment_offset.unsigned_abs()),
        t.grain()
    )
}

/// Where the ioctl view of a disk disagrees with sysfs.
fn ioctl_mismatches(t: &Topology, size_bytes: u64, io: &IoctlValues) -> Vec<Finding> {
    let mut out = Vec::new();
    {
        let pairs: [(&str, i128, i128); 6] = [
            (
                "logical block size",
                t.logical_block_size.into(),
                io.logical_block_size.into(),
            ),
            (
                "physical block size",
                t.physical_block_size.into(),
                io.physical_block_size.into(),
            ),
            (
                "minimum I/O size",
                t.minimum_io_size.into(),
                io.minimum_io_size.into(),
            ),
            (
                "optimal I/O size",
                t.optimal_io_size.into(),
                io.optimal_io_size.into(),
            ),
            (
                "alignment offset",
                t.alignment_offset.into(),
                io.alignment_offset.into(),
            ),
            ("size", size_bytes.into(), io.size_bytes.into()),
        ];
        for (what, s, i) in pairs {
            if s != i {
                let facts = Facts {
                    region: Some(what.to_string()),
                    kernel_value: i64::try_from(i).ok(),
                    ..Facts::default()
                };
                out.push(
                    Finding::new(
                        Code::IoctlSysfsMismatch,
                        format!("{what}: sysfs says {s}, the ioctl says {i}"),
                    )
                    .with_facts(facts),
                );
            }
        }
    }
    out
}
