//! The numbers of the probe figures, apart from the drawing: labels, each
//! cell against its reference, the colour of a penalty, where a cell or a
//! point goes, and the y range the targets share. Tested on their own.

use super::super::kit::Axis;
use super::super::kit::{ticks, Room};
use super::super::scale::{diverging, Band, Rgb};
use crate::probe::Decision;
use crate::probe::Pattern;
use crate::probe::{CellReport, Estimate, Relative};
use crate::units;
use std::collections::HashMap;

/// An offset as its readers think of it: `0`, `512 B`, `3.5 KiB`,
/// `64 KiB - 512 B`, `1 MiB - 512 B`; the bytes when no short form is exact.
pub fn offset_label(o: u64) -> String {
    if o == 0 {
        return "0".into();
    }
    if let Some(p) = o.checked_next_power_of_two() {
        let d = p - o;
        // Just below a large power of two: say so ("1 MiB - 512 B").
        if d > 0 && d <= 4096 && p >= 16 * d {
            return format!("{} - {}", units::human(p), units::human(d));
        }
    }
    units::exact(o)
}

/// A block size: `512 B`, `4 KiB`, `64 KiB` (bytes when not exact).
pub fn bs_label(bs: u64) -> String {
    units::exact(bs)
}

/// An integer with narrow no-break spaces between thousands: `12 345`.
pub fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    if x < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

/// A rate (IOPS, MiB/s): whole numbers from 100 up, else three digits.
pub fn rate(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    if x.abs() >= 100.0 {
        grouped(x)
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A tick label: `500`, `20k`, `1.5M`.
pub fn short(x: f64) -> String {
    let (v, unit) = if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    let s = format!("{v:.1}");
    let s = s.strip_suffix(".0").unwrap_or(&s);
    format!("{s}{unit}")
}

/// A ratio: `0.52×`.
pub fn ratio(r: f64) -> String {
    format!("{r:.2}\u{d7}")
}

/// A rate's interval: `12 000–12 700`.
pub fn interval(ci: [f64; 2], f: fn(f64) -> String) -> String {
    format!("{}\u{2013}{}", f(ci[0]), f(ci[1]))
}

/// The IOPS change a ratio means, signed: `−48 %`, `+5 %`, `0 %`.
pub fn change(r: f64) -> String {
    let pct = (r - 1.0) * 100.0;
    let shown = if pct.abs() < 0.05 {
        return "0 %".into();
    } else if pct.abs() < 1.0 {
        format!("{:.1}", pct.abs())
    } else {
        format!("{:.0}", pct.abs())
    };
    let sign = if pct < 0.0 { '\u{2212}' } else { '+' };
    format!("{sign}{shown} %")
}

/// A percentage: `48 %`.
pub fn pct(fraction: f64) -> String {
    format!("{:.0} %", fraction * 100.0)
}

/// One cell (or target) against its reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rel {
    pub ratio: f64,
    /// `None` for one fio pass or a single round.
    pub ci: Option<[f64; 2]>,
    /// `None` when nothing was tested (fio, a ratio worked out here).
    pub decision: Option<Decision>,
    pub significant: bool,
    /// Paired rounds the comparison used.
    pub rounds: usize,
}

impl Rel {
    pub fn of(r: &Relative) -> Rel {
        Rel {
            ratio: r.ratio,
            ci: Some(r.ci95),
            decision: Some(r.decision),
            significant: r.significant,
            rounds: r.rounds,
        }
    }

    /// A plain ratio of two medians: no interval, no test.
    pub fn untested(subject: f64, reference: f64) -> Option<Rel> {
        (reference > 0.0 && subject.is_finite()).then(|| Rel {
            ratio: subject / reference,
            ci: None,
            decision: None,
            significant: false,
            rounds: 1,
        })
    }

    /// IOPS lost against the reference (negative when faster).
    pub fn penalty(&self) -> f64 {
        1.0 - self.ratio
    }

    /// Slower, faster or fine: decided at the run's level.
    pub fn decided(&self) -> bool {
        matches!(
            self.decision,
            Some(Decision::Slower | Decision::Faster | Decision::Fine)
        )
    }

    /// `slower`, `faster`, `fine`, `open` or `untested`.
    pub fn decision_name(&self) -> &'static str {
        self.decision.map_or("untested", |d| d.as_str())
    }
}

/// What a heatmap tile shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Standing {
    /// Offset 0: every other offset of its row is measured against it.
    Reference,
    Measured(Rel),
    /// No reference cell to compare with.
    Unpaired,
}

