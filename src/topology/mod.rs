//! What the kernel (or a `--topology` override) says about a disk: I/O limits
//! from sysfs and from ioctls, transport, identity, and sanity hints.

mod declared;
mod devices;
mod dm;
mod flash;
mod hints;
mod multipath;
mod overrides;
mod survey;
mod transport;

/// What a device declares about itself, read through `identify`.
pub use declared::{read_declared, Answers, Declared, DeclaredLimit, IdentifyProtocol, Limit};
/// A block device and the devices below it down to its disks, with
/// their offsets there (`watch`'s devices, an image file's host).
pub use devices::{
    of_number, resolve as resolve_devices, DeviceLayer, GrainFrom, Resolved, Watched,
};
#[cfg(test)]
pub(crate) use devices::{test_device, watched_ao};
/// What a dm device is (a volume, an LVM-internal device, multipath).
pub use dm::{dm_role, DmRole};
/// An SD card's or eMMC's own words (type, CID, erase sizes).
pub use flash::{sd_table_row, CardKind, FlashCard, SdTableRow};
/// The hints the limits give (a misaligned marker, a USB bridge's value).
pub use hints::{hints, limit_hints, stacked_offset_why};
/// A multipath map's paths, and the map a path device belongs to.
pub use multipath::{paths_of_maps as multipath_paths, MultipathMap};
/// `--topology`: limits given by hand for an image.
pub use overrides::TopologyOverride;
/// `diskalign topology`: every disk and its limits.
pub use survey::{survey, Survey, TopologyDocument};
/// How a disk is attached (a USB bridge among them).
pub use transport::{Transport, UsbBridge};

/// The zone model and zones of `iolimits`, with the limits they belong to.
pub use crate::iolimits::{is_misaligned_marker, ZoneModel, Zones};
/// What sysfs and the ioctls give, that a `Disk` holds.
pub use crate::sys::{DmIds, IoctlValues, KernelPartition, Sysfs};

use crate::findings::Finding;
use crate::iolimits::Topology;
use crate::sys::{self, AttrDir};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::Path;
use std::path::PathBuf;

/// Everything known about one whole disk; one of the topology document's
/// `disks`, written and read back (a key an older document lacks takes
/// its default).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Disk {
    pub name: String,
    pub device: PathBuf,
    pub size_bytes: u64,
    pub topology: Topology,
    /// The zone model, zone size, number of zones and conventional zones
    /// (`zoned` in the JSON); model `none` and zeros on a regular disk.
    pub zoned: Zones,
    /// The ioctl view, when the device node could be opened read-only.
    pub ioctl: Option<IoctlValues>,
    /// Why the ioctl view is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ioctl_error: Option<String>,
    pub rotational: Option<bool>,
    pub removable: Option<bool>,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub serial: Option<String>,
    /// The kernel's world-wide identifier: sysfs `wwid` (SCSI's VPD page
    /// 0x83 designator as drivers/scsi/scsi_sysfs.c `sdev_show_wwid`
    /// prints it, NVMe's EUI-64/NGUID/UUID from
    /// drivers/nvme/host/core.c `wwid_show`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wwn: Option<String>,
    pub firmware: Option<String>,
    pub transport: Transport,
    pub usb: Option<UsbBridge>,
    /// An SD card's or eMMC's type, CID fields and erase sizes (sysfs
    /// `device/` of an mmcblk disk); absent for any other disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flash: Option<FlashCard>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
    /// A device-mapper device's own names (sysfs `dm/name`, `dm/uuid`);
    /// absent for any other disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dm: Option<DmIds>,
    pub slaves: Vec<String>,
    pub holders: Vec<String>,
    pub partitions: Vec<KernelPartition>,
    /// A multipath map's paths: its `slaves/` (kernel names); absent for
    /// any other disk.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The multipath map this disk is one path of (found among its
    /// `holders/`); absent for any other disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_of: Option<MultipathMap>,
    /// Suspicious hints and sysfs/ioctl disagreements.
    pub findings: Vec<Finding>,
    /// What the device itself says (its identify data) beside the
    /// kernel's limits; None when nothing was read. `device_says` in the
    /// JSON.
    #[serde(rename = "device_says")]
    pub declared: Option<Declared>,
    /// Why `declared` is None, in one line (`device_says_note`).
    #[serde(rename = "device_says_note", skip_serializing_if = "Option::is_none")]
    pub declared_note: Option<String>,
}

