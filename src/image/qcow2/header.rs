//! The qcow2 header, versions 2 and 3, read and checked as
//! `qcow2_do_open` checks it before anything is allocated by its counts:
//! the fields, the compression type, the L1 table's bounds.

use super::cluster::Geometry;
use super::{bytes_at, HEADER};
use crate::bytes::{be_u32, be_u64, ReadAt};
use crate::image::{Container, ContainerFormat, ImageError};
use std::path::Path;

pub(super) const MAGIC: &[u8; 4] = b"QFI\xfb";
/// The version 2 header, and the fields every version has (spec, "Header").
const V2_HEADER_BYTES: u64 = 72;
/// The least a version 3 header holds: up to and with `header_length`.
const V3_HEADER_BYTES: u64 = 104;
/// Byte of the optional `compression_type` field (version 3).
const COMPRESSION_TYPE_AT: u64 = 104;
/// qcow2.h `MIN_CLUSTER_BITS`, `MAX_CLUSTER_BITS`: QEMU opens nothing else.
pub(super) const MIN_CLUSTER_BITS: u32 = 9;
const MAX_CLUSTER_BITS: u32 = 21;
/// qcow2.h `QCOW_MAX_L1_SIZE`: the largest L1 table QEMU reads, in bytes.
const MAX_L1_BYTES: u64 = 32 << 20;

/// Incompatible feature bits (qcow2.h `QCOW2_INCOMPAT_*`).
pub(super) const INCOMPAT_DATA_FILE: u64 = 1 << 2;
pub(super) const INCOMPAT_COMPRESSION: u64 = 1 << 3;
pub(super) const INCOMPAT_EXTL2: u64 = 1 << 4;

/// How compressed clusters are compressed (spec, `compression_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Compression {
    /// Raw deflate, no zlib header (qcow2-threads.c `qcow2_compress`).
    Zlib,
    /// One or more zstd frames (qcow2-threads.c `qcow2_zstd_compress`).
    Zstd,
}

impl Compression {
    pub(super) fn name(self) -> &'static str {
        match self {
            Compression::Zlib => "zlib",
            Compression::Zstd => "zstd",
        }
    }
}

/// The header fields the reader uses, checked as `qcow2_do_open` checks
/// them.
#[derive(Debug)]
pub(super) struct Header {
    pub(super) version: u32,
    pub(super) backing_file_offset: u64,
    pub(super) backing_file_size: u32,
    pub(super) cluster_bits: u32,
    pub(super) size: u64,
    pub(super) crypt_method: u32,
    pub(super) l1_size: u32,
    pub(super) l1_table_offset: u64,
    pub(super) incompatible: u64,
    pub(super) autoclear: u64,
    pub(super) header_length: u64,
    pub(super) compression: Compression,
}

impl Header {
    /// Read and check the header (qcow2.c `qcow2_do_open`, up to the L1
    /// table).
    pub(super) fn read(src: &dyn ReadAt, path: &Path) -> Result<Header, ImageError> {
        let fixed = header_bytes(src, path, V2_HEADER_BYTES, "every version's")?;
        if &fixed[..4] != MAGIC {
            return Err(bad(path, 0, "magic is not QFI\\xfb: not a qcow2 image"));
        }
        let version = be_u32(&fixed, 4);
        if !(2..=3).contains(&version) {
            return Err(bad(
                path,
                4,
                format!("version {version} is not 2 or 3 (the versions qemu reads)"),
            ));
        }
        let cluster_bits = be_u32(&fixed, 20);
        if !(MIN_CLUSTER_BITS..=MAX_CLUSTER_BITS).contains(&cluster_bits) {
            return Err(bad(
                path,
                20,
                format!(
                    "cluster_bits {cluster_bits} is outside {MIN_CLUSTER_BITS}..={MAX_CLUSTER_BITS} \
                     (512-byte to 2 MiB clusters, what qemu opens)"
                ),
            ));
        }
        let mut header = Header {
            version,
            backing_file_offset: be_u64(&fixed, 8),
            backing_file_size: be_u32(&fixed, 16),
            cluster_bits,
            size: be_u64(&fixed, 24),
            crypt_method: be_u32(&fixed, 32),
            l1_size: be_u32(&fixed, 36),
            l1_table_offset: be_u64(&fixed, 40),
            incompatible: 0,
            autoclear: 0,
            header_length: V2_HEADER_BYTES,
            compression: Compression::Zlib,
        };
        if version == 3 {
            header.read_v3(src, path)?;
        }
        header.check_fields(path)?;
        Ok(header)
    }

