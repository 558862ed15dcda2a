//! The boundary zooms: for each partition start and end, a window of a few
//! KiB around the byte, with one lane per grid (4 KiB, 1 MiB, the
//! physical or minimum I/O grain, the optimal I/O size) showing its lines
//! and how far the boundary lies from them.

use super::super::kit::text_width;
use super::super::page;
use super::super::scale::Linear;
use super::super::svg::{El, Figure};
use super::axis;
use super::grid::{self, Grid};
use super::lane::{self, RULER};
use super::layout::{end_mark, start_mark};
use crate::check::{CheckedPartition, CheckedTarget};
use crate::findings::Status;
use crate::report::columns::{self, Column};
use crate::units::human;

const WIDTH: f64 = 560.0;
const LANES_TOP: f64 = 62.0;
const LANE_STEP: f64 = 30.0;
/// Partitions whose zooms are shown open; the rest are folded.
const OPEN: usize = 4;
/// Partitions whose zooms are drawn folded; beyond them only the table
/// (a disk of 128 partitions would otherwise weigh megabytes).
const FOLDED: usize = 28;

/// One boundary: a partition's start, or its end (last byte + 1).
pub struct Boundary<'a> {
    pub part: &'a CheckedPartition,
    pub end: bool,
}

impl Boundary<'_> {
    pub fn at(&self) -> u64 {
        if self.end {
            self.part.end_bytes.saturating_add(1)
        } else {
            self.part.start_bytes
        }
    }

    fn which(&self) -> &'static str {
        if self.end {
            "end"
        } else {
            "start"
        }
    }
}

/// The zooms of target `t`, ids from `prefix` (`run1-zoom-0`): the
/// partitions that need a look open, the others folded, and the numbers.
pub fn section(prefix: &str, t: &CheckedTarget) -> String {
    let parts: Vec<&CheckedPartition> = t
        .partitions
        .iter()
        .filter(|p| p.kind != crate::layout::PartKind::Extended)
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    let grids = grid::grids(&t.topology);
    let mut s = page::note(&format!(
        "Each zoom shows a window around one boundary with a lane per grid: 4 KiB and 1 MiB (judged whatever the device reports), the {} and {}. The black line is the boundary; the distances to the nearest lines are written out.",
        grids.get(2).map_or("physical grain".to_string(), |g| format!("{} grain", g.label)),
        grids.get(3).map_or("no optimal I/O size (0)".to_string(), |g| g.label.clone()),
    ));
    let (open, folded, left) = choose(&parts);
    for p in &open {
        s.push_str(&pair(prefix, t, &grids, p));
    }
    if !folded.is_empty() {
        let mut inner: String = folded.iter().map(|p| pair(prefix, t, &grids, p)).collect();
        if left > 0 {
            inner.push_str(&page::note(&format!(
                "{left} more partitions are not drawn; their boundaries are in the table below."
            )));
        }
        let what = match folded.len() + left {
            1 => "Zooms of the other partition's boundaries".to_string(),
            n => format!("Zooms of the other {n} partitions' boundaries"),
        };
        s.push_str(&page::folded(&what, &inner));
    }
    s.push_str(&page::folded(
        "The zooms' numbers",
        &table(prefix, t, &grids, &parts),
    ));
    s
}

/// Which partitions' zooms are open (those that need a look, or the
/// first when none does), which folded, and how many are left undrawn.
fn choose<'a>(
    parts: &[&'a CheckedPartition],
) -> (Vec<&'a CheckedPartition>, Vec<&'a CheckedPartition>, usize) {
    let flagged = |p: &&CheckedPartition| {
        start_mark(p).is_some() || end_mark(p).is_some() || p.status != Status::Aligned
    };
    let mut open: Vec<&CheckedPartition> =
        parts.iter().copied().filter(flagged).take(OPEN).collect();
    if open.is_empty() {
        open.extend(parts.first().copied());
    }
    let rest: Vec<&CheckedPartition> = parts
        .iter()
        .copied()
        .filter(|p| !open.iter().any(|o| std::ptr::eq(*o, *p)))
        .collect();
    let left = rest.len().saturating_sub(FOLDED);
    let folded = rest.into_iter().take(FOLDED).collect();
    (open, folded, left)
}

/// A partition's start and end side by side.
fn pair(prefix: &str, t: &CheckedTarget, grids: &[Grid], p: &CheckedPartition) -> String {
    let mut s = String::from("<div style=\"display:flex;flex-wrap:wrap;column-gap:12px\">\n");
    for end in [false, true] {
        let b = Boundary { part: p, end };
        s.push_str(&figure(
            &format!("{prefix}-p{}-{}", p.number, b.which()),
            t,
            grids,
            &b,
        ));
    }
    s.push_str("</div>\n");
    s
}

