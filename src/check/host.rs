//! The host under an image file (`inspect`'s host placement): each guest
//! start aligned in the image, at its byte on the host disk, against the
//! host's grain; and the share of the image's 4 KiB blocks that straddle
//! it, counted per extent (every block of an extent is off by the same
//! amount), never per block. A container's data clusters lie on 4 KiB
//! multiples of the file, so their blocks are among them: a cluster of a
//! multiple of the grain is off the grain exactly when its blocks
//! straddle.

use super::container::straddle;
use crate::findings::{Code, Facts, Finding};
use crate::inspect::{judged, Host, HostExtent, Target};
use crate::units::KIB;

/// A guest start is judged when it is on 4 KiB in the image: one that is
/// not has its own finding there.
const IN_IMAGE: u64 = 4 * KIB;

/// The host findings of `t`; none for a device, or an image read without
/// the live system.
pub fn findings(t: &Target) -> Vec<Finding> {
    let Some(h) = &t.host else {
        return vec![];
    };
    if let Some(reason) = &h.not_judged {
        return vec![not_judged(h, reason.clone())];
    }
    let mut out: Vec<Finding> = left_out(h).into_iter().collect();
    out.extend(misaligned(h));
    out
}

fn not_judged(h: &Host, reason: String) -> Finding {
    let on = match (&h.device, h.filesystem.as_str(), h.mount_point.as_str()) {
        (_, "", _) => String::new(),
        (Some(d), fs, _) => format!(" (the file is on {fs} on {d})"),
        (None, fs, "") => format!(" (the file is on {fs})"),
        (None, fs, at) => format!(" (the file is on {fs} at {at})"),
    };
    Finding::of(
        Code::HostNotJudged,
        Facts {
            region: Some(format!("{reason}{on}")),
            device: h.device.clone(),
            ..Facts::default()
        },
    )
}

/// The guest starts left unjudged because of where they lie: in an
/// extent whose place is not judged (with its flags), or past the extents
/// read. A start in a hole (a sparse image, an unallocated cluster) has no
/// place yet: its host byte is null in the JSON and no finding says so,
/// or every thin image would carry one; nor does a start in delayed
/// allocation (just written, not placed yet), nor a flagged extent that
/// holds no guest start, so what is said does not change with the next
/// writeback.
fn left_out(h: &Host) -> Option<Finding> {
    let mut why = Vec::new();
    for u in h.units.iter().filter(|u| u.host_offset_bytes.is_none()) {
        let Some(at) = u.file_offset_bytes else {
            continue;
        };
        let holder = h
            .extents
            .iter()
            .find(|e| e.logical_bytes <= at && at - e.logical_bytes < e.length_bytes);
        // Delayed allocation is a place not chosen yet, as a hole is:
        // unsaid, or what check says of a just-written image would change
        // at the next writeback.
        let delayed = holder.is_some_and(|e| e.flags.iter().any(|f| f == "delalloc"));
        match holder {
            Some(e) if !judged(e) && !delayed => {
                let flags: Vec<&str> = e
                    .flags
                    .iter()
                    .map(String::as_str)
                    .filter(|f| !matches!(*f, "last" | "merged"))
                    .collect();
                why.push(format!(
                    "{} (file byte {at}) lies in an extent flagged {}, whose place on the device is not where its data is or will be",
                    u.what,
                    flags.join(", ")
                ));
            }
            None if !h.extents_complete => why.push(format!(
                "{} (file byte {at}) lies past the first {} extents, which are all that are read",
                u.what,
                h.extents.len()
            )),
            _ => {}
        }
    }
    (!why.is_empty()).then(|| not_judged(h, why.join("; ")))
}

/// The byte `x` modulo `g`, for a difference that may be negative.
fn off(host: u64, file: u64, g: u64) -> u64 {
    (host % g + g - file % g) % g
}

