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
//!   boot code does not. The script rewrites it in a volume the plan read
//!   (`hidden`); a partition whose type says FAT or NTFS but whose volume
//!   was not read gets the command for its main boot sector here.
//! - Windows keeps the drive letter of a volume on a DOS (MBR) disk in
//!   HKLM\SYSTEM\MountedDevices under the disk's signature and the
//!   partition's start in bytes (12 bytes: the 4-byte signature and the
//!   8-byte offset), and its boot configuration (BCD) names an MBR
//!   partition the same way; a GPT partition by its GUID, which a move
//!   keeps.
//!
//! Every command here writes only to the disk the plan was made for: a
//! live disk's node, a raw image's path, or for an image container the
//! raw copy its steps make (a write into the container file would land
//! in its clusters or metadata, not in the guest). grub-install and
//! efibootmgr act on the system they run in (its /boot, its firmware's
//! boot entries), so for an image they are described, not printed.

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

/// The disk the commands by hand are for, as the plan names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disk {
    /// A live disk: its node.
    Live(String),
    /// A raw image file: its path.
    Image(String),
    /// An image container, fixed through a raw copy of its guest disk:
    /// the container's path, its format, and the copy's path as the
    /// plan's steps for it make it.
    Container {
        path: String,
        format: String,
        raw: String,
    },
}

impl Disk {
    /// Where a note's command for the guest's bytes runs, when that is
    /// not the disk itself: the raw copy, between which steps.
    fn on_the_copy(&self, how: impl Fn(&str) -> String) -> String {
        match self {
            Disk::Container { path, format, raw } => format!(
                " {path} is a {format} image: {}; written into {path} itself, the bytes would land in the container's clusters, not in its guest disk",
                how(raw)
            ),
            _ => String::new(),
        }
    }
}

/// What the plan read in a partition and where: the kind of the FAT,
/// exFAT or NTFS volume found in it (None: not read), and whether its
/// table is a DOS one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Read {
    pub volume: Option<&'static str>,
    pub dos: bool,
}

/// The notes for partition `q` of `disk` moved from `before` to `after`.
pub fn notes(
    q: &Partition,
    before: &Extent,
    after: &Extent,
    disk: &Disk,
    read: Read,
) -> Vec<Manual> {
    if before.start_sector == after.start_sector {
        return Vec::new();
    }
    let n = q.number;
    let note = |why: String, commands: Vec<String>| Manual {
        partition: Some(n),
        why,
        commands,
        about: None,
        clears: false,
    };
    if is(q, BIOS_BOOT) {
        let why = format!("partition {n} is a BIOS boot partition: GRUB's core image in it is addressed by absolute sector numbers (in the boot code of the MBR and in core.img's first sector), so after the move the disk boots only once GRUB is installed again");
        return vec![match disk {
            Disk::Live(d) => note(why, vec![format!("grub-install {}  # after the script, from the system this disk boots", shell_word(d))]),
            Disk::Image(path) | Disk::Container { path, .. } => note(
                format!("{why}. {path} is an image: run grub-install in the system on it (booted in a VM, or chrooted into its root through a loop device), on that system's name for the disk; run here, grub-install would put this host's GRUB and its /boot/grub into the image's boot code, so no command is printed{}", disk.on_the_copy(|raw| format!("do it on the raw copy the steps under \"First:\" make, {raw}, after sh fix.sh and before the copy is converted back"))),
                Vec::new(),
            ),
        }];
    }
    if is(q, ESP) || is(q, ESP_DOS) {
        let why = format!("partition {n} is an EFI system partition: firmware boot entries name it by its partition GUID and number, which the move keeps, but they also record its old start and size; if the firmware does not boot it any more, make the entry again");
        return vec![match disk {
            Disk::Live(d) => note(why, vec![
                "efibootmgr -v  # the entry's HD(...) shows the partition GUID, start and size".into(),
                format!("efibootmgr -c -d {} -p {n} -L LABEL -l '\\EFI\\...\\LOADER.efi'  # only if needed", shell_word(d)),
            ]),
            Disk::Image(path) | Disk::Container { path, .. } => note(
                format!("{why}. {path} is an image: its boot entries are in the firmware of the machine that boots it (a VM's UEFI variables), not in this host's, so no efibootmgr command is printed: run efibootmgr -v there"),
                Vec::new(),
            ),
        }];
    }
    let mut out: Vec<Manual> = windows(n, q, before, after, read)
        .into_iter()
        .map(|why| note(why, Vec::new()))
        .collect();
    if !fat_or_ntfs(q) || read.volume.is_some() {
        return out;
    }
    let why = hidden_sectors_why(n, after);
    out.insert(0, match disk {
        Disk::Live(d) | Disk::Image(d) => {
            note(why, write_start(before, after, d).into_iter().collect())
        }
        Disk::Container { .. } => note(
            format!(
                "{why}.{}",
                disk.on_the_copy(|raw| format!("the command is among the steps under \"First:\", right after sh fix.sh, and writes on the raw copy they make, {raw}"))
            ),
            Vec::new(),
        ),
    });
    out
}

