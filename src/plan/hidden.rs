//! Where a FAT, exFAT or NTFS boot sector records its volume's start on
//! the disk, and the commands that rewrite it: "hidden sectors" at BPB
//! offset 0x1C (4 bytes, little-endian) of a FAT or NTFS boot sector,
//! exFAT's PartitionOffset at byte 64 (8 bytes, inside the boot region
//! that its checksum sector, the 12th, covers: exFAT specification
//! sections 3.1.5 and 3.4). Boot code adds it to find the volume (Linux
//! does not read it), so when the plan moves the volume's partition the
//! script writes the new start there, in the boot sector and its backup
//! (FAT32: the sector its BPB names, usually 6; exFAT: the backup boot
//! region, sectors 12 to 23; NTFS: the sector after the volume), as
//! `stack::volume` places them.
//!
//! Every command is one POSIX sh line in a subshell, so it can be run as
//! printed and in the script alike. It reads the bytes with `dd` and
//! `od -tx1` (file order on any host) and first checks every copy: the
//! boot sector's signature, bytes per sector and serial as read, and the
//! field reading the old start (or, once written, the new); an exFAT
//! region's checksum must match while the field reads the old start.
//! Only then it writes, each copy only while its field still reads the
//! old start, and recomputes an exFAT region's checksum sector where it
//! no longer matches. Run twice, it writes nothing the second time; run
//! on anything else, nothing at all.

use crate::stack::{BackupState, FsKind, Layer, Volume};
use serde::Serialize;

/// A volume the plan read, where it lies in its partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootVolume {
    pub kind: FsKind,
    pub volume: Volume,
    /// Its bytes per sector.
    pub sector: u64,
    /// Bytes from the partition's (or device's) start to the volume's.
    pub into: u64,
    /// The logical block of the device below.
    pub lbs: u64,
}

impl BootVolume {
    /// The FAT, exFAT or NTFS volume of layer `l`, `into` bytes from the
    /// start of what holds it.
    pub fn of(l: &Layer, into: u64) -> Option<BootVolume> {
        let fs = l.filesystem()?;
        let volume = fs.volume.as_deref()?.clone();
        Some(BootVolume {
            kind: fs.kind,
            volume,
            sector: u64::from(fs.sector_size).max(1),
            into,
            lbs: u64::from(l.below.logical_block_size).max(1),
        })
    }

    fn exfat(&self) -> bool {
        self.kind == FsKind::Exfat
    }
}

/// The start a volume's boot sectors record, rewritten (`hidden_sectors`
/// of a `move` step in the JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HiddenSectors {
    /// FAT12, FAT16, FAT32, exFAT or NTFS.
    pub volume: String,
    /// The start it records now and the one written, in the sectors it
    /// counts in.
    pub from: u64,
    pub to: u64,
    /// Each boot sector that records it (exFAT: each boot region), in
    /// bytes from the volume's start: the main one, and the backup when
    /// it says what the main one says.
    pub at_bytes: Vec<u64>,
    /// Bytes from the partition's start to the volume's.
    #[serde(skip)]
    into: u64,
    #[serde(skip)]
    form: Form,
}

/// What the commands read and write.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Form {
    exfat: bool,
    sector: u64,
    /// Bytes that say it is this volume's boot sector, by offset in it.
    marks: Vec<(u64, Vec<u8>)>,
}

impl Form {
    /// The field's offset in the boot sector and its width.
    fn field(&self) -> (u64, usize) {
        if self.exfat {
            (64, 8)
        } else {
            (0x1c, 4)
        }
    }
}

