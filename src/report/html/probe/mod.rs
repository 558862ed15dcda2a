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

mod draw;
mod figures;
mod heatmap;
pub mod layout;
mod lines;
mod tables;
mod text;

use super::page;
use crate::probe::engine::Pattern;
use crate::probe::sequential::ContrastKind;
use crate::saved::probe::{axes, Cell, Source, TargetPart};
use crate::saved::ProbeDoc;
use layout::{against_aligned, Rel, Shade, Standing};

/// A run as the figures need it: every target's part and the grid they
/// all span.
pub struct Run<'a> {
    pub id: &'a str,
    pub doc: &'a ProbeDoc,
    pub parts: Vec<TargetPart>,
    pub patterns: Vec<Pattern>,
    pub sizes: Vec<u64>,
    pub offsets: Vec<u64>,
}

impl<'a> Run<'a> {
    pub fn new(id: &'a str, doc: &'a ProbeDoc) -> Run<'a> {
        let parts = doc.parts();
        let all: Vec<Cell> = parts.iter().flat_map(|p| p.cells.clone()).collect();
        let (patterns, sizes, offsets) = axes(&all);
        Run {
            id,
            doc,
            parts,
            patterns,
            sizes,
            offsets,
        }
    }

    pub fn multi(&self) -> bool {
        self.parts.len() > 1
    }

    pub fn fio(&self) -> bool {
        self.doc.source == Source::Fio
    }

    pub fn cell(&self, target: usize, key: (Pattern, u64, u64)) -> Option<&Cell> {
        self.parts
            .get(target)?
            .cells
            .iter()
            .find(|c| c.key() == key)
    }

    /// `target 1 (/dev/sdb)` with several targets; empty with one.
    pub fn target_name(&self, t: usize) -> String {
        match self.parts.get(t) {
            Some(p) if self.multi() => format!("target {t} ({})", p.target.path),
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
    pub fn standings(&self, t: usize) -> Vec<(&Cell, Standing)> {
        let cells = &self.parts[t].cells;
        cells
            .iter()
            .map(|c| (c, against_aligned(c, cells)))
            .collect()
    }

    /// One colour scale for every heatmap of the run, so tiles compare
    /// across patterns and targets.
    pub fn shade(&self) -> Shade {
        let penalties: Vec<f64> = (0..self.parts.len())
            .flat_map(|t| self.standings(t))
            .filter_map(|(_, s)| match s {
                Standing::Measured(r) => Some(r.penalty()),
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
                    key: (c.pattern, c.block_size, c.offset),
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
    if run.parts.iter().all(|p| p.cells.is_empty()) {
        s.push_str(&page::para(
            "No cell was measured: there is nothing to draw.",
        ));
    }
    let shade = run.shade();
    for &pattern in &run.patterns {
        s.push_str(&page::heading(
            3,
            &format!("{id}-{pattern}"),
            &format!("{pattern}: by block size and offset"),
        ));
        s.push_str(&figures::heatmap(&run, pattern, &shade));
        s.push_str(&figures::offset_lines(&run, pattern));
        s.push_str(&tables::cells(&run, pattern));
    }
    if run.offsets.contains(&0) {
        s.push_str(&page::heading(
            3,
            &format!("{id}-block-sizes"),
            "Aligned I/O by block size",
        ));
        s.push_str(&figures::bs_curve(&run));
        s.push_str(&tables::bs_curve(&run));
    }
    if run.multi() {
        s.push_str(&page::heading(
            3,
            &format!("{id}-targets"),
            "Each target against the first",
        ));
        for &pattern in &run.patterns {
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
