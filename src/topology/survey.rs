//! `topology`'s reading: the disks asked for (or every disk), each with
//! its limits and hints, and the ones that could not be read.

use super::{Disk, Sysfs};
use crate::errors::TargetError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The disks read and the ones that could not be: the body of the
/// topology document (docs/json.md).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Survey {
    pub disks: Vec<Disk>,
    pub errors: Vec<TargetError>,
}

impl Survey {
    /// Any warning or error among the disks' hints.
    pub fn has_problems(&self) -> bool {
        self.disks
            .iter()
            .any(|d| d.findings.iter().any(|f| f.is_problem()))
    }
}

/// The topology document (`topology --json`, docs/json.md): the header,
/// then the survey. The same type writes it and `saved` reads it back.
pub type TopologyDocument = crate::schema::Document<Survey>;

/// Read `devices` (names or /dev paths), or every disk when empty.
pub fn survey(sysfs: &Sysfs, devices: &[String]) -> Survey {
    let mut out = Survey::default();
    let names: Vec<String> = if devices.is_empty() {
        sysfs.default_disks().unwrap_or_else(|e| {
            out.errors.push(TargetError::new(
                sysfs.root().join("block").display().to_string(),
                format!("cannot list disks: {e}"),
            ));
            vec![]
        })
    } else {
        devices
            .iter()
            .filter_map(|d| {
                disk_name(d, sysfs)
                    .map_err(|message| out.errors.push(TargetError::new(d, message)))
                    .ok()
            })
            .collect()
    };
    for n in names {
        match sysfs.disk(&n) {
            Ok(d) => out.disks.push(d),
            Err(e) => out.errors.push(TargetError::new(n, e.to_string())),
        }
    }
    out
}

/// Map a command-line device to a disk name in the sysfs tree.
fn disk_name(arg: &str, sysfs: &Sysfs) -> Result<String, String> {
    let path = Path::new(arg);
    if sysfs.is_live() {
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.is_dir() {
                return Err("a directory: topology takes a disk; probe takes a directory".into());
            }
            if meta.is_file() {
                return Err(
                    "a regular file: topology takes a disk; check and plan take an image file"
                        .into(),
                );
            }
            return sysfs.resolve_node(&meta).map(|(name, _)| name);
        }
    }
    let name = arg.strip_prefix("/dev/").unwrap_or(arg);
    if sysfs.has_disk(name) {
        Ok(name.to_string())
    } else {
        Err(format!(
            "no such disk under {}/block",
            sysfs.root().display()
        ))
    }
}
