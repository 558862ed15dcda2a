//! Telling a container's format by its magic, never by the file's name.
//! qemu probes the same magics (block/qcow2.c, vmdk.c, vhdx.c, vdi.c,
//! vpc.c: each format's `probe`); a fixed VHD has no header, only its
//! 512-byte footer at the end, which qemu's probe does not look for and
//! we do.

use super::ContainerFormat;
use crate::bytes::{le_u32, ParseError, ReadAt};

/// The format `src` is in; `Raw` when no magic matches.
pub fn detect(src: &(impl ReadAt + ?Sized)) -> Result<ContainerFormat, ParseError> {
    let len = src.len();
    let mut head = [0u8; 72];
    let n = len.min(head.len() as u64) as usize;
    read(src, &mut head[..n], 0)?;
    let head = &head[..n];
    if head.starts_with(b"QFI\xfb") {
        return Ok(ContainerFormat::Qcow2);
    }
    if head.starts_with(b"KDMV")
        || head.starts_with(b"COWD")
        || head.starts_with(b"# Disk DescriptorFile")
    {
        return Ok(ContainerFormat::Vmdk);
    }
    if head.starts_with(b"vhdxfile") {
        return Ok(ContainerFormat::Vhdx);
    }
    if head.len() >= 68 && le_u32(head, 64) == super::vdi::SIGNATURE {
        return Ok(ContainerFormat::Vdi);
    }
    if head.starts_with(b"conectix") {
        return Ok(ContainerFormat::Vhd);
    }
    if len >= 1024 {
        let mut tail = [0u8; 8];
        read(src, &mut tail, len - 512)?;
        if &tail == b"conectix" {
            return Ok(ContainerFormat::Vhd);
        }
    }
    Ok(ContainerFormat::Raw)
}

fn read(src: &(impl ReadAt + ?Sized), buf: &mut [u8], offset: u64) -> Result<(), ParseError> {
    src.read_exact_at(buf, offset)
        .map_err(|e| ParseError::new("image format", offset, format!("read failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magics_are_told_apart_and_the_rest_is_raw() {
        let mut q = b"QFI\xfb".to_vec();
        q.resize(4096, 0);
        assert_eq!(detect(&q).unwrap(), ContainerFormat::Qcow2);
        let mut v = vec![0u8; 4096];
        v[4096 - 512..4096 - 504].copy_from_slice(b"conectix");
        assert_eq!(detect(&v).unwrap(), ContainerFormat::Vhd);
        assert_eq!(detect(&vec![0u8; 4096]).unwrap(), ContainerFormat::Raw);
        assert_eq!(detect(&Vec::<u8>::new()).unwrap(), ContainerFormat::Raw);
        let mut d = vec![0u8; 100];
        d[64..68].copy_from_slice(&super::super::vdi::SIGNATURE.to_le_bytes());
        assert_eq!(detect(&d).unwrap(), ContainerFormat::Vdi);
    }
}
