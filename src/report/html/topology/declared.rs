//! What the disk itself declares (`device_says`: NVMe Identify Namespace,
//! ATA IDENTIFY, SCSI READ CAPACITY(16) and VPD pages), beside the grains
//! figure: each limit as the device's data gives it next to the kernel's,
//! the fields no kernel limit carries, the LBA formats, and the notes.

use super::super::page::{self, Td};
use crate::identify::nvme::Namespace;
use crate::topology::declared::DeclaredLimit;
use crate::topology::Disk;
use crate::units::human;

/// The table `tid` of what `d` declares, or a note on why nothing was read.
pub fn section(tid: &str, d: &Disk) -> String {
    let Some(says) = &d.declared else {
        return d
            .declared_note
            .as_deref()
            .map(|why| {
                page::note(&format!(
                    "What {} itself declares: nothing read ({why}).",
                    d.device.display()
                ))
            })
            .unwrap_or_default();
    };
    let mut rows: Vec<Vec<Td>> = says.limits.iter().map(limit_row).collect();
    if let Some(ns) = &says.nvme {
        rows.extend(ignored_rows(ns));
    }
    let mut s = page::table(
        tid,
        &format!(
            "What {} itself declares (its identify data), beside the kernel's limits (bytes)",
            d.device.display()
        ),
        &[
            "limit",
            "source",
            "the device",
            "from",
            "the kernel",
            "follows",
        ],
        &rows,
    );
    if let Some(ns) = &says.nvme {
        s.push_str(&page::note(&formats(ns)));
    }
    for n in &says.notes {
        s.push_str(&page::note(n));
    }
    s
}

fn bytes(v: u64) -> String {
    if v > 0 {
        format!("{v} ({})", human(v))
    } else {
        "0".into()
    }
}

fn limit_row(l: &DeclaredLimit) -> Vec<Td> {
    vec![
        Td::text(l.limit.as_str()),
        Td::text(l.source.as_str()),
        Td::num(bytes(l.device_bytes)),
        Td::text(&l.fields),
        Td::num(l.kernel_bytes),
        if l.follows {
            Td::text("yes")
        } else {
            Td::Class("sev-warning".into(), "⚠ no".into())
        },
    ]
}

/// NPWA, NPDG and NPDA: declared (when NSFEAT bit 4 says they are valid),
/// read by no kernel limit.
fn ignored_rows(ns: &Namespace) -> Vec<Vec<Td>> {
    if !ns.io_opt_fields() {
        return Vec::new();
    }
    [
        ("preferred write alignment", "NPWA", ns.npwa),
        ("preferred deallocate granularity", "NPDG", ns.npdg),
        ("preferred deallocate alignment", "NPDA", ns.npda),
    ]
    .into_iter()
    .filter_map(|(what, field, v)| {
        Some(vec![
            Td::text(what),
            Td::text("nvme"),
            Td::num(bytes(ns.blocks_bytes(v)?)),
            Td::text(field),
            Td::text("not read by the kernel"),
            Td::text("–"),
        ])
    })
    .collect()
}

/// `LBA formats: 0: 512 B, good (in use); 1: 4 KiB, good`.
fn formats(ns: &Namespace) -> String {
    let each: Vec<String> = ns
        .lba_formats
        .iter()
        .map(|f| {
            let data = f.data_bytes.map_or("unsupported".into(), human);
            let meta = if f.metadata_bytes > 0 {
                format!(" + {} B metadata", f.metadata_bytes)
            } else {
                String::new()
            };
            let used = if f.in_use { " (in use)" } else { "" };
            format!(
                "{}: {data}{meta}, {}{used}",
                f.index, f.relative_performance
            )
        })
        .collect();
    format!(
        "LBA formats (index: data size, Relative Performance): {}.",
        each.join("; ")
    )
}

#[cfg(test)]
mod tests {
    //! A synthetic Declared (made up for the test, not a device's data).
    use super::*;
    use crate::identify::nvme::{LbaFormat, RelativePerformance};
    use crate::topology::declared::{Declared, IdentifyProtocol, Limit};

    fn disk() -> Disk {
        let ns = Namespace {
            nsfeat: 0x10,
            npwg: 3,
            npwa: 3,
            lba_formats: vec![
                LbaFormat {
                    index: 0,
                    data_bytes: Some(4096),
                    metadata_bytes: 0,
                    relative_performance: RelativePerformance::Best,
                    in_use: true,
                },
                LbaFormat {
                    index: 1,
                    data_bytes: Some(512),
                    metadata_bytes: 8,
                    relative_performance: RelativePerformance::Good,
                    in_use: false,
                },
            ],
            ..Namespace::default()
        };
        Disk {
            name: "nvme0n1".into(),
            device: "/dev/nvme0n1".into(),
            declared: Some(Declared {
                nvme: Some(ns),
                limits: vec![DeclaredLimit {
                    limit: Limit::MinimumIoSize,
                    source: IdentifyProtocol::Nvme,
                    fields: "NPWG".into(),
                    device_bytes: 16384,
                    kernel_bytes: 4096,
                    follows: false,
                }],
                notes: vec!["the kernel's minimum I/O is 4096 bytes".into()],
                ..Declared::default()
            }),
            ..Disk::default()
        }
    }

    #[test]
    fn the_declared_values_are_tabled_beside_the_kernels() {
        let s = section("run1-declared-0", &disk());
        assert!(s.contains("id=\"run1-declared-0\""));
        assert!(s.contains("<td>minimum_io_size</td><td>nvme</td><td class=\"num\">16384 (16 KiB)</td><td>NPWG</td><td class=\"num\">4096</td><td class=\"sev-warning\">⚠ no</td>"), "{s}");
        assert!(s.contains("<td>NPWA</td><td>not read by the kernel</td>"));
        assert!(s.contains("0: 4 KiB, best (in use); 1: 512 B + 8 B metadata, good."));
        assert!(s.contains("<p class=\"note\">the kernel&#39;s minimum I/O is 4096 bytes</p>"));
    }

    #[test]
    fn nothing_read_is_one_note_and_no_reason_is_nothing() {
        let mut d = disk();
        d.declared = None;
        assert_eq!(section("t", &d), "");
        d.declared_note = Some("the kernel makes loop devices itself".into());
        assert_eq!(
            section("t", &d),
            "<p class=\"note\">What /dev/nvme0n1 itself declares: nothing read (the kernel makes loop devices itself).</p>\n"
        );
    }
}
