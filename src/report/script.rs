//! `plan --script FILE`: the plan as a POSIX sh script for the user to read
//! and run. Each step checks that it is on the disk the plan was made for
//! (its size, the table's PTUUID as `sfdisk --disk-id` prints it, and on a
//! live disk the serial and WWN in sysfs, read from the same attributes
//! as `topology::Disk`), that the disk is as planned (its table, as
//! `sfdisk --dump` lists it, matches) and that nothing on it is in use,
//! says what it does, and is skipped when it is already done, so the
//! script can be run again after an interruption.
//!
//! A primary GPT that is damaged while its backup is sound is rebuilt
//! first with `sgdisk -e` (see `plan::gpt_repairable`).
//!
//! Data moves do not use `sfdisk --move-data`: sfdisk writes the new table
//! first and then copies (write_changes() in disk-utils/sfdisk.c), its
//! typescript goes through a stdio buffer that is not flushed per step
//! (move_partition_data()), and a move by less than its 1 MiB step
//! overwrites the source of the step before. After a kill the typescript
//! can be dozens of steps behind the copy, and redoing those steps copies
//! data already overwritten. Instead each chunk is staged in a file and a
//! synced journal records it, before and after it is written to its place;
//! the table entry is rewritten (`sfdisk -N`) only when the copy is done.
//! An ext4 the plan shrinks is shrunk first (e2fsck -f, resize2fs -P to
//! confirm, resize2fs), while the table is still the original. A FAT,
//! exFAT or NTFS volume that moves has its boot sectors checked at the old
//! place before the copy and the new start written into them at the new
//! place after it, before the entry changes (`plan::HiddenSectors`).

use crate::layout::TableKind;
use crate::plan::{DiskPlan, Entry, Identity, Shrink, Step, Voice};

/// `plan --script FILE`: the script of the one disk planned (cli refuses
/// the file before the run for several targets, and leaves it out for a
/// refused plan or one with nothing to change, saying why).
pub struct Script;

impl super::Exporter for Script {
    fn plan(&self, p: super::Planned) -> Option<String> {
        Some(render_script(
            p.plan.targets.first()?,
            env!("CARGO_PKG_VERSION"),
        ))
    }

    fn new_disk(&self, d: &crate::plan::NewDisk) -> Option<String> {
        Some(render_new_disk_script(d, env!("CARGO_PKG_VERSION")))
    }
}

/// Quote for sh: every value the script holds is one quoted word.
fn q(s: &str) -> String {
    crate::names::shell_quote(s)
}

