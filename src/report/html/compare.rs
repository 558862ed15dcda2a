//! The figures of a comparison: B/A per cell with its interval for probe
//! runs, the findings that changed for check runs.

use super::page;
use crate::compare::Comparison;

/// The section of one comparison; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, c: &Comparison) -> String {
    let mut s = page::heading(2, id, &format!("compare: {name}"));
    let what = match c {
        Comparison::Probe(p) => format!("{} against {}", p.b.file, p.a.file),
        Comparison::Check(k) => format!("{} against {}", k.b.file, k.a.file),
    };
    s.push_str(&page::para(&what));
    s
}
