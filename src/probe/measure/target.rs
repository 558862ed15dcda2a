//! What to probe: a whole disk, a partition, an existing file, or a scratch
//! file created in a directory. The scratch file never has a name
//! (`O_TMPFILE`, or created and unlinked at once where the filesystem has
//! no `O_TMPFILE`), so the kernel frees it when its last descriptor closes:
//! on success, on error, after Ctrl-C, and after SIGKILL or a crash.

use super::grid::{Constraints, DioRule};
use super::{filled, safety};
use crate::sys::{self, Allocated, Mode};
use crate::topology::{Disk, Sysfs};
use crate::units::{human, MIB};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    Disk,
    Partition,
    File,
    ScratchFile,
}

crate::spelled_as_serde!(TargetKind);

/// How the target may be opened.
pub struct Access<'a> {
    pub write: bool,
    pub destructive: bool,
    pub force: bool,
    pub buffered: bool,
    /// Size of a scratch file created in a directory.
    pub scratch_size: u64,
    pub sysfs: &'a Sysfs,
    pub stop: &'a AtomicBool,
    /// Called with (bytes done, bytes total) while a scratch file is filled.
    pub on_fill: &'a dyn Fn(u64, u64),
}

pub struct ProbeTarget {
    pub kind: TargetKind,
    pub file: File,
    pub constraints: Constraints,
    /// BLKBSZGET of a device node: the size the page cache splits buffered I/O into.
    pub node_block_size: Option<u32>,
    /// The disk under the target, when sysfs knows it.
    pub disk: Option<Disk>,
    pub partition: Option<u32>,
}

fn constraints(file: &File, lbs: u32, pbs: u32, size: u64) -> Constraints {
    let (dio_offset_align, dio_rule) = match sys::dio_offset_align(file) {
        Some(a) => (a, DioRule::Statx),
        None => (lbs, DioRule::LogicalBlockSize),
    };
    Constraints {
        logical_block_size: lbs,
        physical_block_size: pbs,
        size_bytes: size,
        dio_offset_align,
        dio_rule,
    }
}

/// Open `path` for probing.
pub fn open(path: &Path, a: &Access) -> Result<ProbeTarget, String> {
    let meta = fs::metadata(path).map_err(|e| format!("cannot open: {e}"))?;
    let ft = meta.file_type();
    if ft.is_dir() {
        scratch(path, a)
    } else if ft.is_file() {
        existing_file(path, &meta, a)
    } else if ft.is_block_device() {
        device(path, &meta, a)
    } else {
        Err("not a block device, a regular file or a directory".into())
    }
}

fn device(path: &Path, meta: &fs::Metadata, a: &Access) -> Result<ProbeTarget, String> {
    let (name, partition) = a.sysfs.resolve_node(meta)?;
    let disk = a
        .sysfs
        .disk(&name)
        .map_err(|e| format!("reading sysfs for {name}: {e}"))?;
    let part_name = partition.and_then(|n| {
        disk.partitions
            .iter()
            .find(|p| p.number == n)
            .map(|p| p.name.clone())
    });
    if a.write {
        if let Some(why) = safety::zoned_refusal(path, &disk.zoned) {
            return Err(why);
        }
        if !a.destructive {
            return Err(format!(
                "writing to {} destroys the data on it: add --destructive to allow it (refused anyway while it is mounted, held or swap)",
                path.display()
            ));
        }
        let src = crate::sys::open_source(path).map_err(|e| e.to_string())?;
        let parts: Vec<String> = disk.partitions.iter().map(|p| p.name.clone()).collect();
        let nodes = safety::related_nodes(a.sysfs.root(), &name, &parts, part_name.as_deref());
        let verdict = safety::assess(a.sysfs.root(), &nodes, &src);
        if verdict.refused(a.force) {
            let mut why = verdict.in_use.clone();
            if !a.force {
                why.extend(verdict.signatures.iter().cloned());
            }
            return Err(format!(
                "refusing to write to {}: {}{}",
                path.display(),
                why.join("; "),
                if verdict.in_use.is_empty() {
                    " (add --force to overwrite it anyway)"
                } else {
                    " (never overridden: unmount, deactivate or swapoff first)"
                }
            ));
        }
    }
    let file = sys::open_device(path, mode(a)).map_err(|e| e.to_string())?;
    let v = sys::read_fd(&file)
        .map_err(|e| format!("block-device ioctls on {}: {e}", path.display()))?;
    let node_block_size = sys::device_block_size(&file).ok();
    let constraints = constraints(
        &file,
        v.logical_block_size,
        v.physical_block_size,
        v.size_bytes,
    );
    Ok(ProbeTarget {
        kind: if partition.is_some() {
            TargetKind::Partition
        } else {
            TargetKind::Disk
        },
        file,
        constraints,
        node_block_size,
        disk: Some(disk),
        partition,
    })
}