/// The rewrite a move of the volume's partition from `old` to `new`
/// (bytes on the disk) needs: None when its boot sector records no start
/// (0: exFAT's "ignore", or a volume made on an image), records one the
/// plan cannot tell is the old start, or the new one does not fit.
/// `copied`: the bytes of the partition the move copies.
pub fn planned(b: &BootVolume, old: u64, new: u64, copied: u64) -> Option<HiddenSectors> {
    let recorded = b.volume.hidden_sectors;
    let (old, new) = (old.checked_add(b.into)?, new.checked_add(b.into)?);
    if recorded == 0 || old == new {
        return None;
    }
    // mkfs.fat -S counts it in the device's sectors, not the volume's.
    let unit = [b.sector, b.lbs]
        .into_iter()
        .find(|&u| old % u == 0 && old / u == recorded)?;
    if new % unit != 0 {
        return None;
    }
    let mut h = fixing(b, recorded, new / unit)?;
    let within = |at: &u64| b.into + at + b.sector <= copied;
    h.at_bytes.retain(within);
    (h.at_bytes.first() == Some(&0)).then_some(h)
}

/// The rewrite from `from` to `to` of the volume's boot sectors (the main
/// one, and the backup when it is the same): None when `to` does not fit.
pub fn fixing(b: &BootVolume, from: u64, to: u64) -> Option<HiddenSectors> {
    let form = Form {
        exfat: b.exfat(),
        sector: b.sector,
        marks: marks(b),
    };
    let (_, width) = form.field();
    if width < 8 && (from | to) >> (8 * width) != 0 {
        return None;
    }
    let v = &b.volume;
    let mut at_bytes = vec![0];
    if v.backup.state == BackupState::Same {
        at_bytes.extend(v.backup.offset_bytes);
    }
    Some(HiddenSectors {
        volume: v.name().to_string(),
        from,
        to,
        at_bytes,
        into: b.into,
        form,
    })
}

/// The bytes that identify the volume's boot sectors: the name at byte 3
/// (exFAT, NTFS), the bytes per sector (FAT, NTFS), the serial as read
/// (a FAT's after its extended boot signature 0x29), 0x55AA at 510.
fn marks(b: &BootVolume) -> Vec<(u64, Vec<u8>)> {
    let v = &b.volume;
    let serial = v
        .serial
        .as_deref()
        .and_then(|s| u64::from_str_radix(&s.replace('-', ""), 16).ok());
    let bps = (b.sector as u16).to_le_bytes().to_vec();
    let mut m = Vec::new();
    match (b.kind, v.fat_type) {
        (FsKind::Exfat, _) => {
            m.push((3, b"EXFAT   ".to_vec()));
            m.extend(serial.map(|s| (100, (s as u32).to_le_bytes().to_vec())));
        }
        (FsKind::Ntfs, _) => {
            m.push((3, b"NTFS    ".to_vec()));
            m.push((11, bps));
            m.extend(serial.map(|s| (72, s.to_le_bytes().to_vec())));
        }
        (_, fat) => {
            m.push((11, bps));
            let at = if fat == Some(crate::stack::FatType::Fat32) {
                66
            } else {
                38
            };
            let sig = |s: u64| [&[0x29u8][..], &(s as u32).to_le_bytes()].concat();
            m.extend(serial.map(|s| (at, sig(s))));
        }
    }
    m.push((510, vec![0x55, 0xaa]));
    m
}

/// Where a command's messages go: the script's `say` and `die`, or, as
/// printed, echo (an error to stderr, the subshell left with 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Voice {
    Script,
    Printed,
}

impl Voice {
    fn ok(self, m: &str) -> String {
        match self {
            Voice::Script => format!("say \"{m}\""),
            Voice::Printed => format!("echo \"{m}\""),
        }
    }

