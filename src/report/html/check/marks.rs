//! The marks on the disk map: triangles on the misaligned starts and
//! ends, and the labels of partitions too narrow for their own, in a row
//! under the bar.

use super::super::kit::text_width;
use super::super::scale::Linear;
use super::super::svg::{points, El, Figure};
use super::layout::{self, end_mark, start_mark, Slot};
use super::layout::{inside_label, tip, BAR_H, BAR_TOP, LABEL_Y, LEFT, MARK, RIGHT};
use crate::check::CheckedPartition;

/// The marks on a partition's misaligned start (▼ above the bar) and end
/// (▲ below it), each with a line through the bar at the exact byte.
pub fn marks(f: &mut Figure, p: &CheckedPartition, x: &Linear) {
    let marks = [
        (start_mark(p), "start-misaligned", p.start_bytes, true),
        (
            end_mark(p),
            "end-misaligned",
            p.end_bytes.saturating_add(1),
            false,
        ),
    ];
    for (finding, name, at, start) in marks {
        let Some(finding) = finding else { continue };
        let px = x.map(at as f64);
        f.group(
            "mark",
            &[
                ("mark", name.to_string()),
                ("partition", p.number.to_string()),
                ("offset", at.to_string()),
            ],
        );
        f.add(
            El::new("line")
                .at("x1", px)
                .at("x2", px)
                .at("y1", BAR_TOP)
                .at("y2", BAR_TOP + BAR_H)
                .attr("stroke", "#000000")
                .attr("stroke-width", "1.5"),
        );
        let shape = if start {
            down(px, BAR_TOP - 12.0)
        } else {
            up(px, BAR_TOP + BAR_H + 1.0)
        };
        f.add(
            El::new("polygon")
                .attr("points", shape)
                .attr("fill", MARK)
                .attr("stroke", "#000000")
                .attr("stroke-width", "0.5")
                .title(format!(
                    "partition {} {} at byte {at}: {} ({})",
                    p.number,
                    if start { "starts" } else { "ends" },
                    finding.message,
                    finding.code
                )),
        );
        f.end_group();
    }
}

/// A triangle pointing down, its tip 11 px below `top`.
pub fn down(x: f64, top: f64) -> String {
    points(&[(x - 6.0, top), (x + 6.0, top), (x, top + 11.0)])
}

/// A triangle pointing up, its tip at `top`.
pub fn up(x: f64, top: f64) -> String {
    points(&[(x, top), (x + 6.0, top + 11.0), (x - 6.0, top + 11.0)])
}

/// The numbers of partitions too narrow for their own label, in a row
/// under the bar, each with a leader line to its partition.
pub fn outside_labels(f: &mut Figure, parts: &[CheckedPartition], x: &Linear) {
    let mut outside: Vec<(&CheckedPartition, Slot)> = parts
        .iter()
        .map(|p| {
            (
                p,
                layout::slot(p.start_bytes, p.end_bytes.saturating_add(1), x),
            )
        })
        .filter(|(p, s)| inside_label(p, s.w).is_none())
        .collect();
    outside.sort_by(|a, b| a.1.x.total_cmp(&b.1.x));
    let width = outside
        .iter()
        .map(|(p, _)| text_width(&outside_label(p), 10.0))
        .fold(8.0, f64::max);
    let wants: Vec<f64> = outside.iter().map(|(_, s)| s.x + s.w / 2.0).collect();
    let xs = layout::place_labels(&wants, width, 4.0, (LEFT, RIGHT));
    for ((p, s), lx) in outside.iter().zip(xs) {
        f.add(
            El::new("polyline")
                .attr(
                    "points",
                    points(&[
                        (
                            s.x + s.w / 2.0,
                            BAR_TOP
                                + BAR_H
                                + if p.kind == crate::layout::PartKind::Extended {
                                    4.0
                                } else {
                                    -6.0
                                },
                        ),
                        (s.x + s.w / 2.0, BAR_TOP + BAR_H + 12.0),
                        (lx, LABEL_Y - 10.0),
                    ]),
                )
                .attr("fill", "none")
                .attr("stroke", "#888888")
                .attr("stroke-width", "0.7"),
        );
        f.add(
            El::new("text")
                .at("x", lx)
                .at("y", LABEL_Y)
                .attr("text-anchor", "middle")
                .attr("font-size", 10)
                .text(outside_label(p))
                .title(tip(p)),
        );
    }
}

/// A partition's label under the bar: its number, and for an extended
/// container that it is one.
fn outside_label(p: &CheckedPartition) -> String {
    if p.kind == crate::layout::PartKind::Extended {
        format!("{} (ext.)", p.number)
    } else {
        p.number.to_string()
    }
}
