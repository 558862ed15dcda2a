//! A grid: block sizes down, offsets across, an entry where the two meet
//! (the probe's IOPS and differences, one target against another). Its
//! columns are made when the offsets are known, one per offset; the rest
//! is the column model's, as for any table.

use super::Column;
use crate::report::style::Style;
use crate::units::human;

/// What a grid's entry is: its raw value and what people read.
pub trait Entry {
    fn raw(&self) -> String;
    fn shown(&self, st: &Style) -> String;
}

/// A block size, and its entry at each offset of the grid (None: none
/// was measured there).
pub struct GridRow<T> {
    pub block_size: u64,
    pub entries: Vec<Option<T>>,
}

/// The grid over `keys` (block size, offset) with `entry` where they
/// meet: a `bs` column, then one column per offset, in increasing order.
pub fn grid<T: Entry>(
    keys: impl Iterator<Item = (u64, u64)>,
    entry: impl Fn(u64, u64) -> Option<T>,
) -> (Vec<Column<GridRow<T>>>, Vec<GridRow<T>>) {
    let (mut sizes, mut offsets): (Vec<u64>, Vec<u64>) = keys.unzip();
    for v in [&mut sizes, &mut offsets] {
        v.sort_unstable();
        v.dedup();
    }
    let mut cols = vec![Column::both("block_size", "bs", |r: &GridRow<T>| {
        r.block_size.to_string()
    })
    .shown_as(|r, _| human(r.block_size))
    .size()];
    for (at, &o) in offsets.iter().enumerate() {
        let raw = |r: &GridRow<T>, at: usize| r.entries[at].as_ref().map_or(String::new(), T::raw);
        let shown = |r: &GridRow<T>, at: usize, st: &Style| {
            r.entries[at]
                .as_ref()
                .map_or_else(|| "-".into(), |e| e.shown(st))
        };
        cols.push(Column::entry(format!("offset_{o}"), offset_label(o), at, raw, shown).num());
    }
    let rows = sizes
        .iter()
        .map(|&bs| GridRow {
            block_size: bs,
            entries: offsets.iter().map(|&o| entry(bs, o)).collect(),
        })
        .collect();
    (cols, rows)
}

/// An offset as the terminal's grids title it: `512`, `3584`, `4608`,
/// `63.5K`, `1023.5K`.
pub fn offset_label(o: u64) -> String {
    if o < 10_000 {
        o.to_string()
    } else {
        let k = o as f64 / 1024.0;
        if k.fract() == 0.0 {
            format!("{k:.0}K")
        } else {
            format!("{k:.1}K")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::render;
    use super::*;

    struct N(u64);
    impl Entry for N {
        fn raw(&self) -> String {
            self.0.to_string()
        }
        fn shown(&self, _: &Style) -> String {
            format!("{}!", self.0)
        }
    }

    /// Offsets across in order, block sizes down, "-" where nothing met.
    #[test]
    fn a_grid_has_a_column_per_offset() {
        let keys = [(4096, 512), (512, 0), (4096, 0), (512, 65024)];
        let (cols, rows) = grid(keys.into_iter(), |bs, o| {
            keys.contains(&(bs, o)).then_some(N(bs + o))
        });
        let picked: Vec<_> = cols.iter().collect();
        let rows: Vec<_> = rows.iter().collect();
        let st = Style::plain();
        assert_eq!(
            render(&picked, &rows, &st, ""),
            "bs     0      512    63.5K\n512 B  512!   -      65536!\n4 KiB  4096!  4608!  -\n"
        );
    }
}
