//! The one start rule, shared by partitions and by the data starts of the
//! layers inside them (PV first extent, md data area, LUKS payload, bcache
//! data, LV legs): where a start stands against the grids of the device
//! below. Partitions and layers report it under their own codes. The
//! grids themselves are here too: the kernel's rule and a sane optimal I/O
//! size, which the placement, stack and plan rules read.

use crate::findings::{Code, Facts, Finding};
use crate::iolimits::Topology;
use crate::units::{is_bridge_opt, KIB, MIB};

/// The kernel's misalignment for a start: (g + ao - start mod g) mod g with
/// g = max(pbs, min). 0 means aligned.
pub fn kernel_offset(t: &Topology, start_bytes: u64) -> u64 {
    let g = t.grain();
    let ao = t.usable_alignment_offset() % g;
    (g + ao - start_bytes % g) % g
}

/// An optimal I/O size worth aligning to: set, a multiple of pbs and min,
/// larger than them, and not the USB-bridge artefact.
pub fn sane_optimal(t: &Topology) -> Option<u64> {
    let opt = u64::from(t.optimal_io_size);
    let lbs = u64::from(t.logical_block_size);
    (opt != 0
        && !is_bridge_opt(opt, lbs)
        && opt % u64::from(t.physical_block_size).max(1) == 0
        && opt % u64::from(t.minimum_io_size).max(1) == 0
        && opt > t.grain())
    .then_some(opt)
}

/// A start judged against the device below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    pub offset: u64,
    /// The kernel's grain, max(physical block, minimum I/O).
    pub grain: u64,
    /// The kernel's rule (g + ao - start mod g) mod g; 0 = aligned.
    pub kernel_offset: u64,
    /// Bytes past a 4 KiB boundary.
    pub past_4k: u64,
    /// A sane optimal I/O size below, and how far past its grid the start
    /// is. The grid starts at the alignment offset, as the physical one does.
    pub optimal: Option<(u64, u64)>,
    /// The alignment offset the grids start from (0 when the kernel marks
    /// the device misaligned).
    pub alignment_offset: u64,
    /// A flash card's allocation unit below, how far past it the start
    /// is, and whether it is removable flash's (a warning there, else an
    /// info). A multiple of the unit, not of a power of two: the SD
    /// table has 12 and 24 MiB units.
    pub erase_unit: Option<(u64, u64, bool)>,
}

/// The data-start rules of a layer: the one start rule, under the layer codes.
pub fn start_findings(below: &Topology, start: u64, what: &str, device: &str) -> Vec<Finding> {
    let base = Facts {
        region: Some(what.to_string()),
        device: Some(device.to_string()),
        ..Facts::default()
    };
    Start::judge(below, start).layer_findings(below, &base)
}

impl Start {
    pub fn judge(below: &Topology, offset: u64) -> Start {
        let ao = below.usable_alignment_offset();
        let optimal = sane_optimal(below).map(|opt| (opt, (offset % opt + opt - ao % opt) % opt));
        Start {
            offset,
            grain: below.grain(),
            kernel_offset: kernel_offset(below, offset),
            past_4k: offset % (4 * KIB),
            optimal,
            alignment_offset: ao,
            erase_unit: (below.erase_unit_bytes > 0).then(|| {
                let u = below.erase_unit_bytes;
                (u, offset % u, below.removable_flash)
            }),
        }
    }

    /// Off the flash card's unit: its finding under `code`, a warning on
    /// removable flash and an info elsewhere.
    fn erase_unit_finding(&self, code: Code, at: &Facts) -> Option<Finding> {
        let (unit, past, removable) = self.erase_unit.filter(|&(_, past, _)| past != 0)?;
        let f = Finding::of(
            code,
            Facts {
                grain_bytes: Some(unit),
                misalignment_bytes: Some(past),
                ..at.clone()
            },
        );
        Some(if removable {
            f.severity(crate::findings::Severity::Warning)
        } else {
            f.severity(crate::findings::Severity::Info)
        })
    }

    pub fn off_optimal(&self) -> bool {
        self.optimal.is_some_and(|(_, past)| past != 0)
    }

    pub fn off_1mib(&self) -> bool {
        self.offset % MIB != 0
    }

