//! qcow2, QEMU's copy-on-write format (versions 2 and 3): the guest disk
//! read through the two-level cluster map, with zero clusters, compressed
//! clusters (deflate or zstd), extended L2 entries (subclusters), a backing
//! file and an external data file.
//!
//! Every layout detail here is checked against QEMU's own reader and named
//! where it is used: the spec (`docs/interop/qcow2.txt`), `block/qcow2.h`,
//! `block/qcow2.c` (`qcow2_do_open`, `qcow2_read_extensions`,
//! `qcow2_validate_table`, `qcow2_co_preadv_compressed`),
//! `block/qcow2-cluster.c` (`qcow2_get_host_offset`,
//! `qcow2_parse_compressed_l2_entry`) and `block/qcow2-threads.c`
//! (`qcow2_decompress`, `qcow2_zstd_decompress`).
//!
//! The image is hostile until proven otherwise: the header is checked as
//! `qcow2_do_open` checks it before anything is allocated by its counts,
//! the L1 table and the L2 tables are read lazily, only where the guest is
//! read, and bounded caches hold what was read. Where QEMU accepts an image
//! we read it the way QEMU reads it, so the guest is byte for byte what
//! `qemu-img convert -O raw` makes of it.
//!
//! One job a file: `header.rs` reads and checks the header,
//! `extensions.rs` the header extensions and the feature bits they name
//! (`Header::check_features`), `backing.rs` the backing file and the
//! external data file; `cluster.rs` gives the cluster map's shape and
//! where a unit reads from, `map.rs` looks a guest byte up through the L1
//! and L2 tables, subclusters too (`Disk::place`), `compression.rs`
//! inflates compressed clusters (`Disk::inflated`) and `disk.rs` is the
//! guest disk that reads through them. This file opens an image with them.

mod backing;
mod cluster;
mod compression;
mod disk;
mod extensions;
mod header;
mod map;

use super::{Chain, Fallback, ImageError, Opened};
use crate::bytes::SharedReader;
use crate::bytes::{read_bytes, ReadAt};
use backing::{data_file_name, open_backing};
use disk::Disk;
use extensions::read_extensions;
use header::Header;
use std::path::Path;
use std::rc::Rc;

const HEADER: &str = "qcow2 header";
const EXTENSION: &str = "qcow2 header extension";
const BACKING_NAME: &str = "qcow2 backing file name";
const L1_TABLE: &str = "qcow2 L1 table";
const L2_TABLE: &str = "qcow2 L2 table";
const COMPRESSED: &str = "qcow2 compressed cluster";

/// Open a qcow2 image: its header, header extensions, external data file
/// and backing chain; the guest disk reads through the cluster map. An
/// encrypted image has its facts read (its backing chain too) and no
/// guest: its clusters are ciphertext. So has an image whose backing file
/// is encrypted: the clusters it leaves to that file cannot be read.
pub fn open(src: SharedReader, path: &Path, chain: &mut Chain) -> Result<Opened, ImageError> {
    let header = Header::read(&*src, path)?;
    let extensions = read_extensions(&*src, path, &header);
    header.check_features(&*src, path, extensions.as_ref().ok())?;
    let extensions = extensions?;
    header.check_l1(&*src, path)?;
    let data_file = data_file_name(&header, &extensions, path)?;
    let mut container = header.container(data_file.as_ref().map(|(n, _)| n.clone()));
    let fallback = match open_backing(&*src, path, chain, &header, &extensions)? {
        None => Some(Fallback::default()),
        Some((guest, files)) => {
            container.backing = files;
            guest.map(|g| Fallback { backing: Some(g) })
        }
    };
    let Some(fallback) = fallback.filter(|_| !container.encrypted) else {
        return Ok(Opened {
            container,
            guest: None,
        });
    };
    let data = data_file
        .map(|(name, at)| chain.open_named(path, &name, at))
        .transpose()?;
    let guest = Disk::new(src, path, &header, data, fallback);
    Ok(Opened {
        container,
        guest: Some(Rc::new(guest)),
    })
}

/// `len` bytes at `at` as a string ending at the first NUL, as qemu's C
/// strings do.
fn string_at(
    src: &dyn ReadAt,
    path: &Path,
    layer: &'static str,
    at: u64,
    len: u64,
    what: &str,
) -> Result<String, ImageError> {
    let bytes = bytes_at(src, path, layer, at, len)?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8(bytes[..end].to_vec())
        .map_err(|_| ImageError::parse(path, layer, at, format!("{what} is not UTF-8")))
}

fn bytes_at(
    src: &dyn ReadAt,
    path: &Path,
    layer: &'static str,
    at: u64,
    len: u64,
) -> Result<Vec<u8>, ImageError> {
    read_bytes(src, layer, at, len).map_err(|e| ImageError::new(path, e))
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests {
    use super::test_support::{files, header_error, opened, Img};

    #[test]
    fn an_encrypted_image_gives_its_facts_and_no_guest() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(32, 2);
        let o = opened(&files(&img));
        assert!(o.guest.is_none());
        assert!(o.container.encrypted);
        assert_eq!(o.container.virtual_size, 64 << 10);
        img.u32(32, 3);
        header_error(
            &img,
            32,
            "crypt_method 3 is not 0 (none), 1 (AES) or 2 (LUKS)",
        );
        // Over an encrypted backing file, the unallocated clusters cannot
        // be read: no guest either.
        img.u32(32, 2);
        let mut top = Img::new(9, 64 << 10, false);
        top.backing("base.qcow2", Some("qcow2"));
        let files = files(&top).with("/vm/base.qcow2", img.bytes.clone());
        let o = opened(&files);
        assert!(o.guest.is_none());
        assert!(!o.container.encrypted);
        assert_eq!(o.container.backing[0].name, "base.qcow2");
    }
}
