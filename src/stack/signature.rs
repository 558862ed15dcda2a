//! Is anything on this device? Magic numbers of partition tables, foreign
//! filesystems, and every format of the stack registry (its descriptors
//! carry their magics; LVM labels and md 0.90/1.0 superblocks, whose place
//! depends on the device, are looked for here). Used to refuse
//! destructive I/O and to replace an output file, and by the walk to name
//! what it found but does not read ([`unread`]); says only *what* is
//! there, not its geometry.

use super::md;
use super::registry::FORMATS;
use crate::bytes::ReadAt;
use serde::{Deserialize, Serialize};

/// One thing found, with the byte offset of its magic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub what: &'static str,
    pub offset: u64,
}

/// Read `len` bytes at `at`, or None past the end or on a read error.
fn bytes(src: &(impl ReadAt + ?Sized), at: u64, len: usize) -> Option<Vec<u8>> {
    if at.checked_add(len as u64)? > src.len() {
        return None;
    }
    let mut b = vec![0; len];
    src.read_exact_at(&mut b, at).ok()?;
    Some(b)
}

fn has(src: &(impl ReadAt + ?Sized), at: u64, magic: &[u8]) -> bool {
    bytes(src, at, magic.len()).is_some_and(|b| b == magic)
}

const MD_MAGIC: [u8; 4] = 0xa92b_4efc_u32.to_le_bytes();

/// Every signature found (empty when the device looks blank).
pub fn scan_signatures(src: &(impl ReadAt + ?Sized)) -> Vec<Signature> {
    let mut found = Vec::new();
    let mut add = |what, offset| found.push(Signature { what, offset });
    let size = src.len();
    // Partition tables and the filesystems the stack does not read; the
    // stack's own formats bring their magics from the registry.
    let fixed: [(&'static str, u64, &[u8]); 3] = [
        ("GPT partition table", 512, b"EFI PART"),
        ("GPT partition table (4096-byte sectors)", 4096, b"EFI PART"),
        ("ISO 9660 filesystem", 32769, b"CD001"),
    ];
    let registered = FORMATS
        .iter()
        .flat_map(|f| f.magics)
        .map(|m| (m.what, m.offset, m.bytes));
    for (what, at, magic) in fixed.into_iter().chain(registered) {
        if has(src, at, magic) {
            add(what, at);
        }
    }
    for sector in 0..4u64 {
        let at = sector * 512;
        if has(src, at, b"LABELONE") && has(src, at + 24, b"LVM2 001") {
            add("LVM2 physical volume", at);
        }
    }
    // md's places near the end (1.1 and 1.2 come with the registry).
    for (at, version) in md::places(size) {
        let what = match version {
            "1.0" => "md RAID superblock 1.0",
            "0.90" => "md RAID superblock 0.90",
            _ => continue,
        };
        if has(src, at, &MD_MAGIC) {
            add(what, at);
        }
    }
    let gpt = found.iter().any(|s| s.what.starts_with("GPT"));
    if let Some(mbr) = bytes(src, 0, 512) {
        let types: Vec<u8> = (0..4).map(|i| mbr[0x1be + 16 * i + 4]).collect();
        let protective = types.contains(&0xee);
        if mbr[510..512] == [0x55, 0xaa] && types.iter().any(|&t| t != 0) {
            // A GPT's protective MBR is part of the GPT, not a second table.
            match (protective, gpt) {
                (true, true) => {}
                (true, false) => found.push(Signature {
                    what: "protective MBR whose GPT was not found",
                    offset: 510,
                }),
                (false, _) => found.push(Signature {
                    what: "MBR partition table",
                    offset: 510,
                }),
            }
        }
    }
    found
}

/// What a region holds that no layer format reads, as the walk hands it
/// up (an `unread` layer's `signature` in the JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Unread {
    /// What the signature scan calls it: "NTFS filesystem".
    pub what: String,
    /// Where its magic is, in bytes from the region's start.
    pub magic_offset_bytes: u64,
}

impl Unread {
    /// Its name without the word every filesystem has: "NTFS", "FAT",
    /// "GPT partition table".
    pub fn short(&self) -> &str {
        self.what.strip_suffix(" filesystem").unwrap_or(&self.what)
    }
}