impl Disk {
    /// What this disk is to device-mapper; None when it is no dm device.
    pub fn dm_role(&self) -> Option<dm::DmRole> {
        self.dm.as_ref().map(dm::dm_role)
    }

    /// Whether people partition this disk: every disk but a dm device
    /// other than a multipath map. The kernel reads no table on a dm
    /// device (drivers/md/dm.c `alloc_dev`: one minor, GENHD_FL_NO_PART); an LV or a
    /// dm-crypt mapping holds a filesystem or another layer, and a
    /// multipath map is a disk, partitioned through kpartx.
    pub fn partitionable(&self) -> bool {
        matches!(self.dm_role(), None | Some(dm::DmRole::Multipath))
    }
}

/// The unit serial number from a raw SCSI VPD page 0x80 (`device/vpd_pg80`):
/// a 4-byte header whose bytes 2..4 give the length, then ASCII.
fn vpd_serial(path: &Path) -> Option<String> {
    let raw = sys::read_attr(path)?;
    let len = usize::from(u16::from_be_bytes([*raw.get(2)?, *raw.get(3)?]));
    let body = raw.get(4..)?;
    let body = &body[..len.min(body.len())];
    let s = String::from_utf8_lossy(body);
    let s = s.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    (!s.is_empty()).then(|| s.to_string())
}

impl Sysfs {
    /// A disk's zones from sysfs, with its conventional zones counted
    /// through BLKREPORTZONE on `/dev/NAME` when this is the live sysfs
    /// and the disk is zoned (why not, in `conventional_zones_error`).
    fn zoned(&self, at: &AttrDir, name: &str, size_bytes: u64) -> io::Result<Zones> {
        let mut zones = sys::zones_in(at)?;
        if !zones.is_zoned() {
            return Ok(zones);
        }
        let device = PathBuf::from("/dev").join(name);
        if !self.is_live() {
            zones.conventional_zones_error = Some(format!(
                "not opened: sysfs root is {}",
                self.root().display()
            ));
            return Ok(zones);
        }
        // The walk is bounded by the zones sysfs counts, or where
        // nr_zones is missing (before 5.1) by the zones that fit.
        let max = if zones.zones > 0 {
            zones.zones
        } else {
            size_bytes.div_ceil(zones.zone_size_bytes)
        };
        match sys::open_read_only(&device)
            .and_then(|fd| sys::conventional_zones(fd, size_bytes / 512, max))
        {
            Ok(n) => zones.conventional_zones = Some(n),
            Err(e) => {
                zones.conventional_zones_error =
                    Some(format!("{}: BLKREPORTZONE: {e}", device.display()))
            }
        }
        Ok(zones)
    }

