//! Disk image containers: the guest disk inside a qcow2, VMDK, VHDX, VDI or
//! VHD file, read natively (no qemu, no kernel module, no root), so the
//! partition tables and every stack layer above read it exactly as they
//! read a raw image.
//!
//! [`open`] tells the format by its magic (never by the file's name) and
//! hands back the guest disk as a [`SharedReader`] with the container's own facts
//! ([`Container`]). A raw file stays raw. Each format is one module:
//! `vdi.rs`, `vhd.rs`, and the folders `qcow2/`, `vmdk/` and `vhdx/`, whose
//! `mod.rs` opens the format with files of one job each. They share the
//! bounded cache of metadata tables (`cache.rs`) and the way the guest's
//! unallocated ranges read ([`Fallback`]: the backing file's bytes, or
//! zeros).
//!
//! Every reader is hostile-input safe: no panic, no allocation by a count
//! read from the file without a bound, and an error names the file, the
//! field and the byte offset ([`ImageError`]).

mod cache;
mod detect;
mod qcow2;
mod vdi;
mod vhd;
mod vhdx;
mod vmdk;

use crate::bytes::ParseError;
use crate::bytes::SharedReader;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The container format a file's first bytes tell.
pub use detect::detect;
/// The VHDX reader by itself: a file told by something else than its magic.
pub use vhdx::open as open_vhdx;

/// How deep a backing chain may go before it is refused. qemu sets no
/// limit; a chain this deep is a mistake or a hostile file.
pub const MAX_CHAIN: usize = 64;

/// The container formats, by the names `qemu-img` gives them (`vpc` is
/// qemu's name for VHD; ours is the one admins use).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerFormat {
    #[default]
    Raw,
    Qcow2,
    Vmdk,
    Vhdx,
    Vdi,
    Vhd,
}

crate::spelled_as_serde!(ContainerFormat);

/// A file below this one in a backing chain, nearest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackingFile {
    /// The name as the image records it.
    pub name: String,
    /// The path it was opened at (relative names resolved as qemu does:
    /// against the directory of the image that names it).
    pub path: String,
    /// The format it was read as: the one the image declares, or the
    /// one its magic says where none is declared.
    pub format: ContainerFormat,
}

/// What a container says about itself: the `container` of a target in
/// the JSON (docs/json.md), and the facts the container rules judge.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Container {
    pub format: ContainerFormat,
    /// The format's version as its header gives it: qcow2 `2` or `3`,
    /// VDI `1.1`, VHDX `1`, VHD `1.0`, VMDK's sparse extent version `1`,
    /// `2` or `3` (empty for a descriptor with flat extents only).
    pub version: String,
    /// The kind within the format: VMDK's `createType`
    /// (`monolithicSparse`, `streamOptimized`, `monolithicFlat`, ...),
    /// VHD's and VDI's `fixed`, `dynamic` or `differencing`; None where the
    /// format has one kind.
    pub subformat: Option<String>,
    /// The allocation unit: qcow2's cluster, VMDK's grain, VHDX's, VDI's
    /// and VHD's block. None where the guest disk is stored flat (a fixed
    /// VHD, a flat VMDK extent).
    pub unit_bytes: Option<u64>,
    /// qcow2's subcluster with extended L2 entries (the unit a first write
    /// or a copy-on-write allocates); None otherwise.
    pub subunit_bytes: Option<u64>,
    /// The guest disk's size, as `qemu-img info` gives its virtual size.
    pub virtual_size: u64,
    /// What the image's own files take on their filesystem (st_blocks ×
    /// 512, as `qemu-img info` gives its disk size), extents and an
    /// external data file included, backing files not.
    pub allocated_bytes: Option<u64>,
    /// The backing chain, nearest first.
    pub backing: Vec<BackingFile>,
    /// qcow2's external data file, as the image names it.
    pub data_file: Option<String>,
    /// Compressed clusters or grains use this: `zlib` or `zstd` (qcow2),
    /// `deflate` (a streamOptimized VMDK). None when the format compresses
    /// nothing. A qcow2 image always has one, its header's compression
    /// type, whether or not any cluster is compressed: finding out would
    /// mean reading every L2 table.
    pub compression: Option<String>,
    /// The image is encrypted: its guest disk is left unread.
    pub encrypted: bool,
    /// The sector sizes the container declares for its guest (VHDX).
    pub logical_sector_bytes: Option<u32>,
    pub physical_sector_bytes: Option<u32>,
}

