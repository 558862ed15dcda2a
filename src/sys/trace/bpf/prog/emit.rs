//! What every program is built of: the helper calls, the stack frame,
//! and the instruction sequences that find a device's counts, add to a
//! map's value, bucket by log2, look up or insert a key, sample a
//! request and find its `timers` entry.

use super::maps::{stage_index, Maps, DEV_HASH, DEV_PROBES, DIRECTIONS, STAGES, TIMER_HASH};
use crate::sys::blocktrace::Stage;
use crate::sys::trace::bpf::asm::{
    Alu, Asm, Jmp, Label, Reg, Size, FP, R0, R1, R2, R3, R4, R6, R7, R8,
};
use crate::sys::trace::format::Slot;

/// Helper function ids (enum bpf_func_id).
pub(super) const MAP_LOOKUP: i32 = 1;
pub(super) const MAP_UPDATE: i32 = 2;
pub(super) const MAP_DELETE: i32 = 3;
pub(super) const KTIME_GET_NS: i32 = 5;
pub(super) const GET_CURRENT_COMM: i32 = 16;
pub(super) const GET_CURRENT_CGROUP_ID: i32 = 80;
/// BPF_NOEXIST.
pub(super) const NOEXIST: i32 = 1;

// The stack frame (offsets from r10).
pub(super) const S_DEV: i16 = -8;
pub(super) const S_INDEX: i16 = -16;
pub(super) const S_GRAIN: i16 = -24;
pub(super) const S_PHYS: i16 = -32;
pub(super) const S_SLOT: i16 = -40;
pub(super) const S_SIZEB: i16 = -48;
pub(super) const S_STRADDLE: i16 = -56;
pub(super) const S_IKEY: i16 = -72;
pub(super) const S_IVALUE: i16 = -88;
pub(super) const S_LKEY: i16 = -96;
pub(super) const S_ONE: i16 = -104;
pub(super) const S_X4K: i16 = -112;
pub(super) const S_SUBPHYS: i16 = -120;
pub(super) const S_EMPTYW: i16 = -128;
pub(super) const S_WKEY: i16 = -160;
pub(super) const S_DEVIDX: i16 = -164;
pub(super) const S_GMASK: i16 = -176;
pub(super) const S_LEGON: i16 = -184;
/// A request's `timers` index.
pub(super) const S_TIDX: i16 = -196;
/// A submitter's `whocache` index.
pub(super) const S_CIDX: i16 = -200;
/// The free `whocache` entry a new submitter may take (0: none), and the
/// `who` value it was counted in meanwhile.
pub(super) const S_CFREE: i16 = -208;
pub(super) const S_WHOV: i16 = -216;
pub(super) const S_ZMASK: i16 = -280;
pub(super) const S_LDEV: i16 = -284;
pub(super) const S_LSECT: i16 = -296;
pub(super) const S_LEGKEY: i16 = -312;
pub(super) const S_LEGVALUE: i16 = -400;
/// WHO_WORDS u64 below the legs' value: [-512, -400).
pub(super) const S_WVALUE: i16 = -512;

pub(super) fn off(word: usize) -> i16 {
    (word * 8) as i16
}

pub(super) fn slot_off(s: Slot) -> i16 {
    s.offset as i16
}

/// r6 = the counts of (the device at S_DEV, direction r7, stage), with
/// its slot and grains on the stack; off to `out` for an unknown device.
pub(super) fn counters(a: &mut Asm, stage: Stage, maps: &Maps, out: Label) {
    device(a, maps, out);
    a.load(Size::W, R1, R0, 0);
    a.store(Size::DW, FP, S_SLOT, R1);
    a.load(Size::DW, R2, R0, 8);
    a.store(Size::DW, FP, S_GRAIN, R2);
    a.load(Size::DW, R2, R0, 16);
    a.store(Size::DW, FP, S_PHYS, R2);
    a.load(Size::DW, R2, R0, 24);
    a.store(Size::DW, FP, S_GMASK, R2);
    a.load(Size::DW, R2, R0, 32);
    a.store(Size::DW, FP, S_ZMASK, R2);
    a.load(Size::DW, R2, R0, 40);
    a.store(Size::DW, FP, S_LEGON, R2);
    a.alu_imm(Alu::Mul, R1, DIRECTIONS as i32);
    a.alu(Alu::Add, R1, R7);
    a.alu_imm(Alu::Mul, R1, STAGES as i32);
    a.alu_imm(Alu::Add, R1, stage_index(stage) as i32);
    a.store(Size::W, FP, S_INDEX, R1);
    a.map(R1, maps.counts);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, S_INDEX as i32);
    a.call(MAP_LOOKUP);
    a.jump_imm(Jmp::Eq, R0, 0, out);
    a.mov(R6, R0);
}

