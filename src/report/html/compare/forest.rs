//! The forest plot of a probe comparison: one row per cell, B/A as a dot
//! on a log axis with its interval as a whisker, the line of no change
//! and the band of "the same" (1 ± min_effect). One figure per target and
//! pattern; the numbers in a table under each.

use super::super::kit::Axis;
use super::super::kit::{self, MUTED};
use super::super::kit::{clip_arrow, clip_name};
use super::super::kit::{KeyBox, Legend};
use super::super::kit::{Room, Tick};
use super::super::page;
use super::super::probe::MAX_PANELS;
use super::super::scale::{Clip, Log, Rgb};
use super::super::svg::{El, Figure};
use crate::compare::ProbeComparison;
use crate::compare::{CellRatio, Decision};
use crate::probe::Pattern;
use crate::report::columns;
use crate::report::tables;
use crate::units::human;
use std::collections::BTreeMap;

const LABEL_W: f64 = 150.0;
const PLOT_W: f64 = 560.0;
const ROW_H: f64 = 13.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 80.0;

/// The widest the axis goes: 16× either way.
const LIMIT: f64 = 16.0;

/// The half-width of the band of "the same" as drawn: a saved comparison
/// may say anything, but the band must lie between 1/16 and 16 around 1.
pub fn band(min_effect: f64) -> f64 {
    min_effect.clamp(0.0, 1.0 - 1.0 / LIMIT)
}

/// The axis range: every ratio and interval end, the band 1 ± min_effect
/// and a margin, within 1/16 … 16.
pub fn domain(cells: &[&CellRatio], min_effect: f64) -> (f64, f64) {
    let min_effect = band(min_effect);
    let mut lo = (1.0 - min_effect).max(1.0 / LIMIT);
    let mut hi = 1.0 + min_effect;
    let values = cells.iter().flat_map(|c| {
        let ci = c.ci95.map_or([f64::NAN; 2], |x| x);
        [c.ratio.unwrap_or(f64::NAN), ci[0], ci[1]]
    });
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    ((lo / 1.1).max(1.0 / LIMIT), (hi * 1.1).min(LIMIT))
}

/// Round ratios to label the axis with, inside the range, their labels
/// clear of each other: 1 first, then halves and doubles, then the finer
/// steps near 1 where there is room.
pub fn ticks(x: &Log) -> Vec<Tick> {
    let by_rank = [
        1.0, 0.5, 2.0, 0.25, 4.0, 0.125, 8.0, 0.0625, 16.0, 0.8, 1.25, 0.67, 1.5, 0.9, 1.1,
    ];
    let inside: Vec<f64> = by_rank
        .into_iter()
        .filter(|t| *t >= x.lo && *t <= x.hi)
        .collect();
    // Each candidate set adds the next ratio: halves and doubles are
    // kept before the finer steps are tried.
    let levels = (1..=inside.len()).map(|n| inside[..n].to_vec());
    let room = Room {
        axis: Axis::X,
        size: 11.0,
        gap: 14.0,
    };
    kit::ticks(levels, |v| x.map_within(v), |v| format!("{v}"), room)
}

/// The colour of a decision (Okabe–Ito): slower vermillion, faster blue,
/// the same green, open grey, untested black. The dot is filled only
/// when decided, so the marks read without colour too.
pub fn colour(d: Decision) -> Rgb {
    match d {
        Decision::Slower => Rgb(213, 94, 0),
        Decision::Faster => Rgb(0, 114, 178),
        Decision::Same => Rgb(0, 158, 115),
        Decision::Open => Rgb(120, 120, 120),
        Decision::Untested => Rgb(0, 0, 0),
    }
}

/// The cells of each target and pattern, each in grid order.
fn groups(p: &ProbeComparison) -> BTreeMap<(usize, Pattern), Vec<&CellRatio>> {
    let mut out: BTreeMap<(usize, Pattern), Vec<&CellRatio>> = BTreeMap::new();
    for c in &p.cells {
        out.entry((c.key.target, c.key.pattern))
            .or_default()
            .push(c);
    }
    for v in out.values_mut() {
        v.sort_by_key(|c| (c.key.block_size, c.key.offset));
    }
    out
}

