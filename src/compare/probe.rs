//! Two probe runs (or fio results) compared cell by cell.
//! PLACEHOLDER: to be replaced by the full implementation.

use super::RunInfo;
use crate::saved::ProbeDoc;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ProbeComparison {
    pub a: RunInfo,
    pub b: RunInfo,
}

impl ProbeComparison {
    pub fn differs(&self) -> bool {
        false
    }
}

pub fn compare(_a: &ProbeDoc, _b: &ProbeDoc) -> ProbeComparison {
    ProbeComparison::default()
}
