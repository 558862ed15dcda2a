//! What an image names outside itself: the external data file, and the
//! backing file with the format the image declares for it, opened through
//! the chain (`qcow2_do_open`, "read the backing file name").

use super::extensions::Extensions;
use super::header::{bad, Header, INCOMPAT_DATA_FILE};
use super::{string_at, BACKING_NAME, EXTENSION};
use crate::bytes::ReadAt;
use crate::bytes::SharedReader;
use crate::image::{BackingFile, Chain, ContainerFormat, ImageError};
use std::path::Path;

/// The longest backing file name (spec, `backing_file_size`; qcow2_do_open).
const MAX_BACKING_NAME: u64 = 1023;

/// The external data file, when incompatible bit 2 says there is one: its
/// name and the byte it was read at. qemu refuses an image that needs one
/// and names none (without a `data-file` option, which we do not have).
pub(super) fn data_file_name(
    header: &Header,
    extensions: &Extensions,
    path: &Path,
) -> Result<Option<(String, u64)>, ImageError> {
    if header.incompatible & INCOMPAT_DATA_FILE == 0 {
        return Ok(None);
    }
    match &extensions.data_file {
        Some((name, at)) if !name.is_empty() => Ok(Some((name.clone(), *at))),
        _ => Err(bad(
            path,
            72,
            "incompatible_features bit 2 (external data file) is set but no header extension \
             0x44415441 names the data file",
        )),
    }
}

/// The backing file's name (qcow2_do_open, "read the backing file name"):
/// at most 1023 bytes and inside the first cluster; like qemu's C string
/// it ends at a NUL, and an empty name is no backing file.
fn backing_name(
    src: &dyn ReadAt,
    path: &Path,
    header: &Header,
) -> Result<Option<String>, ImageError> {
    let at = header.backing_file_offset;
    if at == 0 {
        return Ok(None);
    }
    let len = u64::from(header.backing_file_size);
    if len > MAX_BACKING_NAME {
        return Err(bad(
            path,
            16,
            format!("backing_file_size {len} is over qemu's {MAX_BACKING_NAME}-byte limit for a backing file name"),
        ));
    }
    let room = header.geometry().cluster_bytes() - at;
    if len > room {
        return Err(bad(
            path,
            16,
            format!(
                "backing_file_size {len} runs past the first cluster: the name at byte {at} has room for {room}"
            ),
        ));
    }
    let name = string_at(src, path, BACKING_NAME, at, len, "backing file name")?;
    Ok((!name.is_empty()).then_some(name))
}

/// Open the backing chain below this image, as the format it declares
/// (the backing format extension) or, with none declared, as its magic
/// says (qemu probes it too). Returns the backing guest (None inside when
/// the backing file is encrypted) and the chain, or None without a backing
/// file.
pub(super) fn open_backing(
    src: &dyn ReadAt,
    path: &Path,
    chain: &mut Chain,
    header: &Header,
    extensions: &Extensions,
) -> Result<Option<Backing>, ImageError> {
    let Some(name) = backing_name(src, path, header)? else {
        return Ok(None);
    };
    let declared = match &extensions.backing_format {
        Some((format, at)) => Some(declared_format(path, format, *at)?),
        None => None,
    };
    let opened = chain.backing(path, &name, header.backing_file_offset, declared)?;
    Ok(Some(opened))
}

/// A backing file's guest disk (None when it is encrypted) and the chain
/// from it down.
type Backing = (Option<SharedReader>, Vec<BackingFile>);

