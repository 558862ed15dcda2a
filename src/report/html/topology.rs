//! The figures of a topology run: each disk's I/O limits, sysfs beside
//! the ioctls, with the suspicious hints marked.

use super::page::{self, Td};
use crate::saved::TopologyDoc;

/// The section of one topology run; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, doc: &TopologyDoc) -> String {
    let mut s = page::heading(2, id, &format!("topology: {name}"));
    let rows: Vec<Vec<Td>> = doc
        .disks
        .iter()
        .map(|d| vec![Td::text(&d.device), Td::num(d.size_bytes)])
        .collect();
    s.push_str(&page::table(
        &format!("{id}-disks"),
        "Disks",
        &["disk", "size (bytes)"],
        &rows,
    ));
    s
}
