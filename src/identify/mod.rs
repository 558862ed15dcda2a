//! What a device says about itself: pure parsers of the identify data
//! `sys::passthrough` fetches (NVMe Identify Namespace, SCSI VPD pages and
//! READ CAPACITY(16), ATA IDENTIFY DEVICE). They take bytes, never panic,
//! bound every count by the buffer, and their errors name the layer and
//! the byte (`bytes::ParseError`). `topology` sets the values beside the
//! kernel's limits.

mod ata;
mod nvme;
mod scsi;

/// ATA IDENTIFY DEVICE.
pub use ata::{parse_ata, Identify};
/// NVMe Identify Namespace and its LBA formats.
pub use nvme::{parse_nvme, LbaFormat, Namespace, RelativePerformance};
/// SCSI: the Block Limits and Device Identification VPD pages, READ CAPACITY(16).
pub use scsi::{block_limits, naa_wwn, read_capacity16, ScsiSays};
