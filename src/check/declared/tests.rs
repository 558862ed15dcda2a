//! The rules on synthetic Declared: every namespace, format and limit
//! here is made up for the test, not read from a device.

use super::*;
use crate::check::fixture::{disk, image, part};
use crate::check::partitions::partition_reports;
use crate::check::tools::ToolView;
use crate::findings::{Severity, Status};
use crate::identify::{LbaFormat, RelativePerformance};
use crate::layout::PartKind;
use crate::stack::Detail;
use crate::stack::Luks;
use crate::topology::{DeclaredLimit, IdentifyProtocol};
use crate::units::MIB;

const T512E: Topology = Topology {
    physical_block_size: 4096,
    minimum_io_size: 4096,
    ..Topology::IMAGE_DEFAULT
};

fn format(index: u8, lbads_bytes: u64, rp: RelativePerformance, in_use: bool) -> LbaFormat {
    LbaFormat {
        index,
        data_bytes: Some(lbads_bytes),
        metadata_bytes: 0,
        relative_performance: rp,
        in_use,
    }
}

/// A synthetic namespace: 512-byte blocks in use, NSFEAT bit 4 as given,
/// NPWG and NPWA 0's based, a 4096-byte format 1 as fast.
pub(crate) fn namespace(nsfeat: u8, npwg: u16, npwa: u16) -> Namespace {
    Namespace {
        nsfeat,
        nlbaf: 1,
        npwg,
        npwa,
        lba_formats: vec![
            format(0, 512, RelativePerformance::Good, true),
            format(1, 4096, RelativePerformance::Good, false),
        ],
        ..Namespace::default()
    }
}

/// Synthetic Declared of a namespace declaring a physical block of `pbs`.
pub(crate) fn says(ns: Namespace, pbs: u64) -> Declared {
    Declared {
        nvme: Some(ns),
        limits: vec![DeclaredLimit {
            limit: Limit::PhysicalBlockSize,
            source: IdentifyProtocol::Nvme,
            fields: "NPWG".into(),
            device_bytes: pbs,
            kernel_bytes: 512,
            follows: false,
        }],
        ..Declared::default()
    }
}

#[test]
fn the_unit_needs_nsfeat_bit_4_and_more_than_one_block() {
    assert_eq!(WriteUnit::of(&namespace(0x00, 31, 31)), None);
    assert_eq!(WriteUnit::of(&namespace(0x10, 0, 0)), None);
    let u = WriteUnit::of(&namespace(0x10, 31, 7)).unwrap();
    assert_eq!(
        (u.npwg_bytes, u.npwa_bytes, u.bytes()),
        (16384, 4096, 16384)
    );
    // NPWG 12 KiB and NPWA 8 KiB: a start on both is on 24 KiB.
    let u = WriteUnit::of(&namespace(0x10, 23, 15)).unwrap();
    assert_eq!(u.bytes(), 24576);
}

#[test]
fn a_start_off_the_declared_unit_is_a_warning_with_its_facts() {
    let unit = write_unit(Some(&says(namespace(0x10, 31, 31), 16384)));
    let f = partition_start(unit, &T512E, MIB + 4096).unwrap();
    assert_eq!(f.code, Code::StartNotPreferredWrite);
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.facts.offset_bytes, Some(MIB + 4096));
    assert_eq!(f.facts.grain_bytes, Some(16384));
    assert_eq!(f.facts.misalignment_bytes, Some(4096));
    assert_eq!(
        (f.facts.npwg_bytes, f.facts.npwa_bytes),
        (Some(16384), Some(16384))
    );
    assert!(
        f.message
            .starts_with("starts at byte 1052672, 4096 bytes off the 16384-byte grid"),
        "{}",
        f.message
    );
    assert!(f
        .message
        .contains("preferred write granularity 16 KiB and alignment 16 KiB"));
    assert!(partition_start(unit, &T512E, MIB).is_none());
}

