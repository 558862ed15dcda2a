//! One misalignment, one verdict. Every layer's start is judged at its
//! offset on the device at the bottom of the stack: the layers inside a
//! partition already count in the disk's bytes, so a PV or a filesystem in
//! a partition at sector 63 starts off 4 KiB on the disk. When a layer's
//! own start is on its grid within what it sits on (the partition, the
//! PV's data area), the cause is below it: the layer `inherits` that
//! misalignment. Its start findings are dropped, since the cause has its
//! own finding and it is said once, and `inherits_from` names the cause.
//! A layer in an address space of its own (an LV, an opened dm-crypt
//! device) inherits from the layer it is built from.

use crate::findings::{Code, Finding, Severity, Status};
use crate::stack::{Layer, LayerKind};
use crate::units::KIB;

/// Why the bytes a layer hands up are off, and how bad that is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The cause's subject: "partition 1", "partition 1 / PV ...";
    /// prefixed by its target outside that target's tree.
    pub subject: String,
    pub severity: Severity,
}

/// What a layer hands up in the bytes of `device`: from `start`, before
/// `end`, off when `cause` says so.
#[derive(Clone, Debug)]
pub struct Region {
    pub device: String,
    /// The layer is a device of its own (an LV, an array, a holder): the
    /// layers above count in its bytes, and are off where it is.
    pub own_space: bool,
    pub start: u64,
    pub end: u64,
    pub cause: Option<Cause>,
}

/// The start codes of partitions, whose worst names a partition's cause.
pub fn is_partition_start(c: Code) -> bool {
    c.meaning().start_cause
}

/// The data-start codes of layers.
fn is_layer_start(c: Code) -> bool {
    c.meaning().layer_start
}

/// The worst of the start findings among `findings`, as a cause of `subject`.
pub fn cause_of<'a>(
    subject: &str,
    findings: impl IntoIterator<Item = &'a Finding>,
    is_start: fn(Code) -> bool,
) -> Option<Cause> {
    findings
        .into_iter()
        .filter(|f| is_start(f.code))
        .map(|f| f.severity)
        .max()
        .map(|severity| Cause {
            subject: subject.to_string(),
            severity,
        })
}

/// Where the layers inside a target's trees get their bytes: every layer
/// with a data area, for the LV legs and segments assembled across targets.
pub struct Regions {
    all: Vec<Region>,
}

impl Regions {
    pub fn new() -> Regions {
        Regions { all: Vec::new() }
    }

    /// The innermost region of `device` that holds `offset`.
    fn at(&self, device: &str, offset: u64) -> Option<&Region> {
        self.all
            .iter()
            .filter(|r| r.device == device && r.start <= offset && offset < r.end)
            .max_by_key(|r| r.start)
    }

    /// Walk a target's root (a partition with the cause of its own start,
    /// or a whole device), and keep its regions, named within `target`.
    pub fn target_root(&mut self, root: &mut Layer, target: &str, cause: Option<Cause>) {
        let own = Region {
            device: root.device.clone(),
            start: root.offset_bytes,
            end: root.offset_bytes.saturating_add(root.size_bytes),
            own_space: false,
            cause,
        };
        let mut found = Vec::new();
        for c in &mut root.children {
            visit(c, &own, &root.name, self, &mut found);
        }
        let qualify = |c: Cause| Cause {
            subject: format!("{target}: {}", c.subject),
            ..c
        };
        self.all.extend(found.into_iter().map(|r| Region {
            cause: r.cause.map(qualify),
            ..r
        }));
    }

    /// Walk an array or volume group assembled across targets: its LV
    /// legs and segments sit in the regions the targets' layers hand up.
    pub fn assembled(&self, root: &mut Layer) {
        let own = Region {
            device: root.device.clone(),
            start: 0,
            end: u64::MAX,
            own_space: true,
            cause: None,
        };
        let mut found = Vec::new();
        for c in &mut root.children {
            visit(c, &own, &root.name, self, &mut found);
        }
    }
}

impl Default for Regions {
    fn default() -> Self {
        Regions::new()
    }
}