impl Container {
    /// The container in one phrase, as the human report and the HTML page
    /// show it: `qcow2 3, 64 KiB clusters, 196.0 KiB allocated, backing
    /// base.raw (raw)`. (The compression method is left to the JSON: for
    /// qcow2 it is the header's, whether or not a cluster is compressed.)
    pub fn phrase(&self) -> String {
        let mut parts = vec![match (&self.subformat, self.version.is_empty()) {
            (Some(sub), _) => format!("{} {sub}", self.format),
            (None, false) => format!("{} {}", self.format, self.version),
            (None, true) => self.format.to_string(),
        }];
        if let Some(u) = self.unit_bytes {
            parts.push(format!("{} {}s", crate::units::exact(u), self.unit_name()));
        }
        if let Some(s) = self.subunit_bytes {
            parts.push(format!("{} subclusters", crate::units::exact(s)));
        }
        if let Some(a) = self.allocated_bytes {
            parts.push(format!("{} allocated", crate::units::human(a)));
        }
        if self.encrypted {
            parts.push("encrypted".into());
        }
        if let Some(d) = &self.data_file {
            parts.push(format!("data file {d}"));
        }
        for b in &self.backing {
            parts.push(format!("backing {} ({})", b.path, b.format));
        }
        parts.join(", ")
    }

    /// What the format calls its allocation unit.
    pub fn unit_name(&self) -> &'static str {
        match self.format {
            ContainerFormat::Qcow2 => "cluster",
            ContainerFormat::Vmdk => "grain",
            _ => "block",
        }
    }
}

/// An image opened: its container's facts and the guest disk, which is
/// None when it cannot be read (an encrypted image).
pub struct Opened {
    pub container: Container,
    pub guest: Option<SharedReader>,
}

/// Why an image could not be opened.
#[derive(Debug)]
pub struct ImageError {
    /// The file at fault: the image itself, or a backing file or extent it
    /// names.
    pub file: PathBuf,
    pub kind: ImageErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum ImageErrorKind {
    /// A field that does not read as the format says, with the layer
    /// (`qcow2 header`, `VMDK grain directory`, ...), its byte offset and
    /// the field's name in the message.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A file the image names could not be opened.
    #[error("cannot open {name:?} (named at byte {offset} of {}): {reason}", by.display())]
    Missing {
        name: String,
        by: PathBuf,
        offset: u64,
        reason: String,
    },
    /// The backing chain comes back to a file already on it.
    #[error("backing chain loops: {} names {} again", by.display(), again.display())]
    Loop { by: PathBuf, again: PathBuf },
    /// The backing chain is deeper than [`MAX_CHAIN`].
    #[error("backing chain deeper than {MAX_CHAIN} files")]
    TooDeep,
}

impl ImageError {
    pub fn new(file: &Path, kind: impl Into<ImageErrorKind>) -> Self {
        ImageError {
            file: file.to_path_buf(),
            kind: kind.into(),
        }
    }

    /// A field of `file` that is wrong: one line naming the layer, the byte
    /// offset and (in the message) the field.
    pub fn parse(
        file: &Path,
        layer: &'static str,
        offset: u64,
        message: impl Into<String>,
    ) -> Self {
        Self::new(file, ParseError::new(layer, offset, message))
    }

    /// The line for a target at `target`: the file is named only when it
    /// is not the target itself.
    pub fn message_for(&self, target: &Path) -> String {
        if self.file == target {
            self.kind.to_string()
        } else {
            format!("{}: {}", self.file.display(), self.kind)
        }
    }
}

impl std::fmt::Display for ImageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.kind)
    }
}

impl std::error::Error for ImageError {}

/// The files an image names (backing files, extents, a data file), opened
/// by the host (`HostFiles`) or, in the fuzz targets and unit tests, from
/// memory.
pub trait Files {
    /// Open `path` read-only, or say why not in a few words.
    fn open(&self, path: &Path) -> Result<SharedReader, String>;
    /// What `path` takes on its filesystem (st_blocks × 512).
    fn allocated_bytes(&self, path: &Path) -> Option<u64>;
    /// One spelling per file, to find a chain that loops.
    fn canonical(&self, path: &Path) -> PathBuf;
}

/// The host's files, read-only.
pub struct HostFiles;

impl Files for HostFiles {
    fn open(&self, path: &Path) -> Result<SharedReader, String> {
        crate::sys::open_source(path)
            .map(|f| Rc::new(f) as SharedReader)
            .map_err(|e| e.reason())
    }
    fn allocated_bytes(&self, path: &Path) -> Option<u64> {
        crate::sys::allocated_bytes(path)
    }
    fn canonical(&self, path: &Path) -> PathBuf {
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
    }
}

