//! An event's fields into registers and the stack: sector, sectors,
//! dev_t and direction, read from the record a perf event built (at its
//! tracefs format's offsets) or from the tracepoint's typed arguments.

use super::emit::{slot_off, S_DEV, S_EMPTYW, S_LDEV, S_LSECT};
use super::Fields;
use crate::sys::trace::bpf::asm::{
    Alu, Asm, Jmp, Label, Size, FP, R1, R2, R3, R4, R5, R6, R7, R8, R9,
};
use crate::sys::trace::bpf::typed::Typed;
use crate::sys::trace::format::Layout;

/// What an event's arguments are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arg {
    /// A bio (block_bio_queue, the merges).
    Bio,
    /// block_bio_remap, counted at its upper device and sector.
    Remap,
    /// block_split: a bio, counted without a length.
    Split,
    /// A request (block_rq_issue, block_rq_complete).
    Request,
}

/// r8 = sector; r9 = sectors; the dev_t at S_DEV; r7 = the direction
/// (0 read, 1 write, 2 discard, 3 flush), an empty write marked at
/// S_EMPTYW; or off to `out`. The remap is read at its upper device and
/// sector; a split has no length (r9 = 1).
pub(super) fn fields(a: &mut Asm, f: Fields, arg: Arg, out: Label) {
    a.store_imm(Size::DW, FP, S_EMPTYW, 0);
    match f {
        Fields::Tracefs(l) => tracefs_fields(a, l, arg, out),
        Fields::Typed(t) => typed_fields(a, t, arg, out),
    }
}

fn tracefs_fields(a: &mut Asm, l: &Layout, arg: Arg, out: Label) {
    let (dev, sector) = match (arg, l.old_dev, l.old_sector) {
        (Arg::Remap, Some(d), Some(s)) => (d, s),
        _ => (l.dev, l.sector),
    };
    a.mov(R6, R1);
    if arg == Arg::Remap {
        // Where the bio lands: the record's dev is the whole disk's
        // (bio_dev), its sector the bio's own.
        a.load(Size::W, R2, R6, slot_off(l.dev));
        a.store(Size::W, FP, S_LDEV, R2);
        a.load(Size::DW, R2, R6, slot_off(l.sector));
        a.store(Size::DW, FP, S_LSECT, R2);
    }
    a.load(Size::DW, R8, R6, slot_off(sector));
    match l.nr_sector {
        Some(n) if arg != Arg::Split => a.load(Size::W, R9, R6, slot_off(n)),
        _ => a.mov_imm(R9, 1),
    }
    a.load(Size::W, R1, R6, slot_off(dev));
    a.store(Size::W, FP, S_DEV, R1);
    a.load(Size::B, R1, R6, slot_off(l.rwbs));
    a.load(Size::B, R2, R6, slot_off(l.rwbs) + 1);
    direction(a, out);
}

/// S_DEV = MKDEV(disk->major, disk->first_minor) of the gendisk in r3
/// (0 without one; clobbers r1, r3).
pub(super) fn disk_devt(a: &mut Asm, t: &Typed) {
    let none = a.label();
    a.store_imm(Size::W, FP, S_DEV, 0);
    a.jump_imm(Jmp::Eq, R3, 0, none);
    a.load(Size::W, R1, R3, t.disk_major as i16);
    a.alu_imm(Alu::Lsh, R1, 20);
    a.load(Size::W, R3, R3, t.disk_first_minor as i16);
    a.alu(Alu::Or, R1, R3);
    a.store(Size::W, FP, S_DEV, R1);
    a.bind(none);
}

/// The fields from the tracepoint's arguments (ctx: u64 each).
fn typed_fields(a: &mut Asm, t: &Typed, arg: Arg, out: Label) {
    a.mov(R6, R1);
    a.load(Size::DW, R2, R6, 0);
    if arg == Arg::Request {
        a.load(Size::DW, R8, R2, t.rq_sector as i16);
        a.load(Size::W, R9, R2, t.rq_data_len as i16);
        a.load(Size::DW, R3, R2, t.rq_q as i16);
        a.load(Size::DW, R3, R3, t.q_disk as i16);
        disk_devt(a, t);
        a.load(Size::W, R1, R2, t.rq_cmd_flags as i16);
    } else {
        a.load(Size::DW, R8, R2, t.bio_sector as i16);
        a.load(Size::W, R9, R2, t.bio_size as i16);
        a.load(Size::DW, R3, R2, t.bio_bdev as i16);
        a.load(Size::DW, R3, R3, t.bdev_disk as i16);
        disk_devt(a, t);
        a.load(Size::W, R1, R2, t.bio_opf as i16);
    }
    a.alu_imm(Alu::Rsh, R9, 9);
    match arg {
        Arg::Split => a.mov_imm(R9, 1),
        Arg::Remap => {
            // Where the bio lands: its own block device (a dm table's leg,
            // an md member) at its sector, or for a partition's remap onto
            // its disk (the bio's device is still the partition, its
            // sector already the disk's) the whole disk.
            a.load(Size::W, R5, FP, S_DEV);
            a.store(Size::W, FP, S_LDEV, R5);
            a.store(Size::DW, FP, S_LSECT, R8);
            // block_bio_remap(bio, dev, from): the upper device and sector.
            a.load(Size::DW, R3, R6, 8);
            a.alu_imm(Alu::Lsh, R3, 32);
            a.alu_imm(Alu::Rsh, R3, 32);
            a.store(Size::W, FP, S_DEV, R3);
            a.load(Size::DW, R8, R6, 16);
            let same = a.label();
            a.load(Size::DW, R4, R2, t.bio_bdev as i16);
            a.load(Size::W, R4, R4, t.bdev_dev as i16);
            a.jump_reg(Jmp::Eq, R4, R3, same);
            a.store(Size::W, FP, S_LDEV, R4);
            a.bind(same);
        }
        Arg::Bio | Arg::Request => {}
    }
    opf_direction(a, t, out);
}

