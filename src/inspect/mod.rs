//! The whole picture, read before any rule runs: each target resolved
//! (live disk, partition, image) with its topology, its partition table,
//! the layers found inside each partition and the live kernel's holders
//! above them, then the md arrays and volume groups assembled across the
//! targets. `check` judges the result without further I/O.

mod ahead;
mod host;
mod kernel_view;
mod resolve;
mod roots;

use crate::bytes::BlockCache;
use crate::bytes::SharedReader;
use crate::errors::TargetError;
use crate::findings::{Code, Finding};
use crate::image::{self, Container, ContainerFormat};
use crate::iolimits::Topology;
use crate::layout::{self, Table};
use crate::stack;
use crate::stack::Layer;
use crate::stack::Pending;
use crate::sys::{Cost, FileSource};
use crate::topology::{self, Disk, Sysfs, TopologyOverride};
/// Where an image file lies on the host disk under it.
pub use host::{
    host_grain, judged, not_device_offsets, place_open, Host, HostExtent, HostGrainFrom, HostUnit,
    Landing,
};
use resolve::Resolved;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What to read and with which topology.
#[derive(Clone, Debug, Default)]
pub struct InspectOptions {
    pub sysfs: Sysfs,
    /// A what-if topology, applied over the detected one.
    pub topology: Option<TopologyOverride>,
    /// Units `probe` measured (saved runs given with `--probe`).
    pub measured: Vec<Measured>,
    /// The command reading: named where a target is not what it takes.
    pub command: ReadFor,
    /// `check --host-grain`: the grain an image file's host disk is
    /// judged against, in place of its own.
    pub host_grain: Option<u64>,
}

/// The command that reads the targets (`check` or `plan`), for the line
/// that refuses one it does not take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadFor {
    #[default]
    Check,
    Plan,
}

impl ReadFor {
    /// "check takes a device or an image file".
    pub fn takes(self) -> &'static str {
        match self {
            ReadFor::Check => "check takes a device or an image file",
            ReadFor::Plan => "plan takes a disk or an image file",
        }
    }
}

/// A unit a saved `probe` run bracketed on a device: evidence beside
/// what the kernel reports and what the disk declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    /// The path the probe measured, as its run names it.
    pub path: PathBuf,
    /// Its disk's name (`sdb`), when the run recorded it.
    pub disk: Option<String>,
    /// The unit the probe bracketed, in bytes.
    pub unit_bytes: u64,
    /// The saved run it was read from, as given.
    pub file: String,
    /// A flash allocation unit (`probe --erase-unit`), not the internal
    /// unit of the probe's grid.
    pub erase: bool,
}

impl Measured {
    /// The unit measured on `t`'s device: the same path (the same file
    /// or node, however named), or the same disk (a probe of one of its
    /// partitions measured the disk).
    fn of<'m>(t: &Target, all: &'m [Measured]) -> Option<&'m Measured> {
        Measured::on(&t.path, t.disk.as_ref(), all, false)
    }

    /// The measured unit of the kind asked (`erase`) on the device at
    /// `path` (of `disk`).
    fn on<'m>(
        path: &Path,
        disk: Option<&Disk>,
        all: &'m [Measured],
        erase: bool,
    ) -> Option<&'m Measured> {
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        let disk = disk.map(|d| d.name.as_str());
        all.iter()
            .filter(|m| m.erase == erase)
            .find(|m| same(&m.path, path) || (disk.is_some() && m.disk.as_deref() == disk))
    }
}

/// A measured allocation unit (`check --probe` of a `probe --erase-unit`
/// run) as the grain of the erase-unit rules where the kernel declares
/// none (a card behind a USB reader, a stick), and the note that says so
/// or sets it beside the kernel's.
fn measured_erase_unit(t: &mut Target, all: &[Measured]) {
    let Some(m) = Measured::on(&t.path, t.disk.as_ref(), all, true) else {
        return;
    };
    t.measured_erase = Some(m.clone());
    let declared = t.topology.erase_unit_bytes;
    if declared == 0 {
        t.topology.erase_unit_bytes = m.unit_bytes;
        t.topology.removable_flash = true;
    }
    t.notes.push(Finding::of(
        Code::EraseUnitMeasured,
        crate::findings::Facts {
            grain_bytes: Some(m.unit_bytes),
            measured_by: Some(m.file.clone()),
            kernel_value: (declared > 0).then_some(declared as i64),
            ..Default::default()
        },
    ));
}

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    Disk,
    Partition,
    #[default]
    Image,
}

