//! The human report of `topology`: one row per disk, as `lsblk -t`, from
//! the column model; the details of each disk (every limit, the ioctls'
//! view, the findings explained) for a disk named or `-v`.

use crate::errors::TargetError;
use crate::report::columns;
use crate::report::style::{Style, TableForm, View};
use crate::report::tables::DISKS;
use crate::topology::Disk;
use crate::units::human;
use std::fmt::Write;

pub fn render(disks: &[Disk], errors: &[TargetError], st: &Style) -> String {
    let mut out = String::new();
    if st.view != View::Report {
        out.push_str(&table(disks, st));
    }
    if st.view == View::Both {
        out.push('\n');
    }
    if st.view != View::Table {
        out.push_str(&details(disks, st));
        out.push_str(&crate::report::style::errors(errors, st, "could not read:"));
    }
    out
}

/// One row per disk, of the columns `-o` picked, fitted to a terminal
/// when none were; the default table says where the details are.
fn table(disks: &[Disk], st: &Style) -> String {
    let rows: Vec<&Disk> = disks.iter().collect();
    let picked = columns::select(DISKS, st.columns.as_deref(), |c| c.human);
    let picked = columns::naming_rows(DISKS, picked, "name", disks.len());
    let (cols, hidden) = match (st.width, &st.columns) {
        (Some(w), None) if st.fit => columns::fit(picked, &rows, st, w),
        _ => (picked, vec![]),
    };
    let mut out = columns::render(&cols, &rows, st, "");
    let plain = st.columns.is_none() && st.table == TableForm::default();
    if plain && st.view == View::Table {
        let mut text = String::from("(");
        if !hidden.is_empty() {
            let _ = write!(text, "{} hidden to fit the terminal; ", hidden.join(", "));
        }
        text.push_str("-v or a disk named shows every limit and explains the problems; -o picks columns, --list-columns explains them)");
        out.push_str(&st.hint("", &text, ""));
    }
    out
}

/// Each disk in full: every limit, sysfs and the ioctls, the partitions
/// and the findings explained.
fn details(disks: &[Disk], st: &Style) -> String {
    let mut out = String::new();
    for d in disks {
        let t = &d.topology;
        let ident: Vec<&str> = [d.vendor.as_deref(), d.model.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let _ = writeln!(
            out,
            "{}  {} ({} bytes)  {}{}",
            st.bold(&d.device.display().to_string()),
            human(d.size_bytes),
            d.size_bytes,
            d.transport.as_str(),
            if ident.is_empty() {
                String::new()
            } else {
                format!("  {}", ident.join(" "))
            }
        );
        if let Some(u) = &d.usb {
            let _ = writeln!(
                out,
                "  usb bridge {}:{}{}{}",
                u.vendor_id,
                u.product_id,
                u.driver
                    .as_deref()
                    .map(|d| format!(" driver {d}"))
                    .unwrap_or_default(),
                u.product
                    .as_deref()
                    .map(|p| format!(" ({p})"))
                    .unwrap_or_default()
            );
        }
        if let Some(f) = &d.flash {
            let _ = writeln!(out, "  flash {}", f.line());
        }
        if let Some(s) = &d.serial {
            let _ = writeln!(
                out,
                "  serial {s}{}",
                d.firmware
                    .as_deref()
                    .map(|f| format!("  firmware {f}"))
                    .unwrap_or_default()
            );
        }
        if let Some(b) = &d.backing_file {
            let _ = writeln!(out, "  backing file {b}");
        }
        let io = d.ioctl.as_ref();
        let row = |name: &str, sys: String, ioctl: Option<String>| {
            let shown = match ioctl {
                Some(i) if i != sys => format!("{sys}  (ioctl says {i})"),
                _ => sys,
            };
            format!("  {name:<22}{shown}\n")
        };
        // The limits both views have: sysfs first, the ioctl where it differs.
        let limits: [(&str, i64, Option<i64>); 5] = [
            (
                "logical block",
                t.logical_block_size.into(),
                io.map(|i| i.logical_block_size.into()),
            ),
            (
                "physical block",
                t.physical_block_size.into(),
                io.map(|i| i.physical_block_size.into()),
            ),
            (
                "minimum I/O",
                t.minimum_io_size.into(),
                io.map(|i| i.minimum_io_size.into()),
            ),
            (
                "optimal I/O",
                t.optimal_io_size.into(),
                io.map(|i| i.optimal_io_size.into()),
            ),
            (
                "alignment offset",
                t.alignment_offset,
                io.map(|i| i.alignment_offset),
            ),
        ];
        for (name, sys, ioctl) in limits {
            out.push_str(&row(name, sys.to_string(), ioctl.map(|i| i.to_string())));
        }
        out.push_str(&row(
            "discard granularity",
            t.discard_granularity.to_string(),
            None,
        ));
        out.push_str(&row(
            "discard alignment",
            t.discard_alignment.to_string(),
            None,
        ));
        out.push_str(&row(
            "rotational",
            d.rotational
                .map(|r| if r { "yes" } else { "no" })
                .unwrap_or("unknown")
                .to_string(),
            None,
        ));
        if d.zoned.is_zoned() {
            let z = &d.zoned;
            out.push_str(&row("zone model", z.model.to_string(), None));
            out.push_str(&row(
                "zone size",
                format!("{} ({})", z.zone_size_bytes, human(z.zone_size_bytes)),
                None,
            ));
            out.push_str(&row("zones", z.zones.to_string(), None));
            let conv = match (z.conventional_zones, &z.conventional_zones_error) {
                (Some(n), _) => n.to_string(),
                (None, Some(e)) => format!("not read: {e}"),
                (None, None) => "not read".into(),
            };
            out.push_str(&row("conventional zones", conv, None));
        }
        match (&d.ioctl, &d.ioctl_error) {
            (Some(_), _) => out.push_str(&row(
                "ioctl view",
                "read (values agree unless shown)".into(),
                None,
            )),
            (None, Some(e)) => out.push_str(&row("ioctl view", format!("unavailable: {e}"), None)),
            _ => {}
        }
        out.push_str(&super::declared::block(d, st));
        if !d.slaves.is_empty() {
            out.push_str(&row("stacked on", d.slaves.join(", "), None));
        }
        if !d.holders.is_empty() {
            out.push_str(&row("held by", d.holders.join(", "), None));
        }
        for p in &d.partitions {
            out.push_str(&row(
                &format!("partition {}", p.name),
                format!(
                    "start {} size {} alignment_offset {}",
                    p.start_bytes, p.size_bytes, p.alignment_offset
                ),
                None,
            ));
        }
        if d.findings.is_empty() {
            let _ = writeln!(out, "  {}", st.good("hints look sane"));
        }
        for f in &d.findings {
            out.push_str(&st.finding("  ", "", f));
        }
        out.push('\n');
    }
    out
}