#[test]
fn a_start_the_kernel_rules_already_judge_is_left_to_them() {
    let unit = write_unit(Some(&says(namespace(0x10, 31, 31), 16384)));
    // Off 4 KiB: start-not-4k speaks.
    assert!(partition_start(unit, &T512E, 63 * 512).is_none());
    // Off the kernel's 16 KiB grain: start-misaligned speaks.
    let t16 = Topology {
        minimum_io_size: 16384,
        ..T512E
    };
    assert!(partition_start(unit, &t16, MIB + 4096).is_none());
    // Nothing declared (NSFEAT bit 4 clear, or no Declared): nothing said.
    let none = write_unit(Some(&says(namespace(0x00, 31, 31), 512)));
    assert!(partition_start(none, &T512E, MIB + 4096).is_none());
    assert!(write_unit(None).is_none());
}

#[test]
fn partitions_of_a_disk_get_it_and_become_untidy() {
    let mut t = image(
        64 * MIB,
        T512E,
        vec![
            part(1, PartKind::Primary, 2048, 4095),
            part(2, PartKind::Primary, 4104, 8191),
        ],
    );
    let reports = |t: &crate::inspect::Target| {
        partition_reports(t, &ToolView::new(&t.topology, t.size), false)
    };
    // An image: no Declared, no finding.
    assert!(reports(&t).iter().all(|p| p.status == Status::Aligned));
    let mut d = disk(64 * MIB, vec![]);
    d.declared = Some(says(namespace(0x10, 31, 31), 16384));
    t.disk = Some(d);
    let r = reports(&t);
    assert_eq!(r[0].status, Status::Aligned);
    assert_eq!(r[1].status, Status::Untidy);
    let codes: Vec<Code> = r[1].findings.iter().map(|f| f.code).collect();
    assert!(codes.contains(&Code::StartNotPreferredWrite), "{codes:?}");
}

fn luks_layer(version: u16, sector_size: u32, below: Topology) -> Layer {
    let mut l = Layer::new(
        LayerKind::Luks,
        "luks",
        "/dev/nvme0n1",
        MIB,
        64 * MIB,
        below,
    );
    l.data_offset_bytes = Some(16 * MIB);
    l.detail = Some(Detail::Luks(Luks {
        version,
        uuid: "synthetic".into(),
        payload_offset_bytes: 16 * MIB,
        sector_size,
        cipher: None,
    }));
    l
}

#[test]
fn a_luks_sector_below_the_declared_physical_block_is_a_warning() {
    let s = says(namespace(0x10, 7, 7), 4096);
    let mut l = luks_layer(2, 512, Topology::IMAGE_DEFAULT);
    layer_findings(Some(&s), "/dev/nvme0n1", &mut l);
    assert_eq!(l.findings.len(), 1, "{:?}", l.findings);
    let f = &l.findings[0];
    assert_eq!(f.code, Code::LuksSectorBelowDeclared);
    assert_eq!(f.facts.block_size_bytes, Some(512));
    assert_eq!(f.facts.physical_block_bytes, Some(4096));
    assert_eq!(f.facts.kernel_value, Some(512));
    assert_eq!(f.facts.declared_by.as_deref(), Some("nvme"));
    assert!(f
        .message
        .contains("`cryptsetup reencrypt --sector-size 4096`"));
    assert_eq!(l.status, Status::Untidy);
    // A 64 KiB declared block asks for no more than dm-crypt's 4096.
    let mut l = luks_layer(2, 4096, Topology::IMAGE_DEFAULT);
    layer_findings(
        Some(&says(namespace(0x10, 7, 7), 65536)),
        "/dev/nvme0n1",
        &mut l,
    );
    assert!(l.findings.is_empty());
    // The kernel's 4096 already gives luks-sector-size: not said twice.
    let mut l = luks_layer(2, 512, T512E);
    layer_findings(Some(&s), "/dev/nvme0n1", &mut l);
    assert!(l.findings.is_empty());
    // LUKS1's fix goes through a conversion.
    let mut l = luks_layer(1, 512, Topology::IMAGE_DEFAULT);
    layer_findings(Some(&s), "/dev/nvme0n1", &mut l);
    assert!(l.findings[0]
        .message
        .contains("cryptsetup convert --type luks2"));
}