/// r0 = the `devs` entry of the dev_t at S_DEV (dev_home, then the next
/// entries, DEV_PROBES in all); off to `out` at an empty entry or after
/// the last probe.
fn device(a: &mut Asm, maps: &Maps, out: Label) {
    let found = a.label();
    let mask = (1i64 << maps.dev_bits) - 1;
    a.load(Size::W, R1, FP, S_DEV);
    // dev_t 0 (no disk) marks an empty entry: never a device.
    a.jump_imm(Jmp::Eq, R1, 0, out);
    a.alu_imm(Alu::Mul, R1, DEV_HASH as i32);
    a.alu_imm(Alu::Lsh, R1, 32);
    a.alu_imm(Alu::Rsh, R1, 64 - maps.dev_bits as i32);
    a.store(Size::W, FP, S_DEVIDX, R1);
    for probe in 0..DEV_PROBES {
        if probe > 0 {
            a.load(Size::W, R1, FP, S_DEVIDX);
            a.alu_imm(Alu::Add, R1, 1);
            a.alu_imm(Alu::And, R1, mask as i32);
            a.store(Size::W, FP, S_DEVIDX, R1);
        }
        a.map(R1, maps.devs);
        a.mov(R2, FP);
        a.alu_imm(Alu::Add, R2, S_DEVIDX as i32);
        a.call(MAP_LOOKUP);
        a.jump_imm(Jmp::Eq, R0, 0, out);
        a.load(Size::W, R1, R0, 4);
        a.load(Size::W, R2, FP, S_DEV);
        a.jump_reg(Jmp::Eq, R1, R2, found);
        a.jump_imm(Jmp::Eq, R1, 0, out);
    }
    a.goto(out);
    a.bind(found);
}

/// counts[word] += 1 (r6 the counts; r1 scratch). Per-CPU: no atomics.
pub(super) fn incr(a: &mut Asm, word: usize) {
    a.load(Size::DW, R1, R6, off(word));
    a.alu_imm(Alu::Add, R1, 1);
    a.store(Size::DW, R6, off(word), R1);
}

/// counts[base + idx] += 1 for idx below `buckets`, a power of two (the
/// mask tells the verifier the bound; clobbers idx, r1, r2).
pub(super) fn incr_at(a: &mut Asm, base: usize, idx: Reg, buckets: i32) {
    incr_in_at(a, R6, base, idx, buckets);
}

/// The same in the value `value` points to.
pub(super) fn incr_in_at(a: &mut Asm, value: Reg, base: usize, idx: Reg, buckets: i32) {
    a.alu_imm(Alu::And, idx, buckets - 1);
    a.alu_imm(Alu::Lsh, idx, 3);
    a.mov(R2, value);
    a.alu(Alu::Add, R2, idx);
    a.load(Size::DW, R1, R2, off(base));
    a.alu_imm(Alu::Add, R1, 1);
    a.store(Size::DW, R2, off(base), R1);
}

/// value[word] += src (clobbers r1).
pub(super) fn add_in(a: &mut Asm, value: Reg, word: usize, src: Reg) {
    a.load(Size::DW, R1, value, off(word));
    a.alu(Alu::Add, R1, src);
    a.store(Size::DW, value, off(word), R1);
}

