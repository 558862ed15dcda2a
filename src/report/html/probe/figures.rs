//! The run's numbers put into figures: which tiles, lines and points,
//! with their tooltips and `data-*` attributes.

use super::super::scale::category;
use super::heatmap::{self, Heatmap, Tile};
use super::layout::{
    bs_label, interval, iops_extent, log_domain, mib_extent, offset_label, rate, ratio, Point, Rel,
    Shade, Standing,
};
use super::lines::{self, Marker, Plot, Series};
use super::{Run, Versus};
use crate::probe::Pattern;
use crate::probe::{CellReport, Estimate};
use crate::probe::{ContrastKind, Decision};

/// `12 345 IOPS (95 % CI 12 000–12 700)`, or without the interval.
fn estimate(e: &Estimate, unit: &str) -> String {
    match e.interval() {
        Some(ci) => format!("{} {unit} (95 % CI {})", rate(e.median), interval(ci, rate)),
        None => format!("{} {unit}", rate(e.median)),
    }
}

/// `0.52× aligned (CI 0.48–0.56), slower`.
fn relative(r: &Rel, what: &str) -> String {
    let mut s = format!("{} {what}", ratio(r.ratio));
    if let Some(ci) = r.ci {
        s.push_str(&format!(" (CI {})", interval(ci, |x| format!("{x:.2}"))));
    }
    if let Some(d) = r.decision {
        s.push_str(&format!(", {d}"));
    }
    s
}

/// How many rounds a figure stands on; fio's one pass has no interval.
fn rounds(run: &Run, n: usize) -> String {
    if run.fio() {
        "one fio pass: no interval".into()
    } else if n == 1 {
        "1 round: no interval".into()
    } else {
        format!("{n} rounds")
    }
}

/// `target 1 (/dev/sdb): ` with several targets.
fn who(run: &Run, t: usize) -> String {
    let name = run.target_name(t);
    if name.is_empty() {
        name
    } else {
        format!("{name}: ")
    }
}

/// `randwrite 4 KiB at 512 B`.
fn place(key: (Pattern, u64, u64)) -> String {
    let (p, bs, off) = key;
    format!("{p} {} at {}", bs_label(bs), offset_label(off))
}

/// The tooltip of a cell: where, IOPS, against aligned, rounds.
pub fn cell_tip(run: &Run, t: usize, c: &CellReport, s: &Standing) -> String {
    let against = match s {
        Standing::Reference => "the aligned reference".to_string(),
        Standing::Measured(r) => relative(r, "aligned"),
        Standing::Unpaired => "no aligned cell to compare with".to_string(),
    };
    format!(
        "{}{}: {}, {against}, {}",
        who(run, t),
        place(c.key()),
        estimate(&c.iops, "IOPS"),
        rounds(run, c.rounds.len())
    )
}

fn data(t: usize, c: (Pattern, u64, u64)) -> Vec<(&'static str, String)> {
    vec![
        ("target", t.to_string()),
        ("pattern", c.0.to_string()),
        ("bs", c.1.to_string()),
    ]
}

fn tile_data(t: usize, key: (Pattern, u64, u64), s: &Standing) -> Vec<(&'static str, String)> {
    let mut d = data(t, key);
    d.push(("offset", key.2.to_string()));
    d.push(("decision", s.decision_name().to_string()));
    d.push(("significant", s.significant().to_string()));
    d.push(("fill", s.fill_name().to_string()));
    if let Standing::Measured(r) = s {
        d.push(("change", format!("{:.4}", r.ratio - 1.0)));
    }
    d
}

/// The slot of `x` on a sorted, deduplicated axis.
fn slot(v: &[u64], x: u64) -> usize {
    v.binary_search(&x).unwrap_or(0)
}

fn tile(run: &Run, t: usize, c: &CellReport, s: Standing, tip: String) -> Tile {
    Tile {
        row: slot(&run.sizes, u64::from(c.cell.block_size)),
        col: slot(&run.offsets, c.cell.offset),
        standing: s,
        data: tile_data(t, c.key(), &s),
        tip,
    }
}

fn grid_labels(run: &Run) -> (Vec<String>, Vec<String>) {
    (
        run.sizes.iter().map(|b| bs_label(*b)).collect(),
        run.offsets.iter().map(|o| offset_label(*o)).collect(),
    )
}

