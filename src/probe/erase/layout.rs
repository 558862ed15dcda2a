//! Where the erase-unit search reads: its candidate units, and for each
//! the three cells that read just before, across and just after one of
//! its boundaries.
//!
//! Every cell's reads land at `offset + k × spacing` (the probe's
//! random positions, `measure::Positions`), so a cell's boundaries are
//! `unit × j + k × spacing` for the one `j` it is laid out at. With
//! `spacing` six times the largest power-of-two candidate P, and the
//! boundaries taken at `j = 1`, every boundary a cell reads at is an odd
//! multiple of its unit (not one of twice the unit), and for a power of
//! two not a multiple of three units either (`1 + k × 6P/U` is 1 modulo
//! 2 and 3). So a device whose unit is 12 MiB slows none of the 4 MiB or
//! 8 MiB candidates' reads, one whose unit is 8 MiB none of 12 MiB's,
//! and the smallest candidate whose reads across are slower is the unit.

use crate::probe::measure::{Cell, Pattern};
use crate::units::{human, KIB, MIB};
use serde::{Deserialize, Serialize};

/// The powers of two searched, from the smallest (SD cards' allocation
/// units start at 16 KiB, but reads of 16 KiB need room on both sides)
/// to the largest unit in the SD specification's table.
const SMALLEST: u64 = 64 * KIB;
const LARGEST: u64 = 64 * MIB;
/// The units of the SD table that are not powers of two (SD Physical
/// Layer Simplified Specification, AU_SIZE of the SD Status: 12 and
/// 24 MiB), each searched once the spacing is a multiple of twice it.
const OTHERS: [u64; 2] = [12 * MIB, 24 * MIB];
/// Each boundary at this many places of the target at least.
pub const MIN_PLACES: u64 = 4;
/// The read size when `--bs` does not say: flashbench's default block.
pub const DEFAULT_READ: u64 = 16 * KIB;

/// Where a read sits against the boundary it is laid out at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// It ends at the boundary.
    EndsAt,
    /// Half of it on each side.
    Across,
    /// It starts at the boundary.
    StartsAt,
}

crate::spelled_as_serde!(Place);

/// Where each place's read starts, before the boundary.
fn lead(place: Place, read: u64) -> u64 {
    match place {
        Place::EndsAt => read,
        Place::Across => read / 2,
        Place::StartsAt => 0,
    }
}

pub const PLACES: [Place; 3] = [Place::EndsAt, Place::Across, Place::StartsAt];

/// One candidate unit and its three cells, in the order of [`PLACES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub unit: u64,
    pub cells: [Cell; 3],
}

/// What the search reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Every cell's reads are this far apart (`Grid::unit`).
    pub spacing: u64,
    pub read: u64,
    /// Smallest first.
    pub candidates: Vec<Candidate>,
}

impl Layout {
    pub fn cells(&self) -> Vec<Cell> {
        self.candidates.iter().flat_map(|c| c.cells).collect()
    }
}

/// Why the search cannot be laid out on a target.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("the erase-unit search needs at least {} (each boundary read at {MIN_PLACES} places); the target has {}", human(*need), human(*size))]
    TooSmall { size: u64, need: u64 },
    #[error("--bs {read}: the erase-unit search reads one block size, an even multiple of {align} bytes (the O_DIRECT alignment) up to {}", human(SMALLEST / 2))]
    Read { read: u64, align: u64 },
    #[error("the target starts {shift} bytes into the device, off its O_DIRECT alignment of {align} bytes: the reads cannot sit on the device's boundaries; probe the whole disk")]
    Shift { shift: u64, align: u64 },
}

