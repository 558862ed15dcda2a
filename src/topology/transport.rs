//! How a disk is attached, from its name and its canonical sysfs path.

use crate::sys::read_str;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::Path;

/// Read back, a transport this diskalign does not know (a newer one's) is
/// `unknown`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    Nvme,
    Sata,
    Scsi,
    UsbUas,
    UsbStorage,
    Usb,
    Virtio,
    Mmc,
    Loop,
    Dm,
    Md,
    Zram,
    Nbd,
    Xen,
    #[default]
    #[serde(other)]
    Unknown,
}

crate::spelled_as_serde!(Transport);

/// The USB bridge in front of a disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UsbBridge {
    pub vendor_id: String,
    pub product_id: String,
    /// `uas` or `usb-storage`.
    pub driver: Option<String>,
    pub manufacturer: Option<String>,
    pub product: Option<String>,
}

impl UsbBridge {
    /// `152d:0578 JMS578`: the IDs and the product, when it names itself.
    pub fn name(&self) -> String {
        let id = format!("{}:{}", self.vendor_id, self.product_id);
        match &self.product {
            Some(p) => format!("{id} {p}"),
            None => id,
        }
    }
}

fn read(path: &Path) -> Option<String> {
    read_str(path)
}

/// Find the USB device (idVendor/idProduct) and the interface driver among
/// the ancestors of a block device's sysfs directory.
fn usb_bridge(devpath: &Path) -> Option<UsbBridge> {
    let mut driver = None;
    for dir in devpath.ancestors() {
        if driver.is_none() {
            if let Ok(target) = fs::read_link(dir.join("driver")) {
                let name = target.file_name().map(|n| n.to_string_lossy().into_owned());
                if matches!(name.as_deref(), Some("uas") | Some("usb-storage")) {
                    driver = name;
                }
            }
        }
        if let (Some(vendor_id), Some(product_id)) =
            (read(&dir.join("idVendor")), read(&dir.join("idProduct")))
        {
            return Some(UsbBridge {
                vendor_id,
                product_id,
                driver,
                manufacturer: read(&dir.join("manufacturer")),
                product: read(&dir.join("product")),
            });
        }
    }
    None
}

/// Decide the transport of disk `name` whose sysfs directory resolves to `devpath`.
pub fn detect(name: &str, devpath: &Path) -> (Transport, Option<UsbBridge>) {
    let by_name = [
        ("loop", Transport::Loop),
        ("dm-", Transport::Dm),
        ("md", Transport::Md),
        ("zram", Transport::Zram),
        ("nbd", Transport::Nbd),
        ("nvme", Transport::Nvme),
        ("mmcblk", Transport::Mmc),
        ("xvd", Transport::Xen),
    ];
    if let Some((_, t)) = by_name.iter().find(|(p, _)| name.starts_with(p)) {
        return (*t, None);
    }
    let path = devpath.to_string_lossy();
    let has = |component: &str| {
        devpath
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with(component))
    };
    if has("usb") {
        let bridge = usb_bridge(devpath);
        let t = match bridge.as_ref().and_then(|b| b.driver.as_deref()) {
            Some("uas") => Transport::UsbUas,
            Some("usb-storage") => Transport::UsbStorage,
            _ => Transport::Usb,
        };
        return (t, bridge);
    }
    let t = if path.contains("/nvme") {
        Transport::Nvme
    } else if has("ata") {
        Transport::Sata
    } else if has("host") || has("target") {
        // The SCSI midlayer, also behind virtio-scsi: an sd disk, with
        // the sd driver's rules for the limits it reports.
        Transport::Scsi
    } else if has("virtio") {
        Transport::Virtio
    } else if has("mmc") {
        Transport::Mmc
    } else {
        Transport::Unknown
    };
    (t, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_path() {
        let p = Path::new(
            "/sys/devices/pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/sda",
        );
        assert_eq!(detect("sda", p).0, Transport::Sata);
        let p = Path::new("/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda");
        assert_eq!(detect("vda", p).0, Transport::Virtio);
        let p = Path::new(
            "/sys/devices/pci0000:00/0000:00:03.0/virtio2/host0/target0:0:0/0:0:0:0/block/sda",
        );
        assert_eq!(detect("sda", p).0, Transport::Scsi);
        let p = Path::new("/sys/devices/pci0000:00/0000:00:1d.0/0000:3b:00.0/nvme/nvme0/nvme0n1");
        assert_eq!(detect("nvme0n1", p).0, Transport::Nvme);
        assert_eq!(
            detect("loop3", Path::new("/sys/devices/virtual/block/loop3")).0,
            Transport::Loop
        );
        assert_eq!(
            detect("md127", Path::new("/sys/devices/virtual/block/md127")).0,
            Transport::Md
        );
    }
}
