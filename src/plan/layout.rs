//! Where each partition goes: pure arithmetic in table sectors.
//!
//! Partitions only move forward (to a higher start), so the moves can run
//! from the last partition to the first and no move ever writes over data
//! that has not been moved yet. A partition never becomes smaller than
//! what lives in it. An extended container never moves; a logical
//! partition stays between its own EBR and the next one, because libfdisk
//! keeps each EBR where it is when a logical partition's start changes
//! (`dos_set_partition` in libfdisk/src/dos.c rewrites the start relative
//! to the EBR's own LBA).

/// One partition as the planner sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub number: u32,
    pub start: u64,
    pub size: u64,
    /// Never moved or resized (an extended container).
    pub fixed: bool,
    /// Sectors its content needs from its start (the whole partition when
    /// nothing smaller is known).
    pub needed: u64,
    /// The least its content could be shrunk to (an ext4 with free
    /// blocks); `needed` when it cannot shrink. Room is taken down to it
    /// only when the disk has none otherwise.
    pub floor: u64,
    /// The first and last sector it may occupy.
    pub lo: u64,
    pub hi: u64,
    /// Sectors from the slot's start to its content's data, when that is
    /// not on the end grid (a PV whose pvcreate compensated for a
    /// misaligned start): the data start goes on the grid, not the slot's.
    pub shift: u64,
    /// Its end may move up: not where something is found from the
    /// partition's end (an md superblock 0.90 or 1.0) or might be (data
    /// the plan does not recognise, such as ZFS labels).
    pub grow: bool,
    /// Its end is on sgdisk's alignment now: keep it on the grid's
    /// `end_pref` (the alignment the new starts give sgdisk) where that
    /// is free, so no `sgdisk -v` caution appears that was not there.
    pub end_pref: bool,
}

/// The grids, in sectors: starts on `start` (from `offset`), ends on `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub start: u64,
    pub offset: u64,
    pub end: u64,
    /// The coarser end grid a slot with `end_pref` keeps to where it can
    /// (a multiple of `end`; `end` itself for none).
    pub end_pref: u64,
}

impl Grid {
    /// The first start at or after `from`.
    pub fn start_at(&self, from: u64) -> u64 {
        let g = self.start.max(1);
        let off = self.offset % g;
        let k = from.saturating_sub(off).div_ceil(g);
        k.saturating_mul(g).saturating_add(off).max(from)
    }

    /// The grid for a slot whose data starts `shift` sectors in.
    pub fn shifted(&self, shift: u64) -> Grid {
        let g = self.start.max(1);
        Grid {
            offset: (self.offset % g + g - shift % g) % g,
            ..*self
        }
    }

    pub fn start_ok(&self, s: u64) -> bool {
        s % self.start.max(1) == self.offset % self.start.max(1)
    }

    /// Whether a partition ending before sector `end_excl` ends on the grid.
    pub fn end_ok(&self, end_excl: u64) -> bool {
        end_excl % self.end.max(1) == 0
    }

    pub fn end_up(&self, end_excl: u64) -> u64 {
        end_excl
            .div_ceil(self.end.max(1))
            .saturating_mul(self.end.max(1))
    }

    pub fn end_down(&self, end_excl: u64) -> u64 {
        end_excl - end_excl % self.end.max(1)
    }
}

/// Where a slot ends up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub start: u64,
    pub size: u64,
}

impl Placed {
    pub fn last(&self) -> u64 {
        self.start.saturating_add(self.size.max(1) - 1)
    }
}

/// The slot that would not fit, and by how many sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoRoom {
    pub number: u32,
    pub short: u64,
}

/// Place every slot (sorted by start): aligned starts, ends on the grid
/// where that is free, sizes kept unless a later slot needs the room and
/// the content leaves some. Slots must not overlap to begin with.
pub fn place(slots: &[Slot], grid: Grid) -> Result<Vec<Placed>, NoRoom> {
    let mut sizes: Vec<u64> = slots.iter().map(|s| s.size).collect();
    // Each round either fits or takes room from a slot (its slack, else
    // by shrinking its content); the rounds are bounded, and the last
    // shortfall is the answer.
    for _ in 0..=4 * slots.len() {
        match once(slots, &sizes, grid) {
            Ok(p) => return Ok(p),
            Err((at, short)) => {
                if !give_room(slots, &mut sizes, grid, at, short) {
                    return Err(NoRoom {
                        number: slots[at].number,
                        short,
                    });
                }
            }
        }
    }
    once(slots, &sizes, grid).map_err(|(at, short)| NoRoom {
        number: slots[at].number,
        short,
    })
}

