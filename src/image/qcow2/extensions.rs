//! The header extensions after the header (`qcow2_read_extensions`): the
//! backing format, the external data file's name, the feature name table;
//! and the incompatible feature bits checked, an unknown one named from
//! that table (`report_unsupported_feature`).

use super::header::{bad, Header, INCOMPAT_DATA_FILE, MIN_CLUSTER_BITS};
use super::{bytes_at, string_at, EXTENSION};
use crate::bytes::{be_u32, read_bytes, ReadAt};
use crate::image::ImageError;
use std::path::Path;

/// QEMU keeps the backing format in `char backing_format[16]`
/// (block_int-common.h): qcow2_read_extensions refuses 16 bytes or more.
const MAX_BACKING_FORMAT: u64 = 15;

/// Dirty (0), corrupt (1), data file, compression type, extended L2: the
/// bits QEMU knows (`QCOW2_INCOMPAT_MASK`). A dirty image has refcounts
/// to repair and a corrupt one may not be written; both read as they are.
const INCOMPAT_KNOWN: u64 = 0x1f;
/// Autoclear bit 1, "raw external data" (`QCOW2_AUTOCLEAR_DATA_FILE_RAW`).
pub(super) const AUTOCLEAR_DATA_FILE_RAW: u64 = 1 << 1;

/// Header extension types (spec, "Header extensions").
const EXT_END: u32 = 0;
pub(super) const EXT_BACKING_FORMAT: u32 = 0xe279_2aca;
const EXT_FEATURE_TABLE: u32 = 0x6803_f857;
pub(super) const EXT_DATA_FILE: u32 = 0x4441_5441;
/// One feature name table entry: type, bit, 46 bytes of name.
const FEATURE_ENTRY_BYTES: u64 = 48;

/// What the header extensions say (qcow2.c `qcow2_read_extensions`): each
/// string with the byte it was read at.
#[derive(Default)]
pub(super) struct Extensions {
    pub(super) backing_format: Option<(String, u64)>,
    pub(super) data_file: Option<(String, u64)>,
    /// Where the feature name table is and its length, read only to name
    /// an unknown feature.
    pub(super) feature_table: Option<(u64, u64)>,
}

impl Header {
    /// Refuse the incompatible features we do not read, naming each bit
    /// (and its name, when the image's feature name table gives one), as
    /// qcow2.c `report_unsupported_feature` does; and the extended L2
    /// entries qemu refuses for clusters below 16 KiB.
    pub(super) fn check_features(
        &self,
        src: &dyn ReadAt,
        path: &Path,
        extensions: Option<&Extensions>,
    ) -> Result<(), ImageError> {
        let unknown = self.incompatible & !INCOMPAT_KNOWN;
        if unknown != 0 {
            let table = extensions.and_then(|e| e.feature_table);
            let names = table.map_or_else(Vec::new, |t| feature_names(src, t));
            let bits: Vec<String> = (0..64)
                .filter(|bit| unknown & (1u64 << bit) != 0)
                .map(|bit| match names.iter().find(|(b, _)| *b == bit) {
                    Some((_, name)) => format!("bit {bit} ({name:?})"),
                    None => format!("bit {bit}"),
                })
                .collect();
            return Err(bad(
                path,
                72,
                format!(
                    "incompatible_features {} set: a feature diskalign does not read (qemu refuses it too)",
                    bits.join(", ")
                ),
            ));
        }
        if self.geometry().extended && self.cluster_bits < MIN_CLUSTER_BITS + 5 {
            return Err(bad(
                path,
                20,
                format!(
                    "cluster_bits {} with extended L2 entries (incompatible_features bit 4) makes \
                     subclusters below 512 bytes: they need cluster_bits 14 or more",
                    self.cluster_bits
                ),
            ));
        }
        if self.autoclear & AUTOCLEAR_DATA_FILE_RAW != 0
            && self.incompatible & INCOMPAT_DATA_FILE == 0
        {
            return Err(bad(
                path,
                88,
                "autoclear_features bit 1 (raw external data) without incompatible_features bit 2 \
                 (external data file)",
            ));
        }
        Ok(())
    }
}

