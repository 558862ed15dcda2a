//! The figures of a probe run (or fio's results): the verdict, then per
//! pattern the penalty heatmap and IOPS against offset per block size,
//! the block-size curve at offset 0, several targets against the first,
//! and the setup. Every figure's numbers are in a table beside it.
//!
//! Ids: every id starts with the section's `id`: figures
//! `{id}-heatmap-{pattern}`, `{id}-lines-{pattern}`, `{id}-bs-curve`,
//! `{id}-versus-{pattern}` (several targets); tables `{id}-cells-{pattern}`,
//! `{id}-bs-curve-table`, `{id}-versus-table`, `{id}-penalties`,
//! `{id}-noise` (`{id}-t{k}-…` per target when there are several),
//! `{id}-plan`, `{id}-environment`. Marks carry `data-target` (the index
//! into the document's `targets`, 0 for a single target), `data-pattern`,
//! `data-bs` and, for heatmap tiles, `data-offset`, `data-decision` and
//! `data-significant`.

mod figures;
mod heatmap;
mod layout;
mod lines;
mod tables;
mod text;

use super::page;
use crate::probe::axes;
use crate::probe::CellReport;
use crate::probe::ContrastKind;
use crate::probe::Pattern;
use crate::probe::ProbeDoc;
use crate::probe::ProbedTarget;
use layout::{against_aligned, Rel, Shade, Standing};
use std::collections::HashMap;

/// The most targets a figure draws as panels, and the most block sizes
/// (rows) and offsets (columns) a figure of the grid draws. A saved
/// document may hold anything: past these a figure weighs megabytes (its
/// labels repeat per panel) and reads as nothing. The tables under the
/// figures keep every cell.
pub const MAX_PANELS: usize = 16;
pub const MAX_ROWS: usize = 64;
pub const MAX_COLS: usize = 256;

type Key = (Pattern, u64, u64);

/// A run as the figures need it: every target's part and the grid they
/// all span.
pub struct Run<'a> {
    pub id: &'a str,
    pub doc: &'a ProbeDoc,
    pub parts: Vec<ProbedTarget>,
    pub patterns: Vec<Pattern>,
    pub sizes: Vec<u64>,
    pub offsets: Vec<u64>,
    /// Each target's cells against offset 0, in the cells' order.
    standing: Vec<Vec<Standing>>,
    /// Each target's first cell of each key.
    index: Vec<HashMap<Key, usize>>,
}

