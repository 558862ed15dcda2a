//! The environment a result was measured in, recorded with every result:
//! results without it cannot be compared or trusted later.

use super::target::ProbeTarget;
use crate::iolimits::Topology;
use crate::sys;
use crate::sys::read_str;
use crate::topology::{Declared, Transport};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Filesystem {
    pub fs_type: String,
    pub mount_point: String,
    pub source: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Environment {
    pub diskalign_version: String,
    pub kernel: String,
    pub arch: String,
    pub cpu_model: Option<String>,
    pub cpus: usize,
    pub cpu_governor: Option<String>,
    /// `kernel.io_uring_disabled` (0 allowed, 1 restricted, 2 disabled).
    pub io_uring_disabled: Option<u8>,
    pub disk: Option<String>,
    pub partition: Option<u32>,
    pub model: Option<String>,
    pub firmware: Option<String>,
    pub transport: Option<Transport>,
    pub rotational: Option<bool>,
    /// The active I/O scheduler of the disk.
    pub scheduler: Option<String>,
    pub topology: Option<Topology>,
    /// BLKBSZGET of the device node: buffered I/O is split into pieces of this size.
    pub node_block_size: Option<u32>,
    /// For files: the filesystem they live on.
    pub filesystem: Option<Filesystem>,
    /// The USB bridge in front of the disk, `vendor_id:product_id product`
    /// (`152d:0578 JMS578`), as `topology` detects it.
    pub usb_bridge: Option<String>,
    /// A loop device's direct I/O (sysfs `loop/dio`): on, it reads and
    /// writes its backing file with O_DIRECT, bypassing the page cache,
    /// which changes its speed more than anything else about it.
    pub loop_direct_io: Option<bool>,
    /// A loop device's backing file (sysfs `loop/backing_file`).
    pub loop_backing_file: Option<String>,
    /// The filesystem type the backing file lives on (`ext4`, `tmpfs` ...).
    pub loop_backing_fs: Option<String>,
    /// What the disk itself declared (its identify data), as `topology`
    /// reads it; None for files, images and disks that did not answer.
    /// `device_says` in the JSON.
    #[serde(default, rename = "device_says")]
    pub declared: Option<Declared>,
    /// For files: where their offsets land on the host disk under their
    /// filesystem (an addition; `inspect`'s host placement, as `check`
    /// judges an image file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::inspect::Landing>,
}

fn read(path: &str) -> Option<String> {
    read_str(std::path::Path::new(path))
}

/// `[mq-deadline] none` → `mq-deadline`.
fn active_scheduler(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

fn filesystem_of(target: &ProbeTarget) -> Option<Filesystem> {
    let dev = target.file.metadata().ok()?.dev();
    sys::mount_of(dev).map(|m| Filesystem {
        fs_type: m.fs_type,
        mount_point: m.point,
        source: m.source,
    })
}

pub fn record(target: &ProbeTarget, sysfs_root: &std::path::Path) -> Environment {
    let kernel = crate::sys::running_kernel();
    let cpu_model = sys::cpu_model();
    let disk = target.disk.as_ref();
    let scheduler = disk.and_then(|d| {
        read(
            &sysfs_root
                .join("block")
                .join(&d.name)
                .join("queue/scheduler")
                .to_string_lossy(),
        )
        .and_then(|s| active_scheduler(&s))
    });
    let is_file = matches!(
        target.kind,
        super::target::TargetKind::File | super::target::TargetKind::ScratchFile
    );
    Environment {
        diskalign_version: env!("CARGO_PKG_VERSION").into(),
        kernel: kernel.release_version,
        arch: kernel.machine,
        cpu_model,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        io_uring_disabled: read("/proc/sys/kernel/io_uring_disabled").and_then(|s| s.parse().ok()),
        disk: disk.map(|d| d.name.clone()),
        partition: target.partition,
        model: disk.and_then(|d| d.model.clone()),
        firmware: disk.and_then(|d| d.firmware.clone()),
        transport: disk.map(|d| d.transport),
        rotational: disk.and_then(|d| d.rotational),
        scheduler,
        topology: disk.map(|d| d.topology),
        node_block_size: target.node_block_size,
        filesystem: if is_file { filesystem_of(target) } else { None },
        usb_bridge: disk.and_then(|d| d.usb.as_ref()).map(|u| u.name()),
        loop_direct_io: disk.and_then(|d| loop_dio(sysfs_root, &d.name)),
        loop_backing_file: disk.and_then(|d| d.backing_file.clone()),
        loop_backing_fs: disk
            .and_then(|d| d.backing_file.as_deref())
            .and_then(|f| sys::fs_type_of(std::path::Path::new(f))),
        declared: disk.and_then(|d| d.declared.clone()),
        host: if is_file {
            host_of(target, sysfs_root)
        } else {
            None
        },
    }
}

/// Where the probed file's offsets land on the host disk (the live
/// system only: a fixture tree's devices are not this machine's).
fn host_of(target: &ProbeTarget, sysfs_root: &std::path::Path) -> Option<crate::inspect::Landing> {
    let sysfs = crate::topology::Sysfs::new(sysfs_root);
    if !sysfs.is_live() {
        return None;
    }
    let name = std::path::Path::new("the probed file");
    Some(crate::inspect::place_open(&target.file, name, &sysfs, None).landing())
}

/// `loop/dio` of a loop device: `1` on, `0` off; None for other disks.
fn loop_dio(sysfs_root: &std::path::Path, disk: &str) -> Option<bool> {
    let path = sysfs_root.join("block").join(disk).join("loop/dio");
    match read(&path.to_string_lossy())?.as_str() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn scheduler() {
        assert_eq!(
            super::active_scheduler("none [mq-deadline] kyber\n").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(super::active_scheduler("none"), None);
    }

    #[test]
    fn bridge() {
        let mut b = crate::topology::UsbBridge {
            vendor_id: "152d".into(),
            product_id: "0578".into(),
            driver: Some("uas".into()),
            manufacturer: None,
            product: Some("JMS578".into()),
        };
        assert_eq!(b.name(), "152d:0578 JMS578");
        b.product = None;
        assert_eq!(b.name(), "152d:0578");
    }
}