fn entries(t: &[Entry]) -> String {
    t.iter()
        .map(|e| format!("{} {} {}", e.number, e.start, e.size))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The script for one disk's plan (which must not be refused).
pub fn render_script(d: &DiskPlan, version: &str) -> String {
    let mut s = header(d, version);
    s.push_str(SAY);
    s.push_str(TABLE_FN);
    s.push_str(HELPERS);
    s.push_str(SAME_DISK);
    if d.table == TableKind::Gpt {
        s.push_str(GPT_TOOLS);
        s.push_str(SET_ENTRY_GPT);
    } else {
        s.push_str(SET_ENTRY_DOS);
    }
    // The table before any step (S0) and after each step (S1...): a step
    // is done when the table is in its own after state or a later one.
    let tables: Vec<(&u32, &crate::plan::Extent, &Vec<Entry>, &Vec<Entry>)> = d
        .steps
        .iter()
        .filter_map(|st| match st {
            Step::Table {
                partition,
                after,
                table_before,
                table_after,
                ..
            } => Some((partition, after, table_before, table_after)),
            _ => None,
        })
        .collect();
    let s0 = tables
        .first()
        .map_or_else(|| current(d), |first| first.2.clone());
    s.push_str(&format!("\nS0={}\n", q(&entries(&s0))));
    for (k, t) in tables.iter().enumerate() {
        s.push_str(&format!("S{}={}\n", k + 1, q(&entries(t.3))));
    }
    let mut calls = Vec::new();
    // `n` counts the table steps (their tables S1...), `k` every step, as
    // the plan numbers them for people (DiskPlan::script_steps).
    let mut n = 0;
    if d.steps.iter().any(|s| matches!(s, Step::Shrink(_))) {
        s.push_str(SHRINK_HELPERS);
    }
    for (i, group) in d.script_steps().into_iter().enumerate() {
        let k = i + 1;
        let (copy, step) = match group.as_slice() {
            [copy, step] => (Some(*copy), *step),
            [step] => (None, *step),
            _ => continue,
        };
        match step {
            Step::Backup {
                table,
                volume_groups,
            } => s.push_str(&backup(k, *table, volume_groups)),
            Step::RepairGpt {
                backup_lba,
                primary_bytes,
            } => s.push_str(&repair_gpt(k, *backup_lba, *primary_bytes)),
            Step::Shrink(x) => {
                let later: Vec<String> = (1..=tables.len()).map(|t| format!("\"$S{t}\"")).collect();
                s.push_str(&shrink_fn(k, x, &later.join(" ")));
            }
            Step::Table {
                partition,
                after,
                zero_tail,
                ..
            } => {
                n += 1;
                s.push_str(&table_fn(
                    k,
                    n,
                    tables.len(),
                    *partition,
                    after,
                    copy,
                    *zero_tail,
                ));
            }
            Step::Move { .. } => continue,
        }
        calls.push(format!("step_{k}"));
    }
    // Nothing is written, not even the backups, while the disk is in use
    // or when it is not the disk the plan was made for.
    s.push_str("\nsame_disk\nidle\nmkdir -p \"$STATE\"\n");
    for c in calls {
        s.push_str(&c);
        s.push('\n');
    }
    s.push_str("reread\nsay \"done: run diskalign check $DISK\"\n");
    s
}

/// `step_K`: partition `partition` to its new place, the `n`th of the
/// `of` table changes (its table is `$Sn`): checked, its data copied
/// when its start moves (`copy`), then its entry rewritten. Done when
/// the table is already in its state or a later one.
fn table_fn(
    k: usize,
    n: usize,
    of: usize,
    partition: u32,
    after: &crate::plan::Extent,
    copy: Option<&Step>,
    zero_tail: Option<crate::plan::Span>,
) -> String {
    // An empty partition's end comes down over bytes that were zero when
    // planned: still zero, or nothing is done. Once a copy has started
    // (its journal), they were checked.
    let zeros = zero_tail.map_or(String::new(), |z| format!(
        "    [ -f \"$STATE/move-{partition}\" ] || zeros {start} {bytes} || die \"step {k}: the last {bytes} bytes of partition {partition}, which its new end leaves out, are no longer zero; nothing done: plan again\"\n",
        start = z.start_bytes,
        bytes = z.bytes,
    ));
    // A volume's boot sectors record its start: checked at the old place
    // before any copy (once a copy has started, some of it may be
    // overwritten), the new start written at the new place after it.
    let (check, copy) = match copy {
        Some(Step::Move {
            from_bytes,
            to_bytes,
            copy_bytes,
            hidden_sectors,
            ..
        }) => {
            let (check, write) = hidden_sectors.as_ref().map_or_else(Default::default, |h| {
                let disk = "\"$DISK\"";
                let field = h.field_name();
                (
                    format!(
                        "    # Its {} boot sectors still record {field} {} (before the copy):\n    [ -f \"$STATE/move-{partition}\" ] || {}\n",
                        h.volume,
                        h.from,
                        h.check_command(disk, h.volume_at(*from_bytes), Voice::Script)
                    ),
                    format!(
                        "    # {field} {} into them where they still read {}:\n    {}\n",
                        h.to,
                        h.from,
                        h.write_command(disk, h.volume_at(*to_bytes), Voice::Script)
                    ),
                )
            });
            (
                check,
                format!("    copy {partition} {from_bytes} {to_bytes} {copy_bytes}\n{write}"),
            )
        }
        _ => Default::default(),
    };
    let later: Vec<String> = (n..=of).map(|t| format!("\"$S{t}\"")).collect();
    format!(
        "\nstep_{k}() {{\n    same_disk\n    now=$(table)\n    if one_of \"$now\" {later}; then\n        say \"step {k}: partition {partition} is already in its new place\"\n        return 0\n    fi\n    [ \"$now\" = \"$S{prev}\" ] || die \"step {k}: the table of $DISK is not as planned; nothing done (compare sfdisk --dump $DISK with this script)\"\n    idle\n{zeros}{check}    set_entry {partition} {start} {size} --no-act || die \"step {k}: sfdisk would not take partition {partition} at start={start}, size={size}; nothing done\"\n    say \"step {k}: partition {partition} to start={start}, size={size}\"\n{copy}    set_entry {partition} {start} {size} || die \"step {k}: sfdisk did not write partition {partition}; run this script again\"\n    [ \"$(table)\" = \"$S{n}\" ] || die \"step {k}: sfdisk did not write the planned entry\"\n    rm -f \"$STATE/move-{partition}\" \"$STATE/chunk-{partition}\"\n}}\n",
        later = later.join(" "),
        prev = n - 1,
        start = after.start_sector,
        size = after.sectors,
    )
}

/// The table as the plan found it, when no step rewrites an entry.
fn current(d: &DiskPlan) -> Vec<Entry> {
    let mut t: Vec<Entry> = d
        .partitions
        .iter()
        .map(|p| Entry {
            number: p.number,
            start: p.before.start_sector,
            size: p.before.sectors,
        })
        .collect();
    t.sort_by_key(|e| e.number);
    t
}

/// The identity the plan saw, which `same_disk` compares with the disk.
fn planned(id: &Identity) -> String {
    let opt = |v: &Option<String>| q(v.as_deref().unwrap_or_default());
    format!(
        "PLANNED_SIZE={}\nPLANNED_PTUUID={}\nPLANNED_SERIAL={}\nPLANNED_WWN={}\n",
        id.size_bytes,
        q(&id
            .ptuuid
            .as_deref()
            .unwrap_or_default()
            .to_ascii_lowercase()),
        opt(&id.serial),
        opt(&id.wwn),
    )
}

fn header(d: &DiskPlan, version: &str) -> String {
    let chunk = d
        .steps
        .iter()
        .find_map(|s| match s {
            Step::Move { chunk_bytes, .. } => Some(*chunk_bytes),
            _ => None,
        })
        .unwrap_or(4 << 20);
    format!(
        "#!/bin/sh\n\
# diskalign {version}: the plan for the disk named in DISK below. Read it before you run it.\n\
# Run it as root with nothing on the disk mounted or in use: sh THIS_FILE\n\
# It stops at the first step that does not find the disk as planned, and\n\
# run again after an interruption (even a kill during a copy) it skips\n\
# what is done and finishes the rest. The original table and the copy\n\
# journal are kept in $STATE (default: this file's name + .state).\n\
set -eu\n\
DISK={disk}\n\
IMAGE={image}\n\
CHUNK={chunk}\n\
STATE=${{DISKALIGN_STATE:-$0.state}}\n\
# The disk this plan is for: every step first checks that $DISK still is.\n\
{planned}",
        disk = q(&d.identity.script_path),
        image = u8::from(d.image),
        planned = planned(&d.identity),
    )
}

/// `step_K`: the backups, once (a run after an interruption keeps the
/// original ones).
fn backup(k: usize, table: TableKind, vgs: &[String]) -> String {
    let mut s = format!(
        "\nstep_{k}() {{\n    same_disk\n    if [ ! -f \"$STATE/table.sfdisk\" ]; then\n        sfdisk --dump \"$DISK\" > \"$STATE/table.sfdisk.new\"\n        mv \"$STATE/table.sfdisk.new\" \"$STATE/table.sfdisk\"\n        say \"step {k}: saved the table: restore it with sfdisk $DISK < $STATE/table.sfdisk\"\n    fi\n",
    );
    if table == TableKind::Gpt {
        s.push_str(&format!("    if [ ! -f \"$STATE/table.gpt\" ]; then\n        sgdisk --backup=\"$STATE/table.gpt\" \"$DISK\" >/dev/null\n        say \"step {k}: saved the GPT: sgdisk --load-backup=$STATE/table.gpt $DISK restores it\"\n    fi\n"));
    }
    // A name read from the disk goes into the script only when LVM itself
    // would take it (lib/misc/lvm-string.c `_validate_name`: letters,
    // digits and "+_.-"), so metadata cannot smuggle shell text in.
    let lvm_name = |vg: &&String| {
        !vg.is_empty()
            && vg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+_.-".contains(c))
    };
    for vg in vgs.iter().filter(lvm_name) {
        s.push_str(&format!(
            "    if [ \"$IMAGE\" = 0 ] && [ ! -f \"$STATE/vg-{vg}.vg\" ]; then\n        vgcfgbackup -q -f \"$STATE/vg-{vg}.vg\" {} >/dev/null\n        say \"step {k}: saved the metadata of volume group {vg}\"\n    fi\n",
            q(vg)
        ));
    }
    s.push_str("}\n");
    s
}

/// `step_K`: resize2fs one ext4 down before any table change. Done when
/// the filesystem already has the planned block count.
fn shrink_fn(k: usize, x: &Shrink, later: &str) -> String {
    let Shrink {
        partition,
        partition_start_bytes,
        partition_size_bytes,
        block_size,
        from_bytes,
        to_bytes,
        ..
    } = x;
    let bs = (*block_size).max(1);
    let (from, to) = (from_bytes / bs, to_bytes / bs);
    format!(
        r#"
step_{k}() {{
    same_disk
    now=$(table)
    if one_of "$now" {later}; then
        say "step {k}: partition {partition}: its ext4 filesystem was shrunk before the table changed"
        return 0
    fi
    [ "$now" = "$S0" ] || die "step {k}: partition {partition}: the table of $DISK is not as planned; nothing done"
    part_node {partition_start_bytes} {partition_size_bytes}
    blocks=$(fs_blocks "$NODE")
    if [ "$blocks" = {to} ]; then
        release
        say "step {k}: partition {partition}: its ext4 filesystem is already {to} blocks"
        return 0
    fi
    [ "$blocks" = {from} ] || die "partition {partition}: the ext4 filesystem on $NODE has $blocks blocks, not {from} as planned; nothing done"
    say "step {k}: partition {partition}: checking its ext4 filesystem (e2fsck -f -p $NODE)"
    e2fsck -f -p "$NODE" >&2 || [ $? -le 1 ] || die "e2fsck found errors it could not fix on $NODE: repair it (e2fsck -f $NODE), then plan again"
    min=$(resize2fs -P "$NODE" 2>/dev/null | awk -F: '/minimum size/ {{ gsub(/[ \t]/, "", $2); print $2 }}')
    [ -n "$min" ] && [ "$min" -le {to} ] || die "partition {partition}: resize2fs -P says the filesystem needs ${{min:-?}} blocks, more than the {to} planned: free space in it, then plan again"
    say "step {k}: partition {partition}: shrinking its ext4 filesystem from {from} to {to} blocks of {bs} bytes (resize2fs)"
    resize2fs "$NODE" {to} >&2 || die "resize2fs $NODE {to} failed"
    [ "$(fs_blocks "$NODE")" = {to} ] || die "partition {partition}: resize2fs did not leave {to} blocks"
    release
}}
"#
    )
}

/// `step_K`: the primary GPT rebuilt from the backup at `backup_lba`
/// by `sgdisk -e`, after the damaged first `primary_bytes` are saved. Done
/// when `sgdisk -v` finds the primary sound.
fn repair_gpt(k: usize, backup_lba: u64, primary_bytes: u64) -> String {
    format!(
        r#"
step_{k}() {{
    same_disk
    if ! gpt_primary_damaged; then
        say "step {k}: the primary GPT of $DISK is sound: nothing to repair"
        return 0
    fi
    [ "$(table)" = "$S0" ] || die "the table of $DISK is not as planned; nothing done (compare sfdisk --dump $DISK with this script)"
    idle
    if [ ! -f "$STATE/gpt-primary.damaged" ]; then
        dd if="$DISK" of="$STATE/gpt-primary.damaged.new" bs={primary_bytes} count=1 status=none
        mv "$STATE/gpt-primary.damaged.new" "$STATE/gpt-primary.damaged"
    fi
    say "step {k}: rebuilding the primary GPT from its backup at LBA {backup_lba} (sgdisk -e); the damaged bytes are kept in $STATE/gpt-primary.damaged"
    sgdisk -e "$DISK" >/dev/null 2>&1 || die "sgdisk -e $DISK failed; nothing else done"
    ! gpt_primary_damaged || die "sgdisk -e did not repair the primary GPT of $DISK (sgdisk -v $DISK says why)"
    [ "$(table)" = "$S0" ] || die "the repaired table of $DISK is not the planned one"
}}
"#
    )
}

/// Helpers of the shrink steps: the partition's node (the kernel's on a
/// disk, a loop device over its bytes on an image) and the block count.
const SHRINK_HELPERS: &str = r#"
for tool in e2fsck resize2fs dumpe2fs; do
    command -v "$tool" >/dev/null 2>&1 || die "this script needs $tool (e2fsprogs)"
done
LOOP=
release() { if [ -n "$LOOP" ]; then losetup -d "$LOOP"; LOOP=; fi; }
trap release EXIT
# part_node START SIZE: NODE becomes the partition at byte START of SIZE bytes.
part_node() {
    NODE=
    if [ "$IMAGE" = 1 ]; then
        LOOP=$(losetup -f --show -o "$1" --sizelimit "$2" "$DISK")
        NODE=$LOOP
        return 0
    fi
    name=$(basename "$(readlink -f "$DISK")")
    for d in "/sys/class/block/$name/$name"*; do
        [ -f "$d/start" ] || continue
        if [ $(($(cat "$d/start") * 512)) = "$1" ] && [ $(($(cat "$d/size") * 512)) = "$2" ]; then
            NODE=/dev/$(basename "$d")
        fi
    done
    [ -n "$NODE" ] || die "the kernel has no partition of $DISK at byte $1: run partprobe $DISK"
}
fs_blocks() {
    dumpe2fs -h "$1" 2>/dev/null | awk -F: '/^Block count:/ { gsub(/[ 	]/, "", $2); print $2 }'
}
"#;

const SAY: &str = r#"
say() { printf 'diskalign: %s\n' "$*"; }
die() { printf 'diskalign: stopped: %s\n' "$*" >&2; exit 1; }
"#;

/// `same_disk`: stop unless the disk is the one the plan was made for.
/// Serial and WWN are read as `topology::Disk` reads them (the device's
/// `serial`, the disk's `serial`, SCSI VPD page 0x80, `wwid`), and
/// compared only when the plan saw them.
const SAME_DISK: &str = r#"
# sysattr FILE: a sysfs attribute without the blanks around it.
sysattr() {
    [ -r "$1" ] || return 1
    v=$(sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$1" 2>/dev/null) || return 1
    [ -n "$v" ] && printf '%s' "$v"
}
# vpd_serial FILE: the unit serial number of a raw SCSI VPD page 0x80
# (its length in bytes 2-3, the text from byte 4).
vpd_serial() {
    [ -r "$1" ] || return 1
    len=$(od -An -tu1 -j2 -N2 "$1" 2>/dev/null | awk 'NF == 2 { print $1 * 256 + $2 }')
    [ -n "$len" ] || return 1
    v=$(dd if="$1" bs=1 skip=4 count="$len" status=none 2>/dev/null | tr -d '\000' |
        sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
    [ -n "$v" ] && printf '%s' "$v"
}
# The disk's size, the table's PTUUID (spelled as blkid does: lower case,
# no 0x), and on a live disk its serial and WWN, against the plan's.
same_disk() {
    diff=
    if [ "$IMAGE" = 1 ]; then
        size=$(wc -c < "$DISK" | tr -d ' ')
    else
        size=$(blockdev --getsize64 "$DISK")
    fi
    [ "$size" = "$PLANNED_SIZE" ] || diff="size $size bytes, planned $PLANNED_SIZE"
    # Every value is compared, an empty one too: a disk that has gained
    # an identity the plan did not see is another disk as well. A DOS
    # signature of zero is no PTUUID, as for blkid.
    id=$(sfdisk --disk-id "$DISK" 2>/dev/null | tr 'A-F' 'a-f') || id=
    id=${id#0x}
    [ "$id" != 00000000 ] || id=
    [ "$id" = "$PLANNED_PTUUID" ] || diff="${diff:+$diff, }PTUUID ${id:-none}, planned ${PLANNED_PTUUID:-none}"
    if [ "$IMAGE" = 0 ]; then
        b=/sys/class/block/$(basename "$(readlink -f "$DISK")")
        serial=$(sysattr "$b/device/serial" || sysattr "$b/serial" ||
            vpd_serial "$b/device/vpd_pg80" || sysattr "$b/device/wwid") || serial=
        [ "$serial" = "$PLANNED_SERIAL" ] || diff="${diff:+$diff, }serial ${serial:-none}, planned ${PLANNED_SERIAL:-none}"
        wwn=$(sysattr "$b/wwid" || sysattr "$b/device/wwid") || wwn=
        [ "$wwn" = "$PLANNED_WWN" ] || diff="${diff:+$diff, }WWN ${wwn:-none}, planned ${PLANNED_WWN:-none}"
    fi
    [ -z "$diff" ] || die "$DISK is not the disk this plan was made for: $diff"
}
"#;

/// The GPT tools: `sgdisk` backs the table up (and repairs a damaged
/// primary).
const GPT_TOOLS: &str = r#"
command -v sgdisk >/dev/null 2>&1 || die "this script needs sgdisk (gdisk)"
gpt_primary_damaged() {
    sgdisk -v "$DISK" 2>&1 | grep -q -e 'Main header: ERROR' -e 'Main partition table: ERROR'
}
"#;

/// `set_entry N START SIZE [--no-act]`: partition N's new place. A GPT is
/// written whole from its dump with the one entry changed: libfdisk's
/// `-N` resize refuses a moved partition whose new end reaches into a
/// small gap (util-linux 2.38.1: "Failed to resize partition"), and the
/// dump keeps every GUID, name and attribute. A DOS table keeps `-N`, so
/// the EBRs of logical partitions stay where they are. Each step runs it
/// with `--no-act` before it copies anything, so a refusal comes while
/// the data is still where the table says.
const SET_ENTRY_GPT: &str = r#"
set_entry() {
    sfdisk --dump "$DISK" | awk -v n="$1" -v s="$2" -v z="$3" '/start=/ {
        k = $1; sub(/.*[^0-9]/, "", k)
        if (k == n) { sub(/start= *[0-9]+/, "start=" s); sub(/size= *[0-9]+/, "size=" z) }
    } { print }' > "$STATE/table.next" &&
        sfdisk -q ${4:-} --no-reread --no-tell-kernel --wipe never --wipe-partitions never \
            "$DISK" < "$STATE/table.next" >/dev/null
}
"#;

const SET_ENTRY_DOS: &str = r#"
set_entry() {
    printf 'start=%s, size=%s
' "$2" "$3" | sfdisk -q ${4:-} --no-reread --no-tell-kernel \
        --wipe never --wipe-partitions never -N "$1" "$DISK" >/dev/null
}
"#;

/// `table`: the table as "number start size" lines, from sfdisk --dump.
const TABLE_FN: &str = r#"
table() {
    sfdisk --dump "$DISK" | awk '/start=/ {
        n = $1; sub(/.*[^0-9]/, "", n)
        s = $0; sub(/.*start= */, "", s); sub(/,.*/, "", s)
        z = $0; sub(/.*size= */, "", z); sub(/,.*/, "", z)
        print n, s, z
    }' | sort -n
}
"#;

const HELPERS: &str = r#"
one_of() { x=$1; shift; for y in "$@"; do [ "$x" = "$y" ] && return 0; done; return 1; }

for tool in sfdisk dd awk sed sort sync od tr wc; do
    command -v "$tool" >/dev/null 2>&1 || die "this script needs $tool"
done
if [ "$IMAGE" = 0 ]; then
    command -v blockdev >/dev/null 2>&1 || die "this script needs blockdev"
    [ -b "$DISK" ] || die "$DISK is not a block device"
    [ "$(id -u)" = 0 ] || die "run it as root"
else
    [ -f "$DISK" ] || die "$DISK is not a file"
fi


# Stop when the disk or a partition of it is mounted, swap or held by
# another device (LVM, dm-crypt, md), or when the image is attached.
idle() {
    if [ "$IMAGE" = 1 ]; then
        if [ -n "$(losetup -j "$DISK" 2>/dev/null)" ]; then
            die "$DISK is attached to a loop device (losetup -j $DISK): detach it first"
        fi
        return 0
    fi
    name=$(basename "$(readlink -f "$DISK")")
    for d in "/sys/class/block/$name" "/sys/class/block/$name/$name"*; do
        [ -f "$d/dev" ] || continue
        node=/dev/$(basename "$d")
        mm=$(cat "$d/dev")
        if awk -v mm="$mm" '$3 == mm { found = 1 } END { exit !found }' /proc/self/mountinfo; then
            die "$node is mounted: unmount it first"
        fi
        if awk -v n="$node" '$1 == n { found = 1 } END { exit !found }' /proc/swaps; then
            die "$node is swap: swapoff $node first"
        fi
        if [ -n "$(ls "$d/holders" 2>/dev/null)" ]; then
            die "$node is in use by $(ls "$d/holders" | tr '\n' ' ')(deactivate the VG, close LUKS, stop md first)"
        fi
    done
}

# zeros START BYTES: the BYTES of $DISK from byte START are all zero.
zeros() {
    [ "$(dd if="$DISK" bs=64K iflag=skip_bytes,count_bytes skip="$1" count="$2" status=none |
        tr -d '\000' | wc -c | tr -d ' ')" = 0 ]
}

# Write a journal line and make it durable before going on.
journal() {
    printf '%s %s\n' "$2" "$3" > "$1.new"
    sync "$1.new"
    mv "$1.new" "$1"
    sync "$STATE"
}

# copy N FROM TO BYTES: copy BYTES from byte FROM to byte TO of $DISK in
# $CHUNK pieces, the highest piece first when moving up (the lowest when
# moving down), so no piece overwrites a source not yet copied. Each piece
# is staged in $STATE and the journal records "pieces done, staged?", so
# a copy interrupted anywhere resumes exactly: a staged piece is written
# again from the stage, an unstaged one is still intact at its source.
copy() {
    j="$STATE/move-$1"; stage="$STATE/chunk-$1"
    from=$2; to=$3; bytes=$4
    pieces=$(( (bytes + CHUNK - 1) / CHUNK ))
    n_done=0; staged=0
    if [ -f "$j" ]; then
        read -r n_done staged < "$j"
        say "resuming the copy of partition $1 at piece $((n_done + 1)) of $pieces"
    fi
    while [ "$n_done" -lt "$pieces" ]; do
        k=$n_done
        if [ "$to" -gt "$from" ]; then k=$((pieces - 1 - n_done)); fi
        off=$((k * CHUNK)); len=$CHUNK
        if [ $((off + len)) -gt "$bytes" ]; then len=$((bytes - off)); fi
        if [ "$staged" != 1 ]; then
            dd if="$DISK" of="$stage" bs=1M iflag=skip_bytes,count_bytes,fullblock \
                skip=$((from + off)) count="$len" conv=fsync status=none
            journal "$j" "$n_done" 1
        fi
        dd if="$stage" of="$DISK" bs=1M oflag=seek_bytes seek=$((to + off)) \
            conv=notrunc,fsync status=none
        n_done=$((n_done + 1)); staged=0
        journal "$j" "$n_done" 0
        if [ $((n_done % 64)) = 0 ] || [ "$n_done" = "$pieces" ]; then
            say "partition $1: copied $n_done of $pieces pieces"
        fi
    done
}

# Let the kernel see the new table (live disks only).
reread() {
    [ "$IMAGE" = 0 ] || return 0
    partx -u "$DISK" 2>/dev/null || blockdev --rereadpt "$DISK" 2>/dev/null ||
        say "the kernel still has the old table: run partprobe $DISK or reboot"
}
"#;

/// The script that writes a new disk's layout.
pub fn render_new_disk_script(d: &crate::plan::NewDisk, version: &str) -> String {
    let planned: Vec<Entry> = d
        .partitions
        .iter()
        .enumerate()
        .map(|(i, p)| Entry {
            number: i as u32 + 1,
            start: p.start_sector,
            size: p.sectors,
        })
        .collect();
    let mut s = format!(
        "#!/bin/sh\n\
# diskalign {version}: a new {label} layout for the disk named in DISK below. Read it before you run it.\n\
# It writes a partition table only to an empty disk, and does nothing when\n\
# the disk already has exactly this layout.\n\
set -eu\n\
DISK={disk}\n",
        label = d.label,
        // As the plan script does: the script may run from elsewhere.
        disk = q(&std::path::absolute(&d.path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| d.path.to_string())),
    );
    s.push_str(SAY);
    s.push_str(TABLE_FN);
    s.push_str(&format!(
        "\nplanned={planned}\n\
if [ \"$(table 2>/dev/null)\" = \"$planned\" ]; then say \"$DISK already has this layout\"; exit 0; fi\n\
[ -z \"$(wipefs -n \"$DISK\")\" ] || die \"$DISK is not empty (wipefs -n $DISK lists what is on it)\"\n\
sfdisk -q --wipe never \"$DISK\" <<'LAYOUT'\n\
{script}LAYOUT\n\
say \"wrote the layout: run diskalign check $DISK\"\n",
        planned = q(&entries(&planned)),
        script = d.sfdisk_script,
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{image, part};
    use crate::iolimits::Topology;
    use crate::layout::PartKind;
    use crate::plan::{plan_disk, Extent, PlanOptions, Span};

    /// The script for an image with one partition at `first` sectors in a
    /// table of `kind`.
    fn script_for(kind: TableKind, first: u64) -> String {
        let mut t = image(
            64 << 20,
            Topology::IMAGE_DEFAULT,
            vec![part(1, PartKind::Primary, first, first + 40959)],
        );
        t.table.kind = kind;
        let p = plan_disk(&t, &PlanOptions::default());
        assert!(p.refused.is_empty(), "{:?}", p.refused);
        render_script(&p, "0.0.0")
    }

    /// The script parses as POSIX sh (dash's `-n`: read, not run).
    fn parses(script: &str) {
        use std::io::Write;
        let mut sh = std::process::Command::new("sh")
            .arg("-n")
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        sh.stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        let out = sh.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The lines of `script` from `from` on, in order, each found.
    fn in_order(script: &str, lines: &[&str]) {
        let mut rest = script;
        for l in lines {
            let at = rest
                .find(l)
                .unwrap_or_else(|| panic!("{l:?} missing or out of order in\n{script}"));
            rest = &rest[at + l.len()..];
        }
    }

    #[test]
    fn a_move_is_checked_tried_copied_then_written() {
        let s = script_for(TableKind::Mbr, 63);
        parses(&s);
        assert!(s.starts_with("#!/bin/sh\n# diskalign 0.0.0: "));
        in_order(
            &s,
            &[
                // The image by its absolute path, as planned.
                "disk.img'\nIMAGE=1\nCHUNK=4194304\n",
                "S0='1 63 40960'\nS1='1 2048 40960'\n",
                // Step 1: the table saved once.
                "step_1() {\n    same_disk\n",
                "sfdisk --dump \"$DISK\" > \"$STATE/table.sfdisk.new\"",
                // Step 2: skipped when done, refused when not as planned,
                // sfdisk asked first, the data copied, then the entry.
                "step_2() {\n    same_disk\n",
                "if one_of \"$now\" \"$S1\"; then",
                "[ \"$now\" = \"$S0\" ] || die",
                "    idle\n",
                "set_entry 1 2048 40960 --no-act",
                "    copy 1 32256 1048576 20971520\n",
                "    set_entry 1 2048 40960 || die",
                "[ \"$(table)\" = \"$S1\" ] || die",
                // Nothing at all before the disk is proved and idle.
                "\nsame_disk\nidle\nmkdir -p \"$STATE\"\nstep_1\nstep_2\nreread\n",
            ],
        );
        assert!(
            !s.contains("sgdisk --backup"),
            "a DOS table has no GPT backup"
        );
    }

    #[test]
    fn an_aligned_partition_gets_no_step() {
        // (cli writes no script for a plan with nothing to change; the
        // text would still prove the disk and change nothing.)
        let s = script_for(TableKind::Mbr, 2048);
        parses(&s);
        assert!(s.contains("S0='1 2048 40960'\n"));
        assert!(!s.contains("S1=") && !s.contains("step_"), "{s}");
        assert!(s.ends_with("\nsame_disk\nidle\nmkdir -p \"$STATE\"\nreread\nsay \"done: run diskalign check $DISK\"\n"));
    }

    #[test]
    fn a_gpt_is_saved_with_sgdisk_too() {
        let s = script_for(TableKind::Gpt, 63);
        parses(&s);
        assert!(s.contains("sgdisk --backup=\"$STATE/table.gpt\" \"$DISK\""));
        assert!(s.contains("S1='1 2048 40960'"));
    }

    #[test]
    fn only_names_lvm_would_take_reach_the_script() {
        let s = backup(
            1,
            TableKind::Mbr,
            &["vg0".into(), "x;reboot".into(), String::new()],
        );
        assert!(
            s.contains("vgcfgbackup -q -f \"$STATE/vg-vg0.vg\" 'vg0'"),
            "{s}"
        );
        assert!(!s.contains("reboot"), "{s}");
        assert_eq!(s.matches("vgcfgbackup").count(), 1);
    }

    #[test]
    fn an_end_that_comes_down_checks_its_tail_is_still_zero() {
        let after = Extent::new(2048, 1000, 512);
        let zero = Span {
            start_bytes: 2048 * 512 + 1000 * 512,
            bytes: 4096,
        };
        let s = table_fn(3, 1, 1, 2, &after, None, Some(zero));
        let want = format!("zeros {} 4096 || die \"step 3:", zero.start_bytes);
        assert!(s.contains(&want), "{s}");
        // Not checked again once a copy has started (its journal).
        assert!(s.contains("[ -f \"$STATE/move-2\" ] || zeros"), "{s}");
        assert!(!s.contains("    copy "), "nothing to copy: the start stays");
    }

    /// A FAT32 moved from 63: its boot sectors are checked before the
    /// first copy (not once a copy has started), after the zero check and
    /// before sfdisk is asked; the new start written after the copy and
    /// before the entry changes.
    #[test]
    fn a_moved_volume_s_boot_sectors_are_checked_then_written() {
        use crate::inspect::Root;
        use crate::plan::volume_fixtures::{disk_with, fixture, layer, put};
        use crate::stack::{Layer, LayerKind};
        let disk = disk_with(&fixture("fat32-s1"), 6, &|b| {
            put(b, 0x1c, &63u32.to_le_bytes())
        });
        let mut t = image(
            64 << 20,
            Topology::IMAGE_DEFAULT,
            vec![part(1, PartKind::Primary, 63, 63 + 4095)],
        );
        t.table.kind = TableKind::Mbr;
        let mut root = Layer::new(
            LayerKind::Partition,
            "p1",
            "d",
            63 * 512,
            2 << 20,
            Topology::IMAGE_DEFAULT,
        );
        root.children.push(layer(&disk, 63 * 512, 2 << 20));
        t.stack.push(Root {
            partition: Some(1),
            layer: root,
            zero_tail_bytes: 0,
        });
        let p = plan_disk(&t, &PlanOptions::default());
        let s = render_script(&p, "0.0.0");
        parses(&s);
        in_order(
            &s,
            &[
                "    idle\n",
                "    # Its FAT32 boot sectors still record hidden sectors 63 (before the copy):\n    [ -f \"$STATE/move-1\" ] || ( x() { dd if=\"$DISK\" ",
                "for b in 32256 35328; do ",
                "set_entry 1 2048 4096 --no-act",
                "    copy 1 32256 1048576 2097152\n",
                "    # hidden sectors 2048 into them where they still read 63:\n    ( x() { dd if=\"$DISK\" ",
                "for b in 1048576 1051648; do ",
                "printf '\\000\\010\\000\\000' | dd of=\"$DISK\" bs=1 seek=$((b + 28)) count=4 conv=notrunc,fsync status=none",
                "    set_entry 1 2048 4096 || die",
            ],
        );
    }
}
