//! The stack drawn as a tree: each layer with its offset, what it hands up,
//! its verdict and its findings underneath.

use crate::findings::Severity;
use crate::iolimits::Topology;
use crate::report::style::Style;
use crate::stack::{Layer, LayerKind};
use crate::units::{exact, human};
use std::fmt::Write;

fn limits(t: &Topology) -> String {
    format!(
        "limits lbs {} pbs {} min {} opt {} ao {}",
        t.logical_block_size,
        t.physical_block_size,
        t.minimum_io_size,
        t.optimal_io_size,
        t.alignment_offset
    )
}

fn at(b: u64) -> String {
    format!("byte {b} ({})", human(b))
}

/// A FAT, exFAT or NTFS volume: its cluster, its FAT, where cluster 2 is
/// on the device, the start its boot sector records, its size when it is
/// not what it is in, label, serial, backup.
fn volume(l: &Layer, f: &crate::stack::Filesystem) -> String {
    let Some(v) = f.volume.as_deref() else {
        return String::new();
    };
    let mut s = format!(
        "at {}, cluster {}, sector {}",
        at(l.offset_bytes),
        exact(v.cluster_bytes),
        f.sector_size
    );
    if let Some(fat) = v.fat_offset_bytes {
        let _ = write!(s, ", FAT at {} in", exact(fat));
    }
    if v.data_offset_bytes > 0 {
        let what = if f.kind == crate::stack::FsKind::Exfat {
            "heap"
        } else {
            "data area"
        };
        let _ = write!(s, ", {what} at {}", at(v.data_start_bytes));
    }
    let _ = write!(s, ", hidden sectors {}", v.hidden_sectors);
    if v.span_bytes != v.region_bytes {
        let (span, region) = (human(v.span_bytes), human(v.region_bytes));
        // "~296.0 MiB of 296 MiB" reads as equal: rounded, say the bytes.
        let rounded = span.starts_with('~') || region.starts_with('~');
        let _ = if span == region || rounded {
            write!(s, ", volume {} of {} bytes", v.span_bytes, v.region_bytes)
        } else {
            write!(s, ", volume {span} of {region}")
        };
    }
    if let Some(label) = &v.label {
        let _ = write!(s, ", label {label:?}");
    }
    if let Some(serial) = &v.serial {
        let _ = write!(s, ", serial {serial}");
    }
    if v.backup.state != crate::stack::BackupState::None {
        let _ = write!(s, ", backup boot sector {}", v.backup.state);
    }
    s
}

/// A BlueStore label: its unit first (what the rule judges), then the
/// OSD and the meta keys that say how it was made.
fn bluestore(b: &crate::stack::Bluestore) -> String {
    let mut s = match b.min_alloc_size_bytes {
        Some(u) => format!("min_alloc_size {} (bfm_bytes_per_block)", exact(u)),
        None => "min_alloc_size not in the label".to_string(),
    };
    let _ = write!(s, ", osd_uuid {}", b.osd_uuid);
    for key in ["whoami", "kv_backend", "bluefs", "require_osd_release"] {
        if let Some(v) = b.meta.get(key) {
            let _ = write!(s, ", {key} {v}");
        }
    }
    let _ = write!(s, ", size {}", human(b.size_bytes));
    s
}