/// The candidates searched on a target of `size` bytes that starts
/// `start` bytes into its device (a partition's start: the boundaries
/// are the device's), reading `read` bytes at O_DIRECT alignment `align`.
pub fn lay_out(size: u64, start: u64, read: u64, align: u64) -> Result<Layout, LayoutError> {
    let align = align.max(1);
    if read == 0 || read % (2 * align) != 0 || read > SMALLEST / 2 {
        return Err(LayoutError::Read { read, align });
    }
    let largest = std::iter::successors(Some(LARGEST), |p| (*p > SMALLEST).then(|| p / 2))
        .find(|p| 6 * p * MIN_PLACES + read <= size)
        .ok_or(LayoutError::TooSmall {
            size,
            need: 6 * SMALLEST * MIN_PLACES + read,
        })?;
    let spacing = 6 * largest;
    let shift = start % spacing;
    if shift % align != 0 {
        return Err(LayoutError::Shift { shift, align });
    }
    let mut units: Vec<u64> = std::iter::successors(Some(SMALLEST), |u| Some(u * 2))
        .take_while(|u| *u <= largest)
        .collect();
    units.extend(OTHERS.iter().copied().filter(|o| spacing % (2 * o) == 0));
    units.sort_unstable();
    let candidates = units
        .into_iter()
        .map(|unit| Candidate {
            unit,
            cells: PLACES.map(|p| Cell {
                block_size: read as u32,
                offset: (unit + spacing - lead(p, read) - shift) % spacing,
                pattern: Pattern::Randread,
            }),
        })
        .collect();
    Ok(Layout {
        spacing,
        read,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    const GIB: u64 = 1 << 30;

    /// The device boundaries a cell's reads sit at (its place's lead
    /// added back, the target's start too).
    fn boundaries(l: &Layout, c: &Candidate, i: usize, start: u64, size: u64) -> Vec<u64> {
        let cell = c.cells[i];
        let slots = (size - cell.offset - l.read) / l.spacing + 1;
        (0..slots)
            .map(|k| start + cell.offset + k * l.spacing + lead(PLACES[i], l.read))
            .collect()
    }

    #[test]
    fn a_card_of_4_gib_gets_every_candidate_up_to_64_mib() {
        let l = lay_out(4 * GIB, 0, DEFAULT_READ, 512).unwrap();
        assert_eq!(l.spacing, 384 * MIB);
        let units: Vec<u64> = l.candidates.iter().map(|c| c.unit / KIB).collect();
        assert_eq!(
            units,
            [64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 65536]
        );
        assert_eq!(l.cells().len(), 39);
    }

    #[test]
    fn each_candidate_reads_only_at_boundaries_of_its_own_unit_and_no_larger_one() {
        for start in [0, 1 << 20, 63 * 512] {
            let size = 16 * GIB;
            let l = lay_out(size, start, DEFAULT_READ, 512).unwrap();
            for c in &l.candidates {
                for i in 0..3 {
                    let bs = boundaries(&l, c, i, start, size);
                    assert!(bs.len() as u64 >= MIN_PLACES);
                    for b in bs {
                        assert_eq!(b % c.unit, 0, "{} at {b}", c.unit);
                        assert_ne!(b % (2 * c.unit), 0, "{} at {b}", c.unit);
                        if c.unit.is_power_of_two() {
                            assert_ne!(b % (3 * c.unit), 0, "{} at {b}", c.unit);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn reads_sit_before_across_and_after_the_boundary() {
        let l = lay_out(GIB, 0, DEFAULT_READ, 512).unwrap();
        let c = l.candidates[0];
        let offs: Vec<u64> = c.cells.iter().map(|x| x.offset).collect();
        assert_eq!(offs, [48 * KIB, 56 * KIB, 64 * KIB]);
    }

    #[test]
    fn small_targets_search_smaller_units_and_tiny_ones_are_refused() {
        let l = lay_out(64 * MIB, 0, DEFAULT_READ, 512).unwrap();
        assert_eq!(l.spacing, 12 * MIB);
        assert_eq!(l.candidates.last().unwrap().unit, 2 * MIB);
        let e = lay_out(MIB, 0, DEFAULT_READ, 512).unwrap_err();
        assert!(e.to_string().contains("at least"), "{e}");
    }

    #[test]
    fn odd_reads_and_shifts_are_refused() {
        assert!(matches!(
            lay_out(GIB, 0, 12 * KIB + 512, 4096),
            Err(LayoutError::Read { .. })
        ));
        assert!(matches!(
            lay_out(GIB, 0, 64 * KIB, 512),
            Err(LayoutError::Read { .. })
        ));
        assert!(matches!(
            lay_out(GIB, 63 * 512, DEFAULT_READ, 4096),
            Err(LayoutError::Shift { .. })
        ));
    }
}
