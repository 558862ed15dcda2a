//! The program of block_rq_complete: the time since the request's issue
//! into `lat` by µs bucket, for a request in the latency sample, its
//! `timers` entry (typed path) or `inflight` key (perf-event path) freed.

use super::emit::{
    incr, log2, sample, slot_off, timer_entry, timer_home, timer_of_dev, KTIME_GET_NS, MAP_DELETE,
    MAP_LOOKUP, MAP_UPDATE, NOEXIST, S_DEV, S_IKEY, S_INDEX, S_IVALUE, S_LKEY, S_ONE,
};
use super::fields::disk_devt;
use super::maps::{stage_index, Maps, STAGES, TIMER_PROBES, W_UNTIMED};
use super::Fields;
use crate::sys::blocktrace::Stage;
use crate::sys::trace::bpf::asm::{Alu, Asm, Jmp, Label, Size, FP, R0, R1, R2, R3, R4, R5, R6, R8};

/// The request's latency into `lat`. A request outside the latency
/// sample (`sampled`, from its sector alone) is left before anything
/// else is read: its device is two pointers away on the typed path.
pub(super) fn complete(a: &mut Asm, f: Fields, maps: &Maps, out: Label) {
    a.mov(R6, R1);
    match f {
        Fields::Tracefs(l) => {
            a.load(Size::DW, R1, R6, slot_off(l.sector));
            a.store(Size::DW, FP, S_IKEY + 8, R1);
            sample(a, maps, R1, out);
            a.load(Size::W, R1, R6, slot_off(l.dev));
            a.store(Size::W, FP, S_DEV, R1);
        }
        Fields::Typed(t) => {
            a.load(Size::DW, R2, R6, 0);
            a.load(Size::DW, R8, R2, t.rq_sector as i16);
            sample(a, maps, R8, out);
            a.load(Size::DW, R3, R2, t.rq_q as i16);
            a.load(Size::DW, R3, R3, t.q_disk as i16);
            disk_devt(a, t);
            take_timer(a, maps, out);
        }
    }
    if let Fields::Tracefs(_) = f {
        a.load(Size::W, R1, FP, S_DEV);
        a.store(Size::W, FP, S_IKEY, R1);
        a.store_imm(Size::W, FP, S_IKEY + 4, 0);
        take_inflight(a, maps, out);
    }
    a.call(KTIME_GET_NS);
    a.load(Size::DW, R1, FP, S_IVALUE);
    a.alu(Alu::Sub, R0, R1);
    a.alu_imm(Alu::Div, R0, 1000);
    a.mov(R3, R0);
    log2(a, R3, R4, R5);
    a.store(Size::W, FP, S_LKEY + 4, R4);
    bump_lat(a, maps, out);
}

/// The `timers` entry the request at (S_DEV, r8 = sector) owns read into
/// S_IVALUE (time) and S_LKEY (key), and freed with an atomic exchange
/// (after the reads: it is fully ordered); off to `out` when the request
/// was not timed.
fn take_timer(a: &mut Asm, maps: &Maps, out: Label) {
    let found = a.label();
    timer_home(a, maps);
    a.mov(R3, R8);
    a.alu_imm(Alu::Add, R3, 1);
    a.store(Size::DW, FP, S_IKEY + 8, R3);
    for _ in 0..TIMER_PROBES {
        let next = a.label();
        timer_entry(a, maps, out);
        a.load(Size::DW, R1, R0, 0);
        a.load(Size::DW, R2, FP, S_IKEY + 8);
        a.jump_reg(Jmp::Ne, R1, R2, next);
        timer_of_dev(a, R0, found);
        a.bind(next);
    }
    a.goto(out);
    a.bind(found);
    a.load(Size::DW, R1, R0, 8);
    a.store(Size::DW, FP, S_IVALUE, R1);
    a.load(Size::W, R1, R0, 16);
    a.store(Size::W, FP, S_LKEY, R1);
    a.mov_imm(R1, 0);
    a.xchg(R0, 0, R1);
}

/// inflight[S_IKEY] read into S_IVALUE (time) and S_LKEY (key), and
/// deleted; off to `out` when the request was not timed.
fn take_inflight(a: &mut Asm, maps: &Maps, out: Label) {
    a.map(R1, maps.inflight);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, S_IKEY as i32);
    a.call(MAP_LOOKUP);
    a.jump_imm(Jmp::Eq, R0, 0, out);
    a.load(Size::DW, R1, R0, 0);
    a.store(Size::DW, FP, S_IVALUE, R1);
    a.load(Size::W, R1, R0, 8);
    a.store(Size::W, FP, S_LKEY, R1);
    a.map(R1, maps.inflight);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, S_IKEY as i32);
    a.call(MAP_DELETE);
}

/// lat[S_LKEY] += 1, inserting it at 1 the first time.
fn bump_lat(a: &mut Asm, maps: &Maps, out: Label) {
    let insert = a.label();
    lookup_lat(a, maps);
    a.jump_imm(Jmp::Eq, R0, 0, insert);
    bump_r0(a);
    a.goto(out);
    a.bind(insert);
    a.store_imm(Size::DW, FP, S_ONE, 1);
    a.map(R1, maps.lat);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, S_LKEY as i32);
    a.mov(R3, FP);
    a.alu_imm(Alu::Add, R3, S_ONE as i32);
    a.mov_imm(R4, NOEXIST);
    a.call(MAP_UPDATE);
    a.jump_imm(Jmp::Eq, R0, 0, out);
    // Another CPU inserted it first: count into it.
    let full = a.label();
    lookup_lat(a, maps);
    a.jump_imm(Jmp::Eq, R0, 0, full);
    bump_r0(a);
    a.goto(out);
    // The latency table is full: the request goes untimed, counted in
    // counts[(slot * 4 + direction) * 3 + issue], the latency key / 64
    // being slot * 4 + direction.
    a.bind(full);
    a.load(Size::W, R1, FP, S_LKEY);
    a.alu_imm(Alu::Rsh, R1, 6);
    a.alu_imm(Alu::Mul, R1, STAGES as i32);
    a.alu_imm(Alu::Add, R1, stage_index(Stage::Issue) as i32);
    a.store(Size::W, FP, S_INDEX, R1);
    a.map(R1, maps.counts);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, S_INDEX as i32);
    a.call(MAP_LOOKUP);
    a.jump_imm(Jmp::Eq, R0, 0, out);
    a.mov(R6, R0);
    incr(a, W_UNTIMED);
}

fn lookup_lat(a: &mut Asm, maps: &Maps) {
    a.map(R1, maps.lat);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, S_LKEY as i32);
    a.call(MAP_LOOKUP);
}

fn bump_r0(a: &mut Asm) {
    a.load(Size::DW, R1, R0, 0);
    a.alu_imm(Alu::Add, R1, 1);
    a.store(Size::DW, R0, 0, R1);
}
