//! What /proc says: mounts (mountinfo), active swap, the CPU model and
//! io_uring's switch.

use std::fs;

/// /proc/self/mountinfo, empty when it cannot be read.
pub fn mountinfo() -> String {
    fs::read_to_string("/proc/self/mountinfo").unwrap_or_default()
}

/// /proc/swaps, empty when it cannot be read.
pub fn swaps() -> String {
    fs::read_to_string("/proc/swaps").unwrap_or_default()
}

/// The bytes this process has made the kernel fetch from storage so far
/// (`read_bytes` of /proc/self/io: reads that missed the page cache,
/// readahead included); None where the kernel does not account it.
pub fn storage_read_bytes() -> Option<u64> {
    parse_io_read_bytes(&fs::read_to_string("/proc/self/io").ok()?)
}

/// `read_bytes` of a /proc/PID/io text.
pub fn parse_io_read_bytes(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The first `model name` of /proc/cpuinfo.
pub fn cpu_model() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// Undo the octal escapes of mountinfo and /proc/swaps (`\040` = space).
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One line of /proc/self/mountinfo, unescaped.
#[derive(Clone, Debug)]
pub struct Mount {
    /// The mount's device number (field 3).
    pub devno: Option<(u32, u32)>,
    pub point: String,
    pub fs_type: String,
    pub source: String,
}

/// Parse mountinfo text; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let sep = f.iter().position(|x| *x == "-")?;
            let devno = f
                .get(2)?
                .split_once(':')
                .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
            Some(Mount {
                devno,
                point: unescape(f.get(4)?),
                fs_type: f.get(sep + 1)?.to_string(),
                source: unescape(f.get(sep + 2)?),
            })
        })
        .collect()
}

/// The mount on top whose device is `dev` (a file's st_dev): the last
/// matching line of mountinfo. None where none matches (another mount
/// namespace, a device mountinfo does not list).
pub fn mount_of(dev: u64) -> Option<Mount> {
    let want = Some((rustix::fs::major(dev), rustix::fs::minor(dev)));
    parse_mountinfo(&mountinfo())
        .into_iter()
        .rev()
        .find(|m| m.devno == want)
}

/// The filesystem type a path lives on: the mountinfo entry on top with
/// its device number (stat(2)), else statfs(2)'s magic number for the
/// common ones (linux/magic.h). None when the path cannot be reached
/// (a loop device's backing file deleted, or in another namespace).
pub fn fs_type_of(path: &std::path::Path) -> Option<String> {
    fs_type_of_file(&std::fs::File::open(path).ok()?)
}

/// The filesystem type of an open file (one that may have no name: the
/// probe's scratch file): the mountinfo entry on top with its device
/// number, else fstatfs(2)'s magic number (a btrfs subvolume's files have
/// a device number mountinfo does not list).
pub fn fs_type_of_file(file: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    if let Some(m) = mount_of(file.metadata().ok()?.dev()) {
        return Some(m.fs_type);
    }
    let magic = rustix::fs::fstatfs(file).ok()?.f_type as u64;
    fs_magic_name(magic).map(str::to_string)
}

/// The name of a statfs(2) `f_type` (linux/magic.h), for the usual ones.
pub fn fs_magic_name(magic: u64) -> Option<&'static str> {
    Some(match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x794C_7630 => "overlay",
        0x2FC1_2FC1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0x6969 => "nfs",
        0x4d44 => "vfat",
        _ => return None,
    })
}

/// /proc/diskstats, empty when it cannot be read.
pub fn diskstats() -> String {
    fs::read_to_string("/proc/diskstats").unwrap_or_default()
}

/// One line of /proc/diskstats: the device number and, per direction,
/// what the kernel's I/O statistics counted since boot. The fields after
/// major, minor and name are (Documentation/admin-guide/iostats.rst):
/// reads completed, merged, sectors, ms; writes completed, merged,
/// sectors, ms; in flight, ms, weighted ms; discards completed, merged,
/// sectors, ms (Linux 4.18); flushes completed, ms (5.5). A kernel
/// without the later fields counts 0 there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStatsLine {
    pub major: u32,
    pub minor: u32,
    /// (completed, merged, sectors) of reads, writes, discards; flushes
    /// have no merges or sectors.
    pub read: [u64; 3],
    pub write: [u64; 3],
    pub discard: [u64; 3],
    pub flushes: u64,
}

/// Parse /proc/diskstats text; malformed lines are skipped.
pub fn parse_diskstats(text: &str) -> Vec<DiskStatsLine> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
            let n = |i: usize| num(i).unwrap_or(0);
            let three = |i: usize| [n(i), n(i + 1), n(i + 2)];
            Some(DiskStatsLine {
                major: u32::try_from(num(0)?).ok()?,
                minor: u32::try_from(num(1)?).ok()?,
                read: [num(3)?, num(4)?, num(5)?],
                write: [num(7)?, num(8)?, num(9)?],
                discard: three(14),
                flushes: n(18),
            })
        })
        .collect()
}

#[cfg(test)]
mod diskstats_tests {
    use super::*;

    #[test]
    fn diskstats_lines_of_every_age() {
        // Linux 6.18 (17 fields), a 4.x kernel without discards and
        // flushes (11 fields), and a line that is no line.
        let text = "   7       0 loop0 1026502 295 35737863 212054 19546 392736 9047559 31588 0 31820 255833 312 209 23149056 61 6804 12128\n   8      16 sdb 10 1 80 3 20 2 160 5 0 7 8\nnonsense\n";
        let v = parse_diskstats(text);
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].major, v[0].minor), (7, 0));
        assert_eq!(v[0].read, [1026502, 295, 35737863]);
        assert_eq!(v[0].write, [19546, 392736, 9047559]);
        assert_eq!(v[0].discard, [312, 209, 23149056]);
        assert_eq!(v[0].flushes, 6804);
        assert_eq!(
            (v[1].write, v[1].discard, v[1].flushes),
            ([20, 2, 160], [0; 3], 0)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_bytes_of_proc_io() {
        let text = "rchar: 2012\nwchar: 0\nsyscr: 7\nsyscw: 0\nread_bytes: 819200\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io_read_bytes(text), Some(819200));
        assert_eq!(parse_io_read_bytes("rchar: 1\n"), None);
    }
}