/// The penalty heatmap of one pattern, a panel per target.
pub fn heatmap(run: &Run, pattern: Pattern, shade: &Shade) -> String {
    let panels = (0..run.drawn())
        .map(|t| heatmap::Panel {
            caption: run.multi().then(|| run.target_name(t)),
            tiles: run
                .standings(t)
                .into_iter()
                .filter(|(c, _)| c.cell.pattern == pattern)
                .map(|(c, s)| tile(run, t, c, s, cell_tip(run, t, c, &s)))
                .collect(),
        })
        .collect();
    let (rows, cols) = grid_labels(run);
    heatmap::draw(&Heatmap {
        id: format!("{}-heatmap-{pattern}", run.id),
        title: format!("{pattern}: IOPS change against offset 0, by block size and offset"),
        rows,
        cols,
        panels,
        shade: *shade,
        against: "offset 0, same block size".into(),
        untested: run.fio(),
    })
}

/// The tooltip of a further target's cell against the first's.
fn versus_tip(run: &Run, v: &Versus) -> String {
    let iops = |t| {
        run.cell(t, v.key)
            .map(|c| rate(c.iops.median))
            .unwrap_or_default()
    };
    format!(
        "{} against {}, {}: {} against {} IOPS, {}, {}",
        run.target_name(v.target),
        run.target_name(v.reference),
        place(v.key),
        iops(v.target),
        iops(v.reference),
        relative(&v.rel, &crate::report::target_label(v.reference)),
        rounds(run, v.rel.rounds)
    )
}

/// Every further target against the first, for one pattern.
pub fn versus(run: &Run, pattern: Pattern) -> String {
    let all = run.versus();
    let shade = Shade::over(
        all.iter()
            .filter(|v| v.rel.decided())
            .map(|v| v.rel.penalty()),
    );
    let panels = (1..run.drawn())
        .map(|t| heatmap::Panel {
            caption: Some(format!(
                "{} against {}",
                run.target_name(t),
                run.target_name(0)
            )),
            tiles: all
                .iter()
                .filter(|v| v.target == t && v.key.0 == pattern)
                .map(|v| {
                    let s = Standing::Measured(v.rel);
                    let mut d = tile_data(t, v.key, &s);
                    d.push(("reference-target", v.reference.to_string()));
                    Tile {
                        row: slot(&run.sizes, v.key.1),
                        col: slot(&run.offsets, v.key.2),
                        standing: s,
                        tip: versus_tip(run, v),
                        data: d,
                    }
                })
                .collect(),
        })
        .collect();
    let (rows, cols) = grid_labels(run);
    heatmap::draw(&Heatmap {
        id: format!("{}-versus-{pattern}", run.id),
        title: format!("{pattern}: IOPS change against target 1, same cell"),
        rows,
        cols,
        panels,
        shade,
        against: "target 1, same cell".into(),
        untested: run.fio(),
    })
}

/// The notes under a line plot's legend (fio tests nothing, so no
/// marker is filled).
fn line_notes(run: &Run, filled: &[&str]) -> Vec<String> {
    let mut notes: Vec<String> = if run.fio() {
        vec![
            "one fio pass: no interval,".into(),
            "so no band and no test".into(),
        ]
    } else {
        let mut n = vec!["band: 95 % CI".to_string()];
        n.extend(filled.iter().map(|s| s.to_string()));
        n
    };
    notes.push("hover a point: its numbers".into());
    notes
}

/// One target's lines of a pattern: one per block size, a marker per
/// offset.
fn offset_series(run: &Run, t: usize, pattern: Pattern) -> Vec<Series> {
    let standings = run.standings(t);
    let marker = |(c, s): &(&CellReport, Standing)| Marker {
        point: Point {
            slot: slot(&run.offsets, c.cell.offset),
            y: c.iops.median,
            ci: c.iops.interval(),
        },
        filled: s.significant(),
        tip: cell_tip(run, t, c, s),
        data: vec![
            ("offset", c.cell.offset.to_string()),
            ("decision", s.decision_name().into()),
        ],
    };
    let line = |(i, &bs): (usize, &u64)| {
        let markers: Vec<Marker> = standings
            .iter()
            .filter(|(c, _)| c.cell.pattern == pattern && u64::from(c.cell.block_size) == bs)
            .map(marker)
            .collect();
        (!markers.is_empty()).then(|| Series {
            label: bs_label(bs),
            colour: category(i),
            dash: None,
            markers,
            data: data(t, (pattern, bs, 0)),
        })
    };
    run.sizes.iter().enumerate().filter_map(line).collect()
}