/// What a move means to Windows on a DOS disk, for a FAT, exFAT or NTFS
/// volume (read, or named by the partition's type).
fn windows(n: u32, q: &Partition, before: &Extent, after: &Extent, read: Read) -> Option<String> {
    if !read.dos || !(read.volume.is_some() || fat_or_ntfs(q)) {
        return None;
    }
    let what = read.volume.unwrap_or("FAT or NTFS");
    Some(format!(
        "partition {n} holds {} {what} volume on a DOS (MBR) disk: Windows keeps drive letters in HKLM\\SYSTEM\\MountedDevices by disk signature and partition start in bytes ({} now, {} after the move), so once moved the volume has no letter until Windows assigns one again; the boot configuration (BCD) of a Windows installed on this disk names partitions the same way, so booted from this one it may not start until that is made again (bcdboot, from the Windows recovery environment)",
        crate::stack::article(what),
        before.start_bytes,
        after.start_bytes
    ))
}

/// The commands the raw copy of an image container gets right after its
/// script (`sh fix.sh`) for partition `q` moved from `before` to `after`:
/// what `notes` names for a raw disk, on the copy at `raw`.
pub fn after_script(
    q: &Partition,
    before: &Extent,
    after: &Extent,
    raw: &str,
    read: Read,
) -> Vec<String> {
    if before.start_sector == after.start_sector || !fat_or_ntfs(q) || read.volume.is_some() {
        return Vec::new();
    }
    write_start(before, after, raw).into_iter().collect()
}

/// Why a FAT or NTFS partition's boot sector needs its new start.
fn hidden_sectors_why(n: u32, after: &Extent) -> String {
    format!(
        "partition {n} is of a FAT or NTFS type, but the plan could not read a volume in it: a FAT or NTFS boot sector records the partition's start as \"hidden sectors\" (BPB offset 0x1C), which boot code (Windows', for one) uses to find the volume; after the move it still holds the old start, the new one is {}. Linux does not read it; to boot from this partition, write the new start there (FAT32 and NTFS also keep a backup boot sector: FAT32 at the sector its BPB names at 0x32, usually 6; NTFS in the sector after the volume's last, which mkntfs makes the partition's last; boot code reads the primary, which the command writes; unread, the BPB that places the backup is not known)",
        after.start_sector
    )
}