impl Standing {
    /// The tile's `data-decision`.
    pub fn decision_name(&self) -> &'static str {
        match self {
            Standing::Reference => "aligned",
            Standing::Measured(r) => r.decision_name(),
            Standing::Unpaired => "untested",
        }
    }

    pub fn significant(&self) -> bool {
        matches!(self, Standing::Measured(r) if r.significant)
    }

    /// Measured and decided (slower, faster or fine): the tiles that are
    /// coloured. Open and untested ones are not.
    pub fn decided(&self) -> bool {
        matches!(self, Standing::Measured(r) if r.decided())
    }

    /// The tile's `data-fill`: how it is painted.
    pub fn fill_name(&self) -> &'static str {
        match self {
            Standing::Reference => "reference",
            Standing::Unpaired => "none",
            _ if self.decided() => "coloured",
            _ => "undecided",
        }
    }
}

/// Every cell against offset 0 of its block size and pattern (the first
/// such cell listed): the run's own comparison when it has one, else the
/// ratio of the medians (fio). One pass with a map, so a document of
/// thousands of cells costs no more than their number.
pub fn against_aligned(cells: &[CellReport]) -> Vec<Standing> {
    let mut aligned: HashMap<(Pattern, u64), f64> = HashMap::new();
    for c in cells.iter().filter(|c| c.cell.offset == 0) {
        aligned
            .entry((c.cell.pattern, u64::from(c.cell.block_size)))
            .or_insert(c.iops.median);
    }
    cells
        .iter()
        .map(|c| {
            standing(
                c,
                aligned
                    .get(&(c.cell.pattern, u64::from(c.cell.block_size)))
                    .copied(),
            )
        })
        .collect()
}

/// One cell against the median IOPS of its aligned reference, if any.
fn standing(cell: &CellReport, aligned: Option<f64>) -> Standing {
    if cell.cell.offset == 0 {
        return Standing::Reference;
    }
    if let Some(r) = &cell.relative {
        return Standing::Measured(Rel::of(r));
    }
    aligned
        .and_then(|a| Rel::untested(cell.iops.median, a))
        .map_or(Standing::Unpaired, Standing::Measured)
}

/// The heatmap's colours: a diverging scale over the signed penalty (IOPS
/// lost against the reference; negative when faster), centred on 0 and
/// symmetric from −`max` to `max` (a multiple of 10 %, at least 10 %, so
/// a quiet run is not painted as a loud one). `max` comes from the tiles
/// that are coloured: decided ones only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shade {
    pub max: f64,
}

impl Shade {
    pub fn over(penalties: impl Iterator<Item = f64>) -> Shade {
        let hi = penalties
            .filter(|p| p.is_finite())
            .map(f64::abs)
            .fold(0.0, f64::max);
        Shade {
            max: ((hi * 10.0 - 1e-9).ceil() / 10.0).clamp(0.1, 1.0),
        }
    }

    /// Where a penalty falls on the scale, −1 (faster) to 1 (slower).
    pub fn t(&self, penalty: f64) -> f64 {
        (penalty / self.max).clamp(-1.0, 1.0)
    }

    pub fn colour(&self, penalty: f64) -> Rgb {
        diverging(self.t(penalty))
    }

    /// The colour bar's ticks on a bar `height` px tall: −`max` to `max`
    /// through 0, in as many equal steps (multiples of 5 %) as fit.
    pub fn ticks(&self, height: f64) -> Vec<f64> {
        let room = Room {
            axis: Axis::Y,
            size: 11.0,
            gap: 14.0,
        };
        let at = |v: f64| -self.t(v) * height / 2.0;
        let picked = ticks(self.divisions(), at, tick_text, room);
        picked.into_iter().map(|t| t.value).collect()
    }

    /// Candidate ticks: `max` cut into `k` steps each way, for every `k`
    /// that gives a step of whole 5 %.
    fn divisions(&self) -> Vec<Vec<f64>> {
        let twentieths = (self.max * 20.0).round() as i32;
        (1..=twentieths)
            .filter(|k| twentieths % k == 0)
            .map(|k| {
                let step = f64::from(twentieths / k) / 20.0;
                (-k..=k)
                    .map(|i| (f64::from(i) * step * 1000.0).round() / 1000.0)
                    .collect()
            })
            .collect()
    }
}

