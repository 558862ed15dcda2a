//! The arithmetic behind the boundary zooms: the grids a boundary is
//! judged against, the grid lines around a byte, and the window drawn.

use crate::iolimits::Topology;
use crate::units::{human, KIB, MIB};

/// One grid: lines at `offset + k × grain` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    /// `4k`, `1m`, `physical` or `optimal` (the `data-grid` attribute).
    pub key: &'static str,
    /// What the lane is called in the figure: `physical 4 KiB`.
    pub label: String,
    pub grain: u64,
    /// Where the grid starts: the alignment offset, below one grain.
    pub offset: u64,
}

/// The grids of a disk: 4 KiB and 1 MiB whatever it says (docs/findings.md),
/// its kernel grain `max(physical, minimum I/O)` and its optimal I/O size
/// when it has one, both shifted by the alignment offset.
pub fn grids(t: &Topology) -> Vec<Grid> {
    let mut out = vec![
        Grid {
            key: "4k",
            label: "4 KiB".into(),
            grain: 4 * KIB,
            offset: 0,
        },
        Grid {
            key: "1m",
            label: "1 MiB".into(),
            grain: MIB,
            offset: 0,
        },
    ];
    let g = u64::from(t.physical_block_size.max(t.minimum_io_size));
    if g > 0 {
        let what = if t.minimum_io_size > t.physical_block_size {
            "min I/O"
        } else {
            "physical"
        };
        out.push(Grid {
            key: "physical",
            label: format!("{what} {}", human(g)),
            grain: g,
            offset: offset_in(t.alignment_offset, g),
        });
    }
    if t.optimal_io_size > 0 {
        let g = u64::from(t.optimal_io_size);
        out.push(Grid {
            key: "optimal",
            label: format!("optimal {}", human(g)),
            grain: g,
            offset: offset_in(t.alignment_offset, g),
        });
    }
    out
}

/// The alignment offset as a grid start: the kernel's "misaligned" marks
/// (-1, 4294967295) count as 0, as in its own rule.
fn offset_in(ao: i64, grain: u64) -> u64 {
    if ao < 0 || ao == i64::from(u32::MAX) {
        return 0;
    }
    ao.unsigned_abs() % grain
}

/// Where a byte falls on a grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// The last line at or before the byte (none before the grid starts).
    pub below: Option<u64>,
    /// The first line at or after it (none past u64).
    pub above: Option<u64>,
}

impl Position {
    pub fn on_line(&self) -> bool {
        self.below.is_some() && self.below == self.above
    }

    /// The bytes from the line below to `x`.
    pub fn past(&self, x: u64) -> Option<u64> {
        self.below.map(|b| x - b)
    }

    /// The bytes from `x` to the line above.
    pub fn short(&self, x: u64) -> Option<u64> {
        self.above.map(|a| a - x)
    }
}

/// Where byte `x` falls on `g`.
pub fn position(x: u64, g: &Grid) -> Position {
    if g.grain == 0 {
        return Position {
            below: None,
            above: None,
        };
    }
    let below = (x >= g.offset).then(|| x - (x - g.offset) % g.grain);
    let above = if x <= g.offset {
        Some(g.offset)
    } else {
        let r = (x - g.offset) % g.grain;
        if r == 0 {
            Some(x)
        } else {
            x.checked_add(g.grain - r)
        }
    };
    Position { below, above }
}

/// The lines of `g` in `[lo, hi]`, or their count when more than `cap`.
pub fn lines(lo: u64, hi: u64, g: &Grid, cap: usize) -> Result<Vec<u64>, u64> {
    let Some(first) = position(lo, g).above.filter(|f| *f <= hi) else {
        return Ok(Vec::new());
    };
    let count = (hi - first) / g.grain + 1;
    if count > cap as u64 {
        return Err(count);
    }
    Ok((0..count).map(|k| first + k * g.grain).collect())
}

/// The byte range a zoom shows: `half` either side of the boundary, where
/// `half` is 8 KiB or the kernel grain when that is larger (up to 1 MiB),
/// so that a line of the 4 KiB and the physical grid lies on each side.
/// Near either end of the disk the window slides inward rather than
/// shrinks, so every zoom has the same scale.
pub fn window(boundary: u64, grids: &[Grid], disk_end: u64) -> (u64, u64) {
    let grain = grids
        .iter()
        .filter(|g| g.key == "physical")
        .map(|g| g.grain)
        .max()
        .unwrap_or(0);
    let half = grain.clamp(8 * KIB, MIB);
    // Near u64::MAX (a saved document may say anything) the window
    // slides down as it does at the disk's end.
    let mut hi = boundary.saturating_sub(half).saturating_add(2 * half);
    let mut lo = hi - 2 * half;
    if hi > disk_end.max(boundary) && disk_end >= 2 * half {
        hi = disk_end.max(boundary);
        lo = hi - 2 * half;
    }
    (lo, hi)
}

