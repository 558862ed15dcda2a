//! streamOptimized: the footer that gives the grain directory when the
//! header says it is at the end, and grains compressed with zlib, behind
//! a marker where the extent has markers (`vmdk_read_extent`).

use super::grains::{Kind, SparseExtent};
use super::header::{KDMV_GD_OFFSET, KDMV_HEADER_LEN};
use super::{read_padded, LAYER_HEADER, SECTOR};
use crate::bytes::{le_u32, le_u64, ReadAt};
use crate::image::{read_error, ImageError};
use flate2::{Decompress, FlushDecompress, Status};
use std::io;
use std::path::Path;

const LAYER_COMPRESSED: &str = "VMDK compressed grain";

/// The stream markers' types (qemu's `MARKER_*`).
const MARKER_END_OF_STREAM: u32 = 0;
const MARKER_FOOTER: u32 = 3;

/// A streamOptimized file's footer: the header again, with the real
/// gdOffset, in the sector before the end-of-stream marker, the footer
/// marker before it (`vmdk_open_vmdk4`: read 1536 bytes at the file's
/// length in sectors × 512 - 1536, past the end reading as zeros as
/// qemu's block layer reads them). Returns the header and its offset.
pub(super) fn read_footer(src: &dyn ReadAt, path: &Path) -> Result<(Vec<u8>, u64), ImageError> {
    let end = src.len().div_ceil(SECTOR) * SECTOR;
    let Some(at) = end.checked_sub(3 * SECTOR) else {
        return Err(ImageError::parse(
            path,
            LAYER_HEADER,
            KDMV_GD_OFFSET as u64,
            format!(
                "gdOffset says the grain directory is in a footer, but the file has {} bytes, too few for one",
                src.len()
            ),
        ));
    };
    let footer = read_padded(src, at, 3 * SECTOR);
    let marker = |o: usize| {
        (
            le_u64(&footer, o),
            le_u32(&footer, o + 8),
            le_u32(&footer, o + 12),
        )
    };
    let problem = if marker(0).1 != 0 || marker(0).2 != MARKER_FOOTER {
        Some((at, "the footer marker (size 0, type 3) is missing"))
    } else if !footer[512..].starts_with(b"KDMV") {
        Some((at + SECTOR, "the footer has no KDMV magic"))
    } else if marker(1024) != (0, 0, MARKER_END_OF_STREAM) {
        Some((
            at + 2 * SECTOR,
            "the end-of-stream marker is missing after the footer",
        ))
    } else {
        None
    };
    if let Some((offset, msg)) = problem {
        return Err(ImageError::parse(
            path,
            LAYER_HEADER,
            offset,
            format!("gdOffset says the grain directory is in a footer: {msg}"),
        ));
    }
    Ok((footer[512..512 + KDMV_HEADER_LEN].to_vec(), at + SECTOR))
}

impl SparseExtent {
    /// Bytes `in_grain..` of a compressed grain at `offset`.
    pub(super) fn read_compressed(
        &self,
        buf: &mut [u8],
        offset: u64,
        in_grain: u64,
    ) -> io::Result<()> {
        let grain = self
            .caches
            .grains
            .get_or_load(self.key(Kind::Grain, offset), || self.inflate(offset))?;
        let start = in_grain as usize;
        let part = grain.get(start..start + buf.len()).ok_or_else(|| {
            read_error(
                &self.path,
                LAYER_COMPRESSED,
                offset,
                format!(
                    "the grain inflates to {} bytes, short of byte {} the read needs",
                    grain.len(),
                    start + buf.len()
                ),
            )
        })?;
        buf.copy_from_slice(part);
        Ok(())
    }

    /// Inflate the compressed grain at `offset`: a marker (lba u64, size
    /// u32) then zlib data where the extent has markers, else zlib data
    /// straight away, no more than a grain of it (`vmdk_read_extent`:
    /// size not 0 and at most two grains, the output at most one grain,
    /// the stream whole).
    fn inflate(&self, offset: u64) -> io::Result<Vec<u8>> {
        let l = &self.layout;
        let err = |msg: String| read_error(&self.path, LAYER_COMPRESSED, offset, msg);
        let file_len = self.file.len();
        let (data_at, size) = if l.markers {
            if offset.checked_add(12).is_none_or(|e| e > file_len) {
                return Err(err(format!(
                    "the grain marker is past the end of the file ({file_len} bytes)"
                )));
            }
            let mut marker = [0u8; 12];
            self.file.read_exact_at(&mut marker, offset)?;
            (offset + 12, u64::from(le_u32(&marker, 8)))
        } else {
            if offset >= file_len {
                return Err(err(format!(
                    "the grain is past the end of the file ({file_len} bytes)"
                )));
            }
            (offset, l.grain_bytes.min(file_len - offset))
        };
        if size == 0 || size > 2 * l.grain_bytes {
            return Err(err(format!(
                "the grain marker's size {size} is not within 1..={} (two grains)",
                2 * l.grain_bytes
            )));
        }
        if data_at + size > file_len {
            return Err(err(format!(
                "the grain marker's size {size} runs past the end of the file ({file_len} bytes)"
            )));
        }
        let mut data = vec![0u8; size as usize];
        self.file.read_exact_at(&mut data, data_at)?;
        inflate_grain(&data, l.grain_bytes as usize).map_err(err)
    }
}