/// What the line says about one layer besides its name (the page's
/// stack table says it in the same words).
pub(in crate::report) fn detail(l: &Layer) -> String {
    let data = l
        .data_start()
        .map(|d| format!(" → data at {}", at(d)))
        .unwrap_or_default();
    match l.kind {
        LayerKind::Partition | LayerKind::Device => {
            format!("{}, {}", at(l.offset_bytes), human(l.size_bytes))
        }
        LayerKind::LvmPv => format!(
            "pe_start {}{data}{}",
            exact(l.pv().map_or(0, |p| p.pe_start_bytes)),
            l.pv()
                .and_then(|p| p.vg.as_ref())
                .map(|v| format!(", VG {v}"))
                .unwrap_or_default()
        ),
        LayerKind::MdMember => format!(
            "data_offset {}{data}",
            exact(l.md().map_or(0, |m| m.data_offset_bytes))
        ),
        LayerKind::Luks => format!(
            "payload {}{data}, sector {}",
            exact(l.luks().map_or(0, |h| h.payload_offset_bytes)),
            l.luks().map_or(0, |h| h.sector_size)
        ),
        LayerKind::Filesystem => match l.filesystem() {
            Some(f) if f.volume.is_some() => volume(l, f),
            Some(f) => format!(
                "at {}, block {}, sector {}, stripe unit {} / width {} blocks{}",
                at(l.offset_bytes),
                f.block_size,
                f.sector_size,
                f.stripe_unit_blocks,
                f.stripe_width_blocks,
                f.f2fs
                    .as_ref()
                    .map(|a| format!(
                        ", segments of {} from {} (segment 0), sections of {}, main area at {}",
                        exact(a.segment_bytes),
                        at(l.offset_bytes + a.segment0_offset_bytes),
                        exact(a.section_bytes),
                        at(l.offset_bytes + a.main_offset_bytes)
                    ))
                    .unwrap_or_default()
            ),
            None => String::new(),
        },
        LayerKind::Swap => format!("at {}", at(l.offset_bytes)),
        LayerKind::Bcache => match l.bcache() {
            Some(b) => format!(
                "block {}{}{data}",
                exact(b.block_size_bytes),
                b.bucket_size_bytes
                    .map(|x| format!(", bucket {}", exact(x)))
                    .unwrap_or_default()
            ),
            None => String::new(),
        },
        LayerKind::Bluestore => l.bluestore().map(bluestore).unwrap_or_default(),
        LayerKind::ZfsMember => match l.zfs() {
            Some(z) => {
                let sound = z.labels.iter().filter(|c| c.sound).count();
                format!(
                    "ashift {}, pool version {}, {}, {sound} of {} labels sound",
                    z.ashift().map_or("unknown".into(), |a| format!(
                        "{a} ({} B)",
                        1u128 << a.min(64)
                    )),
                    z.version,
                    z.state_name,
                    z.labels.len()
                )
            }
            None => String::new(),
        },
        LayerKind::MdArray | LayerKind::LvmLv | LayerKind::Holder => {
            let mut s = l.exposes.map(|t| limits(&t)).unwrap_or_default();
            if let Some(a) = l.array() {
                let m: Vec<String> = a
                    .members
                    .iter()
                    .map(|m| {
                        format!(
                            "{}: {} data at {}",
                            m.role.map_or("spare".into(), |r| r.to_string()),
                            m.device,
                            m.data_start_bytes
                        )
                    })
                    .collect();
                let _ = write!(s, "; members {}", m.join(", "));
            }
            if let Some(lv) = l.lv() {
                let segs: Vec<String> = lv
                    .segments
                    .iter()
                    .map(|g| match (&g.thin_pool, &g.thin, g.stripe_size_bytes) {
                        (Some(p), _, _) => format!(
                            "thin-pool, chunk {}, data {}, metadata {}, zero {}, discards {}",
                            exact(p.chunk_bytes),
                            p.data_lv,
                            p.metadata_lv,
                            if p.zero_new_blocks { "on" } else { "off" },
                            p.discards
                        ),
                        (_, Some(t), _) => format!(
                            "thin in pool {} (device {}, chunk {})",
                            t.pool,
                            t.device_id,
                            lv.pool_chunk_bytes.map_or("?".into(), exact)
                        ),
                        (_, _, Some(ss)) => format!("{} × {} stripes", g.legs.len(), exact(ss)),
                        _ if g.kind == "striped" => "linear".into(),
                        _ => g.kind.clone(),
                    })
                    .collect();
                let _ = write!(s, "; {}, {}", segs.join(" + "), human(l.size_bytes));
            }
            s
        }
        LayerKind::LvmVg => match l.vg() {
            Some(v) => {
                let pvs: Vec<String> = v
                    .pvs
                    .iter()
                    .map(|p| {
                        format!(
                            "{} on {}",
                            p.key,
                            p.found_on.as_deref().unwrap_or("MISSING")
                        )
                    })
                    .collect();
                pvs.join(", ")
            }
            None => String::new(),
        },
        LayerKind::LvmLeg => format!("{} on {}", at(l.offset_bytes), l.device),
        LayerKind::Unread => format!(
            "at {}, {} signature (not read: what is inside it is not judged)",
            at(l.offset_bytes),
            l.signature().map_or("its", |s| s.what.as_str())
        ),
    }
}

/// Draw `layers` as a tree under `prefix`.
pub fn tree(out: &mut String, layers: &[Layer], st: &Style, prefix: &str) {
    for (i, l) in layers.iter().enumerate() {
        let last = i + 1 == layers.len();
        let (branch, cont) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        let mut verdict = st.status(l.status);
        if let Some(cause) = &l.inherits_from {
            verdict.push_str(&format!(" (the offset of {cause})"));
        }
        let _ = writeln!(
            out,
            "{prefix}{branch}{}  {}  {verdict}",
            st.bold(&l.name),
            detail(l)
        );
        let inner = format!("{prefix}{cont}");
        for f in l.findings.iter().filter(|f| shows(f, st)) {
            out.push_str(&st.finding(&format!("{inner}  "), "", f));
        }
        tree(out, &l.children, st, &inner);
    }
}

/// Info findings with -v only, except those that say why a layer is
/// incomplete.
fn shows(f: &crate::findings::Finding, st: &Style) -> bool {
    st.verbose || f.severity > Severity::Info || f.leaves_incomplete()
}

/// The findings of `layers` and everything above them that the tree does
/// not show (counted once each, as the summary counts them), for the
/// report's "not shown" line.
pub fn hidden(layers: &[Layer], st: &Style) -> usize {
    layers
        .iter()
        .flat_map(|l| l.walk())
        .flat_map(|l| &l.findings)
        .filter(|f| f.counts() && !shows(f, st))
        .count()
}