    /// Everything about one whole disk; opens `/dev/NAME` read-only for the
    /// ioctl view when this is the live sysfs.
    pub fn disk(&self, name: &str) -> io::Result<Disk> {
        let dir = self.block_dir(name);
        let at = AttrDir::open(dir.clone());
        let Some(sectors) = at.num::<u64>("size") else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name} is not a whole disk under {}", self.root().display()),
            ));
        };
        let size_bytes = sectors.saturating_mul(512);
        let mut topology = sys::topology_in(&at)?;
        let zoned = self.zoned(&at, name, size_bytes)?;
        let device = PathBuf::from("/dev").join(name);
        let dev = dir.join("device");
        // The disk's directory listed once says which of its optional
        // attributes and directories are there: none missing is opened.
        let entries = at.entries(".");
        let listed = |n: &str| entries.iter().any(|(e, _)| e == n);
        let str_if = |n: &str| {
            listed(n.split('/').next().unwrap_or(n))
                .then(|| at.str(n))
                .flatten()
        };
        // A virtual disk (loop, dm, md, zram) has no `device/`: none of
        // its attributes is asked for then.
        let has_dev = listed("device") && at.is_dir("device");
        let dev_str = |attr: &str| has_dev.then(|| at.str(&format!("device/{attr}"))).flatten();
        let flash = has_dev
            .then(|| flash::read_card(&dev, size_bytes))
            .flatten();
        if let Some(f) = &flash {
            // An SD card is removable flash whatever sysfs `removable`
            // says (a card in a built-in slot reads 0); an eMMC is not.
            topology.erase_unit_bytes = f.preferred_erase_bytes;
            topology.removable_flash = f.kind != CardKind::Mmc;
            topology.sd_boundary_unit_bytes = f.sd_table.map_or(0, |r| r.boundary_unit_bytes);
        }
        let (ioctl, ioctl_error) = if self.is_live() {
            match sys::read_path(&device) {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(format!("{}: {e}", device.display()))),
            }
        } else {
            (
                None,
                Some(format!(
                    "not opened: sysfs root is {}",
                    self.root().display()
                )),
            )
        };
        let canonical = sys::link_target(&dir)
            .or_else(|| fs::canonicalize(&dir).ok())
            .unwrap_or(dir.clone());
        let (transport, usb) = transport::detect(name, &canonical);
        let (declared, declared_note) =
            match declared::ask(&dir, &device, transport, self.is_live())
                .and_then(|answers| declared::read_declared(&answers, &topology))
            {
                Ok(says) => (Some(says), None),
                Err(note) => (None, Some(note)),
            };
        let slaves = at.list("slaves");
        let dev_wwid = dev_str("wwid");
        let holders = at.list("holders");
        let dm = listed("dm").then(|| sys::dm_ids_in(&at)).flatten();
        let paths = multipath::paths_of(dm.as_ref().map(dm::dm_role), &slaves);
        // multipathd maps whole disks, never a dm device: a dm device's
        // holders (an LV's, a table's) are not asked their names here.
        let path_of = dm
            .is_none()
            .then(|| multipath::map_among(self, &holders))
            .flatten();
        let mut disk = Disk {
            name: name.to_string(),
            device,
            size_bytes,
            topology,
            zoned,
            ioctl,
            ioctl_error,
            rotational: at.num::<u8>("queue/rotational").map(|v| v != 0),
            removable: at.num::<u8>("removable").map(|v| v != 0),
            model: dev_str("model").or_else(|| str_if("md/level")),
            vendor: dev_str("vendor"),
            serial: dev_str("serial")
                .or_else(|| str_if("serial"))
                .or_else(|| has_dev.then(|| vpd_serial(&dev.join("vpd_pg80"))).flatten())
                .or_else(|| dev_wwid.clone()),
            wwn: str_if("wwid").or(dev_wwid),
            firmware: dev_str("firmware_rev").or_else(|| dev_str("rev")),
            transport,
            usb,
            flash,
            backing_file: str_if("loop/backing_file"),
            dm,
            slaves,
            holders,
            partitions: sys::partitions_from(&at, &entries, name),
            paths,
            path_of,
            findings: Vec::new(),
            declared,
            declared_note,
        };
        disk.findings = hints(&disk);
        Ok(disk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn vpd_page_80_serial() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("vpd_pg80");
        fs::write(&p, b"\x00\x80\x00\x05  usb\x00trailing").unwrap();
        assert_eq!(vpd_serial(&p).as_deref(), Some("usb"));
        fs::write(&p, b"\x00\x80").unwrap();
        assert_eq!(vpd_serial(&p), None);
        fs::write(&p, b"\x00\x80\x00\x40abc").unwrap();
        assert_eq!(vpd_serial(&p).as_deref(), Some("abc"));
    }
}
