//! The kernel's limit stacking (block/blk-settings.c `blk_stack_limits`),
//! so a stack read from images gets the limits a live kernel would give
//! each md, dm-linear/dm-stripe and dm-crypt layer (drivers/md/raid0.c,
//! raid5.c, dm-stripe.c `stripe_io_hints`, dm-crypt.c `crypt_io_hints`).

use crate::iolimits::Topology;
use crate::units::lcm_not_zero;

/// What `blk_set_stacking_limits` starts a dm or md device with: 512-byte
/// blocks, min 512, no optimal size, offset 0 (the same values images get).
pub const STACKING_DEFAULT: Topology = Topology::IMAGE_DEFAULT;

/// A top device being built, with the kernel's MISALIGNED flag.
#[derive(Clone, Copy, Debug)]
pub struct Stack {
    t: Topology,
    ao: u64,
    misaligned: bool,
}

impl Stack {
    pub fn new(start: Topology) -> Self {
        Stack {
            t: start,
            ao: start.usable_alignment_offset(),
            misaligned: start.reports_misaligned(),
        }
    }

    /// Add a bottom device whose data the top uses from byte `start` of the
    /// bottom's whole disk (partition start included).
    pub fn add(&mut self, b: &Topology, start: u64) {
        let g = b.grain();
        let alignment = (g + b.usable_alignment_offset() % g - start % g) % g;
        let t = &mut self.t;
        if self.ao != alignment {
            let top = t.grain() + self.ao;
            let bottom = g + alignment;
            if top.max(bottom) % top.min(bottom).max(1) != 0 {
                self.misaligned = true;
            }
        }
        self.misaligned |= b.reports_misaligned();
        t.logical_block_size = t.logical_block_size.max(b.logical_block_size);
        t.physical_block_size = t.physical_block_size.max(b.physical_block_size);
        t.minimum_io_size = t.minimum_io_size.max(b.minimum_io_size);
        t.optimal_io_size = lcm_not_zero(u64::from(t.optimal_io_size), u64::from(b.optimal_io_size))
            .min(u64::from(u32::MAX)) as u32;
        t.discard_granularity = t.discard_granularity.max(b.discard_granularity);
        // Flash under a linear mapping keeps its unit.
        t.erase_unit_bytes = t.erase_unit_bytes.max(b.erase_unit_bytes);
        t.removable_flash |= b.removable_flash;
        t.sd_boundary_unit_bytes = t.sd_boundary_unit_bytes.max(b.sd_boundary_unit_bytes);
        if t.physical_block_size % t.logical_block_size.max(1) != 0 {
            t.physical_block_size = t.logical_block_size;
            self.misaligned = true;
        }
        if t.minimum_io_size % t.physical_block_size.max(1) != 0 {
            t.minimum_io_size = t.physical_block_size;
            self.misaligned = true;
        }
        if t.optimal_io_size % t.physical_block_size.max(1) != 0 {
            t.optimal_io_size = 0;
            self.misaligned = true;
        }
        self.ao = lcm_not_zero(self.ao, alignment) % t.grain();
        if self.ao % u64::from(t.logical_block_size.max(1)) != 0 {
            self.misaligned = true;
        }
    }

    /// Set the I/O hints a target advertises (dm-stripe, md).
    pub fn hints(&mut self, min: u64, opt: u64) {
        self.t.minimum_io_size = min.min(u64::from(u32::MAX)) as u32;
        self.t.optimal_io_size = opt.min(u64::from(u32::MAX)) as u32;
    }

    /// dm-crypt raises the block sizes and min to its sector size.
    pub fn sector_size(&mut self, ss: u32) {
        let t = &mut self.t;
        t.logical_block_size = t.logical_block_size.max(ss);
        t.physical_block_size = t.physical_block_size.max(ss);
        t.minimum_io_size = t.minimum_io_size.max(ss);
    }

    /// The result as sysfs would show it (alignment_offset -1 when misaligned).
    pub fn finish(self) -> Topology {
        Topology {
            alignment_offset: if self.misaligned { -1 } else { self.ao as i64 },
            ..self.t
        }
    }
}

