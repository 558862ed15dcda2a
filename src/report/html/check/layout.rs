//! The numbers of the disk map, apart from its drawing: where each
//! partition lies on the bar, the free space between them, where their
//! labels go, and which boundaries are marked.

use super::super::kit::text_width;
use super::super::look::look;
use super::super::scale::Linear;
use super::codes;
use crate::check::CheckedPartition;
use crate::findings::Finding;
use crate::findings::{Severity, Status};
use crate::layout::PartKind;
use crate::units::human;

/// The map's geometry, in px: the figure's width, the bar's left and
/// right ends, its top and height, and the labels' baseline.
pub const WIDTH: f64 = 1100.0;
pub const LEFT: f64 = 24.0;
pub const RIGHT: f64 = WIDTH - 24.0;
pub const BAR_TOP: f64 = 66.0;
pub const BAR_H: f64 = 40.0;
pub const LABEL_Y: f64 = BAR_TOP + BAR_H + 28.0;
/// The colour of the marks on misaligned boundaries (Okabe–Ito vermillion).
pub const MARK: &str = "#d55e00";

/// The narrowest a partition is drawn, in px: a 100 KiB partition on a
/// 1 TB disk is still seen (its table row has the true numbers).
pub const MIN_WIDTH: f64 = 3.0;

/// A partition's rectangle on the bar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slot {
    pub x: f64,
    pub w: f64,
}

/// The rectangle of bytes `[start, end)` on scale `x`, at least
/// `MIN_WIDTH` wide.
pub fn slot(start: u64, end: u64, x: &Linear) -> Slot {
    let x0 = x.map(start as f64);
    let x1 = x.map(end.max(start) as f64);
    Slot {
        x: x0,
        w: (x1 - x0).max(MIN_WIDTH),
    }
}

/// The bytes the bar spans: the disk, or further when a partition runs
/// past its end (`partition-outside-disk`), so that one is drawn too.
pub fn extent(size: u64, parts: &[CheckedPartition]) -> u64 {
    parts
        .iter()
        .map(|p| p.end_bytes.saturating_add(1))
        .fold(size, u64::max)
}

/// The free byte ranges `[start, end)` of a disk of `size` bytes between
/// the partitions that hold data (extended containers hold only EBRs and
/// the logical partitions, which are counted themselves).
pub fn gaps(size: u64, parts: &[CheckedPartition]) -> Vec<(u64, u64)> {
    let mut used: Vec<(u64, u64)> = parts
        .iter()
        .filter(|p| p.kind != PartKind::Extended)
        .map(|p| (p.start_bytes, p.end_bytes.saturating_add(1)))
        .collect();
    used.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for (s, e) in used {
        if s > at {
            out.push((at, s.min(size)));
        }
        at = at.max(e);
    }
    if at < size {
        out.push((at, size));
    }
    out.retain(|(s, e)| e > s);
    out
}

/// Where labels `width` px wide go in a row from `lo` to `hi` px: each as
/// near its mark's x (`wants`, in order) as it can be without two closer
/// than `width + gap`. Returns each label's centre.
pub fn place_labels(wants: &[f64], width: f64, gap: f64, (lo, hi): (f64, f64)) -> Vec<f64> {
    let step = width + gap;
    let mut xs: Vec<f64> = Vec::with_capacity(wants.len());
    for (i, w) in wants.iter().enumerate() {
        let min = if i == 0 {
            lo + width / 2.0
        } else {
            xs[i - 1] + step
        };
        xs.push(w.max(min));
    }
    // Pushed past the right end: move back, each at most to its left
    // neighbour's distance.
    let mut max = hi - width / 2.0;
    for x in xs.iter_mut().rev() {
        *x = x.min(max);
        max = *x - step;
    }
    xs
}

/// The finding that marks a partition's start: its data start off the
/// kernel's grain or off 4 KiB (not an extended container's info).
pub fn start_mark(p: &CheckedPartition) -> Option<&Finding> {
    mark(p, &["start-misaligned", "start-not-4k"])
}

/// The finding that marks a partition's end: off 4 KiB or off a physical
/// block larger than that.
pub fn end_mark(p: &CheckedPartition) -> Option<&Finding> {
    mark(p, &["end-not-physical", "end-not-4k"])
}

fn mark<'a>(p: &'a CheckedPartition, codes: &[&str]) -> Option<&'a Finding> {
    codes.iter().find_map(|c| {
        p.findings
            .iter()
            .find(|f| f.code.as_str() == *c && f.severity > Severity::Info)
    })
}

/// The status a partition is drawn in (extended containers: not judged).
pub fn status(p: &CheckedPartition) -> Option<Status> {
    if p.kind == crate::layout::PartKind::Extended {
        None
    } else {
        Some(p.status)
    }
}