/// The region a start on `device` at `offset` is judged in: the parent's
/// when on its device, else a target's region holding it (an LV leg).
fn anchor<'a>(
    parent: &'a Region,
    regions: &'a Regions,
    device: &str,
    offset: u64,
) -> Option<&'a Region> {
    if parent.device == device {
        return Some(parent);
    }
    regions.at(device, offset)
}

/// True when `offset` is on the grid of `grain` counted from the region's
/// start: what is off comes from the region.
fn on_grid_within(r: &Region, offset: u64, grain: u64) -> bool {
    grain > 0 && offset >= r.start && (offset - r.start) % grain == 0
}

/// Drop the start findings of `l` that its anchor explains; the worst
/// cause they came from.
fn take_inherited(l: &mut Layer, parent: &Region, regions: &Regions) -> Option<Cause> {
    let mut worst: Option<Cause> = None;
    l.findings.retain(|f| {
        if !is_layer_start(f.code) {
            return true;
        }
        let device = f.facts.device.as_deref().unwrap_or(&l.device);
        let (Some(offset), Some(grain)) = (f.facts.offset_bytes, f.facts.grain_bytes) else {
            return true;
        };
        let Some(cause) = anchor(parent, regions, device, offset)
            .filter(|r| on_grid_within(r, offset, grain))
            .and_then(|r| r.cause.clone())
        else {
            return true;
        };
        // The cause's tier bounds what it explains: a start off the
        // stripe width below explains no 4 KiB error here.
        if cause.severity < f.severity {
            return true;
        }
        let c = Cause {
            severity: f.severity,
            ..cause
        };
        if worst.as_ref().is_none_or(|w| w.severity < c.severity) {
            worst = Some(c);
        }
        false
    });
    worst
}

/// An LV leg has no finding: its status says whether it is off. Off but
/// on the grid of the PV's data area, it inherits the PV's cause.
fn leg_inherits(l: &Layer, regions: &Regions) -> Option<Cause> {
    if l.status != Status::Misaligned {
        return None;
    }
    let unit = l.below.grain().max(4 * KIB);
    regions
        .at(&l.device, l.offset_bytes)
        .filter(|r| on_grid_within(r, l.offset_bytes, unit))
        .and_then(|r| r.cause.clone())
        .filter(|c| c.severity == Severity::Error)
}

/// The status an inherited cause gives: an error's misalignment, or a
/// warning's untidiness; info (1 MiB) none.
fn inherited_status(c: &Cause) -> Status {
    match c.severity {
        Severity::Error => Status::Inherits,
        Severity::Warning => Status::Untidy,
        Severity::Info => Status::Aligned,
    }
}

