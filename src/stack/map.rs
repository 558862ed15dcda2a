//! Address spaces: a window onto part of a device (a partition, a PV's data
//! area) and a device assembled from pieces of others (an md array, an LV),
//! so the same parsers read every layer.

use crate::bytes::ReadAt;
use std::io;
use std::rc::Rc;

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
