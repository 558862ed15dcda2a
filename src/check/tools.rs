//! What parted, fdisk and sgdisk would decide on a disk with this topology.
//! Each function follows the tool's own source: parted's
//! `libparted/arch/linux.c` (`linux_get_{minimum,optimum}_alignment`) and
//! `libparted/cs/natmath.c` (`ped_alignment_is_aligned`), util-linux's
//! `libfdisk/src/alignment.c`, and gptfdisk's `gpt.cc` (`ComputeAlignment`)
//! and `gpt.cc`/`gptpart.cc` (`Verify`). Differential tests compare them with
//! the real tools on loop devices and in qemu guests (tests/vm).

use crate::iolimits::Topology;
use crate::units::{libfdisk_ignores_io, MIB};
use serde::{Deserialize, Serialize};

/// Each tool's verdict on one partition: true = "this tool calls it aligned".
#[derive(Clone, Default, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolVerdicts {
    /// `parted align-check opt N` exits 0.
    pub parted_optimal: bool,
    /// `parted align-check min N` exits 0.
    pub parted_minimal: bool,
    /// `fdisk -l` prints no "does not start on physical sector boundary".
    pub fdisk: bool,
    /// `sgdisk -v` prints no "doesn't begin/end on a N-sector boundary".
    pub sgdisk: bool,
}

impl ToolVerdicts {
    pub fn all_agree(&self) -> bool {
        let v = [
            self.parted_optimal,
            self.parted_minimal,
            self.fdisk,
            self.sgdisk,
        ];
        v.iter().all(|&x| x == v[0])
    }
}

/// The first partition start each tool picks on an empty disk, in bytes.
#[derive(Clone, Default, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FirstStarts {
    pub parted: u64,
    pub fdisk: u64,
    pub sgdisk: u64,
}

impl FirstStarts {
    /// Some tool could make a partition at its first start on a disk of
    /// `size_bytes`: one logical sector past it, before the 33 sectors a
    /// GPT's backup takes at the end (16 KiB of entries and the header).
    /// A file of a few KiB has room for none, and where the tools would
    /// start says nothing about it.
    pub fn any_fits(&self, size_bytes: u64, lbs: u64) -> bool {
        let room =
            |start: u64| start.saturating_add(2 * lbs.max(1)).saturating_add(16384) <= size_bytes;
        [self.parted, self.fdisk, self.sgdisk].into_iter().any(room)
    }
}

/// A disk as the tools see it: libblkid's topology (alignment_offset -1 is
/// clamped to 0 there) and the size in logical sectors.
#[derive(Clone, Copy, Debug)]
pub struct ToolView {
    pub lbs: u64,
    pub pbs: u64,
    pub min: u64,
    pub opt: u64,
    pub ao: u64,
    pub sectors: u64,
}

impl ToolView {
    pub fn new(t: &Topology, size_bytes: u64) -> Self {
        let lbs = u64::from(t.logical_block_size).max(1);
        ToolView {
            lbs,
            pbs: u64::from(t.physical_block_size).max(lbs),
            min: u64::from(t.minimum_io_size),
            opt: u64::from(t.optimal_io_size),
            ao: t.usable_alignment_offset(),
            sectors: size_bytes / lbs,
        }
    }

    /// First usable LBA of a fresh GPT with 128 entries of 128 bytes.
    pub fn gpt_first_usable(&self) -> u64 {
        2 + (16384 / self.lbs).max(1)
    }
}

/// A parted alignment: starts must satisfy start ≡ offset (mod grain).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartedAlignment {
    pub offset: u64,
    pub grain: u64,
}

impl PartedAlignment {
    /// `ped_alignment_is_aligned`: (sector - offset) divisible by grain.
    pub fn is_aligned(&self, sector: u64) -> bool {
        if self.grain == 0 {
            return sector == self.offset;
        }
        (i128::from(sector) - i128::from(self.offset)) % i128::from(self.grain) == 0
    }