/// IOPS against offset, one line per block size, a panel per target on
/// one shared y range.
pub fn offset_lines(run: &Run, pattern: Pattern) -> String {
    let cells = run.parts[..run.drawn()].iter().flat_map(|p| &p.cells);
    let y = log_domain(iops_extent(cells.filter(|c| c.cell.pattern == pattern)));
    let panels = (0..run.drawn())
        .map(|t| lines::Panel {
            caption: run.multi().then(|| run.target_name(t)),
            y_title: "IOPS (log scale)".into(),
            y,
            series: offset_series(run, t, pattern),
        })
        .collect();
    lines::draw(&Plot {
        id: format!("{}-lines-{pattern}", run.id),
        title: format!("{pattern}: IOPS against offset, one line per block size"),
        x_labels: run.offsets.iter().map(|o| offset_label(*o)).collect(),
        x_title: "offset (evenly spaced slots, not to scale)".into(),
        panels,
        per_row: 2,
        legend_title: "block size".into(),
        notes: line_notes(run, &["filled: significantly", "different from offset 0"]),
    })
}

/// The block-size contrast of an aligned cell (against the next larger
/// block size), when the run made one.
pub fn bs_contrast(run: &Run, t: usize, c: &CellReport) -> Option<(u64, Rel)> {
    run.parts[t]
        .contrasts
        .iter()
        .find(|x| {
            let key = (x.pattern, x.block_size.into(), x.offset);
            x.kind == ContrastKind::BlockSize && key == c.key()
        })
        .map(|x| (x.reference_block_size.into(), Rel::of(&x.relative)))
}

fn bs_tip(run: &Run, t: usize, c: &CellReport) -> String {
    let mut s = format!(
        "{}{} {} aligned: {}, {}",
        who(run, t),
        c.cell.pattern,
        bs_label(u64::from(c.cell.block_size)),
        estimate(&c.iops, "IOPS"),
        estimate(&c.mib_s, "MiB/s")
    );
    if let Some((larger, r)) = bs_contrast(run, t, c) {
        s.push_str(&format!(
            "; {}",
            relative(&r, &format!("the IOPS of {}", bs_label(larger)))
        ));
    }
    format!("{s}, {}", rounds(run, c.rounds.len()))
}

/// The aligned cells' series: one per target and pattern, each its own
/// colour, further targets dashed too.
fn bs_series(run: &Run, value: fn(&CellReport) -> &Estimate) -> Vec<Series> {
    let mut out = Vec::new();
    for t in 0..run.drawn() {
        for (i, &p) in run.patterns.iter().enumerate() {
            let colour = category(t * run.patterns.len() + i);
            let markers: Vec<Marker> = run.parts[t]
                .cells
                .iter()
                .filter(|c| c.cell.pattern == p && c.cell.offset == 0)
                .map(|c| Marker {
                    point: Point {
                        slot: slot(&run.sizes, u64::from(c.cell.block_size)),
                        y: value(c).median,
                        ci: value(c).interval(),
                    },
                    filled: bs_contrast(run, t, c).is_some_and(|(_, r)| {
                        r.significant && r.decision == Some(Decision::Slower)
                    }),
                    tip: bs_tip(run, t, c),
                    data: vec![("bs", u64::from(c.cell.block_size).to_string())],
                })
                .collect();
            if markers.is_empty() {
                continue;
            }
            let label = if run.multi() {
                format!("{p}, {}", crate::report::target_label(t))
            } else {
                p.to_string()
            };
            let mut data = data(t, (p, 0, 0));
            data.retain(|(k, _)| *k != "bs");
            out.push(Series {
                label,
                colour,
                dash: lines::dash(t),
                markers,
                data,
            });
        }
    }
    out
}

/// IOPS and MiB/s against block size at offset 0.
pub fn bs_curve(run: &Run) -> String {
    let aligned = || {
        run.parts[..run.drawn()]
            .iter()
            .flat_map(|p| &p.cells)
            .filter(|c| c.cell.offset == 0)
    };
    let panel = |y_title: &str, y, series| lines::Panel {
        caption: None,
        y_title: y_title.into(),
        y,
        series,
    };
    let panels = vec![
        panel(
            "IOPS (log scale)",
            log_domain(iops_extent(aligned())),
            bs_series(run, |c| &c.iops),
        ),
        panel(
            "MiB/s (log scale)",
            log_domain(mib_extent(aligned())),
            bs_series(run, |c| &c.mib_s),
        ),
    ];
    lines::draw(&Plot {
        id: format!("{}-bs-curve", run.id),
        title: "Aligned I/O (offset 0): IOPS and MiB/s by block size".into(),
        x_labels: run.sizes.iter().map(|b| bs_label(*b)).collect(),
        x_title: "block size (evenly spaced slots)".into(),
        panels,
        per_row: 2,
        legend_title: "pattern".into(),
        notes: line_notes(
            run,
            &[
                "filled: significantly fewer",
                "IOPS than the next larger",
                "block size (read-modify-write)",
            ],
        ),
    })
}