/// An md array: hints set first (chunk, chunk × data disks), then every
/// member stacked at its data start.
pub fn md(chunk: u64, data_disks: Option<u32>, members: &[Under]) -> Topology {
    let mut s = Stack::new(STACKING_DEFAULT);
    if chunk > 0 {
        s.hints(chunk, chunk * u64::from(data_disks.unwrap_or(0)));
    }
    for (t, start) in members {
        s.add(t, *start);
    }
    s.finish()
}

/// A device under a stacked one and the byte where the stacked data starts on it.
pub type Under = (Topology, u64);

/// One dm target: its stripe chunk (None for linear) and its legs.
pub type DmTarget = (Option<u64>, Vec<Under>);

/// A dm table of linear or striped targets: each target stacks its legs,
/// dm-stripe then sets min = chunk and opt = chunk × stripes; the table
/// stacks the targets at offset 0.
pub fn dm(targets: &[DmTarget]) -> Topology {
    let mut table = Stack::new(STACKING_DEFAULT);
    for (chunk, legs) in targets {
        let mut ti = Stack::new(STACKING_DEFAULT);
        for (t, start) in legs {
            ti.add(t, *start);
        }
        if let Some(c) = chunk {
            ti.hints(*c, c * legs.len() as u64);
        }
        table.add(&ti.finish(), 0);
    }
    table.finish()
}

/// A dm-thin pool (and its thin devices, which stack on the pool) over a
/// data device with limits `data`: drivers/md/dm-thin.c `pool_io_hints`
/// keeps the data device's sizes when its optimal size is a multiple of
/// the chunk, and otherwise sets both sizes to the chunk.
pub fn thin_pool(data: &Topology, chunk: u64) -> Topology {
    let mut s = Stack::new(STACKING_DEFAULT);
    s.add(data, 0);
    let mut t = s.finish();
    let opt = u64::from(t.optimal_io_size);
    if opt < chunk || opt % chunk.max(1) != 0 {
        t.minimum_io_size = chunk.min(u64::from(u32::MAX)) as u32;
        t.optimal_io_size = t.minimum_io_size;
    }
    t
}

/// dm-crypt over `below` with its payload at byte `start` of the disk.
pub fn crypt(below: &Topology, start: u64, sector_size: u32) -> Topology {
    let mut s = Stack::new(STACKING_DEFAULT);
    s.add(below, start);
    s.sector_size(sector_size);
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(pbs: u32, ao: i64) -> Topology {
        Topology {
            physical_block_size: pbs,
            minimum_io_size: pbs,
            alignment_offset: ao,
            ..Topology::plain(512)
        }
    }

    #[test]
    fn kernel_examples() {
        // dm-linear one sector into a 512e disk: the kernel says ao 3584
        // (observed under qemu on Linux 6.1, tests/vm scenario 06).
        assert_eq!(
            dm(&[(None, vec![(disk(4096, 0), 512)])]).alignment_offset,
            3584
        );
        assert_eq!(
            dm(&[(None, vec![(disk(4096, 0), 1 << 20)])]).alignment_offset,
            0
        );
        // A drive with lowest aligned LBA 7 (ao 3584): LBA 63 is aligned.
        assert_eq!(
            dm(&[(None, vec![(disk(4096, 3584), 63 * 512)])]).alignment_offset,
            0
        );
        // Striped legs: one misaligned leg spoils the device.
        let legs = vec![(disk(4096, 0), 1 << 20), (disk(4096, 0), (1 << 20) + 1536)];
        let t = dm(&[(Some(8192), legs)]);
        assert_eq!(t.alignment_offset, -1);
        assert_eq!((t.minimum_io_size, t.optimal_io_size), (8192, 16384));
        // md raid5 of 4 members, chunk 512 KiB.
        let m = md(512 << 10, Some(3), &[(disk(4096, 0), 1 << 20); 4]);
        assert_eq!(
            (m.minimum_io_size, m.optimal_io_size, m.alignment_offset),
            (512 << 10, 1536 << 10, 0)
        );
        // dm-crypt with 4096-byte sectors.
        let c = crypt(&Topology::plain(512), 16 << 20, 4096);
        assert_eq!((c.logical_block_size, c.physical_block_size), (4096, 4096));
    }
}
