//! A saved `topology` document (docs/json.md, `topology --json`).

use super::check::{Finding, Limits};
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct TopologyDoc {
    pub diskalign_version: String,
    /// Where and when the run was made (empty in older documents).
    pub host: String,
    pub started_at: String,
    pub disks: Vec<Disk>,
    pub errors: Vec<super::check::DocError>,
}

/// What the ioctls returned (null in the document when the node could not
/// be opened).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Ioctl {
    pub logical_block_size: u64,
    pub physical_block_size: u64,
    pub minimum_io_size: u64,
    pub optimal_io_size: u64,
    pub alignment_offset: i64,
    pub size_bytes: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Usb {
    pub vendor_id: String,
    pub product_id: String,
    pub driver: Option<String>,
    pub manufacturer: Option<String>,
    pub product: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Disk {
    pub name: String,
    pub device: String,
    pub size_bytes: u64,
    pub topology: Limits,
    pub ioctl: Option<Ioctl>,
    pub ioctl_error: Option<String>,
    pub rotational: Option<bool>,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub firmware: Option<String>,
    pub transport: Option<String>,
    pub usb: Option<Usb>,
    pub findings: Vec<Finding>,
}