fn visit(l: &mut Layer, parent: &Region, path: &str, regions: &Regions, out: &mut Vec<Region>) {
    let path = format!("{path} / {}", l.name);
    let mut inherited = take_inherited(l, parent, regions);
    let own = cause_of(&path, &l.findings, is_layer_start).or_else(|| {
        l.findings
            .iter()
            .find(|f| f.code == Code::LvmStripeMisaligned)
            .map(|f| Cause {
                subject: path.clone(),
                severity: f.severity,
            })
    });
    if l.kind == LayerKind::LvmLeg {
        inherited = inherited.or_else(|| leg_inherits(l, regions));
    }
    // In an address space of its own (inside an LV, a holder): its bytes
    // are wherever the layer it is built from put them.
    let fresh = parent.own_space || parent.device != l.device;
    if fresh && l.kind != LayerKind::LvmLeg && own.is_none() {
        inherited = inherited.or_else(|| parent.cause.clone());
    }
    let status = Status::of(&l.findings);
    l.status = match (l.kind, &inherited) {
        (LayerKind::LvmLeg, Some(_)) => Status::Inherits,
        (LayerKind::LvmLeg, None) => l.status,
        (_, Some(c)) => status.max(inherited_status(c)),
        (_, None) => status,
    };
    l.aligned = l.status.is_clean();
    l.inherits_from = inherited
        .as_ref()
        .filter(|c| c.severity >= Severity::Warning && own.is_none())
        .map(|c| c.subject.clone());
    let cause = own.or(inherited);
    let here = Region {
        device: l.device.clone(),
        start: l.data_start().unwrap_or(l.offset_bytes),
        end: l.offset_bytes.saturating_add(l.size_bytes),
        own_space: l.kind.meaning().own_space,
        cause,
    };
    for c in &mut l.children {
        visit(c, &here, &path, regions, out);
    }
    if l.data_start().is_some() {
        out.push(here);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::logical_512_over;
    use crate::check::stack::judge_layer as judge;
    use crate::check::start::Start;
    use crate::findings::Facts;
    use crate::stack::{Detail, PvInfo};
    use crate::units::MIB;

    /// The findings a partition at `start` bytes gets, as its cause.
    fn partition_cause(start: u64) -> Option<Cause> {
        let f =
            Start::judge(&logical_512_over(4096), start).partition_findings(0, &Facts::default());
        cause_of("partition 1", &f, is_partition_start)
    }

    /// A partition root at `start` with a PV whose first extent is
    /// `pe_start` in, and an ext4 in an LV of the VG at `lv_at` (its own
    /// address space).
    fn stack(start: u64, pe_start: u64, lv_at: u64) -> Layer {
        let size = 64 * MIB;
        let mut root = Layer::new(
            LayerKind::Partition,
            "partition 1",
            "sda",
            start,
            size,
            logical_512_over(4096),
        );
        let mut pv = Layer::new(
            LayerKind::LvmPv,
            "PV",
            "sda",
            start,
            size,
            logical_512_over(4096),
        );
        pv.data_offset_bytes = Some(pe_start);
        pv.detail = Some(Detail::Pv(PvInfo {
            pe_start_bytes: pe_start,
            ..PvInfo::default()
        }));
        let mut fs = Layer::new(
            LayerKind::Filesystem,
            "ext4",
            "vg/lv",
            lv_at,
            MIB,
            logical_512_over(4096),
        );
        fs.detail = Some(Detail::Filesystem(crate::stack::Filesystem {
            kind: crate::stack::FsKind::Ext4,
            block_size: 4096,
            sector_size: 4096,
            stripe_unit_blocks: 0,
            stripe_width_blocks: 0,
            size_bytes: MIB,
            free_bytes: None,
            zoned: false,
            volume: None,
            f2fs: None,
        }));
        pv.children.push(fs);
        root.children.push(pv);
        judge(&mut root);
        root
    }

    fn walk(root: &mut Layer, cause: Option<Cause>) {
        Regions::new().target_root(root, "disk.img", cause);
    }

    #[test]
    fn a_pv_on_its_grid_in_a_partition_at_63_inherits_the_partition() {
        let start = 63 * 512;
        let mut root = stack(start, MIB, 0);
        let before = root.children[0].findings.len();
        assert!(before > 0, "the PV's start is off 4 KiB on the disk");
        walk(&mut root, partition_cause(start));
        let pv = &root.children[0];
        assert_eq!(pv.status, Status::Inherits);
        assert!(!pv.findings.iter().any(|f| is_layer_start(f.code)));
        // Named within its own target's tree, without the target.
        assert_eq!(pv.inherits_from.as_deref(), Some("partition 1"));
        // The filesystem in the PV's space (another device) inherits too:
        // its bytes are where the PV put them.
        let fs = &pv.children[0];
        assert_eq!(fs.status, Status::Inherits);
        assert!(fs.inherits_from.is_some());
    }

    #[test]
    fn a_pv_off_its_own_grid_keeps_its_finding() {
        // Partition aligned, pe_start 1 MiB + 512: the PV's own fault.
        let mut root = stack(MIB, MIB + 512, 0);
        walk(&mut root, partition_cause(MIB));
        let pv = &root.children[0];
        assert_eq!(pv.status, Status::Misaligned);
        assert!(pv.findings.iter().any(|f| is_layer_start(f.code)));
        assert_eq!(pv.inherits_from, None);
        // The filesystem above names the PV, its nearest cause.
        let fs = &pv.children[0];
        assert_eq!(fs.status, Status::Inherits);
        assert_eq!(fs.inherits_from.as_deref(), Some("partition 1 / PV"));
    }

    #[test]
    fn nothing_off_nothing_inherited() {
        let mut root = stack(MIB, MIB, 0);
        walk(&mut root, partition_cause(MIB));
        for l in root.walk() {
            assert!(l.status.is_clean(), "{}: {:?}", l.name, l.status);
            assert_eq!(l.inherits_from, None, "{}", l.name);
        }
    }

    #[test]
    fn a_warning_below_explains_no_error_above() {
        // 4 KiB aligned but not 1 MiB: an info/warning tier cause.
        let start = 64 * KIB;
        let cause = partition_cause(start);
        assert!(cause.as_ref().is_none_or(|c| c.severity < Severity::Error));
        // pe_start 512 bytes off: an error of the PV's own.
        let mut root = stack(start, MIB + 512, 0);
        walk(&mut root, cause);
        let pv = &root.children[0];
        assert_eq!(pv.status, Status::Misaligned);
        assert_eq!(pv.inherits_from, None);
    }

    #[test]
    fn an_lv_leg_in_a_pv_that_is_off_inherits_across_targets() {
        let start = 63 * 512;
        let mut root = stack(start, MIB, 0);
        let mut regions = Regions::new();
        regions.target_root(&mut root, "disk.img", partition_cause(start));
        // The VG assembled from that PV: an LV whose one leg starts at the
        // PV's first extent plus 4 MiB, in the disk's bytes.
        let at = start + MIB + 4 * MIB;
        let mut vg = Layer::new(
            LayerKind::LvmVg,
            "vg",
            "vg",
            0,
            64 * MIB,
            logical_512_over(4096),
        );
        let mut lv = Layer::new(
            LayerKind::LvmLv,
            "lv",
            "vg",
            0,
            4 * MIB,
            logical_512_over(4096),
        );
        lv.children.push(Layer::new(
            LayerKind::LvmLeg,
            "leg 0",
            "sda",
            at,
            4 * MIB,
            logical_512_over(4096),
        ));
        vg.children.push(lv);
        judge(&mut vg);
        assert_eq!(vg.children[0].children[0].status, Status::Misaligned);
        regions.assembled(&mut vg);
        let leg = &vg.children[0].children[0];
        assert_eq!(leg.status, Status::Inherits);
        assert_eq!(leg.inherits_from.as_deref(), Some("disk.img: partition 1"));
        // A leg off the PV's grid is its own: 1 KiB further (512 would
        // land on 4 KiB of the disk: 63 sectors + 1 = 64).
        let mut vg2 = Layer::new(
            LayerKind::LvmVg,
            "vg",
            "vg",
            0,
            64 * MIB,
            logical_512_over(4096),
        );
        let mut lv2 = Layer::new(
            LayerKind::LvmLv,
            "lv",
            "vg",
            0,
            4 * MIB,
            logical_512_over(4096),
        );
        let leg2 = Layer::new(
            LayerKind::LvmLeg,
            "leg 0",
            "sda",
            at + 1024,
            4 * MIB,
            logical_512_over(4096),
        );
        lv2.children.push(leg2);
        vg2.children.push(lv2);
        judge(&mut vg2);
        regions.assembled(&mut vg2);
        let leg2 = &vg2.children[0].children[0];
        assert_eq!(leg2.status, Status::Misaligned);
        assert_eq!(leg2.inherits_from, None);
    }

    #[test]
    fn the_inherited_status_follows_the_cause_tier() {
        let c = |severity| Cause {
            subject: "p".into(),
            severity,
        };
        assert_eq!(inherited_status(&c(Severity::Error)), Status::Inherits);
        assert_eq!(inherited_status(&c(Severity::Warning)), Status::Untidy);
        assert_eq!(inherited_status(&c(Severity::Info)), Status::Aligned);
    }

    #[test]
    fn a_region_holds_what_starts_inside_it_and_on_its_grid() {
        let r = Region {
            device: "sda".into(),
            own_space: false,
            start: 32256,
            end: 32256 + MIB,
            cause: None,
        };
        assert!(on_grid_within(&r, 32256 + 4096, 4096));
        assert!(!on_grid_within(&r, 32256 + 512, 4096));
        assert!(!on_grid_within(&r, 0, 4096));
        assert!(!on_grid_within(&r, 32256, 0));
    }
}