/// The disk holding a file's filesystem, for its topology and environment.
fn disk_of(meta: &fs::Metadata, sysfs: &Sysfs) -> (Option<Disk>, Option<u32>) {
    let dev = meta.dev();
    let (major, minor) = sys::major_minor(dev);
    let Some((name, part)) = sysfs.resolve_devnum(major, minor) else {
        return (None, None);
    };
    (sysfs.disk(&name).ok(), part)
}

fn file_limits(disk: &Option<Disk>) -> (u32, u32) {
    disk.as_ref()
        .map(|d| {
            (
                d.topology.logical_block_size,
                d.topology.physical_block_size,
            )
        })
        .unwrap_or((512, 4096))
}

fn existing_file(path: &Path, meta: &fs::Metadata, a: &Access) -> Result<ProbeTarget, String> {
    if a.write && !a.destructive {
        return Err(format!(
            "writing to {} destroys its contents: add --destructive, or give a directory to probe a scratch file there",
            path.display()
        ));
    }
    if a.write {
        refuse_signatures(path, a)?;
    }
    // Reads of a hole, of an unwritten extent or of data with no place on
    // the device yet are answered without the device.
    if let Some(why) = not_on_the_device(path, meta) {
        return Err(why);
    }
    let file = sys::open_file(path, mode(a)).map_err(|e| e.to_string())?;
    let (disk, partition) = disk_of(meta, a.sysfs);
    let (lbs, pbs) = file_limits(&disk);
    Ok(ProbeTarget {
        kind: TargetKind::File,
        constraints: constraints(&file, lbs, pbs, meta.len()),
        file,
        node_block_size: None,
        disk,
        partition,
    })
}

/// Why the reads of the file at `path` would not reach its device, in
/// one line; None when they would, or when it cannot be told (a
/// filesystem without FIEMAP is judged by st_blocks alone).
fn not_on_the_device(path: &Path, meta: &fs::Metadata) -> Option<String> {
    let map = File::open(path)
        .ok()
        .and_then(|f| sys::extents(&f, path, 0, meta.len(), filled::MAX_EXTENTS).ok());
    let allocated = meta.blocks().saturating_mul(512);
    filled::Shares::of(meta.len(), allocated, map.as_ref()).refusal(path)
}

/// A file that holds something (a disk image container, a partition
/// table, a filesystem) is written only with --force, as a device is.
fn refuse_signatures(path: &Path, a: &Access) -> Result<(), String> {
    let src = crate::sys::open_source(path).map_err(|e| e.to_string())?;
    let verdict = safety::assess(a.sysfs.root(), &[], &src);
    if verdict.refused(a.force) {
        return Err(format!(
            "refusing to write to {}: {} (add --force to overwrite it anyway)",
            path.display(),
            verdict.signatures.join("; ")
        ));
    }
    Ok(())
}

fn mode(a: &Access) -> Mode {
    Mode {
        write: a.write,
        buffered: a.buffered,
    }
}

