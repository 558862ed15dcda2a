//! The `run` section of the check document: what reading the targets
//! cost, so the price of a check over many disks is visible per disk.

use crate::sys::Cost;
use serde::{Deserialize, Serialize};

/// The whole run's reads, then each target's (in the order asked, those
/// that could not be checked too).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunCost {
    #[serde(flatten)]
    pub total: Cost,
    pub targets: Vec<TargetCost>,
}

/// What reading one target cost.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetCost {
    pub path: String,
    #[serde(flatten)]
    pub cost: Cost,
}

impl RunCost {
    pub fn of(total: Cost, targets: Vec<(String, Cost)>) -> RunCost {
        RunCost {
            total,
            targets: targets
                .into_iter()
                .map(|(path, cost)| TargetCost { path, cost })
                .collect(),
        }
    }
}