    /// The first aligned sector at or after `from`.
    pub fn align_up(&self, from: u64) -> u64 {
        let g = self.grain.max(1);
        let off = self.offset % g;
        let base = from - from % g + off;
        if base >= from {
            base
        } else {
            base + g
        }
    }
}

/// `linux_get_minimum_alignment`: offset ao/lbs, grain min (or pbs) / lbs.
pub fn parted_minimal(v: &ToolView) -> PartedAlignment {
    let io = if v.min != 0 { v.min } else { v.pbs };
    PartedAlignment {
        offset: v.ao / v.lbs,
        grain: (io / v.lbs).max(1),
    }
}

/// `linux_get_optimum_alignment`: 1 MiB when it is a multiple of every
/// non-zero hint, else the minimum alignment when opt is 0, else opt.
pub fn parted_optimal(v: &ToolView) -> PartedAlignment {
    let divides_mib = |x: u64| x != 0 && MIB % x == 0;
    let use_mib = (v.opt == 0 && v.min == 0)
        || (divides_mib(v.opt) && divides_mib(v.min))
        || (v.min == 0 && divides_mib(v.opt))
        || (v.opt == 0 && divides_mib(v.min));
    if use_mib {
        PartedAlignment {
            offset: v.ao / v.lbs,
            grain: (MIB / v.lbs).max(1),
        }
    } else if v.opt == 0 {
        parted_minimal(v)
    } else {
        PartedAlignment {
            offset: v.ao / v.lbs,
            grain: (v.opt / v.lbs).max(1),
        }
    }
}

/// The I/O size libfdisk works with (util-linux ≥ 2.37): opt, else min; a
/// value that is 33553920 or not a multiple of pbs is replaced by pbs.
pub fn fdisk_io_size(v: &ToolView) -> u64 {
    let mut io = if v.opt != 0 { v.opt } else { v.min };
    if io != 0 && libfdisk_ignores_io(io, v.pbs) {
        io = v.pbs;
    }
    if io == 0 {
        io = v.lbs;
    }
    io
}

/// libfdisk's `lba_is_phy_aligned` (libfdisk/src/alignment.c): the
/// granularity is max(pbs, min).
pub fn fdisk_phy_aligned(v: &ToolView, lba: u64) -> bool {
    fdisk_aligned_to(v.pbs.max(v.min), v.ao, lba.wrapping_mul(v.lbs))
}

/// The test shared by libfdisk's `lba_is_aligned` and `lba_is_phy_aligned`
/// since util-linux 2.27 (commit 68a8648ce, "libfdisk: support alignment to
/// non power of 2"): `offset = bytes % g; aligned = (g + ao - offset) % g == 0`.
/// A remainder, not a bit mask, so a granularity such as 12288 is judged
/// as the kernel judges it. u128 keeps `g + ao` from overflowing.
fn fdisk_aligned_to(g: u64, ao: u64, bytes: u64) -> bool {
    let g = u128::from(g.max(1));
    let offset = u128::from(bytes) % g;
    (g + u128::from(ao) - offset) % g == 0
}

/// libfdisk's grain: max(io, 1 MiB), or pbs on disks of at most 4 grains.
pub fn fdisk_grain(v: &ToolView) -> u64 {
    if fdisk_tiny(v) {
        v.pbs
    } else {
        fdisk_usual_grain(v)
    }
}

/// libfdisk's grain before the small-disk rule: max(io, 1 MiB).
pub fn fdisk_usual_grain(v: &ToolView) -> u64 {
    fdisk_io_size(v).max(MIB)
}

/// True on a disk of at most 4 grains, where libfdisk drops its grain to
/// the physical sector: util-linux libfdisk/src/alignment.c,
/// `fdisk_reset_alignment()`, "don't use huge grain on small devices"
/// (`if (cxt->total_sectors <= (cxt->grain * 4 / cxt->sector_size))
/// cxt->grain = cxt->phy_sector_size`). On a 1 MiB image fdisk then starts
/// at the first usable LBA: 34 on a GPT, byte 17408.
pub fn fdisk_tiny(v: &ToolView) -> bool {
    v.sectors <= fdisk_usual_grain(v) * 4 / v.lbs
}

