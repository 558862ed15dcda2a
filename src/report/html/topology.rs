//! The figures of a topology run: each disk's I/O limits, sysfs beside
//! the ioctls, with the suspicious hints marked.
//!
//! Ids, from the run's `id` and each disk's index `n`: `{id}-disk-{n}`
//! (its heading), `{id}-grains-{n}` (the figure), `{id}-declared-{n}`
//! (what the device itself declares, beside the figure), `{id}-limits-{n}`
//! (the table), `{id}-findings-{n}`; each disk's part is a
//! `<div class="disk" data-disk="NAME">`.

mod declared;
mod grains;
mod limits;

use super::page;
use super::svg::esc;
use crate::findings::{Finding, Severity};
use crate::report::columns::{self, Column};
use crate::topology::{Disk, TopologyDocument};
use crate::units::human;
use limits::Row;

/// The section of one topology run; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, doc: &TopologyDocument) -> String {
    let doc = &doc.body;
    let mut s = page::heading(2, id, &format!("topology: {name}"));
    if doc.disks.is_empty() {
        s.push_str(&page::para("No disks in this run."));
    }
    for (n, d) in doc.disks.iter().enumerate() {
        s.push_str(&disk(id, n, d));
    }
    s.push_str(&super::findings::errors_html(
        &format!("{id}-errors"),
        "Disks not read",
        "disk",
        &doc.errors,
    ));
    s
}

/// One disk: who it is, its limits drawn and tabled, its findings.
fn disk(id: &str, n: usize, d: &Disk) -> String {
    let mut s = format!("<div class=\"disk\" data-disk=\"{}\">\n", esc(&d.name));
    s.push_str(&page::heading(3, &format!("{id}-disk-{n}"), &title(d)));
    s.push_str(&page::note(&about(d)));
    let rows = limits::rows(d);
    s.push_str(&grains::figure(&format!("{id}-grains-{n}"), d, &rows));
    s.push_str(&declared::section(&format!("{id}-declared-{n}"), d));
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
        d.device.display().to_string()
    } else {
        format!("{}: {}", d.device.display(), who.join(" "))
    }
}

/// Size, transport, bridge, firmware and rotation in one line.
fn about(d: &Disk) -> String {
    let mut parts = vec![format!("{} bytes ({})", d.size_bytes, human(d.size_bytes))];
    parts.push(format!("transport {}", d.transport));
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
    if let Some(f) = &d.flash {
        parts.push(f.line());
    }
    if let Some(fw) = &d.firmware {
        parts.push(format!("firmware {fw}"));
    }
    for (k, v) in [("serial", &d.serial), ("WWN", &d.wwn)] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            parts.push(format!("{k} {v}"));
        }
    }
    if d.zoned.is_zoned() {
        let z = &d.zoned;
        let conv = z
            .conventional_zones
            .map_or("conventional zones not read".to_string(), |n| {
                format!("{n} conventional")
            });
        parts.push(format!(
            "{} zoned: {} zones of {} bytes ({}), {conv}",
            z.model,
            z.zones,
            z.zone_size_bytes,
            human(z.zone_size_bytes)
        ));
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
    let cols = limit_columns();
    let mut s = columns::html(
        tid,
        &format!(
            "I/O limits of {} (bytes): sysfs (queue/) and the ioctls",
            d.device.display()
        ),
        &cols.iter().collect::<Vec<_>>(),
        &rows.iter().collect::<Vec<_>>(),
    );
    if d.ioctl.is_none() {
        s.push_str(&page::note(&format!(
            "The ioctls were not read: {}.",
            d.ioctl_error.as_deref().unwrap_or("no reason given")
        )));
    }
    s
}

/// A distrusted value: marked ⚠.
fn marked(v: i128, warn: bool) -> String {
    if warn {
        format!("⚠ {v}")
    } else {
        v.to_string()
    }
}

/// The class of a value's cell: a number, in the colour of the worst
/// finding about the limit when it is distrusted.
fn value_class(r: &Row, warn: bool) -> String {
    if !warn {
        return "num".into();
    }
    let error = r.findings.iter().any(|f| f.severity == Severity::Error);
    format!("num {}", if error { "sev-error" } else { "sev-warning" })
}

/// Why a limit is marked: the findings about it, or the two values
/// that disagree.
fn why_marked(r: &Row) -> String {
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
    why.join("; ")
}

type Limit<'a> = Column<Row<'a>>;

