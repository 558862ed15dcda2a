//! A table's structure: entries that are malformed, overlap each other,
//! or leave the disk (or GPT's usable area).

use crate::findings::{Code, Facts, Finding};
use crate::layout::{self, PartKind, Table};

/// Entries that are malformed, overlap, or leave the disk.
pub fn structure_findings(table: &Table, size: u64) -> Vec<Finding> {
    let ss = table.sector_size;
    let mut out = Vec::new();
    let mut valid = Vec::new();
    for p in &table.partitions {
        let end = p.last_lba.checked_add(1).and_then(|e| e.checked_mul(ss));
        match end {
            Some(end) if p.last_lba >= p.first_lba => {
                if end > size {
                    let facts = Facts {
                        end_exclusive_bytes: Some(end),
                        size_bytes: Some(size),
                        ..Facts::default()
                    };
                    out.push(Finding::new(
                        Code::PartitionOutsideDisk,
                        format!("partition {} ends at byte {end}, beyond the end of the device at byte {size}", p.number),
                    ).with_facts(facts));
                } else if let Some((lo, hi)) = table
                    .usable
                    .filter(|(lo, hi)| p.first_lba < *lo || p.last_lba > *hi)
                {
                    let facts = Facts {
                        offset_bytes: Some(p.first_lba.saturating_mul(ss)),
                        end_exclusive_bytes: Some(end),
                        ..Facts::default()
                    };
                    out.push(
                        Finding::new(
                            Code::PartitionOutsideDisk,
                            format!(
                                "partition {} (LBA {}..={}) leaves the GPT usable area {lo}..={hi}",
                                p.number, p.first_lba, p.last_lba
                            ),
                        )
                        .with_facts(facts),
                    );
                }
                valid.push(p);
            }
            _ => out.push(Finding::new(
                Code::PartitionInvalid,
                format!(
                    "partition {} runs from LBA {} to LBA {}: end before start or beyond any disk",
                    p.number, p.first_lba, p.last_lba
                ),
            )),
        }
    }
    for (i, a) in valid.iter().enumerate() {
        for b in &valid[i + 1..] {
            let container = |x: &layout::Partition, y: &layout::Partition| {
                x.kind == PartKind::Extended && y.kind == PartKind::Logical
            };
            if container(a, b) || container(b, a) {
                continue;
            }
            if a.first_lba <= b.last_lba && b.first_lba <= a.last_lba {
                out.push(Finding::new(
                    Code::PartitionOverlap,
                    format!(
                        "partitions {} (LBA {}..={}) and {} (LBA {}..={}) overlap",
                        a.number, a.first_lba, a.last_lba, b.number, b.first_lba, b.last_lba
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{part, table};
    use crate::layout::TableKind;
    use crate::units::MIB;

    fn codes(t: &Table, size: u64) -> Vec<Code> {
        structure_findings(t, size).iter().map(|f| f.code).collect()
    }

    #[test]
    fn a_sound_table_has_no_findings() {
        let t = table(
            TableKind::Mbr,
            vec![
                part(1, PartKind::Primary, 2048, 4095),
                part(2, PartKind::Primary, 4096, 8191),
            ],
        );
        assert_eq!(codes(&t, 8 * MIB), []);
    }

    #[test]
    fn overlaps_but_not_an_extended_container_and_its_logicals() {
        let t = table(
            TableKind::Mbr,
            vec![
                part(1, PartKind::Primary, 2048, 4095),
                part(2, PartKind::Extended, 4096, 16383),
                part(5, PartKind::Logical, 6144, 8191),
                part(3, PartKind::Primary, 4000, 5000),
            ],
        );
        // 3 overlaps 1 and the container (not the logical, which starts
        // after it); 5 inside 2 is fine.
        let c = codes(&t, 16 * MIB);
        assert_eq!(c, [Code::PartitionOverlap; 2]);
    }

    #[test]
    fn leaving_the_disk_or_the_usable_area() {
        let mut t = table(
            TableKind::Gpt,
            vec![part(1, PartKind::Primary, 2048, 20479)],
        );
        let f = structure_findings(&t, 8 * MIB);
        assert_eq!(f[0].code, Code::PartitionOutsideDisk);
        assert_eq!(f[0].facts.end_exclusive_bytes, Some(20480 * 512));
        assert_eq!(f[0].facts.size_bytes, Some(8 * MIB));
        t.usable = Some((2048, 10000));
        assert_eq!(codes(&t, 16 * MIB), [Code::PartitionOutsideDisk]);
    }

    #[test]
    fn an_end_before_the_start_is_invalid_and_judged_no_further() {
        let t = table(
            TableKind::Mbr,
            vec![
                part(1, PartKind::Primary, 4096, 2048),
                part(2, PartKind::Primary, 2048, 8191),
                part(3, PartKind::Primary, u64::MAX - 1, u64::MAX),
            ],
        );
        assert_eq!(
            codes(&t, 8 * MIB),
            [Code::PartitionInvalid, Code::PartitionInvalid]
        );
    }
}