/// `host-misaligned`, when a guest start or the image's 4 KiB blocks are
/// off the host grain.
fn misaligned(h: &Host) -> Option<Finding> {
    let g = h.grain_bytes.max(1);
    let judged_units: Vec<_> = h
        .units
        .iter()
        .filter_map(|u| Some((u, u.host_offset_bytes?)))
        .filter(|(u, _)| u.guest_offset_bytes % IN_IMAGE == 0)
        .collect();
    // Off on the host: the host moves it off the grain (a start the
    // guest already put off a grain larger than 4 KiB stays the guest's).
    let off_units: Vec<_> = judged_units
        .iter()
        .filter(|(u, at)| off(*at, u.guest_offset_bytes, g) != 0)
        .collect();
    let extents: Vec<&HostExtent> = h.extents.iter().filter(|e| judged(e)).collect();
    let bytes: u64 = extents.iter().map(|e| e.length_bytes).sum();
    let straddling: f64 = extents
        .iter()
        .map(|e| {
            let delta = off(e.host_bytes, e.logical_bytes, g);
            straddle(delta, g).share * e.length_bytes as f64
        })
        .sum();
    let share = if bytes > 0 {
        straddling / bytes as f64
    } else {
        0.0
    };
    if off_units.is_empty() && share == 0.0 {
        return None;
    }
    let (region, guest, at) = match off_units.first() {
        Some((u, at)) => (u.what.clone(), Some(u.guest_offset_bytes), *at),
        None => {
            let e = extents
                .iter()
                .find(|e| off(e.host_bytes, e.logical_bytes, g) != 0)?;
            (
                format!("the file's byte {}", e.logical_bytes),
                None,
                e.host_bytes,
            )
        }
    };
    Some(Finding::of(
        Code::HostMisaligned,
        Facts {
            offset_bytes: Some(at),
            guest_offset_bytes: guest,
            grain_bytes: Some(g),
            grain_from: Some(h.grain_from.to_string()),
            misalignment_bytes: Some(at % g),
            device: h.judged_on.clone(),
            region: Some(region),
            share: Some(share),
            units_judged: Some(judged_units.len() as u64),
            units_misaligned: Some(off_units.len() as u64),
            logical_block_bytes: Some(h.logical_block_bytes),
            physical_block_bytes: Some(h.physical_block_bytes),
            ..Facts::default()
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::{HostGrainFrom, HostUnit};

    /// An image on an ext4 at sector 63 of sdb: 64 MiB in two extents,
    /// the guest's partition 1 at 1 MiB.
    fn at_63() -> Host {
        let d = 63 * 512;
        let ext = |l: u64, p: u64, n: u64| HostExtent {
            logical_bytes: l,
            length_bytes: n,
            physical_bytes: p,
            host_bytes: p + d,
            flags: vec![],
        };
        Host {
            filesystem: "ext4".into(),
            device: Some("sdb1".into()),
            judged_on: Some("sdb".into()),
            device_offset_bytes: d,
            grain_bytes: 4096,
            grain_from: HostGrainFrom::FourKib,
            extents: vec![
                ext(0, 1 << 20, 32 << 20),
                ext(32 << 20, 200 << 20, 32 << 20),
            ],
            extents_complete: true,
            units: vec![HostUnit {
                what: "partition 1".into(),
                guest_offset_bytes: 1 << 20,
                file_offset_bytes: Some(1 << 20),
                host_offset_bytes: Some((2 << 20) + d),
            }],
            ..Host::default()
        }
    }

    #[test]
    fn a_host_partition_at_63_puts_every_guest_block_3584_off() {
        let f = misaligned(&at_63()).unwrap();
        assert_eq!(f.code, Code::HostMisaligned);
        assert_eq!(f.facts.offset_bytes, Some((2 << 20) + 32256));
        assert_eq!(f.facts.misalignment_bytes, Some(3584));
        assert_eq!(f.facts.share, Some(1.0));
        assert_eq!(
            (f.facts.units_judged, f.facts.units_misaligned),
            (Some(1), Some(1))
        );
        assert!(
            f.message.starts_with("aligned in the image, misaligned on the host disk: partition 1 (guest byte 1048576) lies at byte 2129408 of sdb, 3584 bytes off its 4 KiB grain (4k)"),
            "{}",
            f.message
        );
    }

    #[test]
    fn on_an_aligned_host_nothing_is_said() {
        let mut h = at_63();
        h.device_offset_bytes = 1 << 20;
        for e in &mut h.extents {
            e.host_bytes = e.physical_bytes + (1 << 20);
        }
        h.units[0].host_offset_bytes = Some(3 << 20);
        assert!(findings(&Target {
            host: Some(h),
            ..crate::check::fixture::image(
                1 << 30,
                crate::iolimits::Topology::IMAGE_DEFAULT,
                vec![]
            )
        })
        .is_empty());
    }

    #[test]
    fn a_grain_the_guest_already_misses_is_the_guests() {
        // A 64 KiB grain, the guest start 4 KiB past it, the host adding
        // 1 MiB: the host moves nothing off.
        let mut h = at_63();
        h.grain_bytes = 65536;
        h.extents = vec![HostExtent {
            logical_bytes: 0,
            length_bytes: 8 << 20,
            physical_bytes: 0,
            host_bytes: 1 << 20,
            flags: vec![],
        }];
        h.units[0].guest_offset_bytes = (1 << 20) + 4096;
        h.units[0].host_offset_bytes = Some((2 << 20) + 4096);
        assert!(misaligned(&h).is_none());
    }

    #[test]
    fn a_start_in_an_unwritten_extent_is_said_not_judged_and_one_in_a_hole_is_not() {
        let mut h = at_63();
        h.extents[1].flags = vec!["unwritten".into(), "last".into()];
        let unit = |n: u32, at: u64| HostUnit {
            what: format!("partition {n}"),
            guest_offset_bytes: at,
            file_offset_bytes: Some(at),
            host_offset_bytes: None,
        };
        // Only the judged half holds a start: nothing to say.
        assert!(left_out(&h).is_none());
        h.units.push(unit(2, 40 << 20));
        h.units.push(unit(3, 80 << 20));
        let f = left_out(&h).unwrap();
        assert_eq!(f.code, Code::HostNotJudged);
        assert_eq!(
            f.message,
            "not judged on the host: partition 2 (file byte 41943040) lies in an extent flagged unwritten, whose place on the device is not where its data is or will be (the file is on ext4 on sdb1)"
        );
        // The judged half is still judged.
        assert_eq!(misaligned(&h).unwrap().facts.share, Some(1.0));
        // Delayed allocation is not said: it has no place yet.
        h.extents[1].flags = vec!["unknown".into(), "delalloc".into()];
        assert!(left_out(&h).is_none());
        h.extents_complete = false;
        assert!(left_out(&h)
            .unwrap()
            .message
            .contains("partition 3 (file byte 83886080) lies past the first 2 extents"));
    }

    #[test]
    fn a_filesystem_without_device_offsets_is_one_finding_with_its_reason() {
        let h = Host {
            filesystem: "btrfs".into(),
            mount_point: "/mnt".into(),
            not_judged: Some("btrfs maps extents to its own logical (chunk) addresses".into()),
            ..Host::default()
        };
        let t = Target {
            host: Some(h),
            ..crate::check::fixture::image(
                1 << 30,
                crate::iolimits::Topology::IMAGE_DEFAULT,
                vec![],
            )
        };
        let f = findings(&t);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].message,
            "not judged on the host: btrfs maps extents to its own logical (chunk) addresses (the file is on btrfs at /mnt)"
        );
    }
}