fn fdisk_has_topology(v: &ToolView) -> bool {
    v.opt != 0 || v.ao != 0 || !v.min.is_power_of_two()
}

/// libfdisk's topology first LBA.
fn fdisk_topology_first_lba(v: &ToolView) -> u64 {
    let io = fdisk_io_size(v);
    let mut x = 0;
    if fdisk_has_topology(v) {
        if v.ao != 0 {
            x = v.ao;
        } else if io > MIB {
            x = io;
        }
    }
    if x == 0 {
        x = MIB;
    }
    let res = x / v.lbs;
    if v.sectors <= res * 4 {
        v.pbs / v.lbs
    } else {
        res
    }
}

/// `fdisk_align_lba(lba, FDISK_ALIGN_UP)`.
fn fdisk_align_up(v: &ToolView, lba: u64, first_lba: u64) -> u64 {
    let grain = fdisk_grain(v);
    let granularity = v.pbs.max(v.min).max(grain);
    if fdisk_aligned_to(granularity, v.ao, lba.wrapping_mul(v.lbs)) {
        return lba;
    }
    let per = (grain / v.lbs).max(1);
    let mut res = if lba < first_lba {
        first_lba
    } else {
        (lba + per) / per * per
    };
    if v.ao != 0
        && !fdisk_aligned_to(granularity, v.ao, res.wrapping_mul(v.lbs))
        && res > v.ao / v.lbs
    {
        // libfdisk's unsigned sector wraps here on tiny disks; saturate instead.
        res = res.saturating_sub(v.pbs.max(v.min).saturating_sub(v.ao) / v.lbs);
        if res < lba {
            res += per;
        }
    }
    res
}

/// sgdisk's `ComputeAlignment`: 1 MiB in sectors, lowered to the largest
/// power of two dividing every start, raised to 8 on disks of at least
/// 585937500 sectors and to the physical block (in logical sectors): a
/// 512e disk with a partition at 63 gets "doesn't begin on a 8-sector
/// boundary" (seen with gdisk 1.0.9 under qemu, tests/vm).
pub fn sgdisk_alignment(v: &ToolView, starts: &[u64]) -> u64 {
    let mut exponent = (2048 * 512 / v.lbs).max(1).trailing_zeros();
    for &s in starts {
        while exponent > 0 && s % (1u64 << exponent) != 0 {
            exponent -= 1;
        }
    }
    let mut align = 1u64 << exponent;
    if align < 8 && v.sectors >= 585_937_500 {
        align = 8;
    }
    align.max(v.pbs / v.lbs)
}

/// `sgdisk -v` cautions for a partition (start, then end + 1).
pub fn sgdisk_cautions(align: u64, first: u64, last: u64) -> bool {
    first % align != 0 || last.wrapping_add(1) % align != 0
}

