//! The extents read without tables: FLAT and VMFS (bytes of a file at an
//! offset), ZERO, and NOACCESS (its place held, its bytes refused).

use super::LAYER_DESCRIPTOR;
use crate::bytes::ReadAt;
use crate::bytes::{in_bounds, SharedReader};
use crate::image::read_error;
use std::io;
use std::path::PathBuf;

/// Bytes of a FLAT or VMFS extent: `len` bytes of `file` from `start`,
/// zeros past the file's end (qemu's block layer reads them so).
pub(super) struct Flat {
    pub(super) file: SharedReader,
    pub(super) start: u64,
    pub(super) len: u64,
}

impl ReadAt for Flat {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        in_bounds(self.len, offset, buf.len())?;
        let at = self.start + offset;
        let have = self.file.len().saturating_sub(at).min(buf.len() as u64) as usize;
        buf[have..].fill(0);
        if have > 0 {
            self.file.read_exact_at(&mut buf[..have], at)?;
        }
        Ok(())
    }
}

/// A ZERO extent.
pub(super) struct Zeros {
    pub(super) len: u64,
}

impl ReadAt for Zeros {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        in_bounds(self.len, offset, buf.len())?;
        buf.fill(0);
        Ok(())
    }
}

/// A NOACCESS extent: it holds part of the disk, but VMware forbids
/// reading it, so every read fails naming the line.
pub(super) struct NoAccess {
    pub(super) path: PathBuf,
    pub(super) len: u64,
    pub(super) at: u64,
}

impl ReadAt for NoAccess {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        in_bounds(self.len, offset, buf.len())?;
        Err(read_error(
            &self.path,
            LAYER_DESCRIPTOR,
            self.at,
            "the extent of this line is NOACCESS: its bytes may not be read".to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::image::vmdk::test_support::{descriptor, open_mem};
    use crate::image::MemFiles;

    #[test]
    fn a_flat_extent_past_its_file_reads_zeros_and_noaccess_fails() {
        let desc = descriptor("RW 4 FLAT \"f.bin\" 1\nNOACCESS 2 FLAT \"nofile\" 0\n");
        let at = desc.windows(8).position(|w| w == b"NOACCESS").unwrap();
        let files = MemFiles::default()
            .with("/vm/d.vmdk", desc)
            .with("/vm/f.bin", vec![7u8; 1024]);
        let g = open_mem(files, "/vm/d.vmdk").unwrap().guest.unwrap();
        let mut buf = vec![1u8; 2048];
        g.read_exact_at(&mut buf, 0).unwrap();
        assert!(buf[..512].iter().all(|&b| b == 7) && buf[512..].iter().all(|&b| b == 0));
        let e = g
            .read_exact_at(&mut buf[..10], 2048)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("NOACCESS") && e.contains(&format!("at byte {at}")),
            "{e}"
        );
    }
}
