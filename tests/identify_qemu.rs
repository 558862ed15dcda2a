//! The identify parsers on data real (emulated) devices answered in a qemu
//! guest: qemu 7.2's NVMe namespace and AHCI disk and Linux 6.1's
//! scsi_debug, captured with nvme-cli, sg3-utils and hdparm (the commands
//! are in tests/fixtures/identify/README.md). Each value checked here is
//! what those tools printed for the same device.

use diskalign::identify;

fn fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/tests/fixtures/identify/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn qemu_nvme_namespace_as_nvme_id_ns_shows_it() {
    let ns = identify::parse_nvme(&fixture("qemu-nvme-id-ns.bin")).unwrap();
    // nvme id-ns -H: nsfeat 0x14, nlbaf 7, flbas 0, npwg 0, npwa 0,
    // npdg 127, npda 127, nows 0; formats 0-3 512 bytes, 4-7 4096, all
    // "Best", metadata 0/8/16/64; format 0 in use.
    assert_eq!((ns.nsfeat, ns.nlbaf, ns.flbas), (0x14, 7, 0), "{ns:?}");
    assert_eq!(
        (ns.npwg, ns.npwa, ns.npdg, ns.npda, ns.nows),
        (0, 0, 127, 127, 0)
    );
    assert_eq!(ns.lba_formats.len(), 8);
    for (i, f) in ns.lba_formats.iter().enumerate() {
        let data = if i < 4 { 512 } else { 4096 };
        assert_eq!(f.data_bytes, Some(data), "{f:?}");
        assert_eq!(f.metadata_bytes, [0, 8, 16, 64][i % 4], "{f:?}");
        assert_eq!(f.in_use, i == 0, "{f:?}");
    }
}

#[test]
fn qemu_ahci_disk_as_hdparm_and_sg3_utils_show_it() {
    let id = identify::parse_ata(&fixture("qemu-ahci-identify.bin")).unwrap();
    // hdparm -I: Logical Sector size 512, Physical Sector size 4096;
    // Model Number "sata", Firmware Revision "2.5+".
    assert_eq!(
        (id.logical_sector_bytes, id.physical_sector_bytes),
        (512, 4096)
    );
    assert_eq!(id.word106, 0x6003);
    assert_eq!(id.model.as_deref(), Some("sata"));
    assert_eq!(id.firmware.as_deref(), Some("2.5+"));
    // sg_readcap -l: 2097152 blocks of 512 bytes, exponent 3, LALBA 0.
    let c = identify::read_capacity16(&fixture("qemu-ahci-read-capacity16.bin")).unwrap();
    assert_eq!(
        (c.last_lba, c.logical_block_bytes, c.lbppbe, c.lalba),
        (2097151, 512, 3, 0)
    );
    // sg_vpd -p bl: optimal transfer length granularity 8 blocks, maximum
    // and optimal transfer length not reported (0).
    let b = identify::block_limits(&fixture("qemu-ahci-vpd-b0.bin")).unwrap();
    assert_eq!((b.otlg, b.mtl, b.otl), (8, 0, 0));
}

#[test]
fn scsi_debug_as_sg3_utils_shows_it() {
    // scsi_debug physblk_exp=3 lowest_aligned=7 opt_xferlen_exp=6
    // opt_blks=2048 dev_size_mb=64; sg_vpd -p bl: granularity 64 blocks,
    // maximum 131072, optimal 2048; sg_readcap -l: last LBA 131071, 512,
    // exponent 3, lowest aligned LBA 7.
    let b = identify::block_limits(&fixture("scsi-debug-vpd-b0.bin")).unwrap();
    assert_eq!((b.otlg, b.mtl, b.otl), (64, 131072, 2048));
    let c = identify::read_capacity16(&fixture("scsi-debug-read-capacity16.bin")).unwrap();
    assert_eq!(
        (c.last_lba, c.logical_block_bytes, c.lbppbe, c.lalba),
        (131071, 512, 3, 7)
    );
    // sg_vpd -p di: the NAA designator topology reports as its WWN.
    let wwn = identify::naa_wwn(&fixture("scsi-debug-vpd-83.bin")).unwrap();
    assert_eq!(wwn.as_deref(), Some("0x33333330000007d0"));
}