/// blk_fill_rwbs's reading of an opf (r1), as `direction` reads rwbs:
/// r7 = the direction, an empty write marked at S_EMPTYW; off to `out`
/// for what has none (write zeroes, zone and driver operations).
fn opf_direction(a: &mut Asm, t: &Typed, out: Label) {
    let (done, write, discard, flush) = (a.label(), a.label(), a.label(), a.label());
    a.mov(R2, R1);
    a.alu_imm(Alu::And, R2, t.op_mask as i32);
    a.mov_imm(R7, 0);
    a.jump_imm(Jmp::Eq, R2, t.op_read as i32, done);
    a.jump_imm(Jmp::Eq, R2, t.op_write as i32, write);
    a.jump_imm(Jmp::Eq, R2, t.op_discard as i32, discard);
    a.jump_imm(Jmp::Eq, R2, t.op_secure_erase as i32, discard);
    a.jump_imm(Jmp::Eq, R2, t.op_flush as i32, flush);
    a.alu_imm(Alu::Rsh, R1, t.preflush_bit as i32);
    a.alu_imm(Alu::And, R1, 1);
    a.jump_imm(Jmp::Ne, R1, 0, flush);
    a.goto(out);
    a.bind(write);
    a.mov_imm(R7, 1);
    a.jump_imm(Jmp::Ne, R9, 0, done);
    a.mov_imm(R7, 3);
    a.store_imm(Size::DW, FP, S_EMPTYW, 1);
    a.goto(done);
    a.bind(discard);
    a.mov_imm(R7, 2);
    a.goto(done);
    a.bind(flush);
    a.mov_imm(R7, 3);
    a.bind(done);
}

/// tally::direction in compares: r1 = rwbs[0], r2 = rwbs[1], r9 = sectors.
/// A write of no sectors is a flush, and marked at S_EMPTYW.
fn direction(a: &mut Asm, out: Label) {
    let (plain, done) = (a.label(), a.label());
    a.jump_imm(Jmp::Ne, R1, b'F' as i32, plain);
    a.mov(R1, R2);
    for op in [b'R', b'W', b'D'] {
        a.jump_imm(Jmp::Eq, R1, op as i32, plain);
    }
    a.mov_imm(R7, 3);
    a.goto(done);
    a.bind(plain);
    a.mov_imm(R7, 0);
    a.jump_imm(Jmp::Eq, R1, b'R' as i32, done);
    a.mov_imm(R7, 2);
    a.jump_imm(Jmp::Eq, R1, b'D' as i32, done);
    a.jump_imm(Jmp::Ne, R1, b'W' as i32, out);
    a.mov_imm(R7, 1);
    a.jump_imm(Jmp::Ne, R9, 0, done);
    a.mov_imm(R7, 3);
    a.store_imm(Size::DW, FP, S_EMPTYW, 1);
    a.bind(done);
}

#[cfg(test)]
mod tests {
    use crate::sys::blocktrace::Stage;
    use crate::sys::trace::bpf::prog::test_support::{layout, MAPS};
    use crate::sys::trace::bpf::prog::{program, Fields, Kind};
    use crate::sys::trace::format::Event;

    #[test]
    fn the_remap_is_read_at_its_upper_device() {
        let l = layout(Event::BioRemap);
        let code = program(Kind::Count(Stage::RemapFrom), Fields::Tracefs(&l), &MAPS).unwrap();
        // The first loads from the context (r6): where the bio landed (dev,
        // sector, for its leg), then old_sector, nr_sector, old_dev.
        let ctx_loads: Vec<i16> = code
            .iter()
            .filter(|i| i.code & 0x07 == 0x01 && i.regs >> 4 == 6)
            .map(|i| i.off)
            .take(5)
            .collect();
        let (od, os) = (l.old_dev.unwrap(), l.old_sector.unwrap());
        let (nr, dev, sector) = (l.nr_sector.unwrap(), l.dev, l.sector);
        assert_eq!(
            ctx_loads,
            [
                dev.offset as i16,
                sector.offset as i16,
                os.offset as i16,
                nr.offset as i16,
                od.offset as i16
            ]
        );
    }
}