    /// The facts of an optimal-grid finding, on top of `base`.
    fn optimal_facts(&self, base: &Facts) -> Facts {
        let (opt, past) = self.optimal.unwrap_or_default();
        Facts {
            optimal_io_bytes: Some(opt),
            grain_bytes: Some(opt),
            misalignment_bytes: Some(past),
            alignment_offset_bytes: Some(self.alignment_offset as i64),
            ..base.clone()
        }
    }

    /// A partition's start findings; `base` carries what every one of them
    /// shares (the extended-container flag). `raw_ao` is the alignment
    /// offset as the kernel reports it, which the sentence names.
    pub fn partition_findings(&self, raw_ao: i64, base: &Facts) -> Vec<Finding> {
        let at = self.at(base);
        let mut out = Vec::new();
        if self.kernel_offset != 0 {
            let facts = Facts {
                alignment_offset_bytes: Some(raw_ao),
                ..self.kernel_facts(&at)
            };
            out.push(Finding::of(Code::StartMisaligned, facts));
        }
        if self.past_4k != 0 {
            let f = Finding::of(Code::StartNot4k, self.grid(&at, 4 * KIB));
            // One start, one cause: moving it fixes both, so when the
            // kernel's rule already fails it is counted once, there.
            out.push(match self.kernel_offset {
                0 => f,
                _ => f.same_cause_as(Code::StartMisaligned),
            });
        }
        if self.off_1mib() {
            out.push(Finding::of(Code::StartNot1Mib, self.grid(&at, MIB)));
        }
        if self.off_optimal() {
            out.push(Finding::of(Code::StartNotOptimal, self.optimal_facts(&at)));
        }
        out.extend(self.erase_unit_finding(Code::StartNotEraseUnit, &at));
        out
    }

    /// A layer's start findings: the kernel's rule or else 4 KiB, the
    /// optimal I/O grid, and 1 MiB only when nothing else is wrong.
    /// `base` names the region and the device below.
    pub fn layer_findings(&self, below: &Topology, base: &Facts) -> Vec<Finding> {
        let at = self.at(base);
        let mut out = Vec::new();
        if self.kernel_offset != 0 {
            let facts = Facts {
                physical_block_bytes: Some(below.physical_block_size.into()),
                minimum_io_bytes: Some(below.minimum_io_size.into()),
                alignment_offset_bytes: Some(below.alignment_offset),
                ..self.kernel_facts(&at)
            };
            out.push(Finding::of(Code::LayerStartMisaligned, facts));
        } else if self.past_4k != 0 {
            out.push(Finding::of(Code::LayerStartNot4k, self.grid(&at, 4 * KIB)));
        }
        if self.off_optimal() {
            out.push(Finding::of(
                Code::LayerStartNotOptimal,
                self.optimal_facts(&at),
            ));
        }
        if self.off_1mib() && out.is_empty() {
            out.push(Finding::of(Code::LayerStartNot1Mib, self.grid(&at, MIB)));
        }
        out.extend(self.erase_unit_finding(Code::LayerStartNotEraseUnit, &at));
        out
    }

    /// `base` with the start judged.
    fn at(&self, base: &Facts) -> Facts {
        Facts {
            offset_bytes: Some(self.offset),
            ..base.clone()
        }
    }

    /// The kernel's rule: its grain and the rule's result.
    fn kernel_facts(&self, at: &Facts) -> Facts {
        Facts {
            grain_bytes: Some(self.grain),
            misalignment_bytes: Some(self.kernel_offset),
            ..at.clone()
        }
    }