/// The command that writes the new start into the hidden-sectors field
/// of the boot sector at `after` on `disk`, only while that field still
/// holds the old start: run before the data has moved, on a volume that
/// keeps no such field there (exFAT's bytes 0x0B-0x3F must be zero), or
/// a second time, it writes nothing. None when a start does not fit the
/// field's 32 bits.
fn write_start(before: &Extent, after: &Extent, disk: &str) -> Option<String> {
    let old = u32::try_from(before.start_sector).ok()?;
    let new = u32::try_from(after.start_sector).ok()?;
    let at = after.start_bytes.saturating_add(0x1c);
    let octal: String = new
        .to_le_bytes()
        .iter()
        .map(|b| format!("\\{b:03o}"))
        .collect();
    // od -tx1 prints bytes in file order whatever the host's byte order.
    let hex = |v: u32| -> String { v.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect() };
    let f = shell_word(disk);
    Some(format!(
        "h=$(od -An -tx1 -j {at} -N 4 {f} | tr -d ' \\n'); if [ \"$h\" = {was} ]; then printf '{octal}' | dd of={f} bs=1 seek={at} count=4 conv=notrunc status=none; elif [ \"$h\" = {now} ]; then echo 'hidden sectors already read {new}'; else echo 'the 4 bytes at byte {at} do not read {old}, the old start: nothing written' >&2; false; fi  # hidden sectors {old} -> {new}",
        was = hex(old),
        now = hex(new),
    ))
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

    fn live() -> Disk {
        Disk::Live("/dev/sdb".into())
    }

    fn qcow2() -> Disk {
        Disk::Container {
            path: "xp.qcow2".into(),
            format: "qcow2".into(),
            raw: "xp.qcow2.raw".into(),
        }
    }

    /// 63 -> 2048: the old start reads 3f 00 00 00, the new 00 08 00 00.
    fn write_2048(f: &str) -> String {
        format!("h=$(od -An -tx1 -j 1048604 -N 4 {f} | tr -d ' \\n'); if [ \"$h\" = 3f000000 ]; then printf '\\000\\010\\000\\000' | dd of={f} bs=1 seek=1048604 count=4 conv=notrunc status=none; elif [ \"$h\" = 00080000 ]; then echo 'hidden sectors already read 2048'; else echo 'the 4 bytes at byte 1048604 do not read 63, the old start: nothing written' >&2; false; fi  # hidden sectors 63 -> 2048")
    }

    #[test]
    fn notes_by_type_only_when_the_start_moves() {
        let (b, a) = (Extent::new(63, 938, 512), Extent::new(2048, 938, 512));
        let bios = part("21686148-6449-6e6f-744e-656564454649");
        assert_eq!(
            notes(&bios, &b, &a, &live(), Read::default())[0].commands,
            ["grub-install /dev/sdb  # after the script, from the system this disk boots"]
        );
        assert!(notes(&bios, &b, &b, &live(), Read::default()).is_empty());
        assert!(notes(&part("0x83"), &b, &a, &live(), Read::default()).is_empty());
        for t in [
            "0x07",
            "0x0c",
            "0x1b",
            "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7",
        ] {
            let m = notes(
                &part(t),
                &b,
                &a,
                &Disk::Image("d.img".into()),
                Read::default(),
            );
            assert_eq!(m[0].commands, [write_2048("d.img")], "{t}");
        }
        let esp = notes(&part("0xef"), &b, &a, &live(), Read::default());
        assert!(esp[0].why.contains("EFI system"));
        assert!(esp[0].commands[1].starts_with("efibootmgr -c -d /dev/sdb -p 1 "));
    }

    /// grub-install and efibootmgr act on the host they run on: for an
    /// image they are said, not printed.
    #[test]
    fn an_image_gets_no_grub_install_nor_efibootmgr() {
        let (b, a) = (Extent::new(63, 938, 512), Extent::new(2048, 938, 512));
        for d in [Disk::Image("/i/d.img".into()), qcow2()] {
            let bios = &notes(
                &part("21686148-6449-6E6F-744E-656564454649"),
                &b,
                &a,
                &d,
                Read::default(),
            )[0];
            assert!(bios.commands.is_empty(), "{d:?}");
            assert!(bios.why.contains("run grub-install in the system on it"));
            let esp = &notes(&part("0xef"), &b, &a, &d, Read::default())[0];
            assert!(esp.commands.is_empty(), "{d:?}");
            assert!(esp.why.contains("a VM's UEFI variables"));
        }
    }

    /// A container's note names no command: the hidden-sectors command
    /// names the raw copy, and runs in the steps on it, after the script.
    #[test]
    fn a_container_writes_its_start_on_the_raw_copy() {
        let (b, a) = (Extent::new(63, 938, 512), Extent::new(2048, 938, 512));
        let ntfs = part("0x07");
        let m = &notes(&ntfs, &b, &a, &qcow2(), Read::default())[0];
        assert!(m.commands.is_empty());
        assert!(
            m.why.contains("the raw copy they make, xp.qcow2.raw;"),
            "{}",
            m.why
        );
        assert!(m.why.contains("right after sh fix.sh"), "{}", m.why);
        assert_eq!(
            after_script(&ntfs, &b, &a, "xp.qcow2.raw", Read::default()),
            [write_2048("xp.qcow2.raw")]
        );
        assert!(after_script(&ntfs, &b, &b, "xp.qcow2.raw", Read::default()).is_empty());
        assert!(after_script(&part("0x83"), &b, &a, "xp.qcow2.raw", Read::default()).is_empty());
    }

    /// A start beyond 32 bits cannot be written there; a name with
    /// blanks stays one word.
    #[test]
    fn the_field_holds_32_bits_and_a_name_stays_a_word() {
        let b = Extent::new(63, 938, 512);
        let far = Extent::new(1 << 32, 938, 512);
        assert!(notes(&part("0x07"), &b, &far, &live(), Read::default())[0]
            .commands
            .is_empty());
        let a = Extent::new(2048, 938, 512);
        let c = &notes(
            &part("0x07"),
            &b,
            &a,
            &Disk::Image("/a b/$x.img".into()),
            Read::default(),
        )[0]
        .commands[0];
        assert!(
            c.contains("-N 4 '/a b/$x.img' |") && c.contains("dd of='/a b/$x.img' "),
            "{c}"
        );
    }

    /// A volume the plan read gets its start from the script: no note
    /// with a command; on a DOS disk, the Windows note says what the move
    /// means for its drive letter and boot configuration; a GPT none.
    #[test]
    fn a_read_volume_gets_no_command_and_on_dos_the_windows_note() {
        let (b, a) = (Extent::new(63, 938, 512), Extent::new(2048, 938, 512));
        let read = Read {
            volume: Some("NTFS"),
            dos: true,
        };
        let m = notes(&part("0x07"), &b, &a, &live(), read);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].commands.is_empty());
        assert!(m[0]
            .why
            .contains("holds an NTFS volume on a DOS (MBR) disk"));
        assert!(
            m[0].why.contains("HKLM\\SYSTEM\\MountedDevices"),
            "{}",
            m[0].why
        );
        assert!(m[0].why.contains("(32256 now, 1048576 after the move)"));
        assert!(after_script(&part("0x07"), &b, &a, "x.raw", read).is_empty());
        // Not read, on DOS: the command for the main boot sector, then
        // the Windows note; a read volume of a Linux type gets it too.
        let unread = notes(
            &part("0x0c"),
            &b,
            &a,
            &live(),
            Read {
                volume: None,
                dos: true,
            },
        );
        assert_eq!(unread.len(), 2);
        assert_eq!(unread[0].commands, [write_2048("/dev/sdb")]);
        assert!(unread[1].why.contains("holds a FAT or NTFS volume"));
        let linux = notes(
            &part("0x83"),
            &b,
            &a,
            &live(),
            Read {
                volume: Some("FAT32"),
                dos: true,
            },
        );
        assert_eq!(linux.len(), 1);
        let gpt = Read {
            volume: Some("NTFS"),
            dos: false,
        };
        assert!(notes(
            &part("EBD0A0A2-B9E5-4433-87C0-68B6B72699C7"),
            &b,
            &a,
            &live(),
            gpt
        )
        .is_empty());
    }
}
