//! Compressed clusters: a cluster inflated whole from raw deflate or zstd
//! frames, bounded to the cluster (`qcow2_co_preadv_compressed`,
//! `qcow2_decompress`, `qcow2_zstd_decompress`).

use super::disk::Disk;
use super::header::Compression;
use super::COMPRESSED;
use crate::bytes::read_bytes;
use std::io;
use std::rc::Rc;

/// The largest zstd window accepted: a qcow2 cluster is at most 2 MiB and
/// libzstd, given the cluster whole as QEMU gives it, writes one frame no
/// wider than its content; the bound keeps a hostile frame from making the
/// decoder buffer more than this.
const MAX_ZSTD_WINDOW: u64 = 8 << 20;

impl Disk {
    /// The whole cluster a compressed descriptor names, inflated (qcow2.c
    /// `qcow2_co_preadv_compressed`): the data is read from the image file
    /// (never an external data file), up to its end as qemu's reads past
    /// the end read zeros, and must inflate to exactly one cluster.
    pub(super) fn inflated(&self, descriptor: u64, entry_at: u64) -> io::Result<Rc<[u8]>> {
        self.inflated.get_or_load(descriptor, || {
            let (offset, bytes) = self.geometry.compressed(descriptor);
            let file_len = self.file.len();
            if offset >= file_len {
                return Err(self.error(
                    COMPRESSED,
                    offset,
                    format!("the compressed data of the L2 entry at byte {entry_at} starts past the end of the file at byte {file_len}"),
                ));
            }
            let input = read_bytes(&*self.file, COMPRESSED, offset, bytes.min(file_len - offset))
                .map_err(|e| self.error(COMPRESSED, offset, e.message))?;
            let mut cluster = vec![0u8; self.geometry.cluster_bytes() as usize];
            let inflated = match self.compression {
                Compression::Zlib => inflate(&input, &mut cluster),
                Compression::Zstd => unzstd(&input, &mut cluster),
            };
            inflated.map_err(|why| {
                self.error(
                    COMPRESSED,
                    offset,
                    format!(
                        "{} bytes of {} data (L2 entry at byte {entry_at}) do not inflate to the {}-byte cluster: {why}",
                        input.len(),
                        self.compression.name(),
                        cluster.len()
                    ),
                )
            })?;
            Ok(cluster)
        })
    }
}

/// Inflate raw deflate data into exactly `out` (qcow2-threads.c
/// `qcow2_decompress`): the data is known to the sector only, so what
/// follows the stream is ignored, and a stream that ends before the
/// cluster is full is corrupt.
fn inflate(input: &[u8], out: &mut [u8]) -> Result<(), String> {
    use flate2::{Decompress, FlushDecompress, Status};
    let mut inflater = Decompress::new(false);
    loop {
        let (read, written) = (inflater.total_in(), inflater.total_out());
        let status = inflater
            .decompress(
                &input[read as usize..],
                &mut out[written as usize..],
                FlushDecompress::Finish,
            )
            .map_err(|e| e.to_string())?;
        let done = inflater.total_out() as usize;
        if done == out.len() {
            return Ok(());
        }
        let stuck = inflater.total_in() == read && inflater.total_out() == written;
        if status == Status::StreamEnd || stuck {
            return Err(format!("the deflate stream ends after {done} bytes"));
        }
    }
}

/// Decode zstd frames into exactly `out` (qcow2-threads.c
/// `qcow2_zstd_decompress`): frames follow one another until the cluster
/// is full, the last one must end there, and what follows is sector
/// padding. Skippable frames are skipped, as libzstd does; a checksum,
/// when a frame has one, must match.
fn unzstd(input: &[u8], out: &mut [u8]) -> Result<(), String> {
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
    use std::io::Read;
    let mut decoder = FrameDecoder::new();
    let mut rest = input;
    let mut done = 0usize;
    while done < out.len() {
        if let Some(skip) = skippable_frame(rest) {
            rest = rest
                .get(skip..)
                .ok_or("a skippable frame runs past the data")?;
            continue;
        }
        check_zstd_window(rest, (out.len() - done) as u64)?;
        decoder.reset(&mut rest).map_err(|e| e.to_string())?;
        loop {
            decoder
                .decode_blocks(&mut rest, BlockDecodingStrategy::UptoBlocks(1))
                .map_err(|e| e.to_string())?;
            done += decoder.read(&mut out[done..]).map_err(|e| e.to_string())?;
            if decoder.can_collect() > 0 {
                return Err("the frames hold more than one cluster".into());
            }
            if decoder.is_finished() {
                break;
            }
        }
        if let (Some(stored), Some(computed)) = (
            decoder.get_checksum_from_data(),
            decoder.get_calculated_checksum(),
        ) {
            if stored != computed {
                return Err(format!(
                    "frame checksum 0x{stored:08x} does not match the data's 0x{computed:08x}"
                ));
            }
        }
    }
    Ok(())
}

/// The length of the skippable frame `data` starts with (RFC 8878,
/// "Skippable Frames": magic 0x184D2A5?, a 4-byte size, that many bytes).
fn skippable_frame(data: &[u8]) -> Option<usize> {
    let magic = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    if magic & 0xffff_fff0 != 0x184d_2a50 {
        return None;
    }
    let size = u32::from_le_bytes(data.get(4..8)?.try_into().ok()?);
    Some(8 + size as usize)
}

