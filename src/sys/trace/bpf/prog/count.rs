//! The program of block_bio_queue, block_bio_remap and block_rq_issue:
//! the I/O counted at its stage, its shape (size, alignment, straddles,
//! a sub-physical write, a zone crossing), a remap's leg below, its
//! submitter, and an issue's start time for the latency.

use super::emit::{
    add_in, counters, incr, incr_at, incr_in_at, log2, off, sample, timer_entry, timer_home,
    timer_of_dev, value_or_insert, KTIME_GET_NS, MAP_UPDATE, S_DEV, S_EMPTYW, S_GMASK, S_GRAIN,
    S_IKEY, S_IVALUE, S_LDEV, S_LEGKEY, S_LEGON, S_LEGVALUE, S_LSECT, S_PHYS, S_SIZEB, S_SLOT,
    S_STRADDLE, S_SUBPHYS, S_X4K, S_ZMASK,
};
use super::fields::{fields, Arg};
use super::maps::{
    Maps, DIRECTIONS, LEG_BYTES, LEG_IOS, LEG_MOD_4K, LEG_STRADDLE_4K, LEG_WORDS, TIMER_PROBES,
    W_ALIGN, W_BYTES, W_IOS, W_MOD_4K, W_PREFLUSH_WRITES, W_SIZE, W_STRADDLE_4K, W_STRADDLE_GRAIN,
    W_SUB_PHYSICAL, W_UNMAPPED, W_UNTIMED, W_ZONE_CROSSING,
};
use super::who::attribute;
use super::Fields;
use crate::sys::blocktrace::Stage;
use crate::sys::trace::bpf::asm::{
    Alu, Asm, Jmp, Label, Reg, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9,
};

pub(super) fn count(a: &mut Asm, stage: Stage, f: Fields, maps: &Maps, out: Label) {
    let arg = match stage {
        Stage::Queue => Arg::Bio,
        Stage::RemapFrom => Arg::Remap,
        Stage::Issue => Arg::Request,
    };
    fields(a, f, arg, out);
    counters(a, stage, maps, out);
    incr(a, W_IOS);
    a.mov(R3, R9);
    a.alu_imm(Alu::Lsh, R3, 9);
    a.load(Size::DW, R1, R6, off(W_BYTES));
    a.alu(Alu::Add, R1, R3);
    a.store(Size::DW, R6, off(W_BYTES), R1);
    for flag in [S_X4K, S_STRADDLE, S_SUBPHYS] {
        a.store_imm(Size::DW, FP, flag, 0);
    }
    let (full, shaped) = (a.label(), a.label());
    a.load(Size::DW, R1, FP, S_EMPTYW);
    a.jump_imm(Jmp::Eq, R1, 0, full);
    incr(a, W_PREFLUSH_WRITES);
    a.bind(full);
    // No shape for an I/O of no sectors (a flush).
    a.jump_imm(Jmp::Eq, R9, 0, shaped);
    histograms(a);
    straddles(a);
    sub_physical(a);
    zone_crossing(a);
    if stage == Stage::Issue {
        start_timer(a, f, maps);
    }
    a.bind(shaped);
    if stage == Stage::RemapFrom {
        leg(a, maps);
    }
    if stage != Stage::Issue {
        attribute(a, stage, maps, out);
    }
}

/// The remapped bio counted where it lands (S_LDEV, S_LSECT): legs[(the
/// slot, the device below, direction r7)], inserted at zero the first
/// time; a full map counted as W_UNMAPPED (r6 the counts). Only for a
/// device whose `devs` entry asks for it (Grains::legs, S_LEGON).
fn leg(a: &mut Asm, maps: &Maps) {
    let (have, done) = (a.label(), a.label());
    a.load(Size::DW, R1, FP, S_LEGON);
    a.jump_imm(Jmp::Eq, R1, 0, done);
    a.load(Size::DW, R1, FP, S_SLOT);
    a.store(Size::W, FP, S_LEGKEY, R1);
    a.load(Size::W, R1, FP, S_LDEV);
    a.store(Size::W, FP, S_LEGKEY + 4, R1);
    a.store(Size::W, FP, S_LEGKEY + 8, R7);
    a.store_imm(Size::W, FP, S_LEGKEY + 12, 0);
    value_or_insert(a, maps.legs, (S_LEGKEY, S_LEGVALUE), LEG_WORDS, have);
    incr(a, W_UNMAPPED);
    a.goto(done);
    a.bind(have);
    a.mov_imm(R3, 1);
    add_in(a, R0, LEG_IOS, R3);
    a.mov(R3, R9);
    a.alu_imm(Alu::Lsh, R3, 9);
    add_in(a, R0, LEG_BYTES, R3);
    a.jump_imm(Jmp::Eq, R9, 0, done);
    // At the sector below.
    let no = a.label();
    a.load(Size::DW, R2, FP, S_LSECT);
    crosses_4k(a, R2, no);
    a.mov_imm(R3, 1);
    add_in(a, R0, LEG_STRADDLE_4K, R3);
    a.bind(no);
    a.load(Size::DW, R4, FP, S_LSECT);
    incr_in_at(a, R0, LEG_MOD_4K, R4, 8);
    a.bind(done);
}

