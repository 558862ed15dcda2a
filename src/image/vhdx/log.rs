//! The log (`vhdx_parse_log`, `vhdx_log_search`): its place checked, and
//! a log holding an entry not yet applied refused, as qemu refuses to
//! replay it on a read-only open.

use super::regions::Header;
use super::{File, Region, CASTAGNOLI, HEADER, HEADER_SECTION, KIB, LOG, MIB};
use crate::bytes::{le_u32, le_u64};
use crate::image::ImageError;

/// The longest log scanned for entries to replay: 64 Ki sectors.
const MAX_LOG: u64 = 256 * MIB;
const LOG_SECTOR: u64 = 4 * KIB;
const LOG_ENTRY_HEADER_BYTES: u64 = 64;
const LOG_DESCRIPTOR_BYTES: u64 = 32;

/// The log's region, after the checks of `vhdx_parse_log`: an offset of
/// whole MiBs past the header section and log version 0, whatever the
/// log holds. A log GUID of zero or a length of zero means no log. A log
/// that holds a valid entry must be replayed before the file is read;
/// qemu refuses to do that on a read-only open, and so do we.
pub(super) fn check_log(file: &File, header: &Header) -> Result<Region, ImageError> {
    let h = header.at;
    let offset = header.log_offset;
    if offset < HEADER_SECTION || offset % MIB != 0 {
        return Err(file.err(
            HEADER,
            h + 72,
            format!("log offset {offset} is not a whole number of MiBs past the first"),
        ));
    }
    if header.log_version != 0 {
        return Err(file.err(
            HEADER,
            h + 64,
            format!("log version {} is not 0", header.log_version),
        ));
    }
    let region = Region {
        start: offset,
        len: header.log_length.into(),
    };
    if header.log_guid == [0; 16] || region.len == 0 {
        return Ok(region);
    }
    if region.len % MIB != 0 {
        return Err(file.err(
            HEADER,
            h + 68,
            format!("log length {} is not a whole number of MiBs", region.len),
        ));
    }
    if offset
        .checked_add(region.len)
        .is_none_or(|e| e > file.src.len())
    {
        return Err(file.err(
            HEADER,
            h + 68,
            format!(
                "log of {} bytes at byte {offset} ends past the end of the file ({} bytes)",
                region.len,
                file.src.len()
            ),
        ));
    }
    // Scanning the log reads one 4 KiB sector at a time; a log this long
    // (qemu-img and Hyper-V write 1 MiB ones) would take seconds, so it
    // is refused rather than scanned.
    if region.len > MAX_LOG {
        return Err(file.err(
            HEADER,
            h + 68,
            format!(
                "log length {} is beyond the {} this reader scans (qemu-img and Hyper-V write 1 MiB logs)",
                region.len,
                crate::units::exact(MAX_LOG)
            ),
        ));
    }
    if let Some((at, sequence)) = pending_log_entry(file, header, region)? {
        return Err(file.err(
            LOG,
            at,
            format!(
                "entry {sequence} is not yet applied to the file: qemu replays the log before \
                 reading and refuses to open such a file read-only; replay it first \
                 (qemu-img check -r all)"
            ),
        ));
    }
    Ok(region)
}

/// A log entry's header fields (qemu's `VHDXLogEntryHeader`).
struct LogEntry {
    checksum: u32,
    length: u64,
    sequence: u64,
    descriptors: u64,
}

/// The first log entry qemu would replay, walking the log as
/// `vhdx_log_search` does: from its start, one 4 KiB sector at a time
/// past sectors that hold no entry header of this log, past the sectors
/// an entry header's entry spans when it fails its CRC, up to the end of
/// the log. (qemu then follows a valid entry's sequence; one valid entry
/// is enough to know the log must be replayed.) The work is bounded by
/// the log's length, which the file holds.
fn pending_log_entry(
    file: &File,
    header: &Header,
    log: Region,
) -> Result<Option<(u64, u64)>, ImageError> {
    let mut pos = 0;
    while pos < log.len {
        let at = log.start + pos;
        let head = file.read(LOG, at, LOG_ENTRY_HEADER_BYTES)?;
        let Some(entry) = log_entry(&head, header, log.len) else {
            pos += LOG_SECTOR;
            continue;
        };
        let (valid, sectors) = log_entry_is_valid(file, log, pos, &entry)?;
        if valid {
            return Ok(Some((at, entry.sequence)));
        }
        pos += sectors * LOG_SECTOR;
    }
    Ok(None)
}

/// The entry header at the start of a log sector, when it is one of this
/// log (`vhdx_log_hdr_is_valid`): signature `loge`, a length of whole
/// 4 KiB sectors within the log, a sequence number, the header's log GUID
/// and room for its descriptors.
fn log_entry(b: &[u8], header: &Header, log_len: u64) -> Option<LogEntry> {
    let entry = LogEntry {
        checksum: le_u32(b, 4),
        length: le_u32(b, 8).into(),
        sequence: le_u64(b, 16),
        descriptors: le_u32(b, 24).into(),
    };
    let valid = &b[..4] == b"loge"
        && entry.length <= log_len
        && entry.length % LOG_SECTOR == 0
        && entry.sequence != 0
        && b[32..48] == header.log_guid
        && entry.descriptors * LOG_DESCRIPTOR_BYTES <= entry.length;
    valid.then_some(entry)
}

