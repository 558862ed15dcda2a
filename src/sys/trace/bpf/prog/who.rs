//! The submitters: an I/O counted for the task that submitted it, in
//! `who`, through this CPU's `whocache` on the typed path.

use super::emit::{
    add_in, incr, incr_in_at, lookup, off, value_or_insert, GET_CURRENT_CGROUP_ID,
    GET_CURRENT_COMM, S_CFREE, S_CIDX, S_SLOT, S_STRADDLE, S_SUBPHYS, S_WHOV, S_WKEY, S_WVALUE,
    S_X4K,
};
use super::maps::{
    stage_index, Maps, WHO_BYTES, WHO_CACHE_BITS, WHO_HASH, WHO_IOS, WHO_KEY_BYTES, WHO_MOD_4K,
    WHO_STRADDLE_4K, WHO_STRADDLE_GRAIN, WHO_SUB_PHYSICAL, WHO_WORDS, W_UNATTRIBUTED,
};
use crate::sys::blocktrace::Stage;
use crate::sys::trace::bpf::asm::{Alu, Asm, Jmp, Label, Size, FP, R0, R1, R2, R3, R4, R7, R8, R9};

/// r0 = the `who` value of the current task at (the slot at S_SLOT,
/// direction r7, stage), inserted at zero the first time. When the map is
/// full: counts[W_UNATTRIBUTED] += 1 (r6 the counts) if `count_full`,
/// and off to `out`.
pub(super) fn who_value(a: &mut Asm, stage: Stage, maps: &Maps, count_full: bool, out: Label) {
    let have = a.label();
    a.load(Size::DW, R1, FP, S_SLOT);
    a.store(Size::W, FP, S_WKEY, R1);
    a.mov(R1, R7);
    a.alu_imm(Alu::Or, R1, (stage_index(stage) << 8) as i32);
    a.store(Size::W, FP, S_WKEY + 4, R1);
    a.call(GET_CURRENT_CGROUP_ID);
    a.store(Size::DW, FP, S_WKEY + 8, R0);
    a.mov(R1, FP);
    a.alu_imm(Alu::Add, R1, (S_WKEY + 16) as i32);
    a.mov_imm(R2, 16);
    a.call(GET_CURRENT_COMM);
    let cache = maps.whocache >= 0;
    if cache {
        cached_who(a, maps, have);
    }
    let counted = a.label();
    value_or_insert(a, maps.who, (S_WKEY, S_WVALUE), WHO_WORDS, counted);
    if count_full {
        incr(a, W_UNATTRIBUTED);
    }
    a.goto(out);
    a.bind(counted);
    if cache {
        take_cached_who(a);
    }
    a.bind(have);
}

/// r3 = the first word of the key at S_WKEY, marked as cached.
fn marked_who_word(a: &mut Asm) {
    a.mov_imm(R3, 1);
    a.alu_imm(Alu::Lsh, R3, 48);
    a.load(Size::DW, R2, FP, S_WKEY);
    a.alu(Alu::Or, R3, R2);
}

/// r0 = the counts of the key at S_WKEY in this CPU's `whocache` entry it
/// hashes to, then off to `have`; falls through when another key holds
/// the entry, or with the entry at S_CFREE when it is free.
fn cached_who(a: &mut Asm, maps: &Maps, have: Label) {
    let (free, other) = (a.label(), a.label());
    a.store_imm(Size::DW, FP, S_CFREE, 0);
    a.load(Size::DW, R1, FP, S_WKEY);
    for w in 1..4 {
        a.load(Size::DW, R2, FP, S_WKEY + off(w));
        a.alu(Alu::Xor, R1, R2);
    }
    a.alu_imm(Alu::Mul, R1, WHO_HASH);
    a.alu_imm(Alu::Lsh, R1, 32);
    a.alu_imm(Alu::Rsh, R1, 64 - WHO_CACHE_BITS);
    a.store(Size::W, FP, S_CIDX, R1);
    lookup(a, maps.whocache, S_CIDX);
    a.jump_imm(Jmp::Eq, R0, 0, other);
    marked_who_word(a);
    a.load(Size::DW, R1, R0, 0);
    a.jump_imm(Jmp::Eq, R1, 0, free);
    a.jump_reg(Jmp::Ne, R1, R3, other);
    for w in 1..4 {
        a.load(Size::DW, R1, R0, off(w));
        a.load(Size::DW, R2, FP, S_WKEY + off(w));
        a.jump_reg(Jmp::Ne, R1, R2, other);
    }
    a.alu_imm(Alu::Add, R0, WHO_KEY_BYTES as i32);
    a.goto(have);
    a.bind(free);
    a.store(Size::DW, FP, S_CFREE, R0);
    a.bind(other);
}

/// The free `whocache` entry at S_CFREE, if any, taken for the key at
/// S_WKEY (now counted in `who`, whose value r0 is and stays): its first
/// word first, atomically (a program nested on this CPU may take it
/// meanwhile), then the rest of the key.
fn take_cached_who(a: &mut Asm) {
    let (taken, done) = (a.label(), a.label());
    a.load(Size::DW, R2, FP, S_CFREE);
    a.jump_imm(Jmp::Eq, R2, 0, done);
    a.store(Size::DW, FP, S_WHOV, R0);
    marked_who_word(a);
    a.load(Size::DW, R2, FP, S_CFREE);
    a.mov_imm(R0, 0);
    a.cmpxchg(R2, 0, R3);
    a.jump_imm(Jmp::Ne, R0, 0, taken);
    for w in 1..4 {
        a.load(Size::DW, R1, FP, S_WKEY + off(w));
        a.store(Size::DW, R2, off(w), R1);
    }
    a.bind(taken);
    a.load(Size::DW, R0, FP, S_WHOV);
    a.bind(done);
}

/// The I/O counted for its submitter: r8 sector, r9 sectors, the shape's
/// flags on the stack.
pub(super) fn attribute(a: &mut Asm, stage: Stage, maps: &Maps, out: Label) {
    who_value(a, stage, maps, true, out);
    a.mov_imm(R3, 1);
    add_in(a, R0, WHO_IOS, R3);
    a.mov(R3, R9);
    a.alu_imm(Alu::Lsh, R3, 9);
    add_in(a, R0, WHO_BYTES, R3);
    for (flag, word) in [
        (S_X4K, WHO_STRADDLE_4K),
        (S_STRADDLE, WHO_STRADDLE_GRAIN),
        (S_SUBPHYS, WHO_SUB_PHYSICAL),
    ] {
        a.load(Size::DW, R3, FP, flag);
        add_in(a, R0, word, R3);
    }
    a.jump_imm(Jmp::Eq, R9, 0, out);
    a.mov(R4, R8);
    incr_in_at(a, R0, WHO_MOD_4K, R4, 8);
}