/// One pass with the sizes given: the first slot that does not fit.
fn once(slots: &[Slot], sizes: &[u64], grid: Grid) -> Result<Vec<Placed>, (usize, u64)> {
    let mut out: Vec<Placed> = Vec::with_capacity(slots.len());
    for (i, s) in slots.iter().enumerate() {
        let after_prev = out.last().map_or(0, |p| p.last().saturating_add(1));
        if s.fixed {
            if after_prev > s.start {
                return Err((i.saturating_sub(1), after_prev - s.start));
            }
            out.push(Placed {
                start: s.start,
                size: s.size,
            });
            continue;
        }
        let from = s.start.max(after_prev).max(s.lo);
        let own = grid.shifted(s.shift);
        let start = if own.start_ok(s.start) && from == s.start {
            s.start
        } else {
            own.start_at(from)
        };
        // Room up to where the next slot can start at the earliest is free.
        let free_to = slots.get(i + 1).map_or(s.hi, |n| {
            let next = grid.shifted(n.shift);
            let earliest = if n.fixed || next.start_ok(n.start) {
                n.start
            } else {
                next.start_at(n.start)
            };
            earliest.saturating_sub(1).min(s.hi)
        });
        // Where the next slot goes when this one, ending at `end`, pushes
        // it on: room up to there is free too, once it is pushed anyway.
        let pushed_to = |end: u64| {
            slots.get(i + 1).map_or(s.hi, |n| {
                let next = grid.shifted(n.shift);
                let at = if n.fixed {
                    n.start
                } else {
                    next.start_at(n.start.max(end))
                };
                at.saturating_sub(1).min(s.hi)
            })
        };
        let size = end_on_grid(s, sizes[i], start, free_to, &pushed_to, grid);
        let p = Placed { start, size };
        if p.last() > s.hi {
            return Err((i, p.last() - s.hi));
        }
        out.push(p);
    }
    Ok(out)
}

/// The size for a slot placed at `start`: its end moved up onto the grid
/// when the room is free (or when it pushes the next slot on anyway),
/// else down when the content still fits or can shrink to fit (an ext4
/// the script shrinks first), else kept (always kept for a shifted slot).
fn end_on_grid(
    s: &Slot,
    size: u64,
    start: u64,
    free_to: u64,
    pushed_to: &dyn Fn(u64) -> u64,
    grid: Grid,
) -> u64 {
    let end = start.saturating_add(size);
    // A shifted slot's start is off the grid, so its end and its size
    // cannot both be on it: keep the size (the node's block size).
    if s.shift != 0 {
        return size;
    }
    let pref = grid.end_pref.max(grid.end).max(1);
    if s.end_pref && end % pref != 0 {
        // Only into room that is free, or that pushing the next slot on
        // (as this end does already) frees; never pushing it further,
        // which could leave the last without room. Else down into the
        // content's slack (never by shrinking it).
        let up = end.div_ceil(pref).saturating_mul(pref);
        let room = if end - 1 > free_to {
            pushed_to(end)
        } else {
            free_to
        };
        if s.grow && up - 1 <= s.hi && up - 1 <= room {
            return up - start;
        }
        let down = end - end % pref;
        if down > start && down - start >= s.needed {
            return down - start;
        }
    }
    if grid.end_ok(end) {
        return size;
    }
    let up = grid.end_up(end);
    let pushing = end - 1 > free_to;
    if s.grow && up - 1 <= s.hi && (pushing || up - 1 <= free_to) {
        return up - start;
    }
    let down = grid.end_down(end);
    if down > start && down - start >= s.floor.min(s.needed) {
        return down - start;
    }
    size
}

