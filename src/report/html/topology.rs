//! The figures of a topology run: each disk's I/O limits, sysfs beside
//! the ioctls, with the suspicious hints marked.
//!
//! Ids, from the run's `id` and each disk's index `n`: `{id}-disk-{n}`
//! (its heading), `{id}-grains-{n}` (the figure), `{id}-limits-{n}` (the
//! table), `{id}-findings-{n}`; each disk's part is a
//! `<div class="disk" data-disk="NAME">`.

mod grains;
mod limits;

use super::page::{self, Td};
use super::svg::esc;
use crate::saved::topology::Disk;
use crate::saved::TopologyDoc;
use crate::units::human;
use limits::Row;

/// The section of one topology run; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, doc: &TopologyDoc) -> String {
    let mut s = page::heading(2, id, &format!("topology: {name}"));
    if doc.disks.is_empty() {
        s.push_str(&page::para("No disks in this run."));
    }
    for (n, d) in doc.disks.iter().enumerate() {
        s.push_str(&disk(id, n, d));
    }
    if !doc.errors.is_empty() {
        let rows: Vec<Vec<Td>> = doc
            .errors
            .iter()
            .map(|e| {
                vec![
                    Td::text(&e.path),
                    Td::Class("sev-error".into(), e.message.clone()),
                ]
            })
            .collect();
        s.push_str(&page::table(
            &format!("{id}-errors"),
            "Disks not read",
            &["disk", "why"],
            &rows,
        ));
    }
    s
}

/// One disk: who it is, its limits drawn and tabled, its findings.
fn disk(id: &str, n: usize, d: &Disk) -> String {
    let mut s = format!("<div class=\"disk\" data-disk=\"{}\">\n", esc(&d.name));
    s.push_str(&page::heading(3, &format!("{id}-disk-{n}"), &title(d)));
    s.push_str(&page::note(&about(d)));
    let rows = limits::rows(d);
    s.push_str(&grains::figure(&format!("{id}-grains-{n}"), d, &rows));
    s.push_str(&table(&format!("{id}-limits-{n}"), d, &rows));
    s.push_str(&findings(&format!("{id}-findings-{n}"), d));
    s.push_str("</div>\n");
    s
}

/// `/dev/sda: WDC WD10EZEX-00WN4A0`.
fn title(d: &Disk) -> String {
    let who: Vec<&str> = [d.vendor.as_deref(), d.model.as_deref()]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect();
    if who.is_empty() {
        d.device.clone()
    } else {
        format!("{}: {}", d.device, who.join(" "))
    }
}

/// Size, transport, bridge, firmware and rotation in one line.
fn about(d: &Disk) -> String {
    let mut parts = vec![format!("{} bytes ({})", d.size_bytes, human(d.size_bytes))];
    if let Some(t) = &d.transport {
        parts.push(format!("transport {t}"));
    }
    if let Some(u) = &d.usb {
        let name: Vec<&str> = [u.manufacturer.as_deref(), u.product.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        parts.push(
            format!(
                "USB bridge {}:{} {}",
                u.vendor_id,
                u.product_id,
                name.join(" ")
            )
            .trim_end()
            .to_string(),
        );
    }
    if let Some(fw) = &d.firmware {
        parts.push(format!("firmware {fw}"));
    }
    match d.rotational {
        Some(true) => parts.push("rotational".into()),
        Some(false) => parts.push("not rotational".into()),
        None => {}
    }
    parts.join("; ")
}

/// The limits, sysfs beside the ioctl; distrusted cells marked ⚠ with why.
fn table(tid: &str, d: &Disk, rows: &[Row]) -> String {
    let body: Vec<Vec<Td>> = rows.iter().map(|r| table_row(d, r)).collect();
    let mut s = page::table(
        tid,
        &format!(
            "I/O limits of {} (bytes): sysfs (queue/) and the ioctls",
            d.device
        ),
        &["limit", "sysfs", "ioctl", "in units", "why marked"],
        &body,
    );
    if d.ioctl.is_none() {
        s.push_str(&page::note(&format!(
            "The ioctls were not read: {}.",
            d.ioctl_error.as_deref().unwrap_or("no reason given")
        )));
    }
    s
}

fn table_row(d: &Disk, r: &Row) -> Vec<Td> {
    let class = |warn: bool| {
        let worst = r.findings.iter().map(|f| f.severity).max();
        match worst {
            Some(crate::findings::Severity::Error) => "sev-error",
            _ if warn => "sev-warning",
            _ => "",
        }
    };
    let cell = |v: String, warn: bool| {
        if warn {
            Td::Class(format!("num {}", class(true)), format!("⚠ {v}"))
        } else {
            Td::num(v)
        }
    };
    let ioctl = match r.ioctl {
        Some(v) => cell(v.to_string(), r.differs()),
        None if !r.has_ioctl => Td::text("no ioctl"),
        None => Td::Class(
            "sev-info".into(),
            format!(
                "⚠ not read{}",
                if d.ioctl_error.is_some() {
                    " (see note)"
                } else {
                    ""
                }
            ),
        ),
    };
    let mut why: Vec<String> = r
        .findings
        .iter()
        .map(|f| format!("{}: {}", f.code, f.message))
        .collect();
    if r.differs() && r.findings.is_empty() {
        why.push(format!(
            "sysfs says {}, the ioctl says {}",
            r.sysfs,
            r.ioctl.unwrap_or_default()
        ));
    }
    vec![
        Td::text(format!("{} ({})", r.label, r.key)),
        cell(r.sysfs.to_string(), r.suspicious()),
        ioctl,
        Td::num(if r.sysfs > 0 {
            human(r.sysfs as u64)
        } else {
            "–".into()
        }),
        Td::text(why.join("; ")),
    ]
}

/// All of the disk's findings, worst first.
fn findings(tid: &str, d: &Disk) -> String {
    if d.findings.is_empty() {
        return page::note(&format!("No findings about {}.", d.device));
    }
    let mut all: Vec<_> = d.findings.iter().collect();
    all.sort_by_key(|f| std::cmp::Reverse(f.severity));
    let rows: Vec<Vec<Td>> = all
        .iter()
        .map(|f| {
            vec![
                Td::Class(
                    format!("sev-{}", f.severity),
                    format!("{} {}", f.severity, f.code),
                ),
                Td::text(limits::about(f).unwrap_or("the disk")),
                Td::text(&f.message),
            ]
        })
        .collect();
    page::table(
        tid,
        &format!("Findings about {}", d.device),
        &["finding", "about", "message"],
        &rows,
    )
}