/// The hover text: every number exactly.
pub fn tip(p: &CheckedPartition) -> String {
    let mut s = format!(
        "partition {} ({}{}): bytes {}–{} (last byte inclusive), {} bytes ({}); {}",
        p.number,
        p.kind,
        if p.type_id.is_empty() {
            String::new()
        } else {
            format!(" {}", p.type_id)
        },
        p.start_bytes,
        p.end_bytes,
        p.size_bytes,
        human(p.size_bytes),
        look(status(p)).word
    );
    let codes = codes(&p.findings);
    if !codes.is_empty() {
        s.push_str(&format!(" ({codes})"));
    }
    s
}

/// The label drawn in the partition when it fits: the long one, else
/// the number alone; none when even that does not fit.
pub fn inside_label(p: &CheckedPartition, w: f64) -> Option<String> {
    if p.kind == crate::layout::PartKind::Extended {
        return None;
    }
    let l = look(status(p));
    let long = format!(
        "{} {} · {} · {}",
        l.glyph,
        p.number,
        human(p.size_bytes),
        l.word
    );
    let short = format!("{} {}", l.glyph, p.number);
    [long, short]
        .into_iter()
        .find(|t| text_width(t, 10.0) + 10.0 <= w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

    fn part(number: u32, kind: &str, start: u64, size: u64) -> CheckedPartition {
        CheckedPartition {
            number,
            kind: serde_json::from_value(kind.into()).expect("a partition kind"),
            start_bytes: start,
            end_bytes: start + size - 1,
            size_bytes: size,
            ..CheckedPartition::default()
        }
    }

    fn finding(code: &str, severity: Severity) -> Finding {
        Finding {
            code: crate::findings::Code::named(code).expect("a finding code"),
            severity,
            message: String::new(),
            subject: Default::default(),
            facts: Default::default(),
            same_cause_as: None,
        }
    }

    #[test]
    fn partitions_lie_to_scale_with_a_minimum_width() {
        // 64 MiB over 1000 px from x = 20.
        let x = Linear::new((0.0, (64 * MIB) as f64), (20.0, 1020.0));
        let p1 = slot(32256, 32256 + 25_600_000, &x);
        assert!((p1.x - 20.48).abs() < 0.01, "{p1:?}");
        assert!((p1.w - 381.47).abs() < 0.01, "{p1:?}");
        let p2 = slot(32 * MIB, 64 * MIB, &x);
        assert_eq!(p2, Slot { x: 520.0, w: 500.0 });
        // 512 bytes is 0.008 px: drawn 3 px wide.
        assert_eq!(slot(MIB, MIB + 512, &x).w, MIN_WIDTH);
    }

    #[test]
    fn gaps_are_the_free_space_between_data_partitions() {
        let parts = [
            part(1, "primary", 32256, 25_600_000),
            part(2, "extended", 32 * MIB, 16 * MIB),
            part(5, "logical", 32 * MIB + 512, 8 * MIB),
        ];
        assert_eq!(
            gaps(64 * MIB, &parts),
            vec![
                (0, 32256),
                (32256 + 25_600_000, 32 * MIB + 512),
                (40 * MIB + 512, 64 * MIB)
            ]
        );
        assert_eq!(gaps(MIB, &[]), vec![(0, MIB)]);
        assert_eq!(extent(MIB, &[part(1, "gpt", 0, 2 * MIB)]), 2 * MIB);
    }

    #[test]
    fn labels_keep_their_distance_and_stay_inside() {
        // Three labels wanted at one spot: spread to the right.
        assert_eq!(
            place_labels(&[100.0, 100.0, 101.0], 10.0, 2.0, (0.0, 500.0)),
            vec![100.0, 112.0, 124.0]
        );
        // Crowded at the right end: pushed back left.
        assert_eq!(
            place_labels(&[495.0, 496.0], 10.0, 2.0, (0.0, 500.0)),
            vec![483.0, 495.0]
        );
        // Near the left end: not cut off.
        assert_eq!(place_labels(&[1.0], 10.0, 2.0, (0.0, 500.0)), vec![5.0]);
    }

    #[test]
    fn marks_come_from_start_and_end_findings_above_info() {
        let mut p = part(1, "primary", 32256, 25_600_000);
        p.findings = vec![
            finding("start-not-1mib", Severity::Info),
            finding("start-not-4k", Severity::Error),
            finding("end-not-4k", Severity::Warning),
        ];
        assert_eq!(start_mark(&p).unwrap().code.as_str(), "start-not-4k");
        assert_eq!(end_mark(&p).unwrap().code.as_str(), "end-not-4k");
        // An extended container's findings are info: no marks.
        p.findings = vec![finding("start-not-4k", Severity::Info)];
        assert!(start_mark(&p).is_none());
    }
}
