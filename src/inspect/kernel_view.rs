//! The partition table as the kernel registered it, for a disk whose node
//! cannot be opened (EPERM in a container, no root, a `--sysfs-root`
//! fixture): each partition's sysfs `start` and `size` (in 512-byte units,
//! block/partitions/core.c `part_start_show`, `part_size_show`) are enough
//! for the kernel's rule, 4 KiB and 1 MiB, the node block size and the
//! tools' verdicts. The table's type, its entries the kernel skipped and
//! the layers inside are not known.

use crate::findings::{Code, Finding};
use crate::layout::{PartKind, Partition, Table, TableKind};
use crate::topology::{Disk, KernelPartition};

/// The registered partitions as a table in logical blocks (512-byte
/// units if some start or size is not a whole logical block).
pub fn table(disk: &Disk) -> Table {
    let lbs = u64::from(disk.topology.logical_block_size).max(512);
    let parts: Vec<&KernelPartition> = disk
        .partitions
        .iter()
        .filter(|k| k.size_bytes > 0)
        .collect();
    let ss = if parts
        .iter()
        .all(|k| k.start_bytes % lbs == 0 && k.size_bytes % lbs == 0)
    {
        lbs
    } else {
        512
    };
    let extended = extended_number(&parts, lbs);
    let partitions = parts
        .iter()
        .map(|k| Partition {
            number: k.number,
            kind: match extended {
                Some(n) if n == k.number => PartKind::Extended,
                Some(_) if k.number >= 5 => PartKind::Logical,
                _ => PartKind::Registered,
            },
            first_lba: k.start_bytes / ss,
            last_lba: (k.start_bytes + k.size_bytes) / ss - 1,
            type_id: String::new(),
            ebr_lba: None,
            name: None,
            uuid: None,
        })
        .collect();
    Table {
        kind: TableKind::Kernel,
        sector_size: ss,
        partitions,
        id: None,
        usable: None,
        findings: vec![],
    }
}

/// A DOS extended container as the kernel registers it: a primary slot
/// (1 to 4) whose node is cut to max(lbs, 1 KiB) (block/partitions/msdos.c
/// registers it with max(sector_size / 512, 2) sectors) while logical
/// partitions (5 and up) exist.
fn extended_number(parts: &[&KernelPartition], lbs: u64) -> Option<u32> {
    if !parts.iter().any(|k| k.number >= 5) {
        return None;
    }
    parts
        .iter()
        .find(|k| k.number <= 4 && k.size_bytes <= lbs.max(1024))
        .map(|k| k.number)
}

/// The one note saying why the table was not read and what that leaves out.
pub fn note(device: &str, reason: &str) -> Finding {
    Finding::new(
        Code::TableNotRead,
        format!(
            "partition table not read ({reason}); judged from the kernel's view in sysfs (each partition's start, size and alignment_offset): the table's type and the layers inside {device}'s partitions are not checked"
        ),
    )
}