/// Inflate a zlib stream into at most `grain` bytes; the stream must end.
fn inflate_grain(data: &[u8], grain: usize) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; grain + 1];
    let mut z = Decompress::new(true);
    loop {
        let (read, written) = (z.total_in() as usize, z.total_out() as usize);
        let status = z
            .decompress(&data[read..], &mut out[written..], FlushDecompress::Finish)
            .map_err(|e| format!("the zlib data is corrupt: {e}"))?;
        let done = z.total_out() as usize;
        if done > grain {
            return Err(format!(
                "the zlib data inflates past the grain ({grain} bytes)"
            ));
        }
        match status {
            Status::StreamEnd => {
                out.truncate(done);
                return Ok(out);
            }
            _ if z.total_in() as usize == read && done == written => {
                return Err(format!(
                    "the zlib data ends after {} bytes without the end of its stream",
                    data.len()
                ))
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::vmdk::header::{
        COMPRESSION_DEFLATE, FLAG_MARKERS, GD_AT_END, KDMV_COMPRESS_ALGORITHM, KDMV_OVERHEAD,
        KDMV_VERSION,
    };
    use crate::image::vmdk::test_support::{guest_bytes, open_one, refused, timed, Sparse};
    use std::io::Write;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    /// A streamOptimized file: grain 2 compressed at sector 8 behind a
    /// marker (`size` as given, or the stream's own length).
    fn stream(payload: &[u8], size: Option<u32>) -> Vec<u8> {
        let mut img = Sparse::new(FLAG_MARKERS | (1 << 16), &[(2, 8)], "");
        img.put32(KDMV_VERSION, 3);
        img.bytes[KDMV_COMPRESS_ALGORITHM..KDMV_COMPRESS_ALGORITHM + 2]
            .copy_from_slice(&COMPRESSION_DEFLATE.to_le_bytes());
        let z = zlib(payload);
        img.bytes.truncate(8 * 512);
        img.bytes.extend_from_slice(&16u64.to_le_bytes());
        img.bytes
            .extend_from_slice(&size.unwrap_or(z.len() as u32).to_le_bytes());
        img.bytes.extend_from_slice(&z);
        img.bytes.resize(img.bytes.len().div_ceil(512) * 512, 0);
        img.bytes
    }

    #[test]
    fn compressed_grains_inflate_and_lying_markers_fail_their_read() {
        let payload: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let o = open_one(stream(&payload, None)).unwrap();
        assert_eq!(o.container.compression.as_deref(), Some("deflate"));
        assert_eq!(o.container.subformat.as_deref(), Some("streamOptimized"));
        let g = guest_bytes(&o);
        assert_eq!(&g[2 * 4096..3 * 4096], &payload[..]);

        let read = |bytes: Vec<u8>| {
            let g = open_one(bytes).unwrap().guest.unwrap();
            let mut buf = [0u8; 512];
            timed(|| g.read_exact_at(&mut buf, 2 * 4096).unwrap_err().to_string())
        };
        let e = read(stream(&payload, Some(3 * 4096)));
        assert!(
            e.contains("VMDK compressed grain at byte 4096") && e.contains("marker's size 12288"),
            "{e}"
        );
        let e = read(stream(&payload, Some(4000)));
        assert!(e.contains("past the end of the file"), "{e}");
        let e = read(stream(&[7u8; 5000], None));
        assert!(e.contains("inflates past the grain"), "{e}");
        let mut bad = stream(&payload, None);
        bad[8 * 512 + 14] ^= 0xff;
        let e = read(bad);
        assert!(e.contains("VMDK compressed grain"), "{e}");
        // A short grain reads where it has bytes and fails past them.
        let g = open_one(stream(&payload[..1000], None))
            .unwrap()
            .guest
            .unwrap();
        let mut buf = [0u8; 1000];
        g.read_exact_at(&mut buf, 2 * 4096).unwrap();
        assert!(g.read_exact_at(&mut buf, 2 * 4096 + 512).is_err());
    }

    #[test]
    fn a_footer_gives_the_grain_directory_when_the_header_says_at_end() {
        let payload = vec![3u8; 4096];
        let mut bytes = stream(&payload, None);
        let header = bytes[..512].to_vec();
        let mut footer = vec![0u8; 1536];
        footer[12..16].copy_from_slice(&MARKER_FOOTER.to_le_bytes());
        footer[512..1024].copy_from_slice(&header);
        bytes.extend_from_slice(&footer);
        bytes[KDMV_GD_OFFSET..KDMV_GD_OFFSET + 8].copy_from_slice(&GD_AT_END.to_le_bytes());
        let o = open_one(bytes.clone()).unwrap();
        assert_eq!(&guest_bytes(&o)[2 * 4096..3 * 4096], &payload[..]);
        // The footer's gdOffset at end again: past the end.
        let at = bytes.len() - 1024 + KDMV_GD_OFFSET;
        let mut again = bytes.clone();
        again[at..at + 8].copy_from_slice(&GD_AT_END.to_le_bytes());
        refused(open_one(again), &[&format!("at byte {at}"), "gdOffset"]);
        // No end-of-stream marker.
        let mut bad = bytes;
        let eos = bad.len() - 512 + 12;
        bad[eos] = 9;
        refused(open_one(bad), &["end-of-stream marker"]);
        // Too short for a footer.
        let mut tiny = Sparse::new(0, &[], "").bytes;
        tiny.truncate(1024);
        tiny[KDMV_GD_OFFSET..KDMV_GD_OFFSET + 8].copy_from_slice(&GD_AT_END.to_le_bytes());
        tiny[KDMV_OVERHEAD] = 0;
        refused(open_one(tiny), &["at byte 56", "too few"]);
    }
}