impl<'a> Run<'a> {
    pub fn new(id: &'a str, doc: &'a ProbeDoc) -> Run<'a> {
        let parts = doc.parts();
        let all: Vec<CellReport> = parts.iter().flat_map(|p| p.cells.clone()).collect();
        let (patterns, sizes, offsets) = axes(&all);
        let standing = parts.iter().map(|p| against_aligned(&p.cells)).collect();
        let index = parts
            .iter()
            .map(|p| {
                let mut m = HashMap::new();
                for (i, c) in p.cells.iter().enumerate() {
                    m.entry(c.key()).or_insert(i);
                }
                m
            })
            .collect();
        Run {
            id,
            doc,
            parts,
            patterns,
            sizes,
            offsets,
            standing,
            index,
        }
    }

    /// How many targets the figures draw (the first ones).
    pub fn drawn(&self) -> usize {
        self.parts.len().min(MAX_PANELS)
    }

    /// Why the grid's figures are not drawn, when the grid is too large.
    pub fn too_large(&self) -> Option<String> {
        (self.sizes.len() > MAX_ROWS || self.offsets.len() > MAX_COLS).then(|| {
            format!(
                "{} block sizes × {} offsets are too many to draw (at most {MAX_ROWS} × {MAX_COLS}): \
                 no figure of the grid is drawn; the tables have every cell.",
                self.sizes.len(),
                self.offsets.len()
            )
        })
    }

    pub fn multi(&self) -> bool {
        self.parts.len() > 1
    }

    pub fn fio(&self) -> bool {
        self.doc.fio()
    }

    pub fn cell(&self, target: usize, key: Key) -> Option<&CellReport> {
        let i = *self.index.get(target)?.get(&key)?;
        self.parts[target].cells.get(i)
    }

    /// `target 1 (/dev/sdb)` with several targets; empty with one.
    pub fn target_name(&self, t: usize) -> String {
        match self.parts.get(t) {
            Some(p) if self.multi() => {
                format!(
                    "{} ({})",
                    crate::report::target_label(t),
                    page::brief(&p.target.path.to_string_lossy())
                )
            }
            _ => String::new(),
        }
    }

    /// An id suffix per target when there are several (`-t1`).
    pub fn target_id(&self, t: usize) -> String {
        if self.multi() {
            format!("-t{t}")
        } else {
            String::new()
        }
    }

    /// Every cell of a target with its standing against offset 0.
    pub fn standings(&self, t: usize) -> Vec<(&CellReport, Standing)> {
        let cells = &self.parts[t].cells;
        cells.iter().zip(self.standing[t].iter().copied()).collect()
    }

    /// One colour scale for every heatmap of the run, so tiles compare
    /// across patterns and targets; from the decided tiles, the only
    /// ones coloured.
    pub fn shade(&self) -> Shade {
        let penalties: Vec<f64> = (0..self.parts.len())
            .flat_map(|t| self.standings(t))
            .filter_map(|(_, s)| match s {
                Standing::Measured(r) if r.decided() => Some(r.penalty()),
                _ => None,
            })
            .collect();
        Shade::over(penalties.into_iter())
    }

    /// Every further target's cells against the first's: the run's own
    /// comparisons, or (fio) the ratio of the medians, untested.
    pub fn versus(&self) -> Vec<Versus> {
        if !self.doc.versus.is_empty() {
            return self
                .doc
                .versus
                .iter()
                .filter(|c| c.kind == ContrastKind::Target)
                .map(|c| Versus {
                    target: c.target,
                    reference: c.reference_target,
                    key: (c.pattern, c.block_size.into(), c.offset),
                    rel: Rel::of(&c.relative),
                })
                .collect();
        }
        let mut out = Vec::new();
        for (t, part) in self.parts.iter().enumerate().skip(1) {
            for c in &part.cells {
                let reference = self.cell(0, c.key()).map(|r| r.iops.median);
                if let Some(rel) = reference.and_then(|r| Rel::untested(c.iops.median, r)) {
                    out.push(Versus {
                        target: t,
                        reference: 0,
                        key: c.key(),
                        rel,
                    });
                }
            }
        }
        out
    }
}

/// One cell of a further target against the same cell of the first.
pub struct Versus {
    pub target: usize,
    pub reference: usize,
    pub key: (Pattern, u64, u64),
    pub rel: Rel,
}

/// The section of one probe run; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, doc: &ProbeDoc) -> String {
    let run = Run::new(id, doc);
    let mut s = page::heading(2, id, &format!("probe: {name}"));
    s.push_str(&text::overview(&run));
    s.push_str(&text::verdicts(&run));
    if doc.erase_unit.is_some() {
        s.push_str(&erase_search(id, doc));
        s.push_str(&page::heading(
            3,
            &format!("{id}-setup"),
            "Setup and environment",
        ));
        s.push_str(&text::plan(&run));
        s.push_str(&text::environment(&run));
        return s;
    }
    if run.parts.iter().all(|p| p.cells.is_empty()) {
        s.push_str(&page::para(
            "No cell was measured: there is nothing to draw.",
        ));
    }
    let too_large = run.too_large();
    let draw = too_large.is_none();
    s.push_str(&drawn_note(&run, too_large));
    let shade = run.shade();
    for &pattern in &run.patterns {
        s.push_str(&page::heading(
            3,
            &format!("{id}-{pattern}"),
            &format!("{pattern}: by block size and offset"),
        ));
        if draw {
            s.push_str(&figures::heatmap(&run, pattern, &shade));
            s.push_str(&figures::offset_lines(&run, pattern));
        }
        s.push_str(&tables::cells(&run, pattern));
    }
    if run.offsets.contains(&0) {
        s.push_str(&page::heading(
            3,
            &format!("{id}-block-sizes"),
            "Aligned I/O by block size",
        ));
        if draw {
            s.push_str(&figures::bs_curve(&run));
        }
        s.push_str(&tables::bs_curve(&run));
    }
    if run.multi() {
        s.push_str(&page::heading(
            3,
            &format!("{id}-targets"),
            "Each target against the first",
        ));
        for &pattern in run.patterns.iter().filter(|_| draw) {
            s.push_str(&figures::versus(&run, pattern));
        }
        s.push_str(&tables::versus(&run));
    }
    s.push_str(&page::heading(
        3,
        &format!("{id}-setup"),
        "Setup and environment",
    ));
    s.push_str(&text::plan(&run));
    s.push_str(&text::environment(&run));
    s
}