fn zfs_layer(ashift: u64, below: Topology) -> Layer {
    let mut l = Layer::new(
        LayerKind::ZfsMember,
        "ZFS pool tank member",
        "/dev/nvme0n1",
        MIB,
        64 * MIB,
        below,
    );
    l.detail = Some(Detail::Zfs(Box::new(crate::stack::Zfs {
        vdev_tree: Some(crate::stack::Vdev {
            vdev_type: "disk".into(),
            ashift: Some(ashift),
            ..Default::default()
        }),
        ..Default::default()
    })));
    l
}

/// The seed's bridge case: the kernel reports 512, the disk declares 4096,
/// and ZFS took ashift 9 from the kernel. Said once, with the evidence.
#[test]
fn a_zfs_ashift_below_the_declared_physical_block_is_an_error_that_names_its_evidence() {
    let s = says(namespace(0x10, 7, 7), 4096);
    let mut l = zfs_layer(9, Topology::IMAGE_DEFAULT);
    layer_findings(Some(&s), "/dev/nvme0n1", &mut l);
    assert_eq!(l.findings.len(), 1, "{:?}", l.findings);
    let f = &l.findings[0];
    assert_eq!(f.code, Code::ZfsAshiftBelowPhysical);
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.facts.physical_block_bytes, Some(4096));
    assert_eq!(f.facts.kernel_value, Some(512));
    assert_eq!(f.facts.declared_by.as_deref(), Some("nvme"));
    assert!(
        f.message
            .contains("declares a 4096-byte physical block (nvme; the kernel reports 512")
            && f.message.contains("-o ashift=12"),
        "{}",
        f.message
    );
    // ashift 12 meets it; and over a kernel that reports 4096 the
    // kernel's own rule speaks (check::stack), not this one.
    for (ashift, below) in [(12, Topology::IMAGE_DEFAULT), (9, T512E)] {
        let mut l = zfs_layer(ashift, below);
        layer_findings(Some(&s), "/dev/nvme0n1", &mut l);
        assert!(l.findings.is_empty(), "{:?}", l.findings);
    }
}

/// The kernel's 512 makes ashift 12 and 13 look larger than needed; a
/// disk that declares 4096 settles it: 12 is what it needs (no finding),
/// 13 is still above, now against 4096 and naming the evidence.
#[test]
fn a_zfs_ashift_above_the_kernels_block_is_settled_by_what_the_disk_declares() {
    let s = says(namespace(0x10, 7, 7), 4096);
    let above = |ashift: u64| {
        let mut l = zfs_layer(ashift, Topology::IMAGE_DEFAULT);
        ashift_above(Some(&s), None, "/dev/nvme0n1", true, &mut l);
        l
    };
    let fits = above(12);
    assert!(fits.findings.is_empty(), "{:?}", fits.findings);
    let big = above(13);
    assert_eq!(big.findings.len(), 1, "{:?}", big.findings);
    let f = &big.findings[0];
    assert_eq!(f.code, Code::ZfsAshiftAbovePhysical);
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(f.facts.physical_block_bytes, Some(4096));
    assert_eq!(f.facts.amplification, Some(2.0));
    assert_eq!(f.facts.kernel_value, Some(512));
    assert_eq!(f.facts.declared_by.as_deref(), Some("nvme"));
    assert!(
        f.message.contains("8192-byte units (ashift 13) where 4096-byte blocks would do (as the disk declares, nvme)"),
        "{}",
        f.message
    );
    assert!(big.aligned);
    // A probe run's bracketed 4096 settles it the same way.
    let m = crate::inspect::Measured {
        path: "/dev/nvme0n1".into(),
        disk: None,
        unit_bytes: 4096,
        erase: false,
        file: "run.json".into(),
    };
    for (ashift, left) in [(12, 0), (13, 1)] {
        let mut l = zfs_layer(ashift, Topology::IMAGE_DEFAULT);
        ashift_above(None, Some(&m), "/dev/nvme0n1", true, &mut l);
        assert_eq!(l.findings.len(), left, "{:?}", l.findings);
        if let Some(f) = l.findings.first() {
            assert_eq!(f.facts.measured_by.as_deref(), Some("run.json"));
            assert!(
                f.message.contains("the unit the probe bracketed, run.json"),
                "{}",
                f.message
            );
        }
    }
}

