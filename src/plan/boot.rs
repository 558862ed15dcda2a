//! What a move means for booting, by the partition's type: the notes the
//! plan adds under "by hand" when such a partition's start changes.
//!
//! - A BIOS boot partition holds GRUB's core image; the boot code in the
//!   MBR and the first sector of core.img address it by absolute sectors
//!   (grub-core/boot/i386/pc/boot.S `kernel_sector`, diskboot.S's
//!   blocklist, written by grub-install's grub-setup). After a move those
//!   point at the old place, so GRUB must be installed again.
//! - An EFI system partition is found by firmware through boot entries
//!   that name its partition GUID (PARTUUID) and number, which a move
//!   keeps (EDK II's `BmMatchPartitionDevicePathNode` matches on those);
//!   the entries also record the old start and size.
//! - A FAT or NTFS boot sector records its partition's start LBA as
//!   "hidden sectors" (BPB offset 0x1C, 4 bytes little-endian); the boot
//!   code inside it adds that number to find the volume. Linux ignores it,
//!   boot code does not, and nothing the script runs updates it.

use super::{Extent, Manual};
use crate::layout::Partition;
use crate::names::shell_word;

/// GRUB's BIOS boot partition (GPT type "21686148-...", "Hah!IdontNeedEFI").
const BIOS_BOOT: &str = "21686148-6449-6E6F-744E-656564454649";
/// The EFI system partition (GPT), and its DOS type.
const ESP: &str = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B";
const ESP_DOS: &str = "0xef";
/// GPT types that hold FAT or NTFS: Microsoft basic data, Windows
/// recovery.
const FAT_NTFS_GPT: [&str; 2] = [
    "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7",
    "DE94BBA4-06D1-4D40-A16A-BFD50179D6AC",
];
/// DOS types of FAT12/16/32 and NTFS (exFAT, HPFS share 0x07), and their
/// hidden variants (+0x10).
const FAT_NTFS_DOS: [u8; 7] = [0x01, 0x04, 0x06, 0x07, 0x0b, 0x0c, 0x0e];

fn is(q: &Partition, id: &str) -> bool {
    q.type_id.eq_ignore_ascii_case(id)
}

fn fat_or_ntfs(q: &Partition) -> bool {
    if FAT_NTFS_GPT.iter().any(|t| is(q, t)) {
        return true;
    }
    q.type_id
        .strip_prefix("0x")
        .and_then(|h| u8::from_str_radix(h, 16).ok())
        .is_some_and(|b| FAT_NTFS_DOS.contains(&b) || FAT_NTFS_DOS.contains(&(b ^ 0x10)))
}

/// The notes for partition `q` of `disk` moved from `before` to `after`.
pub fn notes(q: &Partition, before: &Extent, after: &Extent, disk: &str) -> Vec<Manual> {
    if before.start_sector == after.start_sector {
        return Vec::new();
    }
    let n = q.number;
    let note = |why: String, commands: Vec<String>| Manual {
        partition: Some(n),
        why,
        commands,
    };
    if is(q, BIOS_BOOT) {
        return vec![note(
            format!("partition {n} is a BIOS boot partition: GRUB's core image in it is addressed by absolute sector numbers (in the boot code of the MBR and in core.img's first sector), so after the move the disk boots only once GRUB is installed again"),
            vec![format!("grub-install {}  # after the script, from the system this disk boots", shell_word(disk))],
        )];
    }
    if is(q, ESP) || is(q, ESP_DOS) {
        return vec![note(
            format!("partition {n} is an EFI system partition: firmware boot entries name it by its partition GUID and number, which the move keeps, but they also record its old start and size; if the firmware does not boot it any more, make the entry again"),
            vec![
                "efibootmgr -v  # the entry's HD(...) shows the partition GUID, start and size".into(),
                format!("efibootmgr -c -d {} -p {n} -L LABEL -l '\\EFI\\...\\LOADER.efi'  # only if needed", shell_word(disk)),
            ],
        )];
    }
    if fat_or_ntfs(q) {
        return vec![hidden_sectors(n, after, disk)];
    }
    Vec::new()
}

/// The note and the command that write the new start into the boot
/// sector's hidden-sectors field.
fn hidden_sectors(n: u32, after: &Extent, disk: &str) -> Manual {
    let why = format!(
        "partition {n} is of a FAT or NTFS type: its boot sector records the partition's start as \"hidden sectors\" (BPB offset 0x1C), which boot code (Windows', for one) uses to find the volume; after the move it still holds the old start, the new one is {}. Linux does not read it; to boot from this partition, write the new start there (FAT32 and NTFS also keep a backup boot sector: FAT32 at the sector its BPB names at 0x32, usually 6; NTFS in the partition's last sector)",
        after.start_sector
    );
    // The field has 32 bits: a start beyond them cannot be written there.
    let commands = match u32::try_from(after.start_sector) {
        Ok(lba) => {
            let octal: String = lba
                .to_le_bytes()
                .iter()
                .map(|b| format!("\\{b:03o}"))
                .collect();
            let at = after.start_bytes.saturating_add(0x1c);
            vec![format!(
                "printf '{octal}' | dd of={} bs=1 seek={at} count=4 conv=notrunc  # hidden sectors = {lba}",
                shell_word(disk)
            )]
        }
        Err(_) => Vec::new(),
    };
    Manual {
        partition: Some(n),
        why,
        commands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::PartKind;

    fn part(type_id: &str) -> Partition {
        Partition {
            number: 1,
            kind: PartKind::Primary,
            first_lba: 63,
            last_lba: 1000,
            type_id: type_id.into(),
            name: None,
            uuid: None,
            ebr_lba: None,
        }
    }

    #[test]
    fn notes_by_type_only_when_the_start_moves() {
        let (b, a) = (Extent::new(63, 938, 512), Extent::new(2048, 938, 512));
        let bios = part("21686148-6449-6e6f-744e-656564454649");
        assert!(notes(&bios, &b, &a, "/dev/sdb")[0].commands[0].starts_with("grub-install"));
        assert!(notes(&bios, &b, &b, "/dev/sdb").is_empty());
        assert!(notes(&part("0x83"), &b, &a, "/dev/sdb").is_empty());
        for t in [
            "0x07",
            "0x0c",
            "0x1b",
            "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7",
        ] {
            let m = notes(&part(t), &b, &a, "d.img");
            // 2048 = 0x800: bytes 00 08 00 00.
            assert_eq!(
                m[0].commands[0],
                format!("printf '\\000\\010\\000\\000' | dd of=d.img bs=1 seek={} count=4 conv=notrunc  # hidden sectors = 2048", 2048 * 512 + 28),
                "{t}"
            );
        }
        assert!(notes(&part("0xef"), &b, &a, "/dev/sdb")[0]
            .why
            .contains("EFI system"));
    }
}
