//! Small helpers for sizes: human formatting and the alignment arithmetic
//! every stage shares.

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * 1024;
/// 65535 × 512: the optimal I/O size some USB bridges report by mistake.
pub const BOGUS_USB_OPT: u64 = 33_553_920;

/// libfdisk (util-linux ≥ 2.37, `fdisk_discover_topology`) replaces an
/// I/O size by the physical block when it is exactly 33553920 ("always a
/// controller error") or not a multiple of the physical block.
pub fn libfdisk_ignores_io(io: u64, pbs: u64) -> bool {
    io == BOGUS_USB_OPT || io % pbs.max(1) != 0
}

/// What parted and fdisk do with a bridge's 65535-block optimal I/O size,
/// true for the disk at hand (one sentence, shared by every message that
/// mentions it): on 4Kn the grain is 4 KiB aligned, and fdisk ignores
/// exactly 33553920 only.
pub fn bridge_opt_why(opt: u64, lbs: u64, pbs: u64) -> String {
    let parted = if opt % (4 * KIB) != 0 {
        "parted follows it to a 65535-sector grain that is not 4 KiB aligned".to_string()
    } else {
        format!(
            "parted follows it to a 65535-sector grain ({} per step, not a power of two)",
            human(opt)
        )
    };
    let fdisk = if opt == BOGUS_USB_OPT {
        "fdisk >= 2.37 ignores it (it ignores exactly 33553920)".to_string()
    } else if libfdisk_ignores_io(opt, pbs) {
        format!("fdisk ignores it (not a multiple of the {pbs}-byte physical block)")
    } else {
        format!(
            "fdisk follows it too (it ignores exactly 33553920 only, and this is 65535 x {lbs})"
        )
    };
    format!("{parted}, {fdisk}")
}

/// The optimal I/O size is 65535 logical blocks: a USB bridge reporting its
/// maximum transfer length, not a stripe.
pub fn is_bridge_opt(opt: u64, lbs: u64) -> bool {
    opt != 0 && opt == 65535 * lbs
}

/// Greatest common divisor (0 when both are 0).
pub fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Least common multiple, the kernel's `lcm_not_zero` (include/linux/lcm.h):
/// a zero side gives the other; saturates instead of overflowing.
pub fn lcm_not_zero(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        _ => (a / gcd(a, b)).saturating_mul(b),
    }
}

/// `1.5 MiB`, `4 KiB`, `512 B`: binary units, one decimal when not exact.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        let shown = format!("{value:.1}");
        // 33553920 is not 32 MiB: say that the rounded figure is approximate.
        let approx = if shown.ends_with(".0") { "~" } else { "" };
        format!("{approx}{shown} {}", UNITS[unit])
    }
}

/// A size as lsblk prints it in every mode without `-b` (`512M`,
/// `931.5G`, `0B`): util-linux's `size_to_human_string` with
/// `SIZE_SUFFIX_1LETTER` (lib/strutils.c): the largest power of 1024 not
/// above it, one decimal rounded half up, a trailing `.0` dropped, one
/// letter of `BKMGTPE`. For the `-r` and `-P` forms, which programs read
/// as they read lsblk's.
pub fn lsblk_size(bytes: u64) -> String {
    let exp = (1..=6u32)
        .map(|k| 10 * k)
        .find(|&shift| bytes < 1u64 << shift)
        .map_or(60, |shift| shift - 10);
    let letter = char::from(b"BKMGTPE"[(exp / 10) as usize]);
    let mut whole = bytes >> exp;
    let rest = bytes & ((1u64 << exp) - 1);
    let mut tenths = 0;
    if rest != 0 {
        // Three digits after the point, then rounded to one, as lsblk does.
        let thousandths = if rest >= u64::MAX / 1000 {
            (rest / 1024) * 1000 / (1u64 << (exp - 10))
        } else {
            rest * 1000 / (1u64 << exp)
        };
        tenths = (thousandths + 50) / 100;
        if tenths == 10 {
            whole += 1;
            tenths = 0;
        }
    }
    if tenths == 0 {
        format!("{whole}{letter}")
    } else {
        format!("{whole}.{tenths}{letter}")
    }
}

/// `human` where that is exact ("1 MiB", "64 KiB"), else the bytes
/// ("1052160 bytes"): for offsets, where "~1.0 MiB" would hide a +3584.
pub fn exact(bytes: u64) -> String {
    // The unit `human` picks, and whether one decimal of it is the whole truth.
    let unit = (0..7u32)
        .rev()
        .map(|p| 1u128 << (10 * p))
        .find(|&u| u128::from(bytes) >= u)
        .unwrap_or(1);
    if (u128::from(bytes) * 10) % unit == 0 {
        human(bytes)
    } else {
        format!("{bytes} bytes")
    }
}

/// The largest power of two (up to 1 MiB) that divides `bytes`; 1 MiB for 0.
pub fn alignment_of(bytes: u64) -> u64 {
    if bytes == 0 {
        return MIB;
    }
    (1u64 << bytes.trailing_zeros()).min(MIB)
}

/// `x` is a multiple of `m` (a zero `m` divides nothing but is treated as "no constraint").
pub fn is_multiple(x: u64, m: u64) -> bool {
    m == 0 || x % m == 0
}