/// Every forest plot of the comparison with its table: plots for the
/// first `MAX_PANELS` targets, as a probe page draws them, and a table
/// for every target.
pub fn figures(id: &str, p: &ProbeComparison) -> String {
    let groups = groups(p);
    let several = groups.keys().any(|g| g.0 > 0);
    let mut targets: Vec<usize> = groups.keys().map(|g| g.0).collect();
    targets.dedup();
    let last_drawn = targets.get(MAX_PANELS.min(targets.len()).saturating_sub(1));
    let mut s = String::new();
    if targets.len() > MAX_PANELS {
        s.push_str(&page::note(&format!(
            "The plots draw the first {MAX_PANELS} of the {} targets; the tables have every cell.",
            targets.len()
        )));
    }
    for ((target, pattern), cells) in groups {
        // Targets count from 1 here; a saved document's index may be usize::MAX.
        let nth = target.saturating_add(1);
        let fig_id = format!("{id}-ratio-{}-t{nth}", pattern.as_str());
        let title = if several {
            format!(
                "B/A IOPS, {pattern}, {} ({})",
                crate::report::target_label(target),
                p.target_path(target)
            )
        } else {
            format!("B/A IOPS, {pattern}")
        };
        if last_drawn.is_some_and(|&last| target <= last) {
            s.push_str(&forest(&fig_id, &title, &cells, p.min_effect));
        }
        s.push_str(&table(&fig_id, &title, p, &cells));
    }
    s
}

fn tip(c: &CellRatio) -> String {
    let ratio = c.ratio.map_or("no ratio".into(), |r| format!("B/A {r:.3}"));
    let ci = match (c.ci95, c.ci_level) {
        (Some([lo, hi]), Some(level)) => {
            format!(" ({:.1} % interval {lo:.3}–{hi:.3})", level * 100.0)
        }
        _ => " (no interval: a side has one round)".into(),
    };
    format!(
        "{}: A {:.0} IOPS ({} rounds), B {:.0} IOPS ({} rounds), {ratio}{ci}, {}",
        c.key.label(),
        c.a_iops,
        c.a_rounds,
        c.b_iops,
        c.b_rounds,
        c.decision
    )
}

fn forest(fig_id: &str, title: &str, cells: &[&CellRatio], min_effect: f64) -> String {
    let (lo, hi) = domain(cells, min_effect);
    let x = Log::new((lo, hi), (LABEL_W, LABEL_W + PLOT_W));
    let any_clipped = cells.iter().any(|c| clipped(&x, c) != (false, false));
    let extra = if any_clipped { 16.0 } else { 0.0 };
    let height = TOP + ROW_H * cells.len() as f64 + BOTTOM + extra;
    let mut f = Figure::new(fig_id, LABEL_W + PLOT_W + 30.0, height, title);
    let bottom = TOP + ROW_H * cells.len() as f64;
    frame(&mut f, &x, bottom, min_effect);
    for (i, c) in cells.iter().enumerate() {
        mark(&mut f, &x, TOP + ROW_H * (i as f64 + 0.5), c);
    }
    legend(&mut f, bottom + 40.0, any_clipped);
    f.finish()
}

/// The band of "the same", the line of no change, ticks and axis label.
fn frame(f: &mut Figure, x: &Log, bottom: f64, min_effect: f64) {
    let min_effect = band(min_effect);
    let (b0, b1) = (
        x.map_within(1.0 - min_effect),
        x.map_within(1.0 + min_effect),
    );
    f.add(
        El::new("rect")
            .at("x", b0)
            .at("y", TOP)
            .at("width", b1 - b0)
            .at("height", bottom - TOP)
            .attr("fill", "#e8f4ef")
            .title(format!(
                "the same: within ±{:.0} % (min_effect)",
                min_effect * 100.0
            )),
    );
    for t in ticks(x) {
        let px = t.at;
        let stroke = if t.value == 1.0 { MUTED } else { "#dddddd" };
        f.add(
            El::new("line")
                .at("x1", px)
                .at("x2", px)
                .at("y1", TOP)
                .at("y2", bottom)
                .attr("stroke", stroke),
        );
        f.add(
            El::new("text")
                .at("x", px)
                .at("y", bottom + 14.0)
                .attr("text-anchor", "middle")
                .text(t.label),
        );
    }
    f.add(
        El::new("text")
            .at("x", (x.range().0 + x.range().1) / 2.0)
            .at("y", bottom + 28.0)
            .attr("text-anchor", "middle")
            .text("B/A IOPS (log scale; 1 = no change, left = B slower)"),
    );
    f.add(
        El::new("text")
            .at("x", 8.0)
            .at("y", TOP - 6.0)
            .attr("font-weight", "bold")
            .text("block size @ offset"),
    );
}

/// Which ends of a cell's interval (or its ratio) lie past the axis.
fn clipped(x: &Log, c: &CellRatio) -> (bool, bool) {
    let values = c.ci95.map_or(vec![], |ci| ci.to_vec());
    let values = values.into_iter().chain(c.ratio);
    values.fold((false, false), |(lo, hi), v| match x.clipped(v) {
        Some(Clip::Low) => (true, hi),
        Some(Clip::High) => (lo, true),
        None => (lo, hi),
    })
}

