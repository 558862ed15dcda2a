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
