//! The rule on synthetic layers and evidence: each label here is made up
//! for the test, the topologies and identify data too.

use super::*;
use crate::check::declared::tests::{namespace, says};
use crate::iolimits::Topology;
use crate::stack::{Bluestore, Detail};
use crate::units::{KIB, MIB};

fn osd(unit: u64, below: Topology) -> Layer {
    let mut l = Layer::new(
        LayerKind::Bluestore,
        "BlueStore main device of osd.3",
        "/dev/nvme0n1",
        0,
        64 * MIB,
        below,
    );
    let mut b = Bluestore {
        description: "main".into(),
        min_alloc_size_bytes: Some(unit),
        ..Bluestore::default()
    };
    b.meta.insert("whoami".into(), "3".into());
    l.detail = Some(Detail::Bluestore(b));
    l
}

fn topo(pbs: u32, min: u32) -> Topology {
    Topology {
        physical_block_size: pbs,
        minimum_io_size: min,
        ..Topology::IMAGE_DEFAULT
    }
}

fn codes(fs: &[Finding]) -> Vec<Code> {
    fs.iter().map(|f| f.code).collect()
}

/// The case: a 4 KiB unit on a 16 KiB physical block is a
/// warning naming the block and the redeploy; a 16 KiB unit is nothing.
#[test]
fn a_unit_below_the_physical_block_is_a_warning_with_the_redeploy() {
    let f = findings(&osd(4 * KIB, topo(16384, 16384)));
    assert_eq!(codes(&f), [Code::BluestoreAllocBelowGrain]);
    let f = &f[0];
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.facts.block_size_bytes, Some(4096));
    assert_eq!(f.facts.grain_bytes, Some(16384));
    assert_eq!(f.facts.grain_source.as_deref(), Some("physical-block"));
    let fix = f.facts.fix.as_deref().unwrap();
    assert!(
        fix.contains("ceph osd destroy 3 --yes-i-really-mean-it"),
        "{fix}"
    );
    assert!(fix.contains("bluestore_min_alloc_size_ssd 16384"), "{fix}");
    assert!(
        f.message.contains("16384-byte physical block"),
        "{}",
        f.message
    );
    assert!(findings(&osd(16 * KIB, topo(16384, 16384))).is_empty());
    assert!(findings(&osd(64 * KIB, topo(4096, 4096))).is_empty());
}

/// An md chunk or LV stripe below (the kernel's minimum I/O size) is an
/// info; over a physical block it also misses, the warning is said.
#[test]
fn a_stripe_below_is_an_info_and_the_physical_block_wins() {
    let f = findings(&osd(4 * KIB, topo(4096, 65536)));
    assert_eq!(codes(&f), [Code::BluestoreAllocBelowGrain]);
    assert_eq!(f[0].severity, Severity::Info);
    assert_eq!(f[0].facts.grain_source.as_deref(), Some("minimum-io"));
    assert_eq!(f[0].facts.minimum_io_bytes, Some(65536));
    let f = findings(&osd(4 * KIB, topo(16384, 65536)));
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(f[0].facts.grain_bytes, Some(16384));
    // A width that is no power of two is no unit BlueStore could take.
    assert!(findings(&osd(4 * KIB, topo(4096, 3 * 65536))).is_empty());
}

/// The OSD's start is judged as any layer's: at byte 4 KiB + 512 of a
/// 4 KiB disk it is off.
#[test]
fn its_start_is_judged() {
    let mut l = osd(4 * KIB, topo(4096, 4096));
    l.offset_bytes = 4608;
    let f = findings(&l);
    assert!(f.iter().any(|f| f.code.meaning().layer_start), "{f:?}");
}

/// The disk's NPWG (32 blocks of 512: 16 KiB) where the kernel reports 4 KiB, and a probe's
/// 64 KiB unit: the larger replaces the smaller, once.
#[test]
fn declared_and_measured_units_are_said_once_the_largest() {
    let s = says(namespace(0x10, 31, 31), 4096);
    let mut l = osd(4 * KIB, topo(4096, 4096));
    evidence(Some(&s), None, "/dev/nvme0n1", &mut l);
    assert_eq!(codes(&l.findings), [Code::BluestoreAllocBelowGrain]);
    let f = &l.findings[0];
    assert_eq!(f.facts.grain_source.as_deref(), Some("nvme-npwg"));
    assert_eq!(f.facts.npwg_bytes, Some(16384));
    assert!(!l.aligned);
    let m = Measured {
        path: "/dev/nvme0n1".into(),
        disk: None,
        unit_bytes: 65536,
        erase: false,
        file: "run.json".into(),
    };
    evidence(Some(&s), Some(&m), "/dev/nvme0n1", &mut l);
    assert_eq!(codes(&l.findings), [Code::BluestoreAllocBelowGrain]);
    let f = &l.findings[0];
    assert_eq!(f.facts.grain_bytes, Some(65536));
    assert_eq!(f.facts.measured_by.as_deref(), Some("run.json"));
    // Another disk's identify data says nothing about this one.
    let mut other = osd(4 * KIB, topo(4096, 4096));
    evidence(Some(&s), None, "/dev/sdb", &mut other);
    assert!(other.findings.is_empty());
    // A 16 KiB unit meets the NPWG.
    let mut fits = osd(16 * KIB, topo(4096, 4096));
    evidence(Some(&s), None, "/dev/nvme0n1", &mut fits);
    assert!(fits.findings.is_empty());
}