/// Walk the header extensions from `header_length` to their end (qcow2.c
/// `qcow2_read_extensions`): each is a type, a length and that many bytes
/// padded to 8; type 0 ends the list; unknown types are skipped. A length
/// that runs past the end of the area is refused, as qemu refuses it.
/// QEMU reads past the end of the file as zeros, which end the list: so
/// does an extension header the file cuts.
pub(super) fn read_extensions(
    src: &dyn ReadAt,
    path: &Path,
    header: &Header,
) -> Result<Extensions, ImageError> {
    let end = header.extensions_end();
    let mut found = Extensions::default();
    let mut at = header.header_length;
    while at < end && at + 8 <= src.len() {
        let head = bytes_at(src, path, EXTENSION, at, 8)?;
        let (kind, len) = (be_u32(&head, 0), u64::from(be_u32(&head, 4)));
        let data = at + 8;
        if data > end || len > end - data {
            return Err(ImageError::parse(
                path,
                EXTENSION,
                at,
                format!(
                    "extension 0x{kind:08x} length {len} runs past the end of the extension area at byte {end}"
                ),
            ));
        }
        match kind {
            EXT_END => break,
            EXT_BACKING_FORMAT => {
                if len > MAX_BACKING_FORMAT {
                    return Err(ImageError::parse(
                        path,
                        EXTENSION,
                        at,
                        format!(
                            "backing file format length {len} is over qemu's {MAX_BACKING_FORMAT} bytes"
                        ),
                    ));
                }
                let name = string_at(src, path, EXTENSION, data, len, "backing file format")?;
                found.backing_format = Some((name, data));
            }
            EXT_DATA_FILE => {
                let name = string_at(src, path, EXTENSION, data, len, "external data file name")?;
                found.data_file = Some((name, data));
            }
            EXT_FEATURE_TABLE => found.feature_table = Some((data, len)),
            _ => {}
        }
        // `len` is below `end`, at most the 2 MiB first cluster.
        at = data + len.next_multiple_of(8);
    }
    Ok(found)
}

/// The incompatible features the feature name table names, by bit: only
/// to name an unknown feature in an error, so a table that cannot be read
/// names nothing.
fn feature_names(src: &dyn ReadAt, (at, len): (u64, u64)) -> Vec<(u32, String)> {
    let Ok(table) = read_bytes(src, EXTENSION, at, len) else {
        return Vec::new();
    };
    table
        .chunks_exact(FEATURE_ENTRY_BYTES as usize)
        .filter(|e| e[0] == 0)
        .map(|e| {
            let name = &e[2..];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            (
                u32::from(e[1]),
                String::from_utf8_lossy(&name[..end]).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::qcow2::test_support::{header_error, refused, Img, TOP};

    #[test]
    fn an_extension_length_that_lies_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(112, 0x1234_5678);
        img.u32(116, 500);
        assert_eq!(
            refused(&img),
            format!("{TOP}: qcow2 header extension at byte 112: extension 0x12345678 length 500 runs past the end of the extension area at byte 512")
        );
        let mut img = Img::new(9, 64 << 10, false);
        img.extension(EXT_BACKING_FORMAT, &[b'q'; 16]);
        img.backing("base", None);
        assert_eq!(
            refused(&img),
            format!("{TOP}: qcow2 header extension at byte 112: backing file format length 16 is over qemu's 15 bytes")
        );
    }

    #[test]
    fn unknown_incompatible_features_are_named() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, 1 << 5 | 1 << 40 | 1);
        let mut entry = vec![0u8, 5];
        entry.extend_from_slice(b"shiny new thing");
        entry.resize(48, 0);
        img.extension(EXT_FEATURE_TABLE, &entry);
        header_error(&img, 72, "incompatible_features bit 5 (\"shiny new thing\"), bit 40 set: a feature diskalign does not read (qemu refuses it too)");
    }
}
