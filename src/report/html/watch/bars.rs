//! A log2 histogram as bars: one slot per bucket from the first with
//! I/Os to the last (the empty ones between them shown empty), the
//! count up the left, the buckets under the axis. Bars of buckets
//! below a threshold (starts aligned to less than 4 KiB, sizes below the
//! physical block) are drawn in vermillion, the others in blue.

use super::super::kit::Axis;
use super::super::kit::{band_labels, band_labels_height, frame, y_grid};
use super::super::kit::{linear, ticks, Room};
use super::super::kit::{swatch, Legend};
use super::super::kit::{x_title, y_title};
use super::super::scale::{Band, Linear};
use super::super::svg::{El, Figure};
use crate::units::human;
use crate::watch::Bucket;

/// Okabe–Ito blue and vermillion.
const PLAIN: &str = "#0072B2";
const BELOW: &str = "#D55E00";

/// One slot of the figure: its bucket's lower bound, its I/Os, and
/// whether it is below the threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    pub from_bytes: u64,
    pub ios: u64,
    pub below: bool,
}

/// The slots from the first bucket with I/Os to the last, every bucket
/// between them included.
pub fn slots(buckets: &[Bucket], threshold: u64) -> Vec<Slot> {
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
        return vec![];
    };
    let mut out = Vec::new();
    let mut from = first.from_bytes;
    while from <= last.from_bytes && from > 0 {
        let ios = buckets
            .iter()
            .find(|b| b.from_bytes == from)
            .map_or(0, |b| b.ios);
        out.push(Slot {
            from_bytes: from,
            ios,
            below: from < threshold,
        });
        match from.checked_mul(2) {
            Some(next) => from = next,
            None => break,
        }
    }
    out
}

/// What a figure shows.
pub struct Bars<'a> {
    pub id: &'a str,
    pub title: &'a str,
    /// The x axis's title.
    pub axis: &'a str,
    /// The legend's words for the bars below the threshold and the others.
    pub below: &'a str,
    pub plain: &'a str,
}

/// The figure of `slots`, or nothing when there are none.
pub fn figure(b: &Bars, slots: &[Slot]) -> String {
    if slots.is_empty() {
        return String::new();
    }
    let (x0, x1, top, bottom) = (70.0, 520.0, 56.0, 196.0);
    let band = Band {
        n: slots.len(),
        r0: x0,
        r1: x1,
    };
    let labels: Vec<String> = slots.iter().map(|s| human(s.from_bytes)).collect();
    let height = bottom + band_labels_height(&band, &labels) + 28.0;
    let mut f = Figure::new(b.id, x1 + 20.0, height, b.title);
    let mut legend = Legend::across(x0, 38.0);
    for (name, fill, words) in [("below", BELOW, b.below), ("plain", PLAIN, b.plain)] {
        legend.entry(
            &mut f,
            (name, &[]),
            |k| vec![swatch(k, fill, "none")],
            &[words],
        );
    }
    let most = slots.iter().map(|s| s.ios).max().unwrap_or(0).max(1) as f64;
    let y = Linear::new((0.0, most), (bottom, top));
    let room = Room {
        axis: Axis::Y,
        size: 11.0,
        gap: 4.0,
    };
    let t = ticks(
        linear(0.0, most, 1.0),
        |v| y.map(v),
        |v| format!("{v}"),
        room,
    );
    y_grid(&mut f, &t, x0, x1);
    for (i, s) in slots.iter().enumerate() {
        let h = bottom - y.map(s.ios as f64);
        f.add(
            El::new("rect")
                .at("x", band.start(i) + 2.0)
                .at("y", bottom - h)
                .at("width", (band.width() - 4.0).max(1.0))
                .at("height", h)
                .attr("fill", if s.below { BELOW } else { PLAIN })
                .attr("data-bucket", s.from_bytes)
                .attr("data-ios", s.ios)
                .title(format!("{}: {} I/Os", human(s.from_bytes), s.ios)),
        );
    }
    frame(&mut f, x0, top, x1, bottom);
    band_labels(&mut f, &band, &labels, bottom);
    x_title(&mut f, (x0 + x1) / 2.0, height - 8.0, b.axis);
    y_title(&mut f, 18.0, (top + bottom) / 2.0, "I/Os");
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_buckets_between_are_slots_too() {
        let b = [
            Bucket {
                from_bytes: 512,
                ios: 3,
            },
            Bucket {
                from_bytes: 4096,
                ios: 7,
            },
        ];
        let s = slots(&b, 4096);
        let got: Vec<(u64, u64, bool)> = s.iter().map(|s| (s.from_bytes, s.ios, s.below)).collect();
        assert_eq!(
            got,
            [
                (512, 3, true),
                (1024, 0, true),
                (2048, 0, true),
                (4096, 7, false)
            ]
        );
        assert!(slots(&[], 4096).is_empty());
    }

    #[test]
    fn every_bar_has_its_bucket_and_count() {
        let s = slots(
            &[Bucket {
                from_bytes: 4096,
                ios: 9,
            }],
            4096,
        );
        let svg = figure(
            &Bars {
                id: "f",
                title: "t",
                axis: "request size",
                below: "below",
                plain: "plain",
            },
            &s,
        );
        assert!(svg.contains("data-bucket=\"4096\" data-ios=\"9\""), "{svg}");
        assert!(svg.contains("<title>4 KiB: 9 I/Os</title>"), "{svg}");
    }
}
