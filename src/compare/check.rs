//! Two check runs compared finding by finding.
//! PLACEHOLDER: to be replaced by the full implementation.

use super::RunInfo;
use crate::saved::CheckDoc;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct CheckComparison {
    pub a: RunInfo,
    pub b: RunInfo,
}

impl CheckComparison {
    pub fn differs(&self) -> bool {
        false
    }
}

pub fn compare(_a: &CheckDoc, _b: &CheckDoc) -> CheckComparison {
    CheckComparison::default()
}