/// Where each tool puts the first partition on this disk when it is empty,
/// for a fresh GPT (`dos = false`) or DOS label. sgdisk always writes GPT.
pub fn first_starts(v: &ToolView, dos: bool) -> FirstStarts {
    let gpt_usable = v.gpt_first_usable();
    let (parted_from, fdisk_from) = if dos {
        (1, fdisk_topology_first_lba(v))
    } else {
        (gpt_usable, gpt_usable)
    };
    let parted = parted_optimal(v).align_up(parted_from);
    let fdisk = fdisk_align_up(v, fdisk_from, fdisk_from);
    let sg_align = sgdisk_alignment(v, &[]);
    let sgdisk = gpt_usable.div_ceil(sg_align) * sg_align;
    FirstStarts {
        parted: parted.saturating_mul(v.lbs),
        fdisk: fdisk.saturating_mul(v.lbs),
        sgdisk: sgdisk.saturating_mul(v.lbs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::BOGUS_USB_OPT;

    fn view(lbs: u64, pbs: u64, min: u64, opt: u64, ao: u64) -> ToolView {
        ToolView {
            lbs,
            pbs,
            min,
            opt,
            ao,
            sectors: 1_000_000_000_000 / lbs,
        }
    }

    #[test]
    fn usb_bridge_grain_is_65535_sectors() {
        let v = view(512, 4096, 4096, BOGUS_USB_OPT, 0);
        let opt = parted_optimal(&v);
        assert_eq!(opt.grain, 65535);
        assert!(opt.is_aligned(65535));
        assert!(!parted_minimal(&v).is_aligned(65535));
        // parted's first start is 33553920 bytes, not 4 KiB aligned.
        let f = first_starts(&v, false);
        assert_eq!(f.parted, BOGUS_USB_OPT);
        assert_eq!(f.fdisk, MIB);
        assert_eq!(f.sgdisk, MIB);
        assert_eq!(fdisk_io_size(&v), 4096);
    }

    #[test]
    fn alignment_offset_3584() {
        let v = view(512, 4096, 4096, 0, 3584);
        assert!(fdisk_phy_aligned(&v, 63));
        assert!(!fdisk_phy_aligned(&v, 2048));
        let min = parted_minimal(&v);
        assert_eq!(
            min,
            PartedAlignment {
                offset: 7,
                grain: 8
            }
        );
        assert!(min.is_aligned(63));
        // fdisk moves its first start back by one sector to land on the physical grid.
        assert_eq!(first_starts(&v, false).fdisk, 2047 * 512);
        // On a DOS label fdisk starts right at the alignment offset.
        assert_eq!(first_starts(&v, true).fdisk, 7 * 512);
    }

    #[test]
    fn four_kn_defaults() {
        let v = view(4096, 4096, 4096, 0, 0);
        let f = first_starts(&v, false);
        assert_eq!((f.parted, f.fdisk, f.sgdisk), (MIB, MIB, MIB));
        assert_eq!(sgdisk_alignment(&v, &[]), 256);
    }

    #[test]
    fn raid_stripe_follows_opt() {
        let v = view(512, 512, 524288, 1_572_864, 0); // 3 data disks x 512 KiB
        assert_eq!(parted_optimal(&v).grain, 3072);
        assert_eq!(first_starts(&v, false).parted, 1_572_864);
        assert_eq!(first_starts(&v, false).fdisk, 1_572_864);
    }

    #[test]
    fn fdisk_judges_non_power_of_two_grains_with_a_remainder() {
        // min 12288: the kernel puts 1041625088 4096 bytes off the grain
        // and 1412431872 on it; libfdisk ≥ 2.27 agrees (a mask would not).
        let v = view(512, 4096, 12288, 0, 0);
        assert!(!fdisk_phy_aligned(&v, 2_034_424));
        assert!(fdisk_phy_aligned(&v, 2_758_656));
        // opt 3 x 512 KiB: a DOS label's first start is the opt itself,
        // already on the 1572864-byte grain.
        let raid5 = view(512, 512, 524_288, 1_572_864, 0);
        assert_eq!(first_starts(&raid5, true).fdisk, 1_572_864);
    }

    #[test]
    fn sgdisk_lowers_alignment_to_fit() {
        let small = ToolView {
            sectors: 131072,
            ..view(512, 512, 512, 0, 0)
        };
        assert_eq!(sgdisk_alignment(&small, &[2048, 63]), 1);
        assert_eq!(sgdisk_alignment(&small, &[2048, 30720]), 2048);
        let big = ToolView {
            sectors: 629_145_600,
            ..small
        };
        assert_eq!(sgdisk_alignment(&big, &[63]), 8);
        // Never below the physical block: 512e gives 8, 16 KiB pages 32.
        let e512 = ToolView { pbs: 4096, ..small };
        assert_eq!(sgdisk_alignment(&e512, &[2048, 63]), 8);
        let pages = ToolView {
            pbs: 16384,
            ..small
        };
        assert_eq!(sgdisk_alignment(&pages, &[72]), 32);
        assert!(sgdisk_cautions(2048, 30720, 40000));
        assert!(!sgdisk_cautions(2048, 2048, 22527));
    }
}
