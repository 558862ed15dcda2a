//! Errors every floor shares. Each names what failed (a file, a device, a
//! sysfs directory); parse errors name the layer and byte too
//! ([`crate::bytes::ParseError`]).

use serde::{Deserialize, Serialize};

/// A target (a disk, a partition, an image, a sysfs directory) that could
/// not be read or checked, and why. Serialized in the `errors` array of
/// every JSON document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(default)]
#[error("{path}: {message}")]
pub struct TargetError {
    pub path: String,
    pub message: String,
}

impl TargetError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        TargetError {
            path: path.into(),
            message: message.into(),
        }
    }
}