/// The legend's words for a tick of signed penalty `p`: `−40 % (slower)`,
/// `0`, `+40 % (faster)` (as IOPS change, which is −p).
pub fn tick_text(p: f64) -> String {
    if p.abs() < 1e-9 {
        "0 (no change)".into()
    } else if p > 0.0 {
        format!("\u{2212}{} slower", pct(p))
    } else {
        format!("+{} faster", pct(-p))
    }
}

/// The grey of the aligned reference tiles.
pub const REFERENCE_FILL: &str = "#e6e6e6";

/// Tiles in rows (block sizes) and columns (offsets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tiles {
    pub cols: Band,
    pub rows: Band,
}

impl Tiles {
    pub fn new(left: f64, top: f64, size: (f64, f64), n: (usize, usize)) -> Tiles {
        let (w, h) = size;
        let (n_cols, n_rows) = n;
        Tiles {
            cols: Band {
                n: n_cols,
                r0: left,
                r1: left + w * n_cols as f64,
            },
            rows: Band {
                n: n_rows,
                r0: top,
                r1: top + h * n_rows as f64,
            },
        }
    }

    /// The rectangle of a tile, `(x, y, w, h)`, with a 1 px gap around.
    pub fn rect(&self, row: usize, col: usize) -> (f64, f64, f64, f64) {
        (
            self.cols.start(col) + 1.0,
            self.rows.start(row) + 1.0,
            self.cols.width() - 2.0,
            self.rows.width() - 2.0,
        )
    }
}

/// The round value (1, 1.5, 2, 3, 5 or 7 × 10^k) at or below `x`
/// (`down`) or at or above it.
fn nice_round(x: f64, down: bool) -> f64 {
    let d = 10f64.powf(x.log10().floor());
    let ms = [1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0];
    let m = x / d;
    let pick = if down {
        ms.iter().rev().find(|v| **v <= m + 1e-9)
    } else {
        ms.iter().find(|v| **v >= m - 1e-9)
    };
    pick.copied().unwrap_or(1.0) * d
}

/// The rates a log axis can show: a saved document may hold 1e308 IOPS
/// or a subnormal one, whose rounded ends would be infinite or 0.
const LOG_FLOOR: f64 = 1e-300;
const LOG_CEIL: f64 = 1e300;

/// A log domain around every positive value given (clamped to
/// 1e-300..1e300), widened to round values with a little room; `(1, 10)`
/// when there is none.
pub fn log_domain(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v.clamp(LOG_FLOOR, LOG_CEIL))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi <= 0.0 {
        return (1.0, 10.0);
    }
    (nice_round(lo * 0.95, true), nice_round(hi * 1.05, false))
}

/// Every value an IOPS axis must show for these cells: medians and both
/// ends of their intervals.
pub fn iops_extent<'a>(cells: impl Iterator<Item = &'a CellReport>) -> std::vec::IntoIter<f64> {
    extent(cells.map(|c| &c.iops))
}

fn extent<'a>(estimates: impl Iterator<Item = &'a Estimate>) -> std::vec::IntoIter<f64> {
    let all: Vec<f64> = estimates
        .flat_map(|e| {
            let ci = e.interval().unwrap_or([e.median; 2]);
            [e.median, ci[0], ci[1]]
        })
        .collect();
    all.into_iter()
}

/// The same for MiB/s.
pub fn mib_extent<'a>(cells: impl Iterator<Item = &'a CellReport>) -> std::vec::IntoIter<f64> {
    extent(cells.map(|c| &c.mib_s))
}

/// One point of a line: its x slot, median and interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub slot: usize,
    pub y: f64,
    pub ci: Option<[f64; 2]>,
}

/// The pieces of a line's interval band: each run of neighbouring points
/// that all have an interval, as (slot, low, high). One fio pass has none.
pub fn band_runs(points: &[Point]) -> Vec<Vec<(usize, f64, f64)>> {
    let mut runs: Vec<Vec<(usize, f64, f64)>> = Vec::new();
    let mut open = false;
    for p in points {
        match p.ci {
            Some([lo, hi]) => {
                if !open {
                    runs.push(Vec::new());
                }
                runs.last_mut().unwrap().push((p.slot, lo, hi));
                open = true;
            }
            None => open = false,
        }
    }
    runs
}

/// The outline of one band run: along the highs, back along the lows.
pub fn band_outline(
    run: &[(usize, f64, f64)],
    x: impl Fn(usize) -> f64,
    y: impl Fn(f64) -> f64,
) -> Vec<(f64, f64)> {
    let upper = run.iter().map(|(s, _, hi)| (x(*s), y(*hi)));
    let lower = run.iter().rev().map(|(s, lo, _)| (x(*s), y(*lo)));
    upper.chain(lower).collect()
}