/// Where `x` falls on `g`, in words with the byte offsets written out.
pub fn describe(x: u64, g: &Grid) -> String {
    let p = position(x, g);
    if p.on_line() {
        return format!(
            "on a line ({} × {})",
            (x - g.offset) / g.grain,
            human(g.grain)
        ) + &offset_words(g);
    }
    let mut parts = Vec::new();
    if let (Some(b), Some(d)) = (p.below, p.past(x)) {
        parts.push(format!("{d} bytes past the line at {b}"));
    }
    if let (Some(a), Some(d)) = (p.above, p.short(x)) {
        parts.push(format!("{d} bytes short of {a}"));
    }
    parts.join(", ") + &offset_words(g)
}

fn offset_words(g: &Grid) -> String {
    if g.offset == 0 {
        String::new()
    } else {
        format!(" (grid starts at byte {}: alignment offset)", g.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(grain: u64, offset: u64) -> Grid {
        Grid {
            key: "physical",
            label: String::new(),
            grain,
            offset,
        }
    }

    fn limits(pbs: u32, min: u32, opt: u32, ao: i64) -> Topology {
        Topology {
            logical_block_size: 512,
            physical_block_size: pbs,
            minimum_io_size: min,
            optimal_io_size: opt,
            alignment_offset: ao,
            ..Topology::default()
        }
    }

    #[test]
    fn a_start_at_32256_lies_between_4k_lines_and_far_from_1m() {
        let four = &grids(&limits(512, 512, 0, 0))[0];
        let p = position(32256, four);
        assert_eq!((p.below, p.above), (Some(28672), Some(32768)));
        assert_eq!((p.past(32256), p.short(32256)), (Some(3584), Some(512)));
        assert!(!p.on_line());
        let one = &grids(&limits(512, 512, 0, 0))[1];
        let p = position(32256, one);
        assert_eq!((p.below, p.above), (Some(0), Some(MIB)));
        assert_eq!(
            describe(32256, four),
            "3584 bytes past the line at 28672, 512 bytes short of 32768"
        );
    }

    #[test]
    fn a_byte_on_a_line_is_its_own_neighbour() {
        let p = position(MIB, &g(4096, 0));
        assert_eq!((p.below, p.above), (Some(MIB), Some(MIB)));
        assert!(p.on_line());
        assert_eq!(describe(MIB, &g(4096, 0)), "on a line (256 × 4 KiB)");
    }

    #[test]
    fn the_alignment_offset_shifts_the_grid() {
        // ao 3584 on a 512e disk: 4 KiB physical lines at 3584, 7680 ...
        let t = limits(4096, 4096, 0, 3584);
        let phys = grids(&t).into_iter().find(|g| g.key == "physical").unwrap();
        assert_eq!((phys.grain, phys.offset), (4096, 3584));
        assert!(position(32256, &phys).on_line());
        let p = position(1024, &phys);
        assert_eq!((p.below, p.above), (None, Some(3584)));
        // The kernel's misaligned marks count as 0.
        assert_eq!(offset_in(-1, 4096), 0);
        assert_eq!(offset_in(4294967295, 4096), 0);
    }

    #[test]
    fn grids_name_min_io_and_optimal() {
        let t = limits(4096, 65536, 33553920, 0);
        let gs = grids(&t);
        let keys: Vec<_> = gs.iter().map(|g| g.key).collect();
        assert_eq!(keys, ["4k", "1m", "physical", "optimal"]);
        assert_eq!(gs[2].label, "min I/O 64 KiB");
        assert_eq!(gs[3].grain, 33553920);
        assert_eq!(grids(&limits(512, 512, 0, 0)).len(), 3);
    }

    #[test]
    fn the_window_holds_lines_of_the_small_grids() {
        let gs = grids(&limits(512, 512, 0, 0));
        let (lo, hi) = window(32256, &gs, 64 * MIB);
        assert_eq!((lo, hi), (32256 - 8192, 32256 + 8192));
        assert_eq!(
            lines(lo, hi, &gs[0], 100),
            Ok(vec![24576, 28672, 32768, 36864])
        );
        assert_eq!(lines(lo, hi, &gs[1], 100), Ok(vec![]));
        assert_eq!(lines(lo, hi, &gs[2], 10), Err(33));
        // A 64 KiB grain widens the window to ±64 KiB.
        let gs = grids(&limits(4096, 65536, 0, 0));
        assert_eq!(window(MIB, &gs, 64 * MIB), (MIB - 65536, MIB + 65536));
    }

    #[test]
    fn the_window_slides_inward_at_the_disk_ends() {
        let gs = grids(&limits(512, 512, 0, 0));
        assert_eq!(window(512, &gs, 64 * MIB), (0, 16384));
        assert_eq!(
            window(64 * MIB, &gs, 64 * MIB),
            (64 * MIB - 16384, 64 * MIB)
        );
        // A disk smaller than the window: from 0, past its end.
        assert_eq!(window(4096, &gs, 8192), (0, 16384));
        // A boundary at the last byte of u64 (a hostile document).
        assert_eq!(window(u64::MAX, &gs, 100), (u64::MAX - 16384, u64::MAX));
    }
}
