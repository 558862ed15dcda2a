//! The comparison on the synthetic identify fixtures
//! (tests/fixtures/identify/README.md).

use super::*;

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/identify/",
            $name
        ))
        .to_vec()
    };
}

fn kernel(lbs: u32, pbs: u32, min: u32, opt: u32) -> Topology {
    Topology {
        logical_block_size: lbs,
        physical_block_size: pbs,
        minimum_io_size: min,
        optimal_io_size: opt,
        ..Topology::plain(lbs)
    }
}

fn limit(s: &Declared, limit: Limit, source: IdentifyProtocol) -> &DeclaredLimit {
    s.limits
        .iter()
        .find(|l| l.limit == limit && l.source == source)
        .unwrap_or_else(|| panic!("no {limit} from {source} in {s:#?}"))
}

#[test]
fn the_seed_a_512n_drive_behind_a_bridge_that_says_4096() {
    let a = Answers {
        ata: Some(Ok(fixture!("ata-identify-512n.bin"))),
        read_capacity: Some(Ok(fixture!("read-capacity16-bridge.bin"))),
        vpd_b0: Some(fixture!("vpd-b0-bridge.bin")),
        usb: true,
        ..Answers::default()
    };
    let k = kernel(512, 4096, 4096, 33553920);
    let s = read_declared(&a, &k).unwrap();
    let ata = s.ata.as_ref().unwrap();
    assert_eq!(
        (ata.logical_sector_bytes, ata.physical_sector_bytes),
        (512, 512)
    );
    assert_eq!(ata.model.as_deref(), Some("SYNTHETIC SSD 512N"));
    let scsi = s.scsi.as_ref().unwrap();
    assert_eq!(
        (scsi.otlg, scsi.otl, scsi.lbppbe),
        (Some(8), Some(0xffff), Some(3))
    );
    assert_eq!(s.primary(), Some(IdentifyProtocol::Ata));
    assert!(!limit(&s, Limit::PhysicalBlockSize, IdentifyProtocol::Ata).follows);
    assert!(limit(&s, Limit::PhysicalBlockSize, IdentifyProtocol::Scsi).follows);
    assert!(limit(&s, Limit::OptimalIoSize, IdentifyProtocol::Scsi).follows);
    assert_eq!(s.disagreements(), [Limit::PhysicalBlockSize]);
    assert_eq!(s.value(Limit::PhysicalBlockSize), Some(512));
    assert_eq!(
        s.value(Limit::OptimalIoSize),
        None,
        "the drive declares none"
    );
    let notes = s.notes.join("\n");
    assert!(
        notes.contains("the drive says 512/512 (logical/physical, IDENTIFY); the USB bridge reports 512/4096 (READ CAPACITY(16)), which the kernel took"),
        "{notes}"
    );
    assert!(
        notes.contains("the optimal I/O of 33553920 bytes is the USB bridge's optimal transfer length (65535 blocks of 512 bytes"),
        "{notes}"
    );
}