/// `probe --erase-unit`: its table of candidates (the terminal's columns,
/// `report::tables::erase_columns`), instead of the grid's figures.
fn erase_search(id: &str, doc: &ProbeDoc) -> String {
    let rows = crate::report::tables::erase_rows(doc);
    let rows: Vec<_> = rows.iter().collect();
    let all = crate::report::tables::erase_columns();
    let cols: Vec<_> = all.iter().collect();
    let read = doc.erase_unit.as_ref().map_or(0, |e| e.read_bytes);
    let mut s = page::heading(
        3,
        &format!("{id}-erase"),
        "Erase-unit search: reads at each boundary",
    );
    s.push_str(&crate::report::columns::html(
        &format!("{id}-erase-table"),
        &format!(
            "{} reads ending at, across and starting at each candidate's boundaries: median latency in microseconds, how much longer reads across took, its 95 % interval and the decision",
            crate::units::human(read)
        ),
        &cols,
        &rows,
    ));
    s
}

/// What the figures leave out: the whole grid when it is too large, or
/// the targets past `MAX_PANELS`.
fn drawn_note(run: &Run, too_large: Option<String>) -> String {
    match too_large {
        Some(why) => page::note(&why),
        None if run.drawn() < run.parts.len() => page::note(&format!(
            "The figures draw the first {} of the {} targets; the tables have every target's cells.",
            run.drawn(),
            run.parts.len()
        )),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::fixtures::rel;
    use crate::probe::ContrastReport as Contrast;
    use crate::probe::Decision;
    use crate::probe::Producer;

    /// A grid of `sizes` × `offsets` per pattern; 4 KiB at 512 B is
    /// 48 % slower (significant), every other cell fine.
    fn cells(patterns: &[Pattern], sizes: &[u64], offsets: &[u64], ci: bool) -> Vec<CellReport> {
        let mut out = Vec::new();
        for &pattern in patterns {
            for &bs in sizes {
                for &offset in offsets {
                    let slow = bs == 4096 && offset == 512;
                    let ratio = if slow { 0.52 } else { 0.99 };
                    let iops =
                        100_000.0 * 512.0 / bs as f64 * if offset == 0 { 1.0 } else { ratio };
                    let decision = if slow {
                        Decision::Slower
                    } else {
                        Decision::Fine
                    };
                    let interval = ci.then_some([iops * 0.95, iops * 1.05]);
                    let rounds = if ci { 5 } else { 1 };
                    let mut c =
                        crate::probe::fixtures::cell(pattern, (bs, offset), iops, interval, rounds);
                    c.relative = (ci && offset != 0).then(|| rel(ratio, decision));
                    out.push(c);
                }
            }
        }
        out
    }

    fn doc(cells: Vec<CellReport>) -> ProbeDoc {
        crate::probe::fixtures::doc(cells)
    }

    fn quick() -> ProbeDoc {
        doc(cells(
            &[Pattern::Randwrite],
            &[512, 4096],
            &[0, 512, 4096],
            true,
        ))
    }

    fn count(s: &str, needle: &str) -> usize {
        s.matches(needle).count()
    }

    #[test]
    fn every_tile_and_line_carries_its_numbers_and_data() {
        let s = section("run1", "a.json", &quick());
        for id in [
            "run1-heatmap-randwrite",
            "run1-lines-randwrite",
            "run1-bs-curve",
            "run1-cells-randwrite",
            "run1-bs-curve-table",
            "run1-plan",
            "run1-environment",
        ] {
            assert!(s.contains(&format!("id=\"{id}\"")), "{id} missing");
        }
        assert_eq!(count(&s, "<g class=\"cell\""), 6);
        assert_eq!(
            count(
                &s,
                "<g class=\"line\" data-target=\"0\" data-pattern=\"randwrite\" data-bs="
            ),
            2
        );
        assert!(s.contains(
            "<g class=\"cell\" data-target=\"0\" data-pattern=\"randwrite\" data-bs=\"4096\" \
             data-offset=\"512\" data-decision=\"slower\" data-significant=\"true\" \
             data-fill=\"coloured\" data-change=\"-0.4800\"><title>\
             randwrite 4 KiB at 512 B: 6\u{202f}500 IOPS (95 % CI 6\u{202f}175–6\u{202f}825), \
             0.52× aligned (CI 0.48–0.56), slower, 5 rounds</title>"
        ));
        assert!(
            s.contains("data-offset=\"0\" data-decision=\"aligned\" data-significant=\"false\"")
        );
        assert!(s.contains("\u{25cf} \u{2212}48 %"));
        assert!(s.contains("class=\"band\""));
        assert!(!s.contains("run1-versus"));
    }

    #[test]
    fn a_fio_run_has_no_band_no_test_and_says_so() {
        let mut d = doc(cells(&[Pattern::Randread], &[512, 4096], &[0, 512], false));
        d.source = Producer::Fio;
        let s = section("run1", "fio.json", &d);
        assert!(!s.contains("class=\"band\""));
        assert_eq!(count(&s, "data-decision=\"untested\""), 2 + 2);
        assert!(!s.contains("data-significant=\"true\""));
        assert!(s.contains("one fio pass: no interval"));
    }

    #[test]
    fn undecided_tiles_are_hatched_not_coloured_on_a_signed_scale() {
        let mut d = quick();
        // 512 B at 4096: open (undecided) though 20 % slower.
        let c = d
            .cells
            .iter_mut()
            .find(|c| c.cell.block_size == 512 && c.cell.offset == 4096)
            .unwrap();
        c.relative = Some(rel(0.8, Decision::Open));
        let s = section("run1", "a.json", &d);
        let map = s
            .split("id=\"run1-heatmap-randwrite\"")
            .nth(1)
            .unwrap()
            .split("</svg>")
            .next()
            .unwrap();
        assert_eq!(count(map, "data-fill=\"undecided\""), 1);
        assert_eq!(count(map, "data-fill=\"coloured\""), 3);
        assert!(map.contains(
            "data-offset=\"4096\" data-decision=\"open\" data-significant=\"false\" \
             data-fill=\"undecided\" data-change=\"-0.2000\""
        ));
        assert!(map.contains("fill=\"url(#run1-heatmap-randwrite-undecided)\""));
        assert!(map.contains("data-legend=\"undecided\""));
        // The scale reaches the decided 48 %, not the open 20 %, both ways.
        assert!(map.contains("data-scale=\"diverging\" data-max=\"0.5\""));
        assert!(map.contains("\u{2212}50 % slower"));
        assert!(map.contains("+50 % faster"));
        assert!(map.contains("IOPS change against"));
    }

    #[test]
    fn several_targets_are_panels_and_compared_with_the_first() {
        let mut d = quick();
        let mut second = d.parts().remove(0);
        second.target.path = "/dev/sdy".into();
        d.targets = vec![d.parts().remove(0), second];
        d.versus = vec![Contrast {
            kind: ContrastKind::Target,
            target: 1,
            reference_target: 0,
            pattern: Pattern::Randwrite,
            block_size: 4096,
            offset: 0,
            reference_block_size: 4096,
            reference_offset: 0,
            relative: rel(0.5, Decision::Slower),
        }];
        let s = section("run1", "multi.json", &d);
        assert_eq!(count(&s, "<g class=\"cell\" data-target=\"1\""), 6 + 1);
        assert_eq!(
            count(
                &s,
                "<g class=\"line\" data-target=\"1\" data-pattern=\"randwrite\" data-bs="
            ),
            2
        );
        assert!(s.contains("id=\"run1-versus-randwrite\""));
        assert!(s.contains("id=\"run1-versus-table\""));
        assert!(s.contains(
            "data-decision=\"slower\" data-significant=\"true\" data-fill=\"coloured\" data-change=\"-0.5000\" data-reference-target=\"0\""
        ));
        assert!(s.contains("target 2 (/dev/sdy) against target 1 (/dev/sdx)"));
        assert!(super::super::kit::assert_legends_clear(&s) > 0);
    }

    #[test]
    fn the_legends_keep_clear() {
        let s = section("run1", "a.json", &quick());
        // The heatmap's key (3 entries) and the lines' block sizes (2),
        // per figure.
        assert!(super::super::kit::assert_legends_clear(&s) >= 5);
    }

    #[test]
    fn two_runs_on_one_page_share_no_id() {
        let input = |n: &str| super::super::Input {
            name: n.into(),
            doc: crate::saved::Saved::Probe(Box::new(quick())),
        };
        let page = super::super::render_html(&[input("a.json"), input("b.json")]);
        let mut ids: Vec<&str> = page
            .split(" id=\"")
            .skip(1)
            .map(|s| &s[..s.find('"').unwrap()])
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }

    #[test]
    fn many_targets_draw_the_first_panels_and_keep_every_cell_in_the_tables() {
        // Figures with a panel per target repeat the grid's labels in each:
        // they draw the first MAX_PANELS targets only.
        let n = 40;
        let mut d = doc(Vec::new());
        d.targets = (0..n)
            .map(|i| {
                let mut p = d.parts().remove(0);
                p.target.path = format!("/dev/t{i}").into();
                p.cells = cells(&[Pattern::Randread], &[512u64 << (i % 8)], &[0, 512], false);
                p
            })
            .collect();
        let s = section("run1", "many.json", &d);
        assert!(s.contains(&format!(
            "The figures draw the first {MAX_PANELS} of the {n} targets"
        )));
        // Two tiles per drawn target, and against the first target those of
        // target 8, the only drawn one with the first's block size.
        assert_eq!(
            count(&s, "<g class=\"cell\" data-target=\""),
            MAX_PANELS * 2 + 2
        );
        // The last target's cells are in the tables: the grid's and the
        // block-size curve's.
        assert_eq!(count(&s, "<tr><td class=\"num\">39</td>"), 2 + 1);
        assert!(s.len() < 5_000_000, "{} bytes", s.len());
    }

    #[test]
    fn a_grid_too_large_to_draw_says_so_and_keeps_its_table() {
        let offsets: Vec<u64> = (0..=MAX_COLS as u64).map(|k| k * 512).collect();
        let d = doc(cells(&[Pattern::Randread], &[4096], &offsets, true));
        let s = section("run1", "wide.json", &d);
        assert!(s.contains("too many to draw"));
        assert!(!s.contains("<svg"));
        assert!(s.contains("id=\"run1-cells-randread\""));
        assert_eq!(count(&s, "<tr><td>4 KiB</td>"), offsets.len());
    }

    #[test]
    fn the_standard_grid_stays_small() {
        let offsets: Vec<u64> = (0..8)
            .map(|k| k * 512)
            .chain([4096, 4608, 65024, 1048064])
            .collect();
        let sizes: Vec<u64> = (9..=16).map(|k| 1 << k).collect();
        let d = doc(cells(
            &[Pattern::Randread, Pattern::Randwrite],
            &sizes,
            &offsets,
            true,
        ));
        let s = section("run1", "standard.json", &d);
        assert!(s.len() < 400_000, "{} bytes", s.len());
    }
}