/// The zoom of one boundary.
pub fn figure(fig: &str, t: &CheckedTarget, grids: &[Grid], b: &Boundary) -> String {
    let at = b.at();
    let (lo, hi) = grid::window(at, grids, t.size_bytes);
    let x = Linear::new((lo as f64, hi as f64), RULER);
    let axis_y = LANES_TOP + grids.len() as f64 * LANE_STEP + 2.0;
    let title = if b.end {
        format!(
            "Partition {} end (last byte + 1) at byte {at}",
            b.part.number
        )
    } else {
        format!("Partition {} start at byte {at}", b.part.number)
    };
    let mut f = Figure::new(fig, WIDTH, axis_y + 40.0, &title);
    f.group(
        "boundary",
        &[
            ("boundary", b.which().to_string()),
            ("offset", at.to_string()),
            ("partition", b.part.number.to_string()),
        ],
    );
    f.add(
        El::new("text")
            .at("x", 8.0)
            .at("y", 36.0)
            .attr("fill", "#333333")
            .text(format!(
                "window bytes {lo}–{hi}; lines of each grid, nearest ones in blue"
            )),
    );
    for (i, g) in grids.iter().enumerate() {
        lane::draw(
            &mut f,
            g,
            at,
            (lo, hi),
            &x,
            LANES_TOP + i as f64 * LANE_STEP,
        );
    }
    boundary_line(&mut f, at, &x, axis_y);
    axis::draw(
        &mut f,
        x,
        (lo, hi),
        axis_y,
        axis::Labels::Bytes,
        &format!(
            "byte offset on {} (±{} around the boundary)",
            page::brief(&t.path),
            human((hi - lo) / 2)
        ),
    );
    f.end_group();
    f.finish()
}

/// The boundary as a black line over every lane, its byte written above.
fn boundary_line(f: &mut Figure, at: u64, x: &Linear, bottom: f64) {
    let px = x.map(at as f64);
    let label = format!("byte {at}");
    let half = text_width(&label, 10.0) / 2.0;
    let tx = px.clamp(RULER.0 + half, RULER.1 - half);
    f.add(
        El::new("text")
            .at("x", tx)
            .at("y", LANES_TOP - 8.0)
            .attr("text-anchor", "middle")
            .attr("font-size", 10)
            .attr("font-weight", "bold")
            .text(label),
    );
    f.add(
        El::new("line")
            .at("x1", px)
            .at("x2", px)
            .at("y1", LANES_TOP - 5.0)
            .at("y2", bottom)
            .attr("stroke", "#000000")
            .attr("stroke-width", "2")
            .attr("data-mark", "boundary")
            .title(format!("the boundary: byte {at}")),
    );
}

/// Every boundary against every grid, in words with the bytes.
fn table(prefix: &str, t: &CheckedTarget, grids: &[Grid], parts: &[&CheckedPartition]) -> String {
    let rows: Vec<Row> = parts
        .iter()
        .flat_map(|p| {
            [false, true].map(|end| Row {
                boundary: Boundary { part: p, end },
                grids,
            })
        })
        .collect();
    let cols = row_columns(grids);
    columns::html(
        &format!("{prefix}-table"),
        &format!(
            "Where each boundary of {} falls on each grid (bytes)",
            t.path
        ),
        &cols.iter().collect::<Vec<_>>(),
        &rows.iter().collect::<Vec<_>>(),
    )
}

/// A boundary of the table, with the grids its columns judge it on.
struct Row<'a> {
    boundary: Boundary<'a>,
    grids: &'a [Grid],
}

/// Where the boundary lies on grid `at`, in words.
fn on_grid(r: &Row, at: usize) -> String {
    grid::describe(r.boundary.at(), &r.grids[at])
}

/// The partition, which boundary and its byte, then a column per grid.
fn row_columns<'a>(grids: &[Grid]) -> Vec<Column<Row<'a>>> {
    let mut cols = vec![
        Column::html_only("partition", "partition", |r: &Row| {
            r.boundary.part.number.to_string()
        })
        .num(),
        Column::html_only("boundary", "boundary", |r: &Row| {
            if r.boundary.end {
                "end (last byte + 1)"
            } else {
                "start"
            }
            .into()
        }),
        Column::html_only("byte", "byte", |r: &Row| r.boundary.at().to_string()).num(),
    ];
    for (at, g) in grids.iter().enumerate() {
        cols.push(Column::entry(
            format!("{}_grid", g.key),
            format!("{} grid", g.label),
            at,
            on_grid,
            |r, at, _| on_grid(r, at),
        ));
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(number: u32, status: Status) -> CheckedPartition {
        CheckedPartition {
            number,
            status,
            ..CheckedPartition::default()
        }
    }

    fn numbers(ps: &[&CheckedPartition]) -> Vec<u32> {
        ps.iter().map(|p| p.number).collect()
    }

    #[test]
    fn partitions_that_need_a_look_are_open_the_rest_folded() {
        let ps: Vec<CheckedPartition> = (1..=40)
            .map(|n| {
                part(
                    n,
                    if n % 10 == 3 {
                        Status::Misaligned
                    } else {
                        Status::Aligned
                    },
                )
            })
            .collect();
        let refs: Vec<&CheckedPartition> = ps.iter().collect();
        let (open, folded, left) = choose(&refs);
        assert_eq!(numbers(&open), [3, 13, 23, 33]);
        assert_eq!(folded.len(), FOLDED);
        assert_eq!(numbers(&folded)[..3], [1, 2, 4]);
        assert_eq!(left, 40 - 4 - FOLDED);
        // All aligned: the first is open.
        let ps = [part(1, Status::Aligned), part(2, Status::Aligned)];
        let refs: Vec<&CheckedPartition> = ps.iter().collect();
        let (open, folded, left) = choose(&refs);
        assert_eq!(
            (numbers(&open), numbers(&folded), left),
            (vec![1], vec![2], 0)
        );
    }
}