/// Whether the entry at `pos` of the log holds (its descriptors valid and
/// its CRC-32C right, `vhdx_validate_log_entry`), and how many sectors
/// qemu reads checking it. The sectors are read one at a time, wrapping
/// at the end of the log as qemu's circular reads do. A descriptor that is
/// not valid makes qemu refuse the file (`vhdx_log_read_desc` fails the
/// search), and us too.
fn log_entry_is_valid(
    file: &File,
    log: Region,
    pos: u64,
    entry: &LogEntry,
) -> Result<(bool, u64), ImageError> {
    // `vhdx_compute_desc_sectors`: the header takes two descriptors' room.
    let descriptor_sectors = (entry.descriptors + 2).div_ceil(LOG_SECTOR / LOG_DESCRIPTOR_BYTES);
    let sectors = descriptor_sectors.max(entry.length / LOG_SECTOR);
    let mut crc = CASTAGNOLI.digest();
    for k in 0..sectors {
        let at = log.start + (pos + k * LOG_SECTOR) % log.len;
        let mut sector = file.read(LOG, at, LOG_SECTOR)?;
        if k == 0 {
            sector[4..8].fill(0);
        }
        if k < descriptor_sectors {
            check_descriptors(file, &sector, at, k, entry)?;
        }
        crc.update(&sector);
    }
    Ok((crc.finalize() == entry.checksum, sectors))
}

/// The descriptors in descriptor sector `k` of an entry, as
/// `vhdx_log_desc_is_valid` checks them: the entry's sequence number, a
/// file offset of whole 4 KiB sectors, and a `zero` (with a length of
/// whole sectors) or `desc` signature.
fn check_descriptors(
    file: &File,
    sector: &[u8],
    at: u64,
    k: u64,
    entry: &LogEntry,
) -> Result<(), ImageError> {
    let per_sector = LOG_SECTOR / LOG_DESCRIPTOR_BYTES;
    // Descriptor i sits at byte 64 + 32 i of the descriptor sectors.
    let first = (k * per_sector).saturating_sub(2);
    let last = ((k + 1) * per_sector - 2).min(entry.descriptors);
    for i in first..last {
        let off = ((i + 2) * LOG_DESCRIPTOR_BYTES - k * LOG_SECTOR) as usize;
        let d = &sector[off..off + LOG_DESCRIPTOR_BYTES as usize];
        let valid = le_u64(d, 24) == entry.sequence
            && le_u64(d, 16) % LOG_SECTOR == 0
            && match &d[..4] {
                b"zero" => le_u64(d, 8) % LOG_SECTOR == 0,
                b"desc" => true,
                _ => false,
            };
        if !valid {
            return Err(file.err(
                LOG,
                at + off as u64,
                format!(
                    "descriptor {i} of entry {} is not valid (signature, sequence number or \
                     offset): qemu refuses a log it cannot replay",
                    entry.sequence
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::vhdx::regions::HEADER_AT;
    use crate::image::vhdx::test_support::{error, header, open_mem, put, seal, Build};

    const LOG_GUID: [u8; 16] = [7; 16];

    /// The default image with a log GUID in both headers and, at the start
    /// of the log, an entry of `descriptors` zero descriptors (valid or
    /// not) whose CRC is right or not.
    fn with_log(descriptors: u32, valid_descriptors: bool, crc_right: bool) -> Vec<u8> {
        let mut img = Build::default().bytes();
        put(&mut img, HEADER_AT[0], &header(1, LOG_GUID));
        put(&mut img, HEADER_AT[1], &header(2, LOG_GUID));
        let mut entry = vec![0u8; 4096];
        entry[..4].copy_from_slice(b"loge");
        entry[8..12].copy_from_slice(&4096u32.to_le_bytes());
        entry[16..24].copy_from_slice(&5u64.to_le_bytes());
        entry[24..28].copy_from_slice(&descriptors.to_le_bytes());
        entry[32..48].copy_from_slice(&LOG_GUID);
        for i in 0..descriptors as usize {
            let d = 64 + 32 * i;
            entry[d..d + 4].copy_from_slice(if valid_descriptors { b"zero" } else { b"nope" });
            entry[d + 24..d + 32].copy_from_slice(&5u64.to_le_bytes());
        }
        seal(&mut entry);
        if !crc_right {
            entry[4] ^= 1;
        }
        put(&mut img, MIB, &entry);
        img
    }

    #[test]
    fn a_log_to_replay_is_refused_as_qemu_refuses_it_read_only() {
        let e = error(with_log(2, true, true));
        assert!(
            e.contains("VHDX log at byte 1048576: entry 5 is not yet applied"),
            "{e}"
        );
        let e = error(with_log(2, false, true));
        assert!(
            e.contains("VHDX log at byte 1048640: descriptor 0 of entry 5 is not valid"),
            "{e}"
        );
        // An entry failing its CRC is not replayed: qemu opens the file.
        assert!(open_mem(with_log(2, true, false)).is_ok());
        // A log GUID over an empty log: nothing to replay.
        let mut img = with_log(0, true, true);
        img[MIB as usize..MIB as usize + 4].fill(0);
        assert!(open_mem(img).is_ok());
    }

    #[test]
    fn log_fields_qemu_checks_are_named() {
        let mut img = Build::default().bytes();
        let mut h = header(3, [0; 16]);
        h[72..80].copy_from_slice(&(MIB + 512).to_le_bytes());
        seal(&mut h);
        put(&mut img, HEADER_AT[0], &h);
        assert!(error(img).contains("VHDX header at byte 65608: log offset 1049088"));
        let mut img = Build::default().bytes();
        let mut h = header(3, LOG_GUID);
        h[68..72].copy_from_slice(&(u32::MAX).to_le_bytes());
        seal(&mut h);
        put(&mut img, HEADER_AT[0], &h);
        assert!(error(img).contains("at byte 65604: log length 4294967295"));
    }
}