    fn grid(&self, at: &Facts, unit: u64) -> Facts {
        Facts {
            grain_bytes: Some(unit),
            misalignment_bytes: Some(self.offset % unit),
            ..at.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(pbs: u32, min: u32, opt: u32, ao: i64) -> Topology {
        Topology {
            physical_block_size: pbs,
            minimum_io_size: min,
            optimal_io_size: opt,
            alignment_offset: ao,
            ..Topology::IMAGE_DEFAULT
        }
    }

    fn has(f: &[Finding], c: Code) -> bool {
        f.iter().any(|x| x.code == c)
    }

    /// A partition and a layer starting at the same byte of the same device
    /// get the same verdicts: the layers' optimal I/O test used to ignore
    /// the alignment offset.
    #[test]
    fn partitions_and_layers_agree() {
        let topos = [
            topo(4096, 4096, 65536, 3584),
            topo(4096, 65536, 262144, 512),
            topo(512, 524288, 1048576, 0),
            topo(4096, 4096, 0, 0),
            topo(512, 512, 196608, 65536),
        ];
        let base = Facts {
            region: Some("a layer".into()),
            device: Some("/dev/x".into()),
            ..Facts::default()
        };
        for t in &topos {
            for start in (0..64u64).map(|i| i * 3584 + (i % 3) * 65536) {
                let s = Start::judge(t, start);
                let p = s.partition_findings(t.alignment_offset, &Facts::default());
                let l = s.layer_findings(t, &base);
                let pairs = [
                    (Code::StartMisaligned, Code::LayerStartMisaligned),
                    (Code::StartNotOptimal, Code::LayerStartNotOptimal),
                ];
                for (pc, lc) in pairs {
                    assert_eq!(
                        has(&p, pc),
                        has(&l, lc),
                        "{t:?} start {start}: {pc} vs {lc}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_optimal_grid_starts_at_the_alignment_offset() {
        let t = topo(4096, 4096, 65536, 3584);
        let s = Start::judge(&t, 3584 + 16 * 65536);
        assert_eq!(s.kernel_offset, 0);
        assert!(!s.off_optimal());
        let s = Start::judge(&t, 16 * 65536);
        assert_eq!(s.optimal, Some((65536, 65536 - 3584)));
    }

    #[test]
    fn kernel_rule_examples() {
        assert_eq!(kernel_offset(&topo(4096, 4096, 0, 0), 63 * 512), 512);
        assert_eq!(kernel_offset(&topo(4096, 4096, 0, 3584), 63 * 512), 0);
        assert_eq!(kernel_offset(&topo(4096, 4096, 0, 3584), 2048 * 512), 3584);
        assert_eq!(kernel_offset(&topo(512, 512, 0, 0), 63 * 512), 0);
        // A RAID5 with 512 KiB chunks: g = min.
        assert_eq!(kernel_offset(&topo(512, 524288, 0, 0), MIB), 0);
        assert_eq!(
            kernel_offset(&topo(512, 524288, 0, 0), 63 * 512),
            524288 - 63 * 512
        );
    }

    /// A 12 MiB unit (the SD table's): 16 MiB is 4 MiB into one, 24 MiB
    /// is on one; removable flash warns, an eMMC's unit is an info.
    #[test]
    fn the_flash_unit_is_a_grain_that_need_not_be_a_power_of_two() {
        let mut t = Topology {
            erase_unit_bytes: 12 * MIB,
            removable_flash: true,
            ..topo(512, 512, 0, 0)
        };
        let at = |t: &Topology, start: u64| {
            Start::judge(t, start)
                .partition_findings(0, &Facts::default())
                .into_iter()
                .find(|f| f.code == Code::StartNotEraseUnit)
        };
        let f = at(&t, 16 * MIB).unwrap();
        assert_eq!(f.severity, crate::findings::Severity::Warning);
        assert_eq!(f.facts.misalignment_bytes, Some(4 * MIB));
        assert!(at(&t, 24 * MIB).is_none());
        t.removable_flash = false;
        assert_eq!(
            at(&t, MIB).unwrap().severity,
            crate::findings::Severity::Info
        );
        let layer = Start::judge(&t, 13 * MIB).layer_findings(&t, &Facts::default());
        assert!(layer.iter().any(|f| f.code == Code::LayerStartNotEraseUnit));
    }

    #[test]
    fn usb_opt_is_not_sane() {
        let t = Topology {
            optimal_io_size: 33_553_920,
            ..topo(4096, 4096, 0, 0)
        };
        assert_eq!(sane_optimal(&t), None);
        let t = Topology {
            optimal_io_size: 1_048_576,
            ..topo(512, 524288, 0, 0)
        };
        assert_eq!(sane_optimal(&t), Some(1_048_576));
    }
}
