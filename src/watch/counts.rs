//! Arithmetic on the counters every watch table is made of: shares, the
//! 512-byte positions of starts in a 4 KiB unit and how an offset moves
//! them. Shared by the device summaries and the submitters, neither of
//! which imports the other for it.

/// `part / whole`, 0 for an empty whole.
pub fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

pub fn padded(v: &[u64], n: usize) -> Vec<u64> {
    (0..n).map(|i| v.get(i).copied().unwrap_or(0)).collect()
}

/// The 512-byte positions in a 4 KiB unit moved by `offset` bytes: a
/// start at position i inside the device is at i + offset/512 on the
/// disk (offsets are whole sectors; a remainder is dropped).
pub fn shifted(mod4k: &[u64], offset: u64) -> Vec<u64> {
    let by = ((offset / 512) % 8) as usize;
    let mut out = vec![0; 8];
    for (i, n) in mod4k.iter().enumerate() {
        out[(i + by) % 8] += n;
    }
    out
}

/// Starts not at position 0.
pub fn off(mod4k: &[u64]) -> u64 {
    mod4k.iter().skip(1).sum()
}