/// Refuse a frame that would make the decoder hold more than the cluster
/// needs: its content size, when declared, must fit what is left of the
/// cluster, and its window [`MAX_ZSTD_WINDOW`] (RFC 8878, "Frame Header").
/// A header that does not parse is left to the decoder to refuse.
fn check_zstd_window(frame: &[u8], room: u64) -> Result<(), String> {
    let Some(&descriptor) = frame.get(4) else {
        return Ok(());
    };
    let single_segment = descriptor & 0x20 != 0;
    let size_flag = descriptor >> 6;
    let dict_bytes = [0usize, 1, 2, 4][usize::from(descriptor & 3)];
    let mut at = 5;
    let mut window = None;
    if !single_segment {
        let Some(&w) = frame.get(at) else {
            return Ok(());
        };
        let base = 1u64 << (10 + u32::from(w >> 3));
        window = Some(base + base / 8 * u64::from(w & 7));
        at += 1;
    }
    at += dict_bytes;
    let size_bytes = match size_flag {
        0 if single_segment => 1,
        0 => 0,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    if let Some(field) = frame.get(at..at + size_bytes).filter(|f| !f.is_empty()) {
        let mut le = [0u8; 8];
        le[..size_bytes].copy_from_slice(field);
        let content = u64::from_le_bytes(le) + if size_flag == 1 { 256 } else { 0 };
        if content > room {
            return Err(format!(
                "a frame declares {content} bytes where {room} are left of the cluster"
            ));
        }
    }
    match window {
        Some(w) if w > MAX_ZSTD_WINDOW => Err(format!(
            "a frame's window of {w} bytes is over the {MAX_ZSTD_WINDOW} accepted"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::qcow2::header::INCOMPAT_COMPRESSION;
    use crate::image::qcow2::map::OFLAG_COMPRESSED;
    use crate::image::qcow2::test_support::{files, guest, opened, read, Img, TOP};

    fn deflated(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    /// An image whose cluster 1 of the guest is `compressed`, stored at an
    /// unaligned host byte in cluster 4.
    fn with_compressed(compressed: &[u8], zstd: bool) -> (Img, u64) {
        let mut img = Img::new(9, 64 << 10, false);
        if zstd {
            img.u64(72, INCOMPAT_COMPRESSION);
            img.put(104, &[1]);
        }
        let at = 4 * 512 + 100;
        img.put(at, compressed);
        let sectors = (at + compressed.len() - 1) / 512 - at / 512;
        let entry = OFLAG_COMPRESSED | (sectors as u64) << 61 | at as u64;
        img.l2(1, entry, 0);
        (img, at as u64)
    }

    #[test]
    fn compressed_clusters_inflate_with_zlib_and_zstd() {
        let cluster: Vec<u8> = (0..512).map(|i| (i % 13) as u8).collect();
        for (data, zstd_type) in [(deflated(&cluster), false), (zstd(&cluster), true)] {
            let (img, _) = with_compressed(&data, zstd_type);
            let g = guest(&img);
            assert_eq!(read(&g, 512, 512).unwrap(), cluster);
            assert_eq!(read(&g, 700, 10).unwrap(), cluster[188..198]);
            let name = if zstd_type { "zstd" } else { "zlib" };
            let c = opened(&files(&img)).container;
            assert_eq!(c.compression.as_deref(), Some(name));
        }
    }

    #[test]
    fn a_corrupt_compressed_cluster_is_a_read_error_naming_it() {
        let cluster = vec![7u8; 512];
        let mut short = deflated(&cluster[..300]);
        short.truncate(short.len());
        let (img, at) = with_compressed(&short, false);
        let e = read(&guest(&img), 512, 512).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{TOP}: qcow2 compressed cluster at byte {at}: ")),
            "{e}"
        );
        assert!(e.contains("L2 entry at byte 1032"), "{e}");
        assert!(e.contains("deflate stream ends after 300 bytes"), "{e}");

        let (img, _) = with_compressed(&[0xff; 40], true);
        let e = read(&guest(&img), 512, 1).unwrap_err().to_string();
        assert!(e.contains("zstd data (L2 entry at byte 1032)"), "{e}");
    }

    #[test]
    fn zstd_frames_fill_the_cluster_exactly() {
        let half: Vec<u8> = (0..256).map(|i| i as u8).collect();
        let mut two = zstd(&half);
        let skip = [0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3];
        two.extend_from_slice(&skip);
        two.extend(zstd(&half));
        two.extend_from_slice(&[0xee; 9]); // sector padding
        let mut out = vec![0u8; 512];
        unzstd(&two, &mut out).unwrap();
        assert_eq!(out[..256], half[..]);
        assert_eq!(out[256..], half[..]);
        // Short of the cluster, and more than it.
        assert!(unzstd(&zstd(&half), &mut out).is_err());
        let e = unzstd(&zstd(&[1u8; 600]), &mut out).unwrap_err();
        assert_eq!(e, "the frames hold more than one cluster");
        // A single-segment frame declaring 256 + 344 bytes.
        let e = unzstd(&[0x28, 0xb5, 0x2f, 0xfd, 0x60, 88, 1, 0, 0, 0], &mut out).unwrap_err();
        assert_eq!(
            e,
            "a frame declares 600 bytes where 512 are left of the cluster"
        );
    }

    #[test]
    fn a_zstd_window_over_the_bound_is_refused_before_decoding() {
        // Magic, descriptor (no single segment), window 2^30.
        let frame = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 20 << 3, 0, 0, 0];
        let e = unzstd(&frame, &mut [0u8; 512]).unwrap_err();
        assert!(e.contains("window of 1073741824 bytes"), "{e}");
    }

    #[test]
    fn a_deflate_stream_longer_than_the_cluster_stops_at_it() {
        let mut out = vec![0u8; 512];
        let long: Vec<u8> = (0..4000).map(|i| (i % 5) as u8).collect();
        inflate(&deflated(&long), &mut out).unwrap();
        assert_eq!(out[..], long[..512]);
        assert!(inflate(&[0xff; 10], &mut out).is_err());
    }
}