/// Files held in memory by name: the fuzz targets' and unit tests' host.
#[derive(Default)]
pub struct MemFiles {
    pub files: Vec<(PathBuf, SharedReader)>,
}

impl MemFiles {
    pub fn with(mut self, path: impl Into<PathBuf>, bytes: Vec<u8>) -> Self {
        self.files.push((path.into(), Rc::new(bytes)));
        self
    }
}

impl Files for MemFiles {
    fn open(&self, path: &Path) -> Result<SharedReader, String> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, s)| s.clone())
            .ok_or_else(|| "ENOENT".to_string())
    }
    fn allocated_bytes(&self, path: &Path) -> Option<u64> {
        self.open(path).ok().map(|s| s.len())
    }
    fn canonical(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }
}

/// Where a reader is in a chain of images: the files it may open and the
/// files already on the chain above it.
pub struct Chain<'a> {
    pub files: &'a dyn Files,
    /// Canonical paths of the images above, the top one first.
    above: Vec<PathBuf>,
}

impl<'a> Chain<'a> {
    pub fn new(files: &'a dyn Files) -> Self {
        Chain {
            files,
            above: Vec::new(),
        }
    }

    /// Resolve a name recorded in `by` as qemu does: an absolute name as
    /// it is, a relative one against the directory of `by` (qemu's
    /// `path_combine`, used by `bdrv_get_full_backing_filename`).
    pub fn resolve(by: &Path, name: &str) -> PathBuf {
        let name = Path::new(name);
        if name.is_absolute() {
            return name.to_path_buf();
        }
        match by.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join(name),
            _ => name.to_path_buf(),
        }
    }

    /// Open a file `by` names (an extent, a data file), or say which.
    pub fn open_named(
        &self,
        by: &Path,
        name: &str,
        offset: u64,
    ) -> Result<SharedReader, ImageError> {
        let path = Self::resolve(by, name);
        self.files.open(&path).map_err(|reason| {
            ImageError::new(
                by,
                ImageErrorKind::Missing {
                    name: name.to_string(),
                    by: by.to_path_buf(),
                    offset,
                    reason,
                },
            )
        })
    }

    /// Open the backing file `name`, recorded at byte `offset` of `by`,
    /// as `declared` (the format the image names for it; None: by its
    /// magic). Returns its guest disk (None when the backing file is
    /// encrypted) and the chain below it, itself first.
    pub fn backing(
        &mut self,
        by: &Path,
        name: &str,
        offset: u64,
        declared: Option<ContainerFormat>,
    ) -> Result<(Option<SharedReader>, Vec<BackingFile>), ImageError> {
        if self.above.len() >= MAX_CHAIN {
            return Err(ImageError::new(by, ImageErrorKind::TooDeep));
        }
        let path = Self::resolve(by, name);
        let src = self.open_named(by, name, offset)?;
        let canonical = self.files.canonical(&path);
        if self.above.contains(&canonical) {
            return Err(ImageError::new(
                by,
                ImageErrorKind::Loop {
                    by: by.to_path_buf(),
                    again: path,
                },
            ));
        }
        self.above.push(canonical);
        let opened = self.open_as(&path, src, declared);
        self.above.pop();
        let opened = opened?;
        let mut chain = vec![BackingFile {
            name: name.to_string(),
            path: path.display().to_string(),
            format: opened.container.format,
        }];
        chain.extend(opened.container.backing);
        Ok((opened.guest, chain))
    }

    /// Read `src` (the file at `path`) as `format`, or as its magic says.
    fn open_as(
        &mut self,
        path: &Path,
        src: SharedReader,
        format: Option<ContainerFormat>,
    ) -> Result<Opened, ImageError> {
        let format = match format {
            Some(f) => f,
            None => detect(&*src).map_err(|e| ImageError::new(path, e))?,
        };
        let opened = match format {
            ContainerFormat::Raw => Ok(raw(src)),
            ContainerFormat::Qcow2 => qcow2::open(src, path, self),
            ContainerFormat::Vmdk => vmdk::open(src, path, self),
            ContainerFormat::Vhdx => vhdx::open(src, path, self),
            ContainerFormat::Vdi => vdi::open(src, path, self),
            ContainerFormat::Vhd => vhd::open(src, path, self),
        }?;
        let mut opened = opened;
        if opened.container.format != ContainerFormat::Raw {
            opened.container.allocated_bytes = opened
                .container
                .allocated_bytes
                .or_else(|| self.files.allocated_bytes(path));
        }
        Ok(opened)
    }
}

