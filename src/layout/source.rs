//! Bounded, checked reads from a disk, image or byte buffer.

use super::LayoutError;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Something partition tables can be read from.
pub trait ReadAt {
    /// Total size in bytes.
    fn len(&self) -> u64;
    /// Fill `buf` from `offset`; the caller has checked the bounds.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file or block device with its size.
pub struct FileSource {
    pub file: File,
    pub size: u64,
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.size
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        FileExt::read_exact_at(&self.file, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| std::io::ErrorKind::UnexpectedEof)?;
        let end = start
            .checked_add(buf.len())
            .filter(|&e| e <= <[u8]>::len(self))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(&self[start..end]);
        Ok(())
    }
}

impl ReadAt for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
}

/// Read `len` bytes at `offset`, or an error naming the layer and offset.
pub fn read_bytes(
    src: &(impl ReadAt + ?Sized),
    layer: &'static str,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, LayoutError> {
    let end = offset.checked_add(len);
    if end.is_none_or(|e| e > src.len()) {
        return Err(LayoutError::new(
            layer,
            offset,
            format!(
                "needs {len} bytes but the device ends at byte {} (truncated?)",
                src.len()
            ),
        ));
    }
    if len > 64 << 20 {
        return Err(LayoutError::new(
            layer,
            offset,
            format!("refusing to read {len} bytes"),
        ));
    }
    let mut buf = vec![0u8; len as usize];
    src.read_exact_at(&mut buf, offset)
        .map_err(|e| LayoutError::new(layer, offset, format!("read failed: {e}")))?;
    Ok(buf)
}

/// Little-endian field readers over a buffer known to be long enough.
pub fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
pub fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
pub fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}