/// The size, alignment and 4 KiB-position histograms.
fn histograms(a: &mut Asm) {
    a.mov(R3, R9);
    log2(a, R3, R4, R5);
    a.store(Size::DW, FP, S_SIZEB, R4);
    incr_at(a, W_SIZE, R4, 32);
    // Trailing zeros of the sector: log2 of its lowest set bit.
    let have = a.label();
    a.mov_imm(R4, 31);
    a.jump_imm(Jmp::Eq, R8, 0, have);
    a.mov(R3, R8);
    a.mov(R5, R8);
    a.alu_imm(Alu::Neg, R5, 0);
    a.alu(Alu::And, R3, R5);
    log2(a, R3, R4, R5);
    a.bind(have);
    incr_at(a, W_ALIGN, R4, 32);
    a.mov(R4, R8);
    a.alu_imm(Alu::And, R4, 7);
    incr_at(a, W_MOD_4K, R4, 8);
}

/// tally::straddles against 4 KiB of r9 sectors at the sector in
/// `sector`: falls through when they straddle, off to `no` when not
/// (r3, r4 scratch).
fn crosses_4k(a: &mut Asm, sector: Reg, no: Label) {
    let yes = a.label();
    a.mov(R3, sector);
    a.alu_imm(Alu::And, R3, 7);
    a.mov(R4, R3);
    a.alu(Alu::Add, R4, R9);
    a.jump_imm(Jmp::Le, R4, 8, no);
    a.jump_imm(Jmp::Ne, R3, 0, yes);
    a.alu_imm(Alu::And, R4, 7);
    a.jump_imm(Jmp::Eq, R4, 0, no);
    a.bind(yes);
}

/// tally::straddles against 4 KiB (in sectors) and the grain (in bytes).
fn straddles(a: &mut Asm) {
    let no = a.label();
    crosses_4k(a, R8, no);
    incr(a, W_STRADDLE_4K);
    a.store_imm(Size::DW, FP, S_X4K, 1);
    a.bind(no);

    let (yes, no) = (a.label(), a.label());
    a.store_imm(Size::DW, FP, S_STRADDLE, 0);
    a.mov(R3, R8);
    a.alu_imm(Alu::Lsh, R3, 9);
    a.load(Size::DW, R5, FP, S_GRAIN);
    modulo(a, R3);
    a.mov(R4, R9);
    a.alu_imm(Alu::Lsh, R4, 9);
    a.alu(Alu::Add, R4, R3);
    a.jump_reg(Jmp::Le, R4, R5, no);
    a.jump_imm(Jmp::Ne, R3, 0, yes);
    modulo(a, R4);
    a.jump_imm(Jmp::Eq, R4, 0, no);
    a.bind(yes);
    incr(a, W_STRADDLE_GRAIN);
    a.store_imm(Size::DW, FP, S_STRADDLE, 1);
    a.bind(no);
}

/// v %= the grain (r5): a mask (S_GMASK) where the grain is a power of
/// two, else a division (clobbers r1).
fn modulo(a: &mut Asm, v: Reg) {
    let (divide, done) = (a.label(), a.label());
    a.load(Size::DW, R1, FP, S_GMASK);
    a.jump_imm(Jmp::Eq, R1, 0, divide);
    a.alu(Alu::And, v, R1);
    a.goto(done);
    a.bind(divide);
    a.alu(Alu::Mod, v, R5);
    a.bind(done);
}

/// A write smaller than the physical block.
fn sub_physical(a: &mut Asm) {
    let no = a.label();
    a.jump_imm(Jmp::Ne, R7, 1, no);
    a.mov(R3, R9);
    a.alu_imm(Alu::Lsh, R3, 9);
    a.load(Size::DW, R4, FP, S_PHYS);
    a.jump_reg(Jmp::Ge, R3, R4, no);
    incr(a, W_SUB_PHYSICAL);
    a.store_imm(Size::DW, FP, S_SUBPHYS, 1);
    a.bind(no);
}