    /// The version 3 fields: feature bits, `header_length` and, when the
    /// header is long enough to hold it, `compression_type`.
    fn read_v3(&mut self, src: &dyn ReadAt, path: &Path) -> Result<(), ImageError> {
        let v3 = header_bytes(src, path, V3_HEADER_BYTES, "a version 3")?;
        self.incompatible = be_u64(&v3, 72);
        self.autoclear = be_u64(&v3, 88);
        let refcount_order = be_u32(&v3, 96);
        if refcount_order > 6 {
            return Err(bad(
                path,
                96,
                format!("refcount_order {refcount_order} is above 6 (64-bit refcounts)"),
            ));
        }
        let length = u64::from(be_u32(&v3, 100));
        let cluster = 1u64 << self.cluster_bits;
        if length < V3_HEADER_BYTES {
            return Err(bad(
                path,
                100,
                format!("header_length {length} is below the {V3_HEADER_BYTES} bytes of a version 3 header"),
            ));
        }
        if length > cluster {
            return Err(bad(
                path,
                100,
                format!(
                    "header_length {length} exceeds the {cluster}-byte cluster the header is in"
                ),
            ));
        }
        if length > src.len() {
            return Err(bad(
                path,
                100,
                format!(
                    "header_length {length} runs past the end of the file at byte {} (truncated?)",
                    src.len()
                ),
            ));
        }
        self.header_length = length;
        // Absent, the field reads as 0, zlib (spec, "Additional fields").
        if length > COMPRESSION_TYPE_AT {
            let byte = bytes_at(src, path, HEADER, COMPRESSION_TYPE_AT, 1)?[0];
            self.compression = self.compression_type(path, byte)?;
        } else if self.incompatible & INCOMPAT_COMPRESSION != 0 {
            return Err(bad(
                path,
                72,
                "incompatible_features bit 3 (compression type) is set but the header is too \
                 short to hold compression_type",
            ));
        }
        Ok(())
    }

    /// `compression_type` and incompatible bit 3 must agree (qcow2.c
    /// `validate_compression_type`).
    fn compression_type(&self, path: &Path, byte: u8) -> Result<Compression, ImageError> {
        let flagged = self.incompatible & INCOMPAT_COMPRESSION != 0;
        match (byte, flagged) {
            (0, false) => Ok(Compression::Zlib),
            (1, true) => Ok(Compression::Zstd),
            (0, true) => Err(bad(
                path,
                72,
                "incompatible_features bit 3 (compression type) is set but compression_type is 0 (zlib)",
            )),
            (1, false) => Err(bad(
                path,
                COMPRESSION_TYPE_AT,
                "compression_type 1 (zstd) without incompatible_features bit 3 set",
            )),
            (n, _) => Err(bad(
                path,
                COMPRESSION_TYPE_AT,
                format!("compression_type {n} is not 0 (zlib) or 1 (zstd)"),
            )),
        }
    }

    /// The fields every version has, checked before anything is read by
    /// them.
    fn check_fields(&self, path: &Path) -> Result<(), ImageError> {
        let cluster = self.geometry().cluster_bytes();
        if self.backing_file_offset > cluster {
            return Err(bad(
                path,
                8,
                format!(
                    "backing_file_offset {} is past the first cluster (the name must be in its {cluster} bytes)",
                    self.backing_file_offset
                ),
            ));
        }
        if self.crypt_method > 2 {
            return Err(bad(
                path,
                32,
                format!(
                    "crypt_method {} is not 0 (none), 1 (AES) or 2 (LUKS)",
                    self.crypt_method
                ),
            ));
        }
        Ok(())
    }