/// `4096`, `4k`, `4KiB`, `1m`, `1MiB`, `1g`: a byte count in binary units.
pub fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let digits = v.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &v[digits.len()..];
    let mult = match unit {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// A size with at most one `+` or `-` term: `4k+512`, `1m-512`, `3584`.
pub fn parse_size_expr(v: &str) -> Option<u64> {
    let v = v.trim();
    if let Some((a, b)) = v.split_once('+') {
        return parse_size(a)?.checked_add(parse_size(b)?);
    }
    if let Some((a, b)) = v.split_once('-') {
        return parse_size(a)?.checked_sub(parse_size(b)?);
    }
    parse_size(v)
}

/// `500ms`, `2s`, `1.5s`, `1m`, `3` (seconds).
pub fn parse_duration(v: &str) -> Option<std::time::Duration> {
    let v = v.trim().to_ascii_lowercase();
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix("min").or_else(|| v.strip_suffix('m')) {
        (n, 60.0)
    } else {
        (v.as_str(), 1.0)
    };
    let secs: f64 = num.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 || secs * scale > 1.0e7 {
        return None;
    }
    Some(std::time::Duration::from_secs_f64(secs * scale))
}

/// `2026-11-22 21:04 UTC` from seconds since 1970 (civil date from the
/// day count, in 400-year eras: no time-zone database needed).
pub fn utc(unix: u64) -> String {
    let (year, month, day) = civil((unix / 86_400) as i64);
    let secs = unix % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60
    )
}

/// RFC 3339 in UTC, to the second: `2026-11-22T21:04:35Z`.
pub fn rfc3339(unix: u64) -> String {
    let (year, month, day) = civil((unix / 86_400) as i64);
    let secs = unix % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// Seconds since 1970 of an RFC 3339 date-time (`2026-11-22T21:04:35Z`,
/// `...35.25+01:00`; a fraction is dropped); None when malformed or
/// before 1970.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(part).ok()?.parse().ok())?
    };
    let seps = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| b.get(i) != Some(&c))
        || !matches!(b.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (h, m, sec) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &frac[n..];
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let rb = rest.as_bytes();
            let ok = [1, 2, 4, 5].iter().all(|&i| rb[i].is_ascii_digit());
            if !ok {
                return None;
            }
            let (oh, om) = (
                rest[1..3].parse::<i64>().ok()?,
                rest[4..6].parse::<i64>().ok()?,
            );
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let t = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec - offset;
    u64::try_from(t).ok()
}

/// Days since 1970-01-01 to a civil date, counting in 400-year eras
/// that start on 1 March (so the leap day ends a year).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The inverse of [`civil`]: days since 1970-01-01 of a civil date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {

    /// lsblk's sizes, as util-linux 2.38's `lsblk -o SIZE` prints them.
    #[test]
    fn sizes_as_lsblk_prints_them() {
        assert_eq!(lsblk_size(0), "0B");
        assert_eq!(lsblk_size(512), "512B");
        assert_eq!(lsblk_size(1023), "1023B");
        assert_eq!(lsblk_size(1024), "1K");
        assert_eq!(lsblk_size(512 << 20), "512M");
        assert_eq!(lsblk_size(256 << 30), "256G");
        assert_eq!(lsblk_size(1000204886016), "931.5G");
        // 9.97 MiB rounds up to the next whole unit.
        assert_eq!(lsblk_size(10453504), "10M");
        assert_eq!(lsblk_size(45071872), "43M");
        assert_eq!(lsblk_size(1536), "1.5K");
        assert_eq!(lsblk_size(u64::MAX), "16E");
    }

    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(4096), "4 KiB");
        assert_eq!(human(1536 * 1024), "1.5 MiB");
        assert_eq!(human(BOGUS_USB_OPT), "~32.0 MiB");
        assert_eq!(exact(BOGUS_USB_OPT), "33553920 bytes");
        assert_eq!(exact(MIB + 3584), "1052160 bytes");
        assert_eq!(exact(1536 * 1024), "1.5 MiB");
        assert_eq!(exact(512), "512 B");
        assert_eq!(exact(0), "0 B");
    }

    #[test]
    fn alignment() {
        assert_eq!(alignment_of(63 * 512), 512);
        assert_eq!(alignment_of(2048 * 512), MIB);
        assert_eq!(alignment_of(8 * MIB), MIB);
        assert_eq!(alignment_of(BOGUS_USB_OPT), 512);
    }

    #[test]
    fn parsing() {
        assert_eq!(parse_size("64KiB"), Some(65536));
        assert_eq!(parse_size("4x"), None);
        assert_eq!(parse_size_expr("4k+512"), Some(4608));
        assert_eq!(parse_size_expr("1m-512"), Some(MIB - 512));
        assert_eq!(parse_size_expr("512-1k"), None);
        assert_eq!(
            parse_duration("250ms"),
            Some(std::time::Duration::from_millis(250))
        );
        assert_eq!(
            parse_duration("1.5s"),
            Some(std::time::Duration::from_millis(1500))
        );
        assert_eq!(
            parse_duration("2m"),
            Some(std::time::Duration::from_secs(120))
        );
        assert_eq!(parse_duration("-1"), None);
    }

    #[test]
    fn utc_dates_cross_leap_days_and_eras() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_795_381_475), "2026-11-22 21:04 UTC");
    }

    #[test]
    fn rfc3339_round_trips_and_takes_offsets() {
        for t in [0, 951_782_400, 1_795_381_475, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t), "{}", rfc3339(t));
        }
        assert_eq!(rfc3339(1_795_381_475), "2026-11-22T21:04:35Z");
        assert_eq!(
            parse_rfc3339("2026-11-22T22:04:35.5+01:00"),
            Some(1_795_381_475)
        );
        assert_eq!(
            parse_rfc3339("2026-11-22t16:04:35-05:00"),
            Some(1_795_381_475)
        );
        for bad in [
            "",
            "2026-11-22",
            "2026-11-22T21:04:35",
            "2026-13-22T21:04:35Z",
            "2026-11-22T21:04:35.Z",
            "2026-11-22T21:04:35+1:00",
            "1969-12-31T23:59:59Z",
            "2026-11-22T21:04:3\u{e9}Z",
            "２０26-11-22T21:04:35Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
