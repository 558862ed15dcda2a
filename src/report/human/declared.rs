//! The "device says" block of `topology`'s details: the identify data of
//! each command set that answered, each limit beside the kernel's, the
//! fields the kernel ignores and the notes.

use crate::identify::{Identify, Namespace, ScsiSays};
use crate::report::style::Style;
use crate::topology::DeclaredLimit;
use crate::topology::Disk;
use std::fmt::Write;

const LABEL: &str = "device says";
/// Where the values start: two spaces and a 22-character label, as the
/// other rows of the details.
const HANG: &str = "                        ";

/// The block of one disk.
pub fn block(d: &Disk, st: &Style) -> String {
    let Some(s) = &d.declared else {
        let why = d.declared_note.as_deref().unwrap_or("nothing read");
        return st.line(&format!("  {LABEL:<22}"), why, HANG);
    };
    let mut lines: Vec<String> = Vec::new();
    if let Some(ns) = &s.nvme {
        nvme(ns, &mut lines);
    }
    // The drive first, then what answers in front of it.
    if let Some(id) = &s.ata {
        lines.push(ata(id));
    }
    if let Some(sc) = &s.scsi {
        lines.push(scsi(sc));
    }
    lines.extend(s.limits.iter().map(limit));
    if !s.kernel_ignores.is_empty() {
        lines.push(format!(
            "not read by the kernel: {}",
            s.kernel_ignores.join(", ")
        ));
    }
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        let head = if i == 0 {
            format!("  {LABEL:<22}")
        } else {
            HANG.to_string()
        };
        out.push_str(&st.line(&head, l, &format!("{HANG}  ")));
    }
    for n in &s.notes {
        out.push_str(&st.line(&format!("{HANG}note: "), n, &format!("{HANG}      ")));
    }
    out
}

fn nvme(ns: &Namespace, out: &mut Vec<String>) {
    if let Some(f) = ns.in_use() {
        out.push(format!(
            "NVMe: LBA format {} in use, {} bytes{}, {} performance",
            f.index,
            f.data_bytes.unwrap_or(0),
            metadata(f.metadata_bytes),
            f.relative_performance
        ));
    }
    let bytes = |v: u16| {
        ns.blocks_bytes(v)
            .map(|b| format!(" ({b} bytes)"))
            .unwrap_or_default()
    };
    if ns.io_opt_fields() {
        out.push(format!(
            "NSFEAT {:#04x}: NPWG {}{}, NPWA {}{}, NPDG {}, NPDA {}, NOWS {}{} (0's based, logical blocks)",
            ns.nsfeat,
            ns.npwg,
            bytes(ns.npwg),
            ns.npwa,
            bytes(ns.npwa),
            ns.npdg,
            ns.npda,
            ns.nows,
            bytes(ns.nows)
        ));
    } else {
        out.push(format!(
            "NSFEAT {:#04x}: bit 4 clear, no NPWG, NPWA, NPDG, NPDA or NOWS",
            ns.nsfeat
        ));
    }
    out.push(format!(
        "NAWUN {}, NAWUPF {}, NABO {}",
        ns.nawun, ns.nawupf, ns.nabo
    ));
    let mut formats = String::from("LBA formats (NLBAF ");
    let _ = write!(formats, "{}):", ns.nlbaf);
    for f in &ns.lba_formats {
        let size = f
            .data_bytes
            .map_or_else(|| "unsupported".to_string(), |b| b.to_string());
        let _ = write!(
            formats,
            " {}{}\u{a0}{size}{}\u{a0}{},",
            f.index,
            if f.in_use { "*" } else { "" },
            metadata(f.metadata_bytes),
            f.relative_performance
        );
    }
    out.push(formats.trim_end_matches(',').to_string());
}

fn metadata(ms: u16) -> String {
    if ms == 0 {
        String::new()
    } else {
        format!("+{ms}")
    }
}

fn scsi(s: &ScsiSays) -> String {
    let mut parts = Vec::new();
    if let (Some(g), Some(m), Some(o)) = (s.otlg, s.mtl, s.otl) {
        parts.push(format!("OTLG {g}, MTL {m}, OTL {o} blocks (VPD B0h)"));
    }
    if let Some(w) = &s.wwn {
        parts.push(format!("WWN {w}"));
    }
    if let (Some(l), Some(e), Some(a)) = (s.logical_block_bytes, s.lbppbe, s.lalba) {
        parts.push(format!(
            "READ CAPACITY(16): {l}-byte blocks, LBPPBE {e}, LALBA {a}"
        ));
    }
    format!("SCSI: {}", parts.join("; "))
}

fn ata(id: &Identify) -> String {
    let mut s = format!(
        "ATA IDENTIFY: word 106 {:#06x}, {}-byte logical and {}-byte physical sectors, alignment offset {}",
        id.word106, id.logical_sector_bytes, id.physical_sector_bytes, id.alignment_offset_bytes
    );
    if let Some(m) = &id.model {
        let _ = write!(s, "; model {m}");
    }
    if let Some(f) = &id.firmware {
        let _ = write!(s, ", firmware {f}");
    }
    s
}

fn limit(l: &DeclaredLimit) -> String {
    format!(
        "{} {} ({}: {}); kernel {}{}",
        l.limit,
        l.device_bytes,
        l.source,
        l.fields,
        l.kernel_bytes,
        if l.follows { ", follows" } else { ", differs" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{read_declared as read, Answers};

    fn fixture(name: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/identify/");
        std::fs::read(format!("{dir}{name}")).unwrap()
    }

    #[test]
    fn the_seed_drive_behind_its_bridge() {
        let topology = crate::iolimits::Topology {
            physical_block_size: 4096,
            minimum_io_size: 4096,
            optimal_io_size: 33553920,
            ..crate::iolimits::Topology::plain(512)
        };
        let a = Answers {
            ata: Some(Ok(fixture("ata-identify-512n.bin"))),
            read_capacity: Some(Ok(fixture("read-capacity16-bridge.bin"))),
            vpd_b0: Some(fixture("vpd-b0-bridge.bin")),
            usb: true,
            ..Answers::default()
        };
        let d = Disk {
            topology,
            declared: Some(read(&a, &topology).unwrap()),
            ..Disk::default()
        };
        let out = block(&d, &Style::plain());
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("  device says           ATA IDENTIFY: word 106 0x4000, 512-byte logical and 512-byte physical sectors"), "{out}");
        assert!(out.contains("\n                        physical_block_size 512 (ata: IDENTIFY word 106); kernel 4096, differs\n"), "{out}");
        assert!(out.contains("note: the drive says 512/512 (logical/physical, IDENTIFY); the USB bridge reports 512/4096"), "{out}");
    }

    #[test]
    fn nothing_read_is_one_line() {
        let d = Disk {
            declared_note: Some(
                "the kernel makes loop devices itself: no identify data to ask for".into(),
            ),
            ..Disk::default()
        };
        assert_eq!(
            block(&d, &Style::plain()),
            "  device says           the kernel makes loop devices itself: no identify data to ask for\n"
        );
    }
}