/// A raw file: the guest disk is the file.
fn raw(src: SharedReader) -> Opened {
    Opened {
        container: Container {
            format: ContainerFormat::Raw,
            virtual_size: src.len(),
            ..Container::default()
        },
        guest: Some(src),
    }
}

/// Open the image at `path`: its format told by its magic, its guest disk
/// presented as a [`SharedReader`]. A raw file is its own guest disk.
pub fn open(path: &Path, files: &dyn Files) -> Result<Opened, ImageError> {
    let src = files.open(path).map_err(|reason| {
        ImageError::new(
            path,
            ImageErrorKind::Missing {
                name: path.display().to_string(),
                by: path.to_path_buf(),
                offset: 0,
                reason,
            },
        )
    })?;
    let mut chain = Chain::new(files);
    chain.above.push(files.canonical(path));
    chain.open_as(path, src, None)
}

/// How the guest's unallocated ranges read: from the backing file's guest
/// disk where it has one (zeros past its end, as qemu reads a shorter
/// backing file), else zeros.
#[derive(Clone, Default)]
pub struct Fallback {
    pub backing: Option<SharedReader>,
}

impl Fallback {
    pub fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        buf.fill(0);
        let Some(b) = &self.backing else {
            return Ok(());
        };
        let len = b.len();
        if offset >= len {
            return Ok(());
        }
        let n = (len - offset).min(buf.len() as u64) as usize;
        b.read_exact_at(&mut buf[..n], offset)
    }
}

/// An `io::Error` for a guest read that met bad metadata: the message names
/// the file, the layer, the field and the byte, as [`ImageError`] does.
pub fn read_error(file: &Path, layer: &'static str, offset: u64, message: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        ImageError::parse(file, layer, offset, message).to_string(),
    )
}

/// A guest disk a format reads one allocation unit at a time: it says how
/// long the disk is, how large a unit is, and how to read a piece that
/// stays within one unit; [`ByUnit`] does the rest.
pub trait Units {
    fn guest_len(&self) -> u64;
    fn unit_bytes(&self) -> u64;
    /// Fill `out` from guest byte `at`; the piece lies within one unit.
    fn read_piece(&self, out: &mut [u8], at: u64) -> io::Result<()>;
}

/// A [`Units`] guest as a [`ReadAt`]: the bounds checked once, the range
/// split at unit boundaries.
pub struct ByUnit<T>(pub T);

impl<T: Units> crate::bytes::ReadAt for ByUnit<T> {
    fn len(&self) -> u64 {
        self.0.guest_len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        crate::bytes::in_bounds(self.0.guest_len(), offset, buf.len())?;
        for (pos, at, n) in pieces(offset, buf.len(), self.0.unit_bytes()) {
            self.0.read_piece(&mut buf[pos..pos + n], at)?;
        }
        Ok(())
    }
}

/// Split the guest range `offset..offset + len` at multiples of `unit`:
/// (position in `buf`, guest offset, length) of each piece.
pub fn pieces(offset: u64, len: usize, unit: u64) -> impl Iterator<Item = (usize, u64, usize)> {
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len || unit == 0 {
            return None;
        }
        let at = offset + done as u64;
        let room = unit - at % unit;
        let n = (room.min((len - done) as u64)) as usize;
        let piece = (done, at, n);
        done += n;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names_resolve_against_the_image_directory() {
        assert_eq!(
            Chain::resolve(Path::new("/vm/a/top.qcow2"), "base.raw"),
            PathBuf::from("/vm/a/base.raw")
        );
        assert_eq!(
            Chain::resolve(Path::new("/vm/a/top.qcow2"), "../b/base.raw"),
            PathBuf::from("/vm/a/../b/base.raw")
        );
        assert_eq!(
            Chain::resolve(Path::new("top.qcow2"), "base.raw"),
            PathBuf::from("base.raw")
        );
        assert_eq!(
            Chain::resolve(Path::new("/vm/top.qcow2"), "/abs/base"),
            PathBuf::from("/abs/base")
        );
    }

    #[test]
    fn pieces_split_at_units() {
        let p: Vec<_> = pieces(65000, 1000, 65536).collect();
        assert_eq!(p, vec![(0, 65000, 536), (536, 65536, 464)]);
        assert_eq!(pieces(0, 0, 512).count(), 0);
    }

    #[test]
    fn a_short_backing_file_reads_as_zeros_past_its_end() {
        let f = Fallback {
            backing: Some(Rc::new(vec![7u8; 10])),
        };
        let mut buf = [1u8; 8];
        f.read(&mut buf, 6).unwrap();
        assert_eq!(buf, [7, 7, 7, 7, 0, 0, 0, 0]);
    }
}