/// Where panel `i` of a figure starts, `per_row` panels of `size` a row.
pub fn panel_origin(i: usize, per_row: usize, size: (f64, f64)) -> (f64, f64) {
    let per_row = per_row.max(1);
    ((i % per_row) as f64 * size.0, (i / per_row) as f64 * size.1)
}

#[cfg(test)]
mod tests {
    use super::super::super::scale::Log;
    use super::*;

    fn cell(bs: u64, offset: u64, iops: f64, ci: Option<[f64; 2]>) -> CellReport {
        crate::probe::fixtures::cell(Pattern::Randwrite, (bs, offset), iops, ci, 1)
    }

    #[test]
    fn offsets_read_as_people_write_them() {
        let labels: Vec<String> = [0, 512, 3584, 4096, 4608, 65024, 1048064, 61440, 5000]
            .into_iter()
            .map(offset_label)
            .collect();
        assert_eq!(
            labels,
            [
                "0",
                "512 B",
                "3.5 KiB",
                "4 KiB",
                "4.5 KiB",
                "64 KiB - 512 B",
                "1 MiB - 512 B",
                "64 KiB - 4 KiB",
                "5000 bytes"
            ]
        );
        assert_eq!(offset_label(u64::MAX), "18446744073709551615 bytes");
        assert_eq!(bs_label(65536), "64 KiB");
    }

