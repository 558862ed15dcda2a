//! The figures of a probe run (or fio's results): the penalty heatmap,
//! IOPS against offset per block size, the block-size curve, several
//! targets side by side, the inference and the environment.

use super::page;
use crate::saved::ProbeDoc;

/// The section of one probe run; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, doc: &ProbeDoc) -> String {
    let mut s = page::heading(2, id, &format!("probe: {name}"));
    s.push_str(&page::para(&doc.inference.summary));
    s
}
