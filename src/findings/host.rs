//! The sentences of the host-placement codes (`check`'s judgement of
//! where an image file lies on the host disk): kept apart from
//! `render.rs`, which reads only the facts the same way.

use super::facts::Facts;
use super::Code;
use crate::units::exact;

/// The sentence of a host code (render.rs's arm for them).
pub fn sentence(code: Code, f: &Facts) -> String {
    match code {
        Code::HostNotJudged => host_not_judged(f),
        _ => host_misaligned(f),
    }
}

fn n(v: Option<u64>) -> u64 {
    v.unwrap_or(0)
}

fn text(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("?")
}

/// `host-misaligned`: the first guest start off the host grain (or, with
/// no start judged off it, the first extent whose blocks straddle), and
/// the share of the image's 4 KiB blocks that straddle.
fn host_misaligned(f: &Facts) -> String {
    let g = n(f.grain_bytes);
    let starts = match (f.units_judged, f.units_misaligned) {
        (Some(all), Some(off)) => {
            format!("{off} of {all} guest starts aligned in the image are off it, and ")
        }
        _ => String::new(),
    };
    let what = match f.guest_offset_bytes {
        Some(at) => format!("{} (guest byte {at})", text(&f.region)),
        None => text(&f.region).to_string(),
    };
    format!(
        "aligned in the image, misaligned on the host disk: {what} lies at byte {} of {}, {} bytes off its {} grain ({}); {starts}{:.1} % of the image's 4 KiB blocks straddle two host grains, so each guest I/O there touches one host block more",
        n(f.offset_bytes),
        text(&f.device),
        n(f.misalignment_bytes),
        exact(g),
        text(&f.grain_from),
        f.share.unwrap_or(0.0) * 100.0,
    )
}

/// `host-not-judged`: why.
fn host_not_judged(f: &Facts) -> String {
    format!("not judged on the host: {}", text(&f.region))
}