fn scratch(dir: &Path, a: &Access) -> Result<ProbeTarget, String> {
    let size = a.scratch_size;
    if size < MIB || size % MIB != 0 {
        return Err(format!(
            "--size {}: give a whole number of MiB, at least 1 MiB",
            human(size)
        ));
    }
    room_for(dir, size)?;
    let file = sys::nameless(dir, a.buffered).map_err(|e| e.to_string())?;
    match sys::allocate(&file, size) {
        Allocated::Yes => {}
        Allocated::NoSpace => {
            return Err(format!(
                "no space for a {} scratch file in {}",
                human(size),
                dir.display()
            ))
        }
        Allocated::TooLarge => {
            return Err(format!(
                "--size {}: larger than the filesystem of {} allows for one file",
                human(size),
                dir.display()
            ))
        }
        // No fallocate here (EOPNOTSUPP): room_for checked the space, and
        // fill writes every byte anyway.
        Allocated::Unsupported => {}
    }
    fill(&file, size, a)
        .map_err(|e| format!("writing the scratch file in {}: {e}", dir.display()))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let (disk, partition) = disk_of(&meta, a.sysfs);
    let (lbs, pbs) = file_limits(&disk);
    Ok(ProbeTarget {
        kind: TargetKind::ScratchFile,
        constraints: constraints(&file, lbs, pbs, size),
        file,
        node_block_size: None,
        disk,
        partition,
    })
}

/// The share of a filesystem a scratch file leaves free for everyone else.
const KEEP_FREE_PERCENT: u64 = 1;

/// Refuses a scratch file the filesystem or the process limits cannot
/// hold, before anything is written: the free space (less 1 % of the
/// filesystem, left for everyone else) and RLIMIT_FSIZE, whose SIGXFSZ
/// would kill the probe mid-write.
fn room_for(dir: &Path, size: u64) -> Result<(), String> {
    let room = sys::room(dir).map_err(|e| e.to_string())?;
    let free = room.available;
    let keep = room.total / 100 * KEEP_FREE_PERCENT;
    if size > free.saturating_sub(keep) {
        return Err(format!(
            "--size {}: the filesystem of {} has {} free, and a probe leaves {KEEP_FREE_PERCENT} % of it ({}) for others; give a smaller --size",
            human(size),
            dir.display(),
            human(free),
            human(keep)
        ));
    }
    if let Some(limit) = sys::size_limit().filter(|&l| size > l) {
        return Err(format!(
            "--size {}: above this process's file size limit of {} (ulimit -f)",
            human(size),
            human(limit)
        ));
    }
    Ok(())
}

/// Write real data over the whole scratch file: reads of unwritten
/// (fallocated) extents never reach the device and would measure nothing.
fn fill(file: &File, size: u64, a: &Access) -> io::Result<()> {
    let mut buf = super::engine::AlignedBuf::new(MIB as usize, true);
    let mut at = 0;
    while at < size {
        if a.stop.load(Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        let chunk = &mut buf.as_mut_slice()[..(size - at).min(MIB) as usize];
        // Make each MiB different, so no layer can deduplicate them.
        chunk[..8].copy_from_slice(&at.to_le_bytes());
        file.write_all_at(chunk, at)?;
        at += chunk.len() as u64;
        (a.on_fill)(at, size);
    }
    file.sync_data()
}

/// The limits of a scratch file that would be created in `dir`, without
/// creating it (for `--emit-fio`).
pub fn scratch_constraints(dir: &Path, a: &Access) -> Result<Constraints, String> {
    let meta = fs::metadata(dir).map_err(|e| format!("cannot open: {e}"))?;
    let (disk, _) = disk_of(&meta, a.sysfs);
    let (lbs, pbs) = file_limits(&disk);
    let file = File::open(dir).map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
    Ok(constraints(&file, lbs, pbs, a.scratch_size))
}