/// Take `short` sectors from slots at or before `at` whose content leaves
/// room, the nearest first: first the slack beyond their content, and
/// only then by shrinking a content that can shrink (down to its floor).
/// False when none has any to give.
fn give_room(slots: &[Slot], sizes: &mut [u64], grid: Grid, at: usize, short: u64) -> bool {
    let mut left = short;
    let mut gave = false;
    for shrink in [false, true] {
        for i in (0..=at).rev() {
            let s = &slots[i];
            let least = if shrink {
                s.floor.min(s.needed)
            } else {
                s.needed
            };
            let floor = grid.end_up(least).max(1);
            if s.fixed || sizes[i] <= floor || left == 0 {
                continue;
            }
            let take = (sizes[i] - floor).min(left.max(grid.end.max(1)));
            sizes[i] -= take;
            gave = true;
            left = left.saturating_sub(take);
        }
        if gave {
            break;
        }
    }
    gave
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 2048;
    const GRID: Grid = Grid {
        start: MIB,
        offset: 0,
        end: 8,
        end_pref: 8,
    };

    fn slot(number: u32, start: u64, size: u64, needed: u64, hi: u64) -> Slot {
        Slot {
            number,
            start,
            size,
            fixed: false,
            needed,
            floor: needed,
            lo: 1,
            hi,
            shift: 0,
            grow: true,
            end_pref: false,
        }
    }

    #[test]
    fn a_start_at_63_with_a_neighbour_pushes_the_neighbour() {
        let s = [
            slot(1, 63, 100_000, 100_000, 1_000_000),
            slot(2, 100_063, 100_000, 100_000, 1_000_000),
        ];
        let p = place(&s, GRID).unwrap();
        assert_eq!(p[0].start, 2048);
        assert!(p[1].start % MIB == 0 && p[1].start > p[0].last());
        for (q, s) in p.iter().zip(&s) {
            assert!(q.size >= s.size && (q.start + q.size) % 8 == 0);
        }
    }

    #[test]
    fn aligned_partitions_stay_and_ends_grow_into_free_space() {
        let s = [slot(1, 2048, 1001, 1001, 1_000_000)];
        let p = place(&s, GRID).unwrap();
        assert_eq!(
            p[0],
            Placed {
                start: 2048,
                size: 1008
            }
        );
    }

    #[test]
    fn an_end_at_the_disk_end_goes_down_when_the_content_fits() {
        let s = [slot(1, 2048, 1001, 1000, 3048)];
        let p = place(&s, GRID).unwrap();
        assert_eq!(
            p[0],
            Placed {
                start: 2048,
                size: 1000
            }
        );
    }

    #[test]
    fn a_full_end_at_the_disk_end_stays() {
        let s = [slot(1, 2048, 1001, 1001, 3048)];
        assert_eq!(place(&s, GRID).unwrap()[0].size, 1001);
    }

    #[test]
    fn an_end_on_the_preferred_grid_stays_on_it_where_the_room_is_free() {
        // Partition 1 moves from 63 to 2048; its end on 1 MiB before
        // (sgdisk's alignment was 1 then) goes up to the next 1 MiB,
        // where partition 2 starts, instead of the next 4 KiB.
        let grid = Grid {
            end_pref: MIB,
            ..GRID
        };
        let mut a = slot(1, 63, 40_000, 40_000, 1_000_000);
        a.end_pref = true;
        let b = slot(2, 43_008, 10_240, 10_240, 1_000_000);
        let p = place(&[a.clone(), b.clone()], grid).unwrap();
        assert_eq!((p[0].start, p[0].start + p[0].size), (2048, 43_008));
        assert_eq!(p[1].start, 43_008);
        // No room to the next 1 MiB (a container that stays where it
        // is): the next 4 KiB, as without it.
        let mut b = slot(2, 42_048, 10_240, 10_240, 1_000_000);
        b.fixed = true;
        let p = place(&[a, b], grid).unwrap();
        assert_eq!(p[0].start + p[0].size, 42_048);
    }

    #[test]
    fn an_end_found_from_the_partitions_end_never_moves_up() {
        // An md 1.0 member: up into free room would lose its superblock.
        let mut s = slot(1, 2048, 1001, 1001, 1_000_000);
        s.grow = false;
        assert_eq!(place(&[s], GRID).unwrap()[0].size, 1001);
    }

    #[test]
    fn a_full_end_at_the_disk_end_comes_down_when_its_content_can_shrink() {
        let mut s = slot(1, 2048, 1001, 1001, 3048);
        s.floor = 600;
        assert_eq!(place(&[s], GRID).unwrap()[0].size, 1000);
    }

    #[test]
    fn an_end_grows_into_the_room_a_moving_neighbour_leaves() {
        let s = [
            slot(1, 2048, 1001, 1001, 1_000_000),
            slot(2, 3049, 10_000, 10_000, 1_000_000),
        ];
        let p = place(&s, GRID).unwrap();
        assert_eq!(p[0].size, 1008);
        assert_eq!(p[1].start, 4096);
    }

    #[test]
    fn no_room_names_the_slot_and_the_shortfall() {
        let s = [slot(1, 63, 10_000, 10_000, 10_062)];
        assert_eq!(
            place(&s, GRID),
            Err(NoRoom {
                number: 1,
                short: 2048 + 10_000 - 1 - 10_062
            })
        );
    }

    #[test]
    fn slack_in_the_content_makes_room() {
        let s = [slot(1, 63, 10_000, 4_000, 10_062)];
        let p = place(&s, GRID).unwrap();
        assert_eq!(p[0].start, 2048);
        assert!(p[0].size >= 4_000 && p[0].last() <= 10_062);
    }

    #[test]
    fn a_shrinkable_content_gives_room_down_to_its_floor_only_when_needed() {
        let mut s = slot(1, 63, 10_000, 10_000, 10_062);
        s.floor = 3_000;
        let p = place(&[s.clone()], GRID).unwrap();
        assert_eq!(p[0].start, 2048);
        assert!(p[0].last() <= 10_062 && p[0].size >= 3_000);
        s.hi = 1_000_000;
        assert_eq!(place(&[s], GRID).unwrap()[0].size, 10_000);
    }

    #[test]
    fn slack_elsewhere_is_taken_before_anything_shrinks() {
        // Slot 1 has 3000 sectors of slack and pushes slot 2, which could
        // shrink but need not: slot 1 gives the room.
        let a = slot(1, 63, 10_000, 7_000, 1_000_000);
        let mut b = slot(2, 10_063, 10_000, 10_000, 21_000);
        b.floor = 2_000;
        let p = place(&[a, b], GRID).unwrap();
        assert_eq!(p[1].size, 10_000);
        assert!(p[0].size < 10_000 && p[0].size >= 7_000);
    }

    #[test]
    fn a_fixed_container_is_never_crossed() {
        let mut ext = slot(2, 150_000, 50_000, 50_000, 1_000_000);
        ext.fixed = true;
        let s = [slot(1, 63, 149_937, 149_937, 1_000_000), ext];
        assert!(place(&s, GRID).is_err());
    }

    #[test]
    fn a_compensated_pv_puts_its_data_on_the_grid_not_its_start() {
        // Partition at 63, pe_start 1 MiB + 512 (2049 sectors): the data
        // is at sector 2112, 4 KiB aligned; it goes to 4096 (2 MiB), so
        // the partition goes to 2047.
        let mut s = slot(1, 63, 100_000, 100_000, 1_000_000);
        s.shift = 2049;
        let p = place(&[s], GRID).unwrap();
        assert_eq!(p[0].start, 2047);
        assert_eq!((p[0].start + 2049) % MIB, 0);
        assert_eq!(p[0].size, 100_000);
        assert_eq!(GRID.shifted(2048), GRID);
    }

    #[test]
    fn grids_round_as_they_say() {
        let g = Grid {
            start: 2048,
            offset: 7,
            end: 8,
            end_pref: 8,
        };
        assert_eq!(g.start_at(0), 7);
        assert_eq!(g.start_at(8), 2055);
        assert!(g.start_ok(2055));
        assert_eq!((g.end_up(9), g.end_down(9)), (16, 8));
        assert!(g.start_at(u64::MAX - 3) >= u64::MAX - 3);
    }
}