    fn fail(self, m: &str) -> String {
        match self {
            Voice::Script => format!("die \"{m}\""),
            Voice::Printed => format!("{{ echo \"{m}\" >&2; exit 1; }}"),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn octal(b: &[u8]) -> String {
    b.iter().map(|x| format!("\\{x:03o}")).collect()
}

/// `x AT LEN`: the bytes of FILE as hex, in file order.
const READ: &str = "x() { dd if=@F iflag=skip_bytes,count_bytes skip=\"$1\" count=\"$2\" status=none | od -An -tx1 -v | tr -d ' \\n'; }; ";

/// `sum AT`: the checksum sector the exFAT boot region at AT should have
/// (the 11 sectors summed, VolumeFlags and PercentInUse left out, as
/// `stack::exfat::boot_checksum`), as hex.
const SUM: &str = "sum() { dd if=@F iflag=skip_bytes,count_bytes skip=\"$1\" count=@N status=none | od -An -tu1 -v | awk '{ for (i = 1; i <= NF; i++) { if (n != 106 && n != 107 && n != 112) c = ((c % 2) * 2147483648 + int(c / 2) + $i) % 4294967296; n++ } } END { for (k = 0; k < @R; k++) printf \"%02x%02x%02x%02x\", c % 256, int(c / 256) % 256, int(c / 65536) % 256, int(c / 16777216) }'; }; ";

/// `oct`: hex on stdin as printf's octal escapes.
const OCT: &str = "oct() { awk '{ for (i = 1; i < length($0); i += 2) printf \"\\\\%03o\", (index(\"0123456789abcdef\", substr($0, i, 1)) - 1) * 16 + index(\"0123456789abcdef\", substr($0, i + 1, 1)) - 1 }'; }; ";

impl HiddenSectors {
    /// The volume's byte on the disk, in a partition starting at byte
    /// `partition`.
    pub fn volume_at(&self, partition: u64) -> u64 {
        partition.saturating_add(self.into)
    }

    /// What the volume's format calls the field.
    pub fn field_name(&self) -> &'static str {
        if self.form.exfat {
            "PartitionOffset"
        } else {
            "hidden sectors"
        }
    }

    fn le(&self, v: u64) -> Vec<u8> {
        v.to_le_bytes()[..self.form.field().1].to_vec()
    }

    /// The functions the command defines, on `file` (a shell word).
    fn prelude(&self, file: &str, write: bool) -> String {
        let mut s = READ.replace("@F", file);
        if self.form.exfat {
            let n = self.form.sector;
            s.push_str(
                &SUM.replace("@F", file)
                    .replace("@N", &(11 * n).to_string())
                    .replace("@R", &(n / 4).to_string()),
            );
            if write {
                s.push_str(OCT);
            }
        }
        s
    }

    /// The copies at `base` (the volume's byte in the file), each `$b`.
    fn each(&self, base: u64) -> String {
        let bases: Vec<String> = self
            .at_bytes
            .iter()
            .map(|a| base.saturating_add(*a).to_string())
            .collect();
        format!("for b in {}; do ", bases.join(" "))
    }

    /// `[ ... ] && [ ... ]`: the copy at `$b` is this volume's.
    fn is_it(&self) -> String {
        self.form
            .marks
            .iter()
            .map(|(o, m)| format!("[ \"$(x $((b + {o})) {})\" = {} ]", m.len(), hex(m)))
            .collect::<Vec<_>>()
            .join(" && ")
    }

    /// The exFAT region at `$b` matches its checksum sector.
    fn summed(&self) -> String {
        let n = self.form.sector;
        format!("[ \"$(x $((b + {})) {n})\" = \"$(sum $b)\" ]", 11 * n)
    }

    /// Checks the boot sectors of the volume at byte `base` of `file`
    /// still record the old start, as read: before its partition's data
    /// moves. Writes nothing.
    pub fn check_command(&self, file: &str, base: u64, voice: Voice) -> String {
        let (at, width) = self.form.field();
        let name = &self.volume;
        let mut s = format!("( {}", self.prelude(file, false));
        s.push_str(&self.each(base));
        s.push_str(&format!(
            "{} || {}; ",
            self.is_it(),
            voice.fail(&format!("byte $b: not the {name} boot sector planned (its signature, bytes per sector or serial differ); nothing done: plan again"))
        ));
        s.push_str(&format!(
            "[ \"$(x $((b + {at})) {width})\" = {} ] || {}; ",
            hex(&self.le(self.from)),
            voice.fail(&format!(
                "the {name} boot sector at byte $b no longer records its start as {}; nothing done: plan again",
                self.from
            ))
        ));
        if self.form.exfat {
            s.push_str(&format!(
                "{} || {}; ",
                self.summed(),
                voice.fail(
                    "the exFAT boot region at byte $b does not match its checksum; nothing done"
                )
            ));
        }
        s.push_str("done )");
        s
    }

    /// Writes the new start into the boot sectors of the volume at byte
    /// `base` of `file` (where its partition's data now is), after the
    /// checks; the exFAT checksum sector after it.
    pub fn write_command(&self, file: &str, base: u64, voice: Voice) -> String {
        let (at, width) = self.form.field();
        let name = &self.volume;
        let (old, new) = (hex(&self.le(self.from)), hex(&self.le(self.to)));
        let mut s = format!("( {}", self.prelude(file, true));
        s.push_str(&self.each(base));
        s.push_str(&format!(
            "{} || {}; h=$(x $((b + {at})) {width}); ",
            self.is_it(),
            voice.fail(&format!(
                "byte $b: not the {name} boot sector planned (its signature, bytes per sector or serial differ); nothing written"
            ))
        ));
        let neither = voice.fail(&format!(
            "the {name} boot sector at byte $b records its start as neither {} nor {}; nothing written",
            self.from, self.to
        ));
        if self.form.exfat {
            let bad = voice.fail(
                "the exFAT boot region at byte $b does not match its checksum; nothing written",
            );
            s.push_str(&format!(
                "if [ \"$h\" = {old} ]; then {} || {bad}; elif [ \"$h\" != {new} ]; then {neither}; fi; ",
                self.summed()
            ));
        } else {
            s.push_str(&format!(
                "[ \"$h\" = {old} ] || [ \"$h\" = {new} ] || {neither}; "
            ));
        }
        s.push_str("done; w=0; ");
        s.push_str(&self.each(base));
        s.push_str(&format!(
            "if [ \"$(x $((b + {at})) {width})\" = {old} ]; then printf '{}' | dd of={file} bs=1 seek=$((b + {at})) count={width} conv=notrunc,fsync status=none; w=$((w + 1)); fi; ",
            octal(&self.le(self.to))
        ));
        if self.form.exfat {
            let n = self.form.sector;
            s.push_str(&format!(
                "{} || {{ printf \"$(sum $b | oct)\" | dd of={file} bs={n} seek=$((b + {})) oflag=seek_bytes conv=notrunc,fsync status=none; w=$((w + 1)); }}; ",
                self.summed(),
                11 * n
            ));
        }
        let copies = self.at_bytes.len();
        s.push_str(&format!(
            "done; if [ \"$w\" = 0 ]; then {}; else {}; fi )",
            voice.ok(&format!(
                "the {name} boot sectors already record its start as {}",
                self.to
            )),
            voice.ok(&format!(
                "wrote the {name}'s start, {} (was {}), into its boot sector{}",
                self.to,
                self.from,
                if copies > 1 { " and its backup" } else { "" }
            ))
        ));
        s
    }
}

/// The volume layer's rewrite once the plan has moved it `by` bytes:
/// its start in its own sectors, its data area's byte on the disk, and
/// the start its boot sectors record when the script writes it.
pub fn shifted(l: &mut Layer, by: i128, written: Option<&HiddenSectors>) {
    let offset = l.offset_bytes;
    let Some(crate::stack::Detail::Filesystem(fs)) = l.detail.as_mut() else {
        return;
    };
    let sector = u64::from(fs.sector_size).max(1);
    let Some(v) = fs.volume.as_deref_mut() else {
        return;
    };
    v.data_start_bytes = (v.data_start_bytes as i128 + by).max(0) as u64;
    v.start_sectors = (offset % sector == 0).then_some(offset / sector);
    if let Some(h) = written {
        v.hidden_sectors = h.to;
    }
}

#[cfg(test)]
pub(crate) mod tests;