    /// The L1 table's bounds (qcow2.c `qcow2_validate_table` with
    /// `QCOW_MAX_L1_SIZE`, and "L1 table is too small"): it fits qemu's
    /// limit, maps the whole virtual size and lies in the file. Nothing
    /// is read yet.
    pub(super) fn check_l1(&self, src: &dyn ReadAt, path: &Path) -> Result<(), ImageError> {
        let geometry = self.geometry();
        let max = MAX_L1_BYTES / 8;
        let needed = self.size.div_ceil(geometry.l1_span());
        if needed > max {
            return Err(bad(
                path,
                24,
                format!(
                    "size {} bytes needs {needed} L1 entries with {}-byte clusters, more than \
                     the {max} of qemu's largest (32 MiB) L1 table",
                    self.size,
                    geometry.cluster_bytes()
                ),
            ));
        }
        let entries = u64::from(self.l1_size);
        if entries > max {
            return Err(bad(
                path,
                36,
                format!("l1_size {entries} entries exceeds the {max} of qemu's largest (32 MiB) L1 table"),
            ));
        }
        if entries < needed {
            return Err(bad(
                path,
                36,
                format!(
                    "l1_size {entries} entries cannot map size {} bytes, which needs {needed}",
                    self.size
                ),
            ));
        }
        let offset = self.l1_table_offset;
        if offset & geometry.cluster_mask() != 0 {
            return Err(bad(
                path,
                40,
                format!(
                    "l1_table_offset {offset} is not a multiple of the {}-byte cluster",
                    geometry.cluster_bytes()
                ),
            ));
        }
        let end = offset.checked_add(entries * 8);
        if entries > 0 && end.is_none_or(|e| e > src.len()) {
            return Err(bad(
                path,
                40,
                format!(
                    "l1_table_offset {offset} with l1_size {entries} (8 bytes each) runs past the \
                     end of the file at byte {}",
                    src.len()
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn geometry(&self) -> Geometry {
        Geometry {
            cluster_bits: self.cluster_bits,
            extended: self.incompatible & INCOMPAT_EXTL2 != 0,
        }
    }

    /// Where the header extensions end: at the backing file name, else at
    /// the end of the first cluster (qcow2_do_open, `ext_end`).
    pub(super) fn extensions_end(&self) -> u64 {
        if self.backing_file_offset != 0 {
            self.backing_file_offset
        } else {
            self.geometry().cluster_bytes()
        }
    }

    /// The guest disk's size as qemu gives it: whole 512-byte sectors
    /// (qcow2_do_open sets `total_sectors = size / 512`).
    pub(super) fn virtual_size(&self) -> u64 {
        self.size & !511
    }

    pub(super) fn container(&self, data_file: Option<String>) -> Container {
        let geometry = self.geometry();
        Container {
            format: ContainerFormat::Qcow2,
            version: self.version.to_string(),
            unit_bytes: Some(geometry.cluster_bytes()),
            subunit_bytes: geometry.extended.then(|| geometry.unit_bytes()),
            virtual_size: self.virtual_size(),
            data_file,
            compression: Some(self.compression.name().to_string()),
            encrypted: self.crypt_method != 0,
            ..Container::default()
        }
    }
}

/// The first `len` bytes of the file, or the error naming the header as
/// truncated.
fn header_bytes(
    src: &dyn ReadAt,
    path: &Path,
    len: u64,
    whose: &str,
) -> Result<Vec<u8>, ImageError> {
    if src.len() < len {
        return Err(bad(
            path,
            0,
            format!(
                "{whose} header needs {len} bytes but the file ends at byte {} (truncated?)",
                src.len()
            ),
        ));
    }
    bytes_at(src, path, HEADER, 0, len)
}

pub(super) fn bad(path: &Path, offset: u64, message: impl Into<String>) -> ImageError {
    ImageError::parse(path, HEADER, offset, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::qcow2::extensions::AUTOCLEAR_DATA_FILE_RAW;
    use crate::image::qcow2::test_support::{guest, header_error, refused, Img};

    #[test]
    fn an_l1_table_of_2_to_the_31_entries_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(36, 1 << 31);
        header_error(
            &img,
            36,
            "l1_size 2147483648 entries exceeds the 4194304 of qemu's largest (32 MiB) L1 table",
        );
    }

    #[test]
    fn an_l1_table_too_small_misplaced_or_past_the_end_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(36, 1);
        header_error(
            &img,
            36,
            "l1_size 1 entries cannot map size 65536 bytes, which needs 2",
        );
        img.u32(36, 2);
        img.u64(40, 4096);
        header_error(&img, 40, "l1_table_offset 4096 with l1_size 2 (8 bytes each) runs past the end of the file at byte 4096");
        img.u64(40, u64::MAX - 511);
        header_error(&img, 40, "l1_table_offset 18446744073709551104 with l1_size 2 (8 bytes each) runs past the end of the file at byte 4096");
        img.u64(40, 520);
        header_error(
            &img,
            40,
            "l1_table_offset 520 is not a multiple of the 512-byte cluster",
        );
    }

    #[test]
    fn a_virtual_size_beyond_qemu_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(24, 1 << 40);
        header_error(&img, 24, "size 1099511627776 bytes needs 33554432 L1 entries with 512-byte clusters, more than the 4194304 of qemu's largest (32 MiB) L1 table");
        img.u64(24, u64::MAX);
        assert!(refused(&img).contains("qcow2 header at byte 24: size 18446744073709551615"));
    }

    #[test]
    fn a_truncated_header_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.bytes.truncate(50);
        header_error(
            &img,
            0,
            "every version's header needs 72 bytes but the file ends at byte 50 (truncated?)",
        );
        let mut img = Img::new(9, 64 << 10, false);
        img.bytes.truncate(90);
        header_error(
            &img,
            0,
            "a version 3 header needs 104 bytes but the file ends at byte 90 (truncated?)",
        );
    }

    #[test]
    fn a_header_length_that_lies_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(100, 96);
        header_error(
            &img,
            100,
            "header_length 96 is below the 104 bytes of a version 3 header",
        );
        img.u32(100, 1024);
        header_error(
            &img,
            100,
            "header_length 1024 exceeds the 512-byte cluster the header is in",
        );
        let mut img = Img::new(16, 64 << 10, false);
        img.bytes.truncate(1000);
        img.u32(100, 4096);
        header_error(
            &img,
            100,
            "header_length 4096 runs past the end of the file at byte 1000 (truncated?)",
        );
    }

    #[test]
    fn header_fields_out_of_range_are_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(4, 4);
        header_error(&img, 4, "version 4 is not 2 or 3 (the versions qemu reads)");
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(20, 22);
        header_error(
            &img,
            20,
            "cluster_bits 22 is outside 9..=21 (512-byte to 2 MiB clusters, what qemu opens)",
        );
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, INCOMPAT_EXTL2);
        assert!(refused(&img)
            .contains("qcow2 header at byte 20: cluster_bits 9 with extended L2 entries"));
        let mut img = Img::new(9, 64 << 10, false);
        img.put(104, &[1]);
        header_error(
            &img,
            104,
            "compression_type 1 (zstd) without incompatible_features bit 3 set",
        );
        img.put(104, &[2]);
        header_error(&img, 104, "compression_type 2 is not 0 (zlib) or 1 (zstd)");
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, INCOMPAT_COMPRESSION);
        header_error(&img, 72, "incompatible_features bit 3 (compression type) is set but compression_type is 0 (zlib)");
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(88, AUTOCLEAR_DATA_FILE_RAW);
        header_error(&img, 88, "autoclear_features bit 1 (raw external data) without incompatible_features bit 2 (external data file)");
    }

    #[test]
    fn the_virtual_size_is_whole_sectors_as_qemu_gives_it() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(24, (64 << 10) - 100);
        assert_eq!(guest(&img).len(), (64 << 10) - 512);
    }
}