#[test]
fn a_sata_512e_drive_through_libata_agrees() {
    // libata answers READ CAPACITY(16) from IDENTIFY: the same 512/4096.
    let a = Answers {
        ata: Some(Ok(fixture!("ata-identify-512e.bin"))),
        read_capacity: Some(Ok(fixture!("read-capacity16-bridge.bin"))),
        ..Answers::default()
    };
    let s = read_declared(&a, &kernel(512, 4096, 4096, 0)).unwrap();
    assert!(s.disagreements().is_empty(), "{s:#?}");
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn nvme_with_npwg_and_nows_the_kernel_follows() {
    let a = Answers {
        nvme: Some(Ok(fixture!("nvme-id-ns-optperf.bin"))),
        ..Answers::default()
    };
    // NAWUPF 0 and no controller AWUPF known: the physical block may be
    // capped anywhere from one block to NPWG.
    for pbs in [16384, 4096] {
        let s = read_declared(&a, &kernel(4096, pbs, 16384, 131072)).unwrap();
        assert!(s.disagreements().is_empty(), "{pbs}: {s:#?}");
        assert_eq!(s.kernel_ignores, ["npwa", "npdg", "npda"]);
        assert!(s.notes[0].contains("NPWA says writes are best aligned to 8192 bytes"));
    }
    // An older view (io_opt 0): the kernel does not follow NOWS.
    let s = read_declared(&a, &kernel(4096, 16384, 16384, 0)).unwrap();
    assert_eq!(s.disagreements(), [Limit::OptimalIoSize]);
    assert!(s.notes[0].contains(
        "the kernel's optimal I/O is 0 bytes; the namespace's Identify data gives 131072 (NOWS)"
    ));
}

#[test]
fn nvme_without_nsfeat_bit_4() {
    let a = Answers {
        nvme: Some(Ok(fixture!("nvme-id-ns-plain.bin"))),
        ..Answers::default()
    };
    let s = read_declared(&a, &kernel(512, 512, 512, 0)).unwrap();
    let ns = s.nvme.as_ref().unwrap();
    assert_eq!(ns.lba_formats.len(), 3);
    assert_eq!(ns.lba_formats[2].data_bytes, Some(4096));
    assert!(s.disagreements().is_empty());
    assert!(s.kernel_ignores.is_empty());
    assert!(s.notes[0].starts_with("NSFEAT bit 4 is clear"));
}

#[test]
fn nothing_answered_is_one_line() {
    let a = Answers {
        read_capacity: answer(
            "READ CAPACITY(16)",
            Err(crate::sys::PassthroughError::Command(
                std::io::Error::other(
                    "SCSI status 0x02, sense key 0x5 (ILLEGAL REQUEST), ASC/ASCQ 20/00",
                ),
            )),
        ),
        ata: answer(
            "IDENTIFY",
            Err(crate::sys::PassthroughError::Command(
                std::io::Error::other("SCSI status 0x02"),
            )),
        ),
        ..Answers::default()
    };
    let e = read_declared(&a, &kernel(512, 512, 512, 0)).unwrap_err();
    assert_eq!(
        e,
        "the device did not answer IDENTIFY: SCSI status 0x02; the device did not answer READ CAPACITY(16): SCSI status 0x02, sense key 0x5 (ILLEGAL REQUEST), ASC/ASCQ 20/00"
    );
    // A node that does not open is said once.
    let open = || {
        answer(
            "IDENTIFY",
            crate::sys::ata_identify(Path::new("/nonexistent/sdz")),
        )
    };
    let a = Answers {
        read_capacity: open(),
        ata: open(),
        ..Answers::default()
    };
    let e = read_declared(&a, &kernel(512, 512, 512, 0)).unwrap_err();
    assert_eq!(
        e,
        "cannot open /nonexistent/sdz: No such file or directory (os error 2)"
    );
    // Bytes that do not parse are said, with the layer and the byte.
    let a = Answers {
        ata: Some(Ok(vec![0; 512])),
        vpd_83: Some(fixture!("vpd-83-naa5.bin")),
        ..Answers::default()
    };
    let s = read_declared(&a, &kernel(512, 512, 512, 0)).unwrap();
    assert_eq!(s.scsi.unwrap().wwn.as_deref(), Some("0x5000000000000001"));
    assert!(
        s.notes[0].contains("ATA IDENTIFY DEVICE data at byte 0"),
        "{:?}",
        s.notes
    );
}

#[test]
fn what_is_asked_by_transport() {
    let dir = Path::new("/nonexistent");
    let node = Path::new("/dev/loop0");
    let e = ask(dir, node, Transport::Loop, true).unwrap_err();
    assert_eq!(
        e,
        "the kernel makes loop devices itself: no identify data to ask for"
    );
    assert!(ask(dir, node, Transport::Virtio, true)
        .unwrap_err()
        .contains("virtio"));
    assert!(ask(dir, node, Transport::Nvme, false)
        .unwrap_err()
        .starts_with("not asked"));
    assert!(ask(dir, node, Transport::Sata, false)
        .unwrap_err()
        .starts_with("not asked"));
}

#[test]
fn round_trip() {
    let a = Answers {
        nvme: Some(Ok(fixture!("nvme-id-ns-optperf.bin"))),
        ..Answers::default()
    };
    let s = read_declared(&a, &kernel(4096, 16384, 16384, 131072)).unwrap();
    let back: Declared = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}