crate::spelled_as_serde!(TargetKind);

/// Where the topology came from.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologySource {
    Kernel,
    #[default]
    ImageDefault,
    Override,
    /// The sector sizes an image container declares for its guest (VHDX).
    Container,
}

crate::spelled_as_serde!(TopologySource);

/// A root of a target's stack: a data partition (with its number) or the
/// whole device.
#[derive(Clone, Debug)]
pub struct Root {
    pub partition: Option<u32>,
    pub layer: Layer,
    /// Where nothing was recognised in it and its first MiB is zero (an
    /// empty partition): how many of its last bytes (up to
    /// [`roots::TAIL_READ`]) are zero too, so the plan can bring its end
    /// down to 4 KiB without cutting off data it does not know. 0
    /// otherwise, and unread (0) unless the read is `plan`'s.
    pub zero_tail_bytes: u64,
}

/// One target as read.
#[derive(Clone, Debug)]
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// The whole disk (live targets).
    pub disk: Option<Disk>,
    /// The partition asked for, when the target is one.
    pub only: Option<u32>,
    pub size: u64,
    /// The image container the guest disk was read through (None for a
    /// live device and a raw image).
    pub container: Option<Container>,
    pub topology: Topology,
    pub source: TopologySource,
    pub table: Table,
    /// BLKBSZGET of each registered partition's node, by partition number
    /// (live disks with the real sysfs only).
    pub node_block_sizes: Vec<(u32, u32)>,
    /// What reading noticed: an image judged as the 4Kn disk its table was
    /// made for.
    pub notes: Vec<Finding>,
    /// One root per data partition (or the whole device without a table),
    /// with the layers found inside and the kernel's holders above.
    pub stack: Vec<Root>,
    /// The unit a saved probe run measured on this device (`--probe`).
    pub measured: Option<Measured>,
    /// The allocation unit a saved `probe --erase-unit` run measured on
    /// it (`--probe`): the erase-unit grain where the kernel declares none.
    pub measured_erase: Option<Measured>,
    /// Where an image file lies on the host disk under it (live system
    /// only); None for a device.
    pub host: Option<Host>,
}

impl Target {
    /// The table's valid partitions (end after start, within u64 bytes),
    /// restricted to the one asked for.
    pub fn partitions(&self) -> impl Iterator<Item = &layout::Partition> {
        let ss = self.table.sector_size;
        self.table.partitions.iter().filter(move |p| {
            p.last_lba >= p.first_lba
                && p.last_lba
                    .checked_add(1)
                    .and_then(|e| e.checked_mul(ss))
                    .is_some()
                && self.only.is_none_or(|n| n == p.number)
        })
    }

    /// The device the stack's layers name: the whole disk, also for a
    /// partition target, since their offsets are on the whole disk.
    pub fn layer_device(&self) -> String {
        self.disk
            .as_ref()
            .map_or(self.path.clone(), |d| d.device.clone())
            .display()
            .to_string()
    }

    /// Whether people partition this target: a whole disk (but a dm
    /// device other than a multipath map, [`Disk::partitionable`]) or an
    /// image; never a partition.
    pub fn partitionable(&self) -> bool {
        match self.kind {
            TargetKind::Partition => false,
            TargetKind::Image => true,
            TargetKind::Disk => self.disk.as_ref().is_none_or(Disk::partitionable),
        }
    }

    /// The kernel's BLKBSZGET for partition `number`, when read.
    pub fn node_block_size(&self, number: u32) -> Option<u32> {
        self.node_block_sizes
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, b)| *b)
    }
}

/// Everything read for one run.
#[derive(Clone, Debug, Default)]
pub struct Inspection {
    pub targets: Vec<Target>,
    /// md arrays and volume groups put together from the targets.
    pub assembled: Vec<Layer>,
    pub errors: Vec<TargetError>,
    /// What reading each target asked for cost (in the order asked,
    /// those that failed too), and the whole read with the listing of
    /// disks and the assembly.
    pub costs: Vec<(String, Cost)>,
    pub total: Cost,
}