/// out = min(floor(log2(v)), 31), 0 for 0; clobbers v and tmp.
pub(super) fn log2(a: &mut Asm, v: Reg, out: Reg, tmp: Reg) {
    a.mov_imm(out, 0);
    for k in [32, 16, 8, 4, 2, 1] {
        let next = a.label();
        a.mov(tmp, v);
        a.alu_imm(Alu::Rsh, tmp, k);
        a.jump_imm(Jmp::Eq, tmp, 0, next);
        a.mov(v, tmp);
        a.alu_imm(Alu::Add, out, k);
        a.bind(next);
    }
    let capped = a.label();
    a.jump_imm(Jmp::Le, out, 31, capped);
    a.mov_imm(out, 31);
    a.bind(capped);
}

/// r0 = map[the key at `slots.0`], inserted first as `words` zero u64
/// (built at `slots.1`) when it is not there, then off to `have`; falls
/// through with r0 = 0 when the map is full. Another CPU inserting the
/// same key first is as good as inserting it.
pub(super) fn value_or_insert(a: &mut Asm, map: i32, slots: (i16, i16), words: usize, have: Label) {
    let (key, value) = slots;
    lookup(a, map, key);
    a.jump_imm(Jmp::Ne, R0, 0, have);
    for w in 0..words {
        a.store_imm(Size::DW, FP, value + off(w), 0);
    }
    a.map(R1, map);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, key as i32);
    a.mov(R3, FP);
    a.alu_imm(Alu::Add, R3, value as i32);
    a.mov_imm(R4, NOEXIST);
    a.call(MAP_UPDATE);
    lookup(a, map, key);
    a.jump_imm(Jmp::Ne, R0, 0, have);
}

/// r0 = map[the key at stack slot `key`], or 0.
pub(super) fn lookup(a: &mut Asm, map: i32, key: i16) {
    a.map(R1, map);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, key as i32);
    a.call(MAP_LOOKUP);
}

/// Off to `skip` unless the request at the sector in `sector` is in the
/// latency sample (`sampled`; clobbers r1 only).
pub(super) fn sample(a: &mut Asm, maps: &Maps, sector: Reg, skip: Label) {
    if maps.sample_bits == 0 {
        return;
    }
    a.mov(R1, sector);
    a.alu_imm(Alu::Mul, R1, DEV_HASH as i32);
    a.alu_imm(Alu::Lsh, R1, 32);
    a.alu_imm(Alu::Rsh, R1, 64 - maps.sample_bits as i32);
    a.jump_imm(Jmp::Ne, R1, 0, skip);
}

/// S_TIDX = the `timers` entry of the request at (S_DEV, r8 = sector):
/// the top timer_bits of ((sector + dev) × TIMER_HASH) mod 2^32.
pub(super) fn timer_home(a: &mut Asm, maps: &Maps) {
    a.load(Size::W, R1, FP, S_DEV);
    a.alu(Alu::Add, R1, R8);
    a.alu_imm(Alu::Mul, R1, TIMER_HASH);
    a.alu_imm(Alu::Lsh, R1, 32);
    a.alu_imm(Alu::Rsh, R1, 64 - maps.timer_bits as i32);
    a.store(Size::W, FP, S_TIDX, R1);
}

/// r0 = timers[S_TIDX], S_TIDX moved on to the next entry; off to
/// `none` if there is none (never: the index is masked).
pub(super) fn timer_entry(a: &mut Asm, maps: &Maps, none: Label) {
    lookup(a, maps.timers, S_TIDX);
    a.jump_imm(Jmp::Eq, R0, 0, none);
    a.load(Size::W, R1, FP, S_TIDX);
    a.alu_imm(Alu::Add, R1, 1);
    a.alu_imm(Alu::And, R1, (1 << maps.timer_bits) - 1);
    a.store(Size::W, FP, S_TIDX, R1);
}

/// Off to `to` if the `timers` entry `entry` points to is of the device
/// at S_DEV (clobbers r1 and r3).
pub(super) fn timer_of_dev(a: &mut Asm, entry: Reg, to: Label) {
    a.load(Size::W, R1, entry, 20);
    a.load(Size::W, R3, FP, S_DEV);
    a.jump_reg(Jmp::Eq, R1, R3, to);
}
