//! A device-mapper device's table, read through DM_TABLE_STATUS on
//! /dev/mapper/control (include/uapi/linux/dm-ioctl.h), as `dmsetup table`
//! reads it. Read-only: the table is asked for, nothing is loaded.

use std::io;
use std::os::fd::AsRawFd;

/// sizeof(struct dm_ioctl) in dm-ioctl.h: version[3], data_size,
/// data_start, target_count, open_count, flags, event_nr, padding (4 bytes
/// each), dev (u64), name[128], uuid[129], data[7].
const DM_IOCTL_SIZE: usize = 312;
/// _IOWR(DM_IOCTL 0xfd, DM_TABLE_STATUS_CMD 12, struct dm_ioctl).
const DM_TABLE_STATUS: libc::c_ulong =
    (3 << 30) | ((DM_IOCTL_SIZE as libc::c_ulong) << 16) | (0xfd << 8) | 12;
/// DM_STATUS_TABLE_FLAG: the table, not the targets' status.
const DM_STATUS_TABLE_FLAG: u32 = 1 << 4;
/// DM_BUFFER_FULL_FLAG: the answer did not fit.
const DM_BUFFER_FULL_FLAG: u32 = 1 << 8;
/// sizeof(struct dm_target_spec): sector_start, length (u64), status
/// (i32), next (u32), target_type[16].
const SPEC_SIZE: usize = 40;
/// The answer's room: tables of a few targets fit many times over.
const BUFFER: usize = 16 * 1024;

/// One target of a table: its start and length in 512-byte sectors on
/// the dm device, its type (`linear`, `striped`, ...) and its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmTarget {
    pub start: u64,
    pub length: u64,
    pub kind: String,
    pub params: String,
}

/// The table of the dm device `major:minor`.
pub fn dm_table(major: u32, minor: u32) -> io::Result<Vec<DmTarget>> {
    let control = std::fs::File::open("/dev/mapper/control")?;
    let mut buf = vec![0u8; BUFFER];
    let put = |buf: &mut [u8], at: usize, v: u32| buf[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    put(&mut buf, 0, 4); // version 4.0.0
    put(&mut buf, 12, BUFFER as u32); // data_size
    put(&mut buf, 16, DM_IOCTL_SIZE as u32); // data_start
    put(&mut buf, 28, DM_STATUS_TABLE_FLAG); // flags
                                             // dev, as huge_encode_dev encodes it (name and uuid left empty: the
                                             // device is looked up by its number).
    let dev = u64::from(minor & 0xff) | (u64::from(major) << 8) | (u64::from(minor & !0xff) << 12);
    buf[40..48].copy_from_slice(&dev.to_ne_bytes());
    // SAFETY: DM_TABLE_STATUS reads and writes a struct dm_ioctl followed by
    // its data area; `buf` holds BUFFER bytes and data_size says so.
    let rc = unsafe { libc::ioctl(control.as_raw_fd(), DM_TABLE_STATUS, buf.as_mut_ptr()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    parse(&buf)
}

/// The targets of an answer of DM_TABLE_STATUS; never panics.
pub fn parse(buf: &[u8]) -> io::Result<Vec<DmTarget>> {
    let bad = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("DM_TABLE_STATUS: {what}"),
        )
    };
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
    };
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_ne_bytes(buf.get(at..at + 8)?.try_into().ok()?))
    };
    let flags = u32_at(28).ok_or_else(|| bad("short answer"))?;
    if flags & DM_BUFFER_FULL_FLAG != 0 {
        return Err(bad("the table does not fit"));
    }
    let data_start = u32_at(16).ok_or_else(|| bad("short answer"))? as usize;
    let count = u32_at(20).ok_or_else(|| bad("short answer"))?;
    let mut out = Vec::new();
    let mut at = data_start;
    for _ in 0..count.min(256) {
        let (Some(start), Some(length), Some(next)) = (u64_at(at), u64_at(at + 8), u32_at(at + 20))
        else {
            return Err(bad("a target past the answer's end"));
        };
        let text = |from: usize, max: usize| -> String {
            let b = buf.get(from..buf.len().min(from + max)).unwrap_or(&[]);
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).into_owned()
        };
        out.push(DmTarget {
            start,
            length,
            kind: text(at + 24, 16),
            params: text(at + SPEC_SIZE, BUFFER),
        });
        // `next` counts from the start of the data area.
        let following = data_start + next as usize;
        if following <= at {
            break;
        }
        at = following;
    }
    Ok(out)
}

/// A `linear` target's device (major, minor) and offset in sectors, from
/// its parameters `MAJ:MIN OFFSET`.
pub fn linear_origin(t: &DmTarget) -> Option<((u32, u32), u64)> {
    if t.kind != "linear" {
        return None;
    }
    let (dev, offset) = t.params.split_once(' ')?;
    let (ma, mi) = dev.split_once(':')?;
    Some((
        (ma.parse().ok()?, mi.parse().ok()?),
        offset.trim().parse().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_with_one_linear_target() {
        let mut b = vec![0u8; 512];
        b[16..20].copy_from_slice(&312u32.to_ne_bytes());
        b[20..24].copy_from_slice(&1u32.to_ne_bytes());
        b[312..320].copy_from_slice(&0u64.to_ne_bytes());
        b[320..328].copy_from_slice(&100000u64.to_ne_bytes());
        b[332..336].copy_from_slice(&56u32.to_ne_bytes());
        b[336..342].copy_from_slice(b"linear");
        b[352..361].copy_from_slice(b"8:17 2048");
        let t = parse(&b).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(
            (t[0].start, t[0].length, t[0].kind.as_str()),
            (0, 100000, "linear")
        );
        assert_eq!(linear_origin(&t[0]), Some(((8, 17), 2048)));
        // Cut anywhere, it is an error or fewer targets, never a panic.
        for n in 0..b.len() {
            let _ = parse(&b[..n]);
        }
        b[29] = 1; // DM_BUFFER_FULL_FLAG
        assert!(parse(&b).is_err());
    }
}