/// A limit, its value in sysfs and from the ioctl (a number, or words
/// where there is none: those cells are not right-aligned, so the
/// ioctl's class says which a row's cell is), in units, and why it is
/// marked.
fn limit_columns<'a>() -> Vec<Limit<'a>> {
    vec![
        Limit::html_only("limit", "limit", |r| format!("{} ({})", r.label, r.key)),
        Limit::html_only("sysfs", "sysfs", |r| marked(r.sysfs, r.suspicious()))
            .num()
            .class(|r| r.suspicious().then(|| value_class(r, true))),
        Limit::html_only("ioctl", "ioctl", |r| match r.ioctl {
            Some(v) => marked(v, r.differs()),
            None if !r.has_ioctl => "no ioctl".into(),
            None => "⚠ not read".into(),
        })
        .class(|r| match r.ioctl {
            Some(_) => Some(value_class(r, r.differs())),
            None if !r.has_ioctl => None,
            None => Some("sev-info".into()),
        }),
        Limit::html_only("in_units", "in units", |r| {
            if r.sysfs > 0 {
                human(r.sysfs as u64)
            } else {
                "–".into()
            }
        })
        .num(),
        Limit::html_only("why_marked", "why marked", why_marked),
    ]
}

/// All of the disk's findings, worst first.
fn findings(tid: &str, d: &Disk) -> String {
    if d.findings.is_empty() {
        return page::note(&format!("No findings about {}.", d.device.display()));
    }
    let mut all: Vec<&Finding> = d.findings.iter().collect();
    all.sort_by_key(|f| std::cmp::Reverse(f.severity));
    let cols = finding_columns();
    columns::html(
        tid,
        &format!("Findings about {}", d.device.display()),
        &cols.iter().collect::<Vec<_>>(),
        &all,
    )
}

/// A finding's severity and code in the severity's colour, the limit it
/// is about, and its sentence.
fn finding_columns() -> Vec<Column<Finding>> {
    vec![
        Column::html_only("finding", "finding", |f: &Finding| {
            format!("{} {}", f.severity, f.code)
        })
        .class(|f: &Finding| Some(format!("sev-{}", f.severity))),
        Column::html_only("about", "about", |f: &Finding| {
            limits::about(f).unwrap_or("the disk").into()
        }),
        Column::html_only("message", "message", |f: &Finding| f.message.clone()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::saved::Saved;

    /// The usb-bridge fixture's disk: a JMicron bridge reporting 65535 × 512.
    const DOC: &str = r#"{"schema":"diskalign.topology","schema_version":1,"disks":[{
        "name":"sda","device":"/dev/sda","size_bytes":1000204886016,
        "topology":{"logical_block_size":512,"physical_block_size":4096,"minimum_io_size":4096,
                    "optimal_io_size":33553920,"alignment_offset":0,"discard_granularity":0,"discard_alignment":0},
        "ioctl":null,"ioctl_error":"not opened: sysfs root is fixtures",
        "model":"WD10EZEX-00WN4A0","vendor":"WDC","transport":"usb-uas",
        "usb":{"vendor_id":"152d","product_id":"0578","manufacturer":"JMicron","product":"USB to ATA/ATAPI Bridge"},
        "findings":[{"code":"optimal-io-suspicious","severity":"warning","message":"optimal_io_size 33553920 is 65535 x 512"}]}],
        "errors":[{"path":"nosuch","message":"no such disk under /sys/block"}]}"#;

    fn page() -> String {
        let Ok(Saved::Topology(doc)) = Saved::parse(DOC, "t.json") else {
            panic!("not a topology document");
        };
        section("run1", "t.json", &doc)
    }

    #[test]
    fn the_grains_legend_keeps_clear() {
        assert_eq!(super::super::kit::assert_legends_clear(&page()), 2);
    }

    #[test]
    fn the_bridges_hint_is_marked_in_the_figure_and_the_table() {
        let s = page();
        assert!(s.contains("<div class=\"disk\" data-disk=\"sda\">"));
        assert!(s.contains("id=\"run1-grains-0\""));
        assert!(s.contains(
            "data-disk=\"sda\" data-limit=\"optimal_io_size\" data-source=\"sysfs\" data-value=\"33553920\" data-suspicious=\"true\""
        ));
        assert!(s.contains(
            "data-disk=\"sda\" data-limit=\"physical_block_size\" data-source=\"sysfs\" data-value=\"4096\" data-suspicious=\"false\""
        ));
        assert!(s.contains(
            "data-limit=\"optimal_io_size\" data-source=\"ioctl\" data-value=\"\" data-suspicious=\"false\""
        ));
        assert!(s.contains("id=\"run1-limits-0\""));
        assert!(s.contains("<td class=\"num sev-warning\">⚠ 33553920</td>"));
        assert!(s.contains("<td class=\"sev-info\">⚠ not read</td>"));
        assert!(s.contains("optimal-io-suspicious: optimal_io_size 33553920 is 65535 x 512"));
        assert!(s.contains("The ioctls were not read: not opened: sysfs root is fixtures."));
        assert!(s.contains("id=\"run1-findings-0\""));
        assert!(s.contains("id=\"run1-errors\""));
    }
}