/// qemu's name of a format, as `qemu-img create -F` writes it into the
/// backing format extension. "raw" is raw whatever magic the file has.
fn declared_format(path: &Path, name: &str, at: u64) -> Result<ContainerFormat, ImageError> {
    match name {
        "qcow2" => Ok(ContainerFormat::Qcow2),
        "raw" => Ok(ContainerFormat::Raw),
        "vmdk" => Ok(ContainerFormat::Vmdk),
        "vhdx" => Ok(ContainerFormat::Vhdx),
        "vdi" => Ok(ContainerFormat::Vdi),
        "vpc" => Ok(ContainerFormat::Vhd),
        other => Err(ImageError::parse(
            path,
            EXTENSION,
            at,
            format!(
                "backing file format {other:?} is not one diskalign reads (qcow2, raw, vmdk, vhdx, vdi, vpc)"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::qcow2::extensions::EXT_DATA_FILE;
    use crate::image::qcow2::header::INCOMPAT_DATA_FILE;
    use crate::image::qcow2::map::{OFLAG_COPIED, OFLAG_ZERO};
    use crate::image::qcow2::test_support::{
        files, header_error, opened, pattern, read, refused, refused_by, Img, TOP,
    };

    #[test]
    fn unallocated_clusters_read_the_backing_file_and_zeros_past_its_end() {
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base.raw", Some("raw"));
        img.l2(0, img.data(), 0);
        img.l2(1, OFLAG_ZERO, 0);
        let files = files(&img).with("/vm/base.raw", vec![0x11; 40 << 10]);
        let o = opened(&files);
        assert_eq!(o.container.backing.len(), 1);
        assert_eq!(o.container.backing[0].path, "/vm/base.raw");
        assert_eq!(o.container.backing[0].format, ContainerFormat::Raw);
        let all = read(&o.guest.unwrap(), 0, 64 << 10).unwrap();
        assert_eq!(all[0], pattern(0));
        assert!(all[512..1024].iter().all(|&b| b == 0)); // zero cluster
        assert!(all[1024..40 << 10].iter().all(|&b| b == 0x11)); // backing
        assert!(all[40 << 10..].iter().all(|&b| b == 0)); // past its end
    }

    #[test]
    fn a_declared_raw_backing_file_is_read_raw_and_an_undeclared_by_its_magic() {
        let mut base = Img::new(9, 64 << 10, false);
        base.l2(0, base.data(), 0);
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base", Some("raw"));
        let files = files(&img).with("/vm/base", base.bytes.clone());
        let g = opened(&files).guest.unwrap();
        assert_eq!(read(&g, 0, 4).unwrap(), b"QFI\xfb");

        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base", None);
        let files = self::files(&img).with("/vm/base", base.bytes.clone());
        let o = opened(&files);
        assert_eq!(o.container.backing[0].format, ContainerFormat::Qcow2);
        assert_eq!(read(&o.guest.unwrap(), 0, 1).unwrap(), [pattern(0)]);
    }

    #[test]
    fn an_external_data_file_holds_the_clusters_at_guest_offsets() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, INCOMPAT_DATA_FILE);
        img.extension(EXT_DATA_FILE, b"top.data");
        img.l2(0, OFLAG_COPIED, 0); // host cluster 0 of the data file
        img.l2(2, 1024 | OFLAG_COPIED, 0);
        img.l2(3, 512 | OFLAG_COPIED, 0); // not the guest offset
        let data: Vec<u8> = (0..4096).map(|i| (i / 512) as u8 + 1).collect();
        let files = files(&img).with("/vm/top.data", data);
        let o = opened(&files);
        assert_eq!(o.container.data_file.as_deref(), Some("top.data"));
        let g = o.guest.unwrap();
        assert_eq!(read(&g, 0, 1).unwrap(), [1]);
        assert_eq!(read(&g, 512, 1).unwrap(), [0]); // unallocated
        assert_eq!(read(&g, 1024, 1).unwrap(), [3]);
        let e = read(&g, 1536, 1).unwrap_err().to_string();
        assert!(e.contains("qcow2 L2 table at byte 1048: external data file cluster offset 512 is not the guest offset 1536"), "{e}");

        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, INCOMPAT_DATA_FILE);
        header_error(&img, 72, "incompatible_features bit 2 (external data file) is set but no header extension 0x44415441 names the data file");
        img.extension(EXT_DATA_FILE, b"gone.data");
        let line = refused(&img);
        assert!(
            line.contains("cannot open \"gone.data\" (named at byte 120 of /vm/top.qcow2)"),
            "{line}"
        );
    }

    #[test]
    fn a_backing_name_too_long_or_past_the_cluster_is_refused() {
        let mut img = Img::new(12, 64 << 10, false);
        img.backing("b", None);
        img.u32(16, 1024);
        header_error(
            &img,
            16,
            "backing_file_size 1024 is over qemu's 1023-byte limit for a backing file name",
        );
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("b", None);
        img.u32(16, 200);
        header_error(&img, 16, "backing_file_size 200 runs past the first cluster: the name at byte 400 has room for 112");
        img.u64(8, 513);
        header_error(
            &img,
            8,
            "backing_file_offset 513 is past the first cluster (the name must be in its 512 bytes)",
        );
    }

    #[test]
    fn a_missing_backing_file_is_named() {
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base.raw", Some("raw"));
        assert_eq!(
            refused(&img),
            format!("{TOP}: cannot open \"base.raw\" (named at byte 400 of {TOP}): ENOENT")
        );
    }

    #[test]
    fn a_backing_chain_that_loops_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("top.qcow2", Some("qcow2"));
        assert_eq!(
            refused(&img),
            format!("{TOP}: backing chain loops: {TOP} names {TOP} again")
        );
        // Two files naming each other.
        let mut a = Img::new(9, 64 << 10, false);
        a.backing("b.qcow2", None);
        let mut b = Img::new(9, 64 << 10, false);
        b.backing("top.qcow2", None);
        let files = files(&a).with("/vm/b.qcow2", b.bytes);
        assert_eq!(
            refused_by(&files),
            "/vm/b.qcow2: backing chain loops: /vm/b.qcow2 names /vm/top.qcow2 again"
        );
    }

    #[test]
    fn an_unknown_backing_format_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base", Some("qed"));
        assert_eq!(
            refused(&img),
            format!("{TOP}: qcow2 header extension at byte 120: backing file format \"qed\" is not one diskalign reads (qcow2, raw, vmdk, vhdx, vdi, vpc)")
        );
    }
}