/// Why a target could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error(transparent)]
    Resolve(#[from] resolve::ResolveError),
    #[error(transparent)]
    Open(#[from] crate::sys::OpenError),
    #[error(transparent)]
    Limits(#[from] crate::iolimits::LimitError),
    #[error(transparent)]
    Table(#[from] crate::bytes::ParseError),
    /// An image container that cannot be read, in one line.
    #[error("{0}")]
    Image(String),
    #[error("partition {0} is not in the partition table on disk")]
    NoSuchPartition(u32),
    /// A file (or a container's guest disk) of fewer bytes than two
    /// sectors: no disk has a table, or anything else, in that.
    #[error("{what} {bytes} bytes, smaller than two 512-byte sectors: not a disk image")]
    TooSmall { what: String, bytes: u64 },
}

/// The fewest bytes a disk image has: two 512-byte sectors (an MBR and
/// one sector to partition, or a GPT's protective MBR and header).
pub const MIN_IMAGE_BYTES: u64 = 1024;

/// Read every target, then assemble what spans them.
pub fn inspect(paths: &[PathBuf], opts: &InspectOptions) -> Inspection {
    // Only the live system's nodes are opened, so only they are read
    // ahead (`ahead.rs`); with one target there is nothing to overlap.
    if !opts.sysfs.is_live() || paths.len() < 2 {
        return inspect_each(paths, opts, None);
    }
    std::thread::scope(|s| {
        let mut early = ahead::spawn(s, paths, opts.command);
        inspect_each(paths, opts, Some(&mut early))
    })
}

/// Read every target, with what was read ahead of each, then assemble
/// what spans them.
fn inspect_each(
    paths: &[PathBuf],
    opts: &InspectOptions,
    mut ahead: Option<&mut ahead::Ahead>,
) -> Inspection {
    let mut out = Inspection::default();
    let mut pending = Pending::default();
    for p in paths {
        let before = Cost::here();
        let early = ahead.as_mut().and_then(|a| a.take(p));
        let early_cost = early.as_ref().map_or(Cost::default(), |r| r.cost);
        let read = target(p, opts, early, &mut pending);
        let cost = Cost::here().since(before).plus(early_cost);
        out.costs.push((p.display().to_string(), cost));
        match read {
            Ok(mut t) => {
                t.measured = Measured::of(&t, &opts.measured).cloned();
                out.targets.push(t)
            }
            Err(e) => out
                .errors
                .push(TargetError::new(p.display().to_string(), e.to_string())),
        }
    }
    out.assembled = stack::assemble(&mut pending);
    out
}

/// The device nodes of every disk of this machine (or of the sysfs
/// tree), but those that exist only inside another layer (an LVM sub-LV
/// or layer device, an opened dm-crypt mapping, a kpartx partition map:
/// `topology::dm`): they are in the stack of the device they are built
/// from, among its holders, and checked as targets only when named; nor
/// the paths of a multipath map, which is their disk.
pub fn default_targets(sysfs: &Sysfs) -> Result<Vec<PathBuf>, TargetError> {
    let names = sysfs.default_disks().map_err(|e| {
        TargetError::new(
            sysfs.root().join("block").display().to_string(),
            format!("cannot list disks: {e}"),
        )
    })?;
    let roles: Vec<(String, Option<topology::DmRole>)> = names
        .into_iter()
        .map(|n| {
            let role = sysfs.dm_ids(&n).map(|ids| topology::dm_role(&ids));
            (n, role)
        })
        .collect();
    // A path of a multipath map is the map's disk seen once more: the
    // map is the target, its paths (its slaves/, read once per map and
    // never on a host without one) are named under it.
    let paths = topology::multipath_paths(sysfs, &roles);
    Ok(roles
        .into_iter()
        .filter(|(n, role)| {
            !matches!(role, Some(topology::DmRole::Internal(_))) && !paths.contains(n)
        })
        .map(|(n, _)| PathBuf::from("/dev").join(n))
        .collect())
}

fn target(
    path: &Path,
    opts: &InspectOptions,
    early: Option<ahead::Read>,
    pending: &mut Pending,
) -> Result<Target, InspectError> {
    let (resolved, early) = match early {
        Some(r) => (r.resolved, r.source),
        None => (resolve::resolve(path, &opts.sysfs, opts.command), None),
    };
    let (disk, only, node) = match resolved? {
        Resolved::Image => (None, None, path.to_path_buf()),
        Resolved::Live { disk, only, node } => (Some(*disk), only, node),
    };
    // What was read ahead is the node's only when the node is the path
    // read (a partition target's node is its disk).
    let early = early.filter(|_| node == path);
    let (content, container) = open(&node, disk.as_ref(), &opts.sysfs, early)?;
    let declared = container.as_ref().and_then(declared_topology);
    let (detected, detected_source) = match (&disk, declared) {
        (Some(d), _) => (d.topology, TopologySource::Kernel),
        (None, Some(t)) => (t, TopologySource::Container),
        (None, None) => (Topology::IMAGE_DEFAULT, TopologySource::ImageDefault),
    };
    let (topology, source) = match &opts.topology {
        Some(o) => (o.apply(detected)?, TopologySource::Override),
        None => (detected, detected_source),
    };
    let lbs_known =
        disk.is_some() || declared.is_some() || opts.topology.is_some_and(|o| o.lbs.is_some());
    let kind = match (&disk, only) {
        (None, _) => TargetKind::Image,
        (Some(_), Some(_)) => TargetKind::Partition,
        (Some(_), None) => TargetKind::Disk,
    };
    let (size, table, notes, src) = match content {
        Content::Bytes(src) => {
            let table = read_table(&src, &topology, lbs_known)?;
            (src.len(), table, vec![], Some(src))
        }
        Content::Kernel { size, table, note } => (size, table, vec![*note], None),
        Content::Sealed { size, note } => {
            let table = Table::none(u64::from(topology.logical_block_size));
            (size, table, vec![*note], None)
        }
    };
    let mut t = Target {
        path: path.to_path_buf(),
        kind,
        disk,
        only,
        size,
        container,
        topology,
        source,
        table,
        node_block_sizes: Vec::new(),
        notes,
        stack: Vec::new(),
        measured: None,
        measured_erase: None,
        host: None,
    };
    if t.disk.is_none()
        && declared.is_none()
        && t.table.sector_size != u64::from(topology.logical_block_size)
    {
        // An image whose table says 4Kn: judge it as the 4Kn disk it was made for.
        let plain = Topology::plain(t.table.sector_size as u32);
        t.topology = match &opts.topology {
            Some(o) => o.apply(plain)?,
            None => plain,
        };
    }
    if let Some(note) = partial_sector(&t) {
        t.notes.push(note);
    }
    measured_erase_unit(&mut t, &opts.measured);
    if let Some(n) = t.only {
        if t.partitions().next().is_none() {
            return Err(InspectError::NoSuchPartition(n));
        }
    }
    if opts.sysfs.is_live() {
        t.node_block_sizes = node_block_sizes(t.disk.as_ref(), t.only);
    }
    t.stack = roots::stack(src.as_ref(), &t, &opts.sysfs, opts.command, pending);
    if t.kind == TargetKind::Image && opts.sysfs.is_live() {
        let mut h = host::place(path, &opts.sysfs, opts.host_grain);
        if h.not_judged.is_none() {
            h.units = host::units(&t, src.as_ref(), &h);
        }
        t.host = Some(h);
    }
    // The target is read: its blocks go back for the next target's, and
    // a layer read later (an LV across PVs) reads what it needs anew.
    if let Some(s) = &src {
        s.forget();
    }
    Ok(t)
}

/// An image whose size is not a whole number of its sectors: its last
/// bytes are no sector (`image-size-partial-sector`).
fn partial_sector(t: &Target) -> Option<Finding> {
    let sector = u64::from(t.topology.logical_block_size);
    (t.kind == TargetKind::Image && sector > 0 && t.size % sector != 0).then(|| {
        Finding::of(
            Code::ImageSizePartialSector,
            crate::findings::Facts {
                size_bytes: Some(t.size),
                logical_block_bytes: Some(sector),
                ..Default::default()
            },
        )
    })
}

/// The topology an image container declares for its guest disk: a
/// VHDX's logical and physical sector sizes (MS-VHDX 2.6.2.4-5).
fn declared_topology(c: &Container) -> Option<Topology> {
    let lbs = c.logical_sector_bytes?;
    let pbs = c.physical_sector_bytes.unwrap_or(lbs).max(lbs);
    Some(Topology {
        physical_block_size: pbs,
        minimum_io_size: pbs,
        ..Topology::plain(lbs)
    })
}

/// What a target is read from.
enum Content {
    /// The device node or image (the guest disk of a container), opened
    /// read-only.
    Bytes(SharedReader),
    /// Only the kernel's view of a disk whose node cannot be opened: its
    /// size, its registered partitions as a table, and the note saying why.
    Kernel {
        size: u64,
        table: Table,
        note: Box<Finding>,
    },
    /// An image container whose guest disk is left unread (encrypted): its
    /// virtual size and the note saying so.
    Sealed { size: u64, note: Box<Finding> },
}

/// Open the node or image read-only (an image through its container, with
/// the container's facts unless it is raw). A disk whose node cannot be
/// opened (or any disk of a fixture tree, whose nodes are not this
/// machine's) is judged from the kernel's view instead.
fn open(
    node: &Path,
    disk: Option<&Disk>,
    sysfs: &Sysfs,
    early: Option<BlockCache<FileSource>>,
) -> Result<(Content, Option<Container>), InspectError> {
    let Some(d) = disk else {
        return open_image(node);
    };
    if let Some(cached) = early {
        return Ok((Content::Bytes(std::rc::Rc::new(cached)), None));
    }
    let reason = if sysfs.is_live() {
        match crate::sys::open_source(node) {
            Ok(f) => {
                let cached = BlockCache::new(f);
                return Ok((Content::Bytes(std::rc::Rc::new(cached)), None));
            }
            Err(e) => e.reason(),
        }
    } else {
        format!(
            "sysfs root is {}: device nodes are not opened",
            sysfs.root().display()
        )
    };
    let content = Content::Kernel {
        size: d.size_bytes,
        table: kernel_view::table(d),
        note: Box::new(kernel_view::note(&d.device.display().to_string(), &reason)),
    };
    Ok((content, None))
}

/// An image file, read through its container (told by magic).
fn open_image(path: &Path) -> Result<(Content, Option<Container>), InspectError> {
    let opened = image::open(path, &image::HostFiles)
        .map_err(|e| InspectError::Image(e.message_for(path)))?;
    let c = opened.container;
    if c.virtual_size < MIN_IMAGE_BYTES {
        let what = match c.format {
            ContainerFormat::Raw => "a file of".to_string(),
            f => format!("a {f} image whose guest disk has"),
        };
        return Err(InspectError::TooSmall {
            what,
            bytes: c.virtual_size,
        });
    }
    let content = match opened.guest {
        Some(g) => Content::Bytes(g),
        None => Content::Sealed {
            size: c.virtual_size,
            note: Box::new(Finding::of(
                Code::ImageEncrypted,
                crate::findings::Facts {
                    // Only a backing file may be what is encrypted.
                    region: Some(match c.encrypted {
                        true => format!("{} image", c.format),
                        false => format!("backing file of this {} image", c.format),
                    }),
                    ..Default::default()
                },
            )),
        },
    };
    let container = (c.format != ContainerFormat::Raw).then_some(c);
    Ok((content, container))
}

/// The table, read with the device's sector size (a live device's is
/// known; an image's only when `--topology` gives lbs).
fn read_table(
    src: &SharedReader,
    topo: &Topology,
    lbs_known: bool,
) -> Result<Table, crate::bytes::ParseError> {
    layout::read_table(&**src, u64::from(topo.logical_block_size), lbs_known)
}

/// BLKBSZGET of the partitions the kernel registered on `disk` (only the
/// one asked for, for a partition target).
fn node_block_sizes(disk: Option<&Disk>, only: Option<u32>) -> Vec<(u32, u32)> {
    let Some(d) = disk else { return vec![] };
    d.partitions
        .iter()
        .filter(|k| only.is_none_or(|n| n == k.number))
        .filter_map(|k| {
            crate::sys::node_block_size(&Path::new("/dev").join(&k.name)).map(|b| (k.number, b))
        })
        .collect()
}
