//! The figures of a check run: the disk maps, the boundary zooms, the
//! stack drawn as layers, the tools' verdicts and the findings.

use super::page::{self, Td};
use crate::saved::CheckDoc;

/// The section of one check run; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, doc: &CheckDoc) -> String {
    let mut s = page::heading(2, id, &format!("check: {name}"));
    let rows: Vec<Vec<Td>> = doc
        .targets
        .iter()
        .map(|t| vec![Td::text(&t.path), Td::text(&t.verdict)])
        .collect();
    s.push_str(&page::table(
        &format!("{id}-targets"),
        "Targets",
        &["target", "verdict"],
        &rows,
    ));
    s
}