/// The first signature in `src` that names what a region holds, for a
/// region where no layer format recognised anything: NTFS, exFAT, FAT,
/// ISO 9660, a GPT inside a partition, and any registered magic whose
/// probe declined it. An MBR signature (0x55AA and a partition type) is
/// never one: every FAT and NTFS boot sector, BitLocker's included, ends
/// in 0x55AA and holds boot code where an MBR's entries are.
pub fn unread(src: &(impl ReadAt + ?Sized)) -> Option<Unread> {
    scan_signatures(src)
        .into_iter()
        .find(|s| s.offset != 510)
        .map(|s| Unread {
            what: s.what.to_string(),
            magic_offset_bytes: s.offset,
        })
}

/// "a" or "an" before `what`, as it is read aloud: initialisms spelled
/// letter by letter that start with a vowel sound (an MBR, an XFS, an
/// LVM2, an md, an ext4) take "an"; LUKS is read as a word.
pub fn article(what: &str) -> &'static str {
    let an = ["MBR", "XFS", "LVM", "md ", "ext", "NTFS", "exFAT", "ISO"];
    if an.iter().any(|p| what.starts_with(p)) {
        "an"
    } else {
        "a"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_is_blank_and_magics_are_found() {
        let mut img = vec![0u8; 1 << 20];
        assert!(scan_signatures(&img[..]).is_empty());
        img[1024 + 0x38..1024 + 0x3a].copy_from_slice(&[0x53, 0xef]);
        img[512..520].copy_from_slice(b"LABELONE");
        img[536..544].copy_from_slice(b"LVM2 001");
        let n = img.len();
        img[n - 8192..n - 8188].copy_from_slice(&MD_MAGIC);
        img[n - 65536..n - 65532].copy_from_slice(&MD_MAGIC);
        let got: Vec<_> = scan_signatures(&img[..])
            .into_iter()
            .map(|s| s.what)
            .collect();
        assert!(got.contains(&"ext2/3/4 filesystem"), "{got:?}");
        assert!(got.contains(&"LVM2 physical volume"), "{got:?}");
        assert!(got.contains(&"md RAID superblock 1.0"), "{got:?}");
        assert!(got.contains(&"md RAID superblock 0.90"), "{got:?}");
    }

    #[test]
    fn a_protective_mbr_is_part_of_its_gpt() {
        let mut img = vec![0u8; 1 << 20];
        img[0x1be + 4] = 0xee;
        img[510..512].copy_from_slice(&[0x55, 0xaa]);
        let what = |img: &[u8]| {
            scan_signatures(img)
                .into_iter()
                .map(|s| s.what)
                .collect::<Vec<_>>()
        };
        assert_eq!(what(&img), ["protective MBR whose GPT was not found"]);
        img[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(what(&img), ["GPT partition table"]);
        img[0x1be + 4] = 0x83;
        assert_eq!(what(&img), ["GPT partition table", "MBR partition table"]);
        assert_eq!(article("MBR partition table"), "an");
        assert_eq!(article("ext2/3/4 filesystem"), "an");
        assert_eq!(article("LUKS encryption header"), "a");
        assert_eq!(article("GPT partition table"), "a");
    }

    #[test]
    fn what_no_layer_reads_is_named_but_never_an_mbr() {
        let mut img = vec![0u8; 1 << 20];
        assert_eq!(unread(&img[..]), None);
        // A boot sector: its 0x55AA and boot code look like an MBR.
        img[3..11].copy_from_slice(b"NTFS    ");
        img[0x1be + 4] = 0x83;
        img[510..512].copy_from_slice(&[0x55, 0xaa]);
        let u = unread(&img[..]).unwrap();
        assert_eq!(
            (u.what.as_str(), u.magic_offset_bytes),
            ("NTFS filesystem", 3)
        );
        assert_eq!(u.short(), "NTFS");
        img[3..11].fill(0);
        assert_eq!(unread(&img[..]), None, "an MBR alone is no layer");
        img[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(unread(&img[..]).unwrap().short(), "GPT partition table");
    }

    #[test]
    fn tiny_and_truncated_inputs_do_not_panic() {
        for n in [0usize, 1, 511, 512, 4095, 8191] {
            let img = vec![0xffu8; n];
            let _ = scan_signatures(&img[..]);
        }
    }
}