/// A write whose first and last sectors lie in two zones: (sector & zone
/// mask) + sectors > the zone's sectors (tally::crosses_zone). The mask
/// is 0 on a device that is not zoned: nothing more is done there.
fn zone_crossing(a: &mut Asm) {
    let no = a.label();
    a.jump_imm(Jmp::Ne, R7, 1, no);
    a.load(Size::DW, R4, FP, S_ZMASK);
    a.jump_imm(Jmp::Eq, R4, 0, no);
    a.mov(R3, R8);
    a.alu(Alu::And, R3, R4);
    a.alu(Alu::Add, R3, R9);
    a.alu_imm(Alu::Add, R4, 1);
    a.jump_reg(Jmp::Le, R3, R4, no);
    incr(a, W_ZONE_CROSSING);
    a.bind(no);
}

/// The request's latency key into r1: `((slot * 4 + direction) * 2 +
/// straddles) * 32 + size bucket`.
fn latency_key(a: &mut Asm) {
    a.load(Size::DW, R1, FP, S_SLOT);
    a.alu_imm(Alu::Mul, R1, DIRECTIONS as i32);
    a.alu(Alu::Add, R1, R7);
    a.alu_imm(Alu::Lsh, R1, 1);
    a.load(Size::DW, R2, FP, S_STRADDLE);
    a.alu(Alu::Add, R1, R2);
    a.alu_imm(Alu::Lsh, R1, 5);
    a.load(Size::DW, R2, FP, S_SIZEB);
    a.alu(Alu::Add, R1, R2);
}

/// The issue time of a request in the latency sample, by path.
fn start_timer(a: &mut Asm, f: Fields, maps: &Maps) {
    let timed = a.label();
    sample(a, maps, R8, timed);
    match f {
        Fields::Typed(_) => claim_timer(a, maps),
        Fields::Tracefs(_) => insert_inflight(a, maps),
    }
    a.bind(timed);
}

/// The request at (S_DEV, r8 = sector) takes a free `timers` entry (or
/// its own, issued again after a requeue) with an atomic
/// compare-and-exchange of the owner word, then writes its device, issue
/// time and latency key there; with both entries taken by others it goes
/// untimed, counted (r6 the counts).
fn claim_timer(a: &mut Asm, maps: &Maps) {
    let (mine, untimed, done) = (a.label(), a.label(), a.label());
    timer_home(a, maps);
    for _ in 0..TIMER_PROBES {
        let next = a.label();
        timer_entry(a, maps, untimed);
        a.mov(R2, R0);
        a.mov(R3, R8);
        a.alu_imm(Alu::Add, R3, 1);
        a.mov_imm(R0, 0);
        a.cmpxchg(R2, 0, R3);
        a.jump_imm(Jmp::Eq, R0, 0, mine);
        // Its own sector: its own entry if its device is this one.
        a.jump_reg(Jmp::Ne, R0, R3, next);
        timer_of_dev(a, R2, mine);
        a.bind(next);
    }
    a.bind(untimed);
    incr(a, W_UNTIMED);
    a.goto(done);
    a.bind(mine);
    a.load(Size::W, R1, FP, S_DEV);
    a.store(Size::W, R2, 20, R1);
    a.store(Size::DW, FP, S_IVALUE, R2);
    latency_key(a);
    a.load(Size::DW, R2, FP, S_IVALUE);
    a.store(Size::W, R2, 16, R1);
    a.call(KTIME_GET_NS);
    a.load(Size::DW, R2, FP, S_IVALUE);
    a.store(Size::DW, R2, 8, R0);
    a.bind(done);
}

/// inflight[(dev, sector)] = (now, latency key).
fn insert_inflight(a: &mut Asm, maps: &Maps) {
    let timed = a.label();
    a.load(Size::W, R1, FP, S_DEV);
    a.store(Size::W, FP, S_IKEY, R1);
    a.store_imm(Size::W, FP, S_IKEY + 4, 0);
    a.store(Size::DW, FP, S_IKEY + 8, R8);
    a.call(KTIME_GET_NS);
    a.store(Size::DW, FP, S_IVALUE, R0);
    latency_key(a);
    a.store(Size::W, FP, S_IVALUE + 8, R1);
    a.store_imm(Size::W, FP, S_IVALUE + 12, 0);
    a.map(R1, maps.inflight);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, S_IKEY as i32);
    a.mov(R3, FP);
    a.alu_imm(Alu::Add, R3, S_IVALUE as i32);
    a.mov_imm(R4, 0);
    a.call(MAP_UPDATE);
    a.jump_imm(Jmp::Eq, R0, 0, timed);
    incr(a, W_UNTIMED);
    a.bind(timed);
}