fn mark(f: &mut Figure, x: &Log, y: f64, c: &CellRatio) {
    let ink = colour(c.decision).hex();
    let (low, high) = clipped(x, c);
    let mut data = vec![
        ("pattern", c.key.pattern.as_str().to_string()),
        ("target", c.key.target.to_string()),
        ("bs", c.key.block_size.to_string()),
        ("offset", c.key.offset.to_string()),
        ("decision", c.decision.as_str().to_string()),
    ];
    data.extend(clip_name(low, high).map(|n| ("clipped", n.to_string())));
    f.group("ratio", &data);
    let (x0, x1) = x.range();
    if low {
        f.add(clip_arrow(x0.min(x1), y, Axis::X, Clip::Low, &ink));
    }
    if high {
        f.add(clip_arrow(x0.max(x1), y, Axis::X, Clip::High, &ink));
    }
    f.add(
        El::new("text")
            .at("x", LABEL_W - 6.0)
            .at("y", y + 4.0)
            .attr("text-anchor", "end")
            .text(format!("{} @ {}", human(c.key.block_size), c.key.offset)),
    );
    if let Some([lo, hi]) = c.ci95 {
        f.add(
            El::new("line")
                .at("x1", x.map_within(lo))
                .at("x2", x.map_within(hi))
                .at("y1", y)
                .at("y2", y)
                .attr("stroke", &ink)
                .attr("stroke-width", 1.5),
        );
    }
    if let Some(r) = c.ratio {
        let decided = matches!(
            c.decision,
            Decision::Slower | Decision::Faster | Decision::Same
        );
        let fill = if decided {
            ink.clone()
        } else {
            "#ffffff".into()
        };
        f.add(
            El::new("circle")
                .at("cx", x.map_within(r))
                .at("cy", y)
                .at("r", 3.5)
                .attr("fill", fill)
                .attr("stroke", &ink)
                .attr("stroke-width", 1.5)
                .title(tip(c)),
        );
    }
    f.end_group();
}

/// The decisions' dots across a row at `y`, what filled means under
/// them, and the clipped arrow's line when an interval runs past the axis.
fn legend(f: &mut Figure, y: f64, any_clipped: bool) {
    let items = [
        Decision::Slower,
        Decision::Faster,
        Decision::Same,
        Decision::Open,
        Decision::Untested,
    ];
    let mut l = Legend::across(LABEL_W, y).key_width(8.0);
    for d in items {
        let ink = colour(d).hex();
        let filled = matches!(d, Decision::Slower | Decision::Faster | Decision::Same);
        let key = |b: KeyBox| {
            vec![El::new("circle")
                .at("cx", b.x + b.w / 2.0)
                .at("cy", b.mid_y() - 1.5)
                .at("r", 3.5)
                .attr("fill", if filled { ink.as_str() } else { "#ffffff" })
                .attr("stroke", &ink)
                .attr("stroke-width", 1.5)]
        };
        l.entry(f, (d.as_str(), &[]), key, &[d.as_str()]);
    }
    let mut l = Legend::down(LABEL_W, y + 16.0);
    l.note(
        f,
        &["filled: decided; hollow: not decided; the line through a dot: its interval"],
    );
    if any_clipped {
        let mut l = Legend::across(LABEL_W - 12.0, y + 32.0).key_width(16.0);
        let key = |b: KeyBox| vec![clip_arrow(b.x + 8.0, b.mid_y(), Axis::X, Clip::Low, MUTED)];
        let words = "an arrow at an edge: the interval goes on past the axis";
        l.entry(f, ("clipped", &[]), key, &[words]);
    }
}