    #[test]
    fn numbers_are_grouped_and_signed() {
        assert_eq!(grouped(12345.4), "12\u{202f}345");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(-1234567.0), "-1\u{202f}234\u{202f}567");
        assert_eq!(rate(40.126), "40.1");
        assert_eq!(rate(82178.4), "82\u{202f}178");
        assert_eq!(short(20_000.0), "20k");
        assert_eq!(short(1_500_000.0), "1.5M");
        assert_eq!(short(500.0), "500");
        assert_eq!(ratio(0.5234), "0.52\u{d7}");
        assert_eq!(change(0.52), "\u{2212}48 %");
        assert_eq!(change(1.05), "+5 %");
        assert_eq!(change(0.996), "\u{2212}0.4 %");
        assert_eq!(change(1.0), "0 %");
    }

    #[test]
    fn a_cell_is_judged_by_the_run_or_by_its_medians() {
        let aligned = cell(4096, 0, 1000.0, None);
        let fio = cell(4096, 512, 480.0, None);
        let mut probed = fio.clone();
        probed.relative = Some(crate::probe::fixtures::rel(0.5, Decision::Slower));
        let mut other = cell(8192, 512, 10.0, None);
        other.cell.pattern = Pattern::Randread;
        let s = against_aligned(&[aligned, fio.clone(), probed, other]);
        assert_eq!(s[0], Standing::Reference);
        let Standing::Measured(r) = s[1] else {
            panic!("fio cell not measured");
        };
        assert!((r.penalty() - 0.52).abs() < 1e-12);
        assert_eq!((r.ci, r.decision_name()), (None, "untested"));
        assert_eq!((s[2].decision_name(), s[2].significant()), ("slower", true));
        // No aligned cell of its pattern and block size.
        assert_eq!(s[3], Standing::Unpaired);
        assert_eq!(against_aligned(&[fio]), vec![Standing::Unpaired]);
    }

    #[test]
    fn the_colour_domain_is_signed_rounded_up_and_clamped() {
        let s = Shade::over([0.48, -0.2, f64::NAN].into_iter());
        assert_eq!(s.max, 0.5);
        assert_eq!(s.t(0.48), 0.96);
        assert_eq!(s.colour(0.48), diverging(0.96));
        // Faster is the other side of 0, not "no penalty".
        assert_eq!(s.t(-0.3), -0.6);
        assert_eq!(s.colour(0.0), diverging(0.0));
        // Twice as fast (penalty −1) sets the scale's reach too.
        assert_eq!(Shade::over([-1.0, 0.1].into_iter()).max, 1.0);
        assert_eq!(Shade::over([-3.0].into_iter()).t(-3.0), -1.0);
        assert_eq!(Shade::over([0.3].into_iter()).max, 0.3);
        assert_eq!(Shade::over([0.01].into_iter()).max, 0.1);
        assert_eq!(Shade::over(std::iter::empty()).max, 0.1);
        assert_eq!(
            Shade { max: 0.5 }.ticks(160.0),
            vec![-0.5, -0.25, 0.0, 0.25, 0.5]
        );
        assert_eq!(
            Shade { max: 0.3 }.ticks(160.0),
            vec![-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3]
        );
        assert_eq!(
            Shade { max: 1.0 }.ticks(160.0),
            vec![-1.0, -0.5, 0.0, 0.5, 1.0]
        );
        assert_eq!(tick_text(0.25), "\u{2212}25 % slower");
        assert_eq!(tick_text(-0.5), "+50 % faster");
        assert_eq!(tick_text(0.0), "0 (no change)");
    }

    #[test]
    fn only_decided_tiles_are_coloured() {
        let rel = |d: Option<Decision>| {
            Standing::Measured(Rel {
                ratio: 0.9,
                ci: None,
                decision: d,
                significant: false,
                rounds: 3,
            })
        };
        for (d, fill) in [
            (Some(Decision::Slower), "coloured"),
            (Some(Decision::Faster), "coloured"),
            (Some(Decision::Fine), "coloured"),
            (Some(Decision::Open), "undecided"),
            (None, "undecided"),
        ] {
            assert_eq!(rel(d).fill_name(), fill, "{d:?}");
        }
        assert_eq!(Standing::Reference.fill_name(), "reference");
        assert_eq!(Standing::Unpaired.fill_name(), "none");
    }

    #[test]
    fn tiles_sit_on_a_grid_with_gaps() {
        // The 512 B column (second) of the 4 KiB row (second).
        let t = Tiles::new(90.0, 50.0, (64.0, 28.0), (6, 3));
        assert_eq!(t.rect(1, 1), (155.0, 79.0, 62.0, 26.0));
        assert_eq!(t.cols.r1, 90.0 + 6.0 * 64.0);
    }

    #[test]
    fn log_axes_have_round_ends() {
        assert_eq!(
            log_domain([10_400.0, 82_000.0].into_iter()),
            (7000.0, 100_000.0)
        );
        assert_eq!(log_domain(std::iter::empty()), (1.0, 10.0));
        let l = Log::new((5000.0, 100_000.0), (300.0, 0.0));
        assert_eq!(l.map(100_000.0), 0.0);
        assert_eq!(l.map(5000.0), 300.0);
    }

    #[test]
    fn extreme_rates_give_a_finite_log_axis() {
        // A saved document with 1e308 IOPS and a subnormal one.
        let (lo, hi) = log_domain([f64::MAX, 5e-324].into_iter());
        assert!(lo > 0.0 && hi.is_finite(), "{lo} {hi}");
        assert!(Log::new((lo, hi), (1.0, 0.0)).map(hi).is_finite());
    }

    #[test]
    fn targets_share_the_widest_y_range() {
        let a = [cell(4096, 0, 50_000.0, Some([48_000.0, 52_000.0]))];
        let b = [cell(4096, 0, 180_000.0, Some([170_000.0, 190_000.0]))];
        let shared = log_domain(iops_extent(a.iter().chain(b.iter())));
        assert_eq!(shared, (30_000.0, 200_000.0));
        assert!(shared.1 >= log_domain(iops_extent(a.iter())).1);
    }

    #[test]
    fn a_fio_run_has_no_band_and_a_gap_splits_it() {
        let fio = [
            Point {
                slot: 0,
                y: 1.0,
                ci: None,
            },
            Point {
                slot: 1,
                y: 1.0,
                ci: None,
            },
        ];
        assert!(band_runs(&fio).is_empty());
        let p = |slot, ci| Point { slot, y: 1.0, ci };
        let runs = band_runs(&[
            p(0, Some([1.0, 2.0])),
            p(1, Some([1.5, 2.5])),
            p(2, None),
            p(3, Some([1.0, 3.0])),
        ]);
        assert_eq!(
            runs,
            vec![vec![(0, 1.0, 2.0), (1, 1.5, 2.5)], vec![(3, 1.0, 3.0)]]
        );
        let outline = band_outline(&runs[0], |s| s as f64 * 10.0, |v| v);
        assert_eq!(
            outline,
            vec![(0.0, 2.0), (10.0, 2.5), (10.0, 1.5), (0.0, 1.0)]
        );
    }

    #[test]
    fn panels_fill_rows() {
        assert_eq!(panel_origin(0, 2, (400.0, 300.0)), (0.0, 0.0));
        assert_eq!(panel_origin(3, 2, (400.0, 300.0)), (400.0, 300.0));
        assert_eq!(panel_origin(2, 0, (400.0, 300.0)), (0.0, 600.0));
    }
}
