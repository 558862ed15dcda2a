//! Reading ahead. A check of many disks spends as long waiting for each
//! disk's few O_DIRECT reads as it does working: one thread, one read at
//! a time. [`THREADS`] more threads open each disk named a few targets
//! ahead of the one being judged and walk it as the main thread will (its
//! table, then each data partition's layers), only to bring the blocks
//! those walks read into the disk's [`BlockCache`]. A disk's reads are
//! made in two submissions of reads in flight together: its table's two
//! ends, then every region's first block and each format's peeks beyond
//! it (`stack::first_reads`); the walk then finds them kept. The main
//! thread then takes the cache over with its device and finds them there.
//! What the main thread asks beyond them (an LV followed through a volume
//! group, a different sector size given by `--topology`) it reads itself.
//! Nothing found ahead is used but the bytes: every layer is still made
//! by the main thread's own walk, from the same bytes of the same device.

use super::resolve::{self, ResolveError, Resolved};
use super::ReadFor;
use crate::bytes::{BlockCache, SharedReader};
use crate::iolimits::Topology;
use crate::layout::{self, PartKind};
use crate::stack::{self, Pending, Region};
use crate::sys::{Cost, FileSource};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::mpsc::{Receiver, SyncSender};

/// How many disks each reading thread may be ahead: enough to hide a
/// disk's reads behind the main thread's work on the one before, few
/// enough that the blocks held (about 2 MiB a disk) stay small.
pub const AHEAD: usize = 4;

/// One target read ahead: what its path is (its disk's sysfs read), its
/// device with the blocks read, and what reading them cost (in the
/// reading thread).
pub struct Read {
    pub path: PathBuf,
    pub resolved: Result<Resolved, ResolveError>,
    pub source: Option<BlockCache<FileSource>>,
    pub cost: Cost,
}

/// The threads reading ahead, each its own share of the targets (every
/// [`THREADS`]th): one thread waits for one read at a time, while disks
/// take reads side by side. Measured on 300 loop disks of 2 CPUs
/// (bench/check-scale's layout, `check` of all): 1 thread 0.40-0.46 s,
/// 2 0.28-0.29 s, 3 0.27-0.28 s, 4 0.27-0.30 s, 6 0.28-0.31 s.
pub const THREADS: usize = 3;

/// The reading threads' answers, one channel each, taken in the order of
/// the targets.
pub struct Ahead {
    rx: Vec<Receiver<Read>>,
    next: usize,
}

/// Start reading `paths` ahead in `scope`.
pub fn spawn<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    paths: &'s [PathBuf],
    command: ReadFor,
) -> Ahead {
    let rx = (0..THREADS.min(paths.len()))
        .map(|k| {
            let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
            let share = paths.iter().skip(k).step_by(THREADS);
            scope.spawn(move || read_all(share, command, tx));
            rx
        })
        .collect();
    Ahead { rx, next: 0 }
}

impl Ahead {
    /// The next target's read, when it is the one at `path`.
    pub fn take(&mut self, path: &Path) -> Option<Read> {
        let n = self.rx.len();
        let rx = self.rx.get(self.next % n.max(1))?;
        self.next += 1;
        rx.recv().ok().filter(|r| r.path == path)
    }
}

/// Read `paths` ahead in order, one [`Read`] each, until the receiver
/// is gone.
fn read_all<'p>(paths: impl Iterator<Item = &'p PathBuf>, command: ReadFor, tx: SyncSender<Read>) {
    for p in paths {
        let before = Cost::here();
        let resolved = resolve::resolve(p, &crate::sys::Sysfs::default(), command);
        let source = match &resolved {
            Ok(Resolved::Live { only: None, .. }) => read_one(p),
            _ => None,
        };
        let read = Read {
            path: p.clone(),
            resolved,
            source,
            cost: Cost::here().since(before),
        };
        if tx.send(read).is_err() {
            return;
        }
    }
}

/// A whole disk's node opened and walked (an image file is read through
/// the page cache, and soon enough; a partition target is read through
/// its disk's node).
fn read_one(path: &Path) -> Option<BlockCache<FileSource>> {
    let source = Rc::new(BlockCache::new(crate::sys::open_source(path).ok()?));
    walk(&source);
    Rc::try_unwrap(source).ok()
}

/// Read the table and walk each data partition (or the whole device) as
/// `roots::stack` does, keeping nothing but the blocks.
fn walk(source: &Rc<BlockCache<FileSource>>) {
    let src: SharedReader = source.clone();
    let lbs = crate::sys::logical_block_size(&source.inner().file).unwrap_or(512);
    // The table's places, read together: its primary header and entries,
    // its backup header and entries (16 KiB and more before the last
    // sector: 64 KiB covers them wherever the disk's last block ends).
    let len = src.len();
    let tail = 64u64 << 10;
    source.prefetch(
        &[
            (0, 4096.min(len)),
            (len.saturating_sub(tail), tail.min(len)),
        ],
        &[],
    );
    let Ok(table) = layout::read_table(&*src, u64::from(lbs), true) else {
        return;
    };
    let ss = table.sector_size;
    let mut regions: Vec<(u64, u64)> = table
        .partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended && p.last_lba >= p.first_lba)
        .filter_map(|p| {
            let start = p.first_lba.checked_mul(ss)?;
            let len = (p.last_lba - p.first_lba + 1).checked_mul(ss)?;
            (start.checked_add(len)? <= src.len()).then_some((start, len))
        })
        .collect();
    if table.partitions.is_empty() {
        regions.push((0, src.len()));
    }
    // What every region's walk reads first, all in flight together (one
    // io_uring submission): each region's first block and the few bytes
    // each format looks at beyond it, so the walks below find them kept.
    let (mut blocks, mut pages) = (Vec::new(), Vec::new());
    for &(offset, len) in &regions {
        let first = stack::first_reads(len);
        let on_disk = |(at, n): (u64, u64)| (offset + at, n);
        blocks.extend(first.blocks.into_iter().map(on_disk));
        pages.extend(first.pages.into_iter().map(on_disk));
    }
    source.prefetch(&blocks, &pages);
    let mut pending = Pending::default();
    for (offset, len) in regions {
        let r = Region {
            src: src.clone(),
            device: String::new(),
            offset,
            len,
            below: Topology::plain(lbs),
        };
        stack::walk_region(&r, &mut pending);
    }
}
