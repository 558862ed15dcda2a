//! What the disk itself declares (`device_says`: NVMe Identify Namespace,
//! ATA IDENTIFY, SCSI READ CAPACITY(16) and VPD pages), beside the grains
//! figure: each limit as the device's data gives it next to the kernel's,
//! the fields no kernel limit carries, the LBA formats, and the notes.

use super::super::page;
use crate::identify::Namespace;
use crate::report::columns::{self, Column};
use crate::topology::DeclaredLimit;
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
    let mut rows: Vec<Said> = says.limits.iter().map(Said::Limit).collect();
    if let Some(ns) = &says.nvme {
        rows.extend(ignored_rows(ns));
    }
    let cols = said_columns();
    let mut s = columns::html(
        tid,
        &format!(
            "What {} itself declares (its identify data), beside the kernel's limits (bytes)",
            d.device.display()
        ),
        &cols.iter().collect::<Vec<_>>(),
        &rows.iter().collect::<Vec<_>>(),
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

/// A row of the table: a limit the device's data gives, beside the
/// kernel's, or a field it declares that no kernel limit reads.
enum Said<'a> {
    Limit(&'a DeclaredLimit),
    /// NVMe's NPWA, NPDG or NPDA: what it means, the field, its bytes.
    Ignored(&'static str, &'static str, u64),
}

type S<'a> = Column<Said<'a>>;

/// The limit, where the device says it, its value and the fields it is
/// read from, the kernel's value (a number, or words for a field the
/// kernel does not read: that cell is not right-aligned, so its class
/// says which it is) and whether the kernel follows the device.
fn said_columns<'a>() -> Vec<S<'a>> {
    vec![
        S::html_only("limit", "limit", |r| match r {
            Said::Limit(l) => l.limit.as_str().into(),
            Said::Ignored(what, ..) => (*what).into(),
        }),
        S::html_only("source", "source", |r| match r {
            Said::Limit(l) => l.source.as_str().into(),
            Said::Ignored(..) => "nvme".into(),
        }),
        S::html_only("device_bytes", "the device", |r| match r {
            Said::Limit(l) => bytes(l.device_bytes),
            Said::Ignored(_, _, b) => bytes(*b),
        })
        .num(),
        S::html_only("fields", "from", |r| match r {
            Said::Limit(l) => l.fields.clone(),
            Said::Ignored(_, field, _) => (*field).into(),
        }),
        S::html_only("kernel_bytes", "the kernel", |r| match r {
            Said::Limit(l) => l.kernel_bytes.to_string(),
            Said::Ignored(..) => "not read by the kernel".into(),
        })
        .class(|r| matches!(r, Said::Limit(_)).then(|| "num".into())),
        S::html_only("follows", "follows", |r| match r {
            Said::Limit(l) if l.follows => "yes".into(),
            Said::Limit(_) => "⚠ no".into(),
            Said::Ignored(..) => "–".into(),
        })
        .class(|r| match r {
            Said::Limit(l) if !l.follows => Some("sev-warning".into()),
            _ => None,
        }),
    ]
}

/// NPWA, NPDG and NPDA: declared (when NSFEAT bit 4 says they are valid),
/// read by no kernel limit.
fn ignored_rows(ns: &Namespace) -> Vec<Said<'static>> {
    if !ns.io_opt_fields() {
        return Vec::new();
    }
    [
        ("preferred write alignment", "NPWA", ns.npwa),
        ("preferred deallocate granularity", "NPDG", ns.npdg),
        ("preferred deallocate alignment", "NPDA", ns.npda),
    ]
    .into_iter()
    .filter_map(|(what, field, v)| Some(Said::Ignored(what, field, ns.blocks_bytes(v)?)))
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
    use crate::identify::{LbaFormat, RelativePerformance};
    use crate::topology::{Declared, IdentifyProtocol, Limit};

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
