//! Bytes read from disks, images and buffers: the bounded, checked
//! [`read_bytes`], the little- and big-endian field readers, and the
//! [`ParseError`] every parser returns, naming the layer and the byte.

mod cache;

/// A device read once per block for the run.
pub use cache::BlockCache;

use std::fmt;
use std::io;
use std::rc::Rc;

/// A read that failed: which layer, at which byte, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub layer: &'static str,
    pub offset: u64,
    pub message: String,
}

impl ParseError {
    pub fn new(layer: &'static str, offset: u64, message: impl Into<String>) -> Self {
        ParseError {
            layer,
            offset,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at byte {}: {}",
            self.layer, self.offset, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// Something metadata can be read from: a device, an image, a buffer.
pub trait ReadAt {
    /// Total size in bytes.
    fn len(&self) -> u64;
    /// Fill `buf` from `offset`; the caller has checked the bounds.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where byte `at` of this guest disk is stored in its image file
    /// itself, for a container that maps its guest through a table (a
    /// qcow2 cluster): None where it is not stored there (unallocated,
    /// zeros, compressed, in a backing or data file) or this reader does
    /// not map (a raw file is its own guest: byte for byte).
    fn file_offset(&self, _at: u64) -> Option<u64> {
        None
    }

    /// Fill each `(offset, buffer)` of `reads` (bounds checked by the
    /// caller), with an outcome each; a source that can (a device) has
    /// them all in flight at once.
    fn read_many(&self, reads: &mut [(u64, &mut [u8])]) -> Vec<std::io::Result<()>> {
        reads
            .iter_mut()
            .map(|(at, buf)| self.read_exact_at(buf, *at))
            .collect()
    }

    /// Let go of whatever was kept to answer reads again (a block cache's
    /// blocks): what is asked later is read anew. Nothing for a reader
    /// that keeps nothing.
    fn forget(&self) {}
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
) -> Result<Vec<u8>, ParseError> {
    let end = offset.checked_add(len);
    if end.is_none_or(|e| e > src.len()) {
        return Err(ParseError::new(
            layer,
            offset,
            format!(
                "needs {len} bytes but the device ends at byte {} (truncated?)",
                src.len()
            ),
        ));
    }
    if len > 64 << 20 {
        return Err(ParseError::new(
            layer,
            offset,
            format!("refusing to read {len} bytes"),
        ));
    }
    let mut buf = vec![0u8; len as usize];
    src.read_exact_at(&mut buf, offset)
        .map_err(|e| ParseError::new(layer, offset, format!("read failed: {e}")))?;
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

/// Big-endian field readers over a buffer known to be long enough.
pub fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
pub fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
pub fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

// Address spaces: a window onto part of a device (a partition, a PV's data
// area) and a device assembled from pieces of others (an md array, an LV),
// so the same parsers read every layer.

/// A shared, read-only source.
pub type SharedReader = Rc<dyn ReadAt>;

/// Refuse a read of `n` bytes at `offset` that does not fit in `len`.
pub fn in_bounds(len: u64, offset: u64, n: usize) -> io::Result<()> {
    match offset.checked_add(n as u64) {
        Some(end) if end <= len => Ok(()),
        _ => Err(io::ErrorKind::UnexpectedEof.into()),
    }
}

/// Bytes `start..start + len` of another source.
pub struct Window {
    pub src: SharedReader,
    pub start: u64,
    pub len: u64,
}

impl ReadAt for Window {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        in_bounds(self.len, offset, buf.len())?;
        self.src.read_exact_at(buf, self.start + offset)
    }
}

/// Where one byte of an assembled device lives: which source, at which
/// byte, and how many bytes from there on are contiguous.
pub type Locate = dyn Fn(u64) -> Option<(usize, u64, u64)>;

/// A device assembled from pieces of `sources` by a mapping function.
pub struct Mapped {
    pub sources: Vec<SharedReader>,
    pub len: u64,
    pub locate: Box<Locate>,
}

impl ReadAt for Mapped {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        in_bounds(self.len, offset, buf.len())?;
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let unmapped = || {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("byte {at} is on no available member"),
                )
            };
            let (i, phys, run) = (self.locate)(at).ok_or_else(unmapped)?;
            let src = self.sources.get(i).ok_or_else(unmapped)?;
            let n = (run.max(1)).min((buf.len() - done) as u64) as usize;
            src.read_exact_at(&mut buf[done..done + n], phys)?;
            done += n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn striped_map_reads_across_pieces() {
        let a: SharedReader = Rc::new((0u8..16).collect::<Vec<_>>());
        let b: SharedReader = Rc::new((100u8..116).collect::<Vec<_>>());
        // 4-byte chunks alternating a, b.
        let m = Mapped {
            sources: vec![a, b],
            len: 32,
            locate: Box::new(|x| {
                let chunk = x / 4;
                Some(((chunk % 2) as usize, (chunk / 2) * 4 + x % 4, 4 - x % 4))
            }),
        };
        let mut buf = [0u8; 10];
        m.read_exact_at(&mut buf, 2).unwrap();
        assert_eq!(buf, [2, 3, 100, 101, 102, 103, 4, 5, 6, 7]);
        assert!(m.read_exact_at(&mut buf, 30).is_err());
    }
}