/// The numbers of a forest plot: compare's cell columns (the CSV's and
/// the terminal's list), the page's set in the page's order.
fn table(fig_id: &str, title: &str, p: &ProbeComparison, cells: &[&CellRatio]) -> String {
    let all = tables::ratios();
    let asked: Vec<String> = tables::RATIOS_HTML.iter().map(|c| c.to_string()).collect();
    let cols = columns::select(&all, Some(&asked), |c| c.html);
    let rows = tables::ratio_rows(p, cells.iter().copied());
    let t = columns::html(
        &format!("{fig_id}-table"),
        &format!("{title}: the numbers"),
        &cols,
        &rows.iter().collect::<Vec<_>>(),
    );
    page::folded(&format!("{title}: table of {} cells", cells.len()), &t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::CellKey;

    fn cell(ratio: f64, ci: [f64; 2]) -> CellRatio {
        CellRatio {
            key: CellKey::default(),
            a_iops: 100.0,
            b_iops: 100.0 * ratio,
            a_rounds: 5,
            b_rounds: 5,
            ratio: Some(ratio),
            ci95: Some(ci),
            ci_level: Some(0.95),
            p_value: None,
            p_adjusted: None,
            significant: false,
            decision: Decision::Open,
            spread: None,
            rounds: None,
        }
    }

    #[test]
    fn the_axis_holds_every_interval_and_the_band() {
        let a = cell(0.5, [0.4, 0.6]);
        let b = cell(1.2, [1.1, 1.3]);
        let (lo, hi) = domain(&[&a, &b], 0.1);
        assert!((lo - 0.4 / 1.1).abs() < 1e-9 && (hi - 1.3 * 1.1).abs() < 1e-9);
        // No cells: the band alone.
        let (lo, hi) = domain(&[], 0.1);
        assert!((lo - 0.9 / 1.1).abs() < 1e-9 && (hi - 1.1 * 1.1).abs() < 1e-9);
        // A runaway interval is cut at 16x.
        let c = cell(1.0, [1e-6, 1e6]);
        assert_eq!(domain(&[&c], 0.1), (1.0 / 16.0, 16.0));
    }

    #[test]
    fn a_saved_min_effect_out_of_range_draws_without_panic() {
        for me in [-5.0, 7.0, 1e300] {
            let (lo, hi) = domain(&[], me);
            assert!(0.0 < lo && lo <= hi && hi <= 16.0, "{me}: {lo} {hi}");
        }
        // Even a reversed axis maps without clamp's panic.
        let x = Log::new((2.0, 0.5), (0.0, 100.0));
        let _ = x.map_within(1.0);
        let mut f = Figure::new("f", 10.0, 10.0, "t");
        frame(&mut f, &x, 50.0, -5.0);
    }

    #[test]
    fn an_interval_past_the_axis_ends_in_an_arrow_at_the_edge() {
        let x = Log::new((1.0 / 16.0, 16.0), (100.0, 500.0));
        assert_eq!(clipped(&x, &cell(0.5, [0.4, 0.6])), (false, false));
        assert_eq!(clipped(&x, &cell(0.05, [0.01, 0.2])), (true, false));
        assert_eq!(clipped(&x, &cell(1.0, [0.01, 40.0])), (true, true));
        let mut f = Figure::new("f", 600.0, 100.0, "t");
        mark(&mut f, &x, 50.0, &cell(0.05, [0.01, 0.2]));
        let svg = f.finish();
        assert!(
            svg.contains("data-decision=\"open\" data-clipped=\"low\""),
            "{svg}"
        );
        // The arrow's tip on the axis's left end, pointing left.
        assert!(svg.contains("points=\"100,50 105,45 105,55\""), "{svg}");
        assert!(!svg.contains("data-clipped=\"high\""));
    }

    #[test]
    fn the_log_axis_puts_halves_and_doubles_symmetrically() {
        let x = Log::new((0.25, 4.0), (0.0, 400.0));
        assert!((x.map_within(1.0) - 200.0).abs() < 1e-9);
        assert!((x.map_within(0.5) - 100.0).abs() < 1e-9);
        assert!((x.map_within(2.0) - 300.0).abs() < 1e-9);
        assert_eq!(x.map_within(100.0), 400.0);
        let near = Log::new((0.3, 2.5), (0.0, 560.0));
        let values = |x: &Log| ticks(x).iter().map(|t| t.value).collect::<Vec<f64>>();
        assert_eq!(values(&near), vec![0.5, 0.67, 0.8, 1.0, 1.25, 1.5, 2.0]);
        // Wide: the fine steps near 1 would overlap and are left out.
        let wide = Log::new((1.0 / 16.0, 16.0), (0.0, 560.0));
        assert_eq!(
            values(&wide),
            vec![0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
        );
    }

    #[test]
    fn the_plots_draw_the_first_targets_and_the_tables_all() {
        let n = MAX_PANELS + 4;
        let p = ProbeComparison {
            cells: (0..n)
                .map(|t| CellRatio {
                    key: CellKey {
                        target: t,
                        ..CellKey::default()
                    },
                    ..cell(0.9, [0.8, 1.0])
                })
                .collect(),
            min_effect: 0.1,
            ..ProbeComparison::default()
        };
        let s = figures("run1", &p);
        assert_eq!(s.matches("<svg ").count(), MAX_PANELS);
        assert_eq!(s.matches("-table\"><caption>").count(), n);
        assert!(s.contains(&format!("the first {MAX_PANELS} of the {n} targets")));
        assert!(s.contains("id=\"run1-ratio-randread-t20-table\""));
        // Five decisions a figure, clear of each other.
        let entries = super::super::super::kit::assert_legends_clear(&s);
        assert_eq!(entries, 5 * MAX_PANELS);
    }

    #[test]
    fn decisions_differ_in_colour() {
        let all = [
            Decision::Slower,
            Decision::Faster,
            Decision::Same,
            Decision::Open,
            Decision::Untested,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(colour(*a), colour(*b));
            }
        }
    }
}