/// Above the kernel's block with no evidence: info, with the space a
/// block takes; an image's unknown device (the image default topology)
/// gets nothing without evidence.
#[test]
fn a_zfs_ashift_above_the_kernels_block_is_info_with_its_space_cost() {
    let mut big = zfs_layer(14, T512E);
    ashift_above(None, None, "/dev/nvme0n1", true, &mut big);
    assert!(big.aligned);
    assert_eq!(big.findings.len(), 1, "{:?}", big.findings);
    let f = &big.findings[0];
    assert_eq!(f.code, Code::ZfsAshiftAbovePhysical);
    assert_eq!(f.facts.amplification, Some(4.0));
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.contains("a block of 4 KiB or less")
            && f.message.contains("takes 16 KiB of space, 4x"),
        "{}",
        f.message
    );
    let mut unknown = zfs_layer(12, Topology::IMAGE_DEFAULT);
    ashift_above(None, None, "/dev/nvme0n1", false, &mut unknown);
    assert!(unknown.findings.is_empty(), "{:?}", unknown.findings);
}

#[test]
fn a_layer_start_off_the_unit_and_other_devices_layers() {
    let s = says(namespace(0x10, 31, 31), 16384);
    let mut l = luks_layer(2, 4096, T512E);
    l.data_offset_bytes = Some(16 * MIB + 4096);
    let mut other = luks_layer(2, 4096, T512E);
    other.device = "/dev/dm-0".into();
    other.data_offset_bytes = Some(4096);
    l.children.push(other);
    layer_findings(Some(&s), "/dev/nvme0n1", &mut l);
    let f = &l.findings[0];
    assert_eq!(f.code, Code::LayerStartNotPreferredWrite);
    assert_eq!(f.facts.offset_bytes, Some(17 * MIB + 4096));
    assert_eq!(f.facts.region.as_deref(), Some("luks data start"));
    assert!(
        f.message
            .starts_with("luks data start at byte 17829888 of /dev/nvme0n1 is 4096 bytes off"),
        "{}",
        f.message
    );
    assert!(
        l.children[0].findings.is_empty(),
        "another device's offsets are not the disk's"
    );
    // No Declared (an image): nothing.
    let mut l = luks_layer(2, 512, Topology::IMAGE_DEFAULT);
    layer_findings(None, "/dev/nvme0n1", &mut l);
    assert!(l.findings.is_empty());
}

#[test]
fn the_format_advice_names_the_command_and_the_erasure() {
    let s = says(namespace(0x10, 0, 0), 512);
    let f = format_advice(Some(&s), "/dev/nvme0n1").unwrap();
    assert_eq!(f.code, Code::NvmeFormat4kAvailable);
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(f.facts.lba_format, Some(1));
    assert_eq!(
        f.facts.fix.as_deref(),
        Some("nvme format --lbaf=1 /dev/nvme0n1")
    );
    assert!(
        f.message.contains("erases the whole namespace"),
        "{}",
        f.message
    );
    assert!(format_advice(None, "/dev/nvme0n1").is_none());
}

#[test]
fn no_advice_when_slower_already_4k_or_other_metadata() {
    let mut ns = namespace(0x10, 0, 0);
    ns.lba_formats[1].relative_performance = RelativePerformance::Degraded;
    assert_eq!(better_format(&ns), None);
    let mut ns = namespace(0x10, 0, 0);
    ns.lba_formats[1].metadata_bytes = 8;
    assert_eq!(better_format(&ns), None);
    let mut ns = namespace(0x10, 0, 0);
    ns.lba_formats[0].in_use = false;
    ns.lba_formats[1].in_use = true;
    assert_eq!(better_format(&ns), None);
    // Of several 4096-byte formats, the fastest.
    let mut ns = namespace(0x10, 0, 0);
    ns.lba_formats
        .push(format(4, 4096, RelativePerformance::Best, false));
    assert_eq!(better_format(&ns), Some((4, 512)));
}
