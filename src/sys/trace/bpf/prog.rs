//! The BPF programs, one per tracepoint, built from the field offsets of
//! its format file. No loops: the log2 and trailing-zero buckets are a
//! fixed ladder of compares, so the verifier of older kernels (Debian's
//! 6.1) takes them as they are. They count what tally.rs counts, into
//! the maps below, and return 0 so that perf records nothing.
//!
//! Maps (created in bpf/mod.rs):
//! - `devs` (array, 2^bits DevInfo): the devices counted, their slot and
//!   grains, filled from user space; a device's entry is found from its
//!   dev_t by a multiplicative hash and at most DEV_PROBES linear probes
//!   (an array lookup, which the verifier inlines, where a hash map would
//!   hash the key and walk a bucket);
//! - `counts` (per-CPU array): WORDS u64 per (slot, direction, stage) at
//!   index `(slot * 4 + direction) * 3 + stage`;
//! - `timers` (array, 2^timer_bits entries of TIMER_VALUE_BYTES) on the
//!   typed path: a timed request takes the entry its (dev_t, sector)
//!   hashes to, or the next, with an atomic compare-and-exchange of the
//!   owner word (BPF_ATOMIC, Linux 5.12, as the typed path's `bi_bdev`
//!   is), and its completion finds it by the same pair and frees it with
//!   an atomic exchange: no hash map update, lock or allocation per
//!   request (the hash map's update was the largest single cost of a
//!   timed request in a profile of 2026-11-27);
//! - `inflight` (hash, (dev_t, sector) → (issue time, latency key)) on
//!   the perf-event path (kernels without BTF, which may predate atomics);
//! - `lat` (per-CPU hash, (latency key, µs bucket) → count), the latency
//!   key being `((slot * 4 + direction) * 2 + straddles) * 32 + size bucket`;
//! - `who` (per-CPU hash, (slot, direction, stage, cgroup id, comm) →
//!   WHO_WORDS u64): the submitters, counted where a bio is submitted
//!   (block_bio_queue, block_bio_remap and block_split run in the task
//!   that called submit_bio: submit_bio_noacct in block/blk-core.c). A
//!   full map is counted in `counts` (W_UNATTRIBUTED), as are requests a
//!   full `inflight` (or both `timers` entries taken) or `lat` leaves
//!   untimed (W_UNTIMED);
//! - `whocache` (per-CPU array, WHO_CACHE entries of the key and the
//!   WHO_WORDS, typed path only): each CPU's recent submitters, so that
//!   a bio of one already seen costs an array entry and four compares,
//!   not a hash of its 32-byte key. A key first counted in `who` (so the
//!   submitters stay bounded by that map's size) then takes the entry it
//!   hashes to when that is free (an atomic compare-and-exchange of its
//!   first word, which carries WHO_CACHED) and keeps it; a key whose entry
//!   another holds goes on being counted in `who`. Nothing moves between
//!   the two, so user space sums both and every count is exact;
//! - `legs` (per-CPU hash, (upper slot, lower dev_t, direction) →
//!   LEG_WORDS u64): a device's bios as block_bio_remap hands them to the
//!   device below (a dm table's leg, an md member, a partition's disk),
//!   counted at the sector they land on there; a full map is counted in
//!   `counts` (W_UNMAPPED).

use super::asm::{
    Alu, Asm, AsmError, Insn, Jmp, Label, Reg, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9,
};
use super::typed::Typed;
use crate::sys::blocktrace::Stage;
use crate::sys::trace::format::{Layout, Slot};

/// Word offsets in a `counts` value.
pub const W_IOS: usize = 0;
pub const W_BYTES: usize = 1;
pub const W_STRADDLE_4K: usize = 2;
pub const W_STRADDLE_GRAIN: usize = 3;
pub const W_SUB_PHYSICAL: usize = 4;
pub const W_SPLITS: usize = 5;
pub const W_MERGES: usize = 6;
pub const W_UNATTRIBUTED: usize = 7;
pub const W_SIZE: usize = 8;
pub const W_ALIGN: usize = 40;
pub const W_MOD_4K: usize = 72;
pub const W_UNTIMED: usize = 80;
pub const W_PREFLUSH_WRITES: usize = 81;
pub const W_ZONE_CROSSING: usize = 82;
pub const W_UNMAPPED: usize = 83;
pub const WORDS: usize = 84;

/// Word offsets in a `legs` value.
pub const LEG_IOS: usize = 0;
pub const LEG_BYTES: usize = 1;
pub const LEG_STRADDLE_4K: usize = 2;
pub const LEG_MOD_4K: usize = 3;
pub const LEG_WORDS: usize = 11;
/// legs key: upper slot (u32), lower dev_t (u32), direction (u32), 4
/// zero bytes.
pub const LEG_KEY_BYTES: usize = 16;

/// Word offsets in a `who` value: a submitter's counts.
pub const WHO_IOS: usize = 0;
pub const WHO_BYTES: usize = 1;
pub const WHO_STRADDLE_4K: usize = 2;
pub const WHO_STRADDLE_GRAIN: usize = 3;
pub const WHO_SUB_PHYSICAL: usize = 4;
pub const WHO_SPLITS: usize = 5;
pub const WHO_MOD_4K: usize = 6;
pub const WHO_WORDS: usize = 14;
/// who key: slot (u32), direction (u8), stage (u8), 2 zero bytes,
/// cgroup id (u64), comm (16 bytes).
pub const WHO_KEY_BYTES: usize = 32;
/// Entries of `whocache` (per CPU): the key, then WHO_WORDS u64.
pub const WHO_CACHE: u32 = 1 << WHO_CACHE_BITS;
const WHO_CACHE_BITS: i32 = 6;
/// The bit of a `whocache` entry's first word (byte 6 of the key, a zero
/// byte of a `who` key) that says the entry is taken.
pub const WHO_CACHED: u64 = 1 << 48;
/// The multiplier of the `whocache` hash.
const WHO_HASH: i32 = 0x27D4_EB2Fu32 as i32;

pub const DIRECTIONS: u32 = 4;
pub const STAGES: u32 = 3;

/// DevInfo: slot (u32) at 0, dev_t (u32) at 4 (0: an empty entry), grain
/// bytes (u64) at 8, physical bytes at 16, grain - 1 (u64) at 24 where the
/// grain is a power of two, else 0: a mask where one will do, since a
/// division costs tens of cycles; at 32 the zone size in sectors - 1
/// (u64) of a zoned device, else 0: on a device that is not zoned an event
/// costs three instructions more (the mask copied, the direction tested)
/// and a write two more (the mask tested).
pub const DEVINFO_BYTES: usize = 48;
/// Probes of the `devs` table at most.
pub const DEV_PROBES: u32 = 4;
/// The multiplier of the `devs` table's hash and of the latency sample's
/// (Knuth's, 2^32 / phi).
const DEV_HASH: u32 = 0x9E37_79B1;

/// Whether a request at `sector` is timed when one in 2^bits are: the
/// top `bits` of (sector × DEV_HASH) mod 2^32 are zero. Issue and
/// completion decide alike from the sector alone, so a request not in
/// the sample costs its completion no lookup.
pub fn sampled(sector: u64, bits: u32) -> bool {
    bits == 0 || (sector as u32).wrapping_mul(DEV_HASH) >> (32 - bits) == 0
}

/// Where a dev_t's search starts in a `devs` table of 2^bits entries:
/// the top `bits` of (dev × DEV_HASH) mod 2^32.
pub fn dev_home(dev: u32, bits: u32) -> u32 {
    dev.wrapping_mul(DEV_HASH) >> (32 - bits)
}
/// inflight key: dev_t (u32), 4 zero bytes, sector (u64).
pub const INFLIGHT_KEY_BYTES: usize = 16;
/// inflight value: issue time in ns (u64), latency key (u32), 4 zero bytes.
pub const INFLIGHT_VALUE_BYTES: usize = 16;
/// timers value: owner (the request's sector + 1, 0 when free) at 0,
/// issue time in ns (u64) at 8, latency key (u32) at 16, dev_t (u32) at
/// 20.
pub const TIMER_VALUE_BYTES: usize = 24;
/// Entries of `timers` a request may take: the one its (dev_t, sector)
/// hashes to and the next.
const TIMER_PROBES: i32 = 2;
/// The multiplier of the `timers` hash (MurmurHash3's, another than the
/// sample's, so the sampled requests spread over the whole table).
const TIMER_HASH: i32 = 0x85EB_CA6Bu32 as i32;
/// lat key: latency key (u32), µs bucket (u32).
pub const LAT_KEY_BYTES: usize = 8;

/// Helper function ids (enum bpf_func_id).
const MAP_LOOKUP: i32 = 1;
const MAP_UPDATE: i32 = 2;
const MAP_DELETE: i32 = 3;
const KTIME_GET_NS: i32 = 5;
const GET_CURRENT_COMM: i32 = 16;
const GET_CURRENT_CGROUP_ID: i32 = 80;
/// BPF_NOEXIST.
const NOEXIST: i32 = 1;

// The stack frame (offsets from r10).
const S_DEV: i16 = -8;
const S_INDEX: i16 = -16;
const S_GRAIN: i16 = -24;
const S_PHYS: i16 = -32;
const S_SLOT: i16 = -40;
const S_SIZEB: i16 = -48;
const S_STRADDLE: i16 = -56;
const S_IKEY: i16 = -72;
const S_IVALUE: i16 = -88;
const S_LKEY: i16 = -96;
const S_ONE: i16 = -104;
const S_X4K: i16 = -112;
const S_SUBPHYS: i16 = -120;
const S_EMPTYW: i16 = -128;
const S_WKEY: i16 = -160;
const S_DEVIDX: i16 = -164;
const S_GMASK: i16 = -176;
const S_LEGON: i16 = -184;
/// A request's `timers` index.
const S_TIDX: i16 = -196;
/// A submitter's `whocache` index.
const S_CIDX: i16 = -200;
/// The free `whocache` entry a new submitter may take (0: none), and the
/// `who` value it was counted in meanwhile.
const S_CFREE: i16 = -208;
const S_WHOV: i16 = -216;
const S_ZMASK: i16 = -280;
const S_LDEV: i16 = -284;
const S_LSECT: i16 = -296;
const S_LEGKEY: i16 = -312;
const S_LEGVALUE: i16 = -400;
/// WHO_WORDS u64 below the legs' value: [-512, -400).
const S_WVALUE: i16 = -512;

/// The maps' fds, as the programs name them.
#[derive(Clone, Copy, Debug)]
pub struct Maps {
    pub devs: i32,
    pub counts: i32,
    /// The perf-event path's `inflight` hash, or -1.
    pub inflight: i32,
    /// The typed path's `timers` array, or -1.
    pub timers: i32,
    /// `timers` holds 2^timer_bits entries.
    pub timer_bits: u32,
    pub lat: i32,
    pub who: i32,
    /// The typed path's `whocache`, or -1.
    pub whocache: i32,
    pub legs: i32,
    /// `devs` holds 2^dev_bits entries.
    pub dev_bits: u32,
    /// One request in 2^sample_bits is timed (`sampled`).
    pub sample_bits: u32,
}

/// Where a program reads its event's fields.
#[derive(Clone, Copy, Debug)]
pub enum Fields<'a> {
    /// The record a perf event built, at its tracefs format's offsets.
    Tracefs(&'a Layout),
    /// The tracepoint's own arguments, typed by the kernel's BTF
    /// (a `tp_btf` program: no record is built).
    Typed(&'a Typed),
}

/// What an event's arguments are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arg {
    /// A bio (block_bio_queue, the merges).
    Bio,
    /// block_bio_remap, counted at its upper device and sector.
    Remap,
    /// block_split: a bio, counted without a length.
    Split,
    /// A request (block_rq_issue, block_rq_complete).
    Request,
}

/// What a program does with its event.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Count the I/O at this stage (block_bio_queue, block_bio_remap
    /// counted at its upper device, block_rq_issue, which also times it).
    Count(Stage),
    Split,
    Merge,
    /// block_rq_complete: the time since the issue into `lat`.
    Complete,
}

pub fn stage_index(s: Stage) -> u32 {
    match s {
        Stage::Queue => 0,
        Stage::RemapFrom => 1,
        Stage::Issue => 2,
    }
}

fn off(word: usize) -> i16 {
    (word * 8) as i16
}

fn slot_off(s: Slot) -> i16 {
    s.offset as i16
}

/// The program of one event.
pub fn program(kind: Kind, f: Fields, maps: &Maps) -> Result<Vec<Insn>, AsmError> {
    let mut a = Asm::new();
    let out = a.label();
    match kind {
        Kind::Count(stage) => count(&mut a, stage, f, maps, out),
        Kind::Split => tick(&mut a, W_SPLITS, Arg::Split, f, maps, out),
        Kind::Merge => tick(&mut a, W_MERGES, Arg::Bio, f, maps, out),
        Kind::Complete => complete(&mut a, f, maps, out),
    }
    a.bind(out);
    a.mov_imm(R0, 0);
    a.exit();
    a.finish()
}

/// r8 = sector; r9 = sectors; the dev_t at S_DEV; r7 = the direction
/// (0 read, 1 write, 2 discard, 3 flush), an empty write marked at
/// S_EMPTYW; or off to `out`. The remap is read at its upper device and
/// sector; a split has no length (r9 = 1).
fn fields(a: &mut Asm, f: Fields, arg: Arg, out: Label) {
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
fn disk_devt(a: &mut Asm, t: &Typed) {
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

/// r6 = the counts of (the device at S_DEV, direction r7, stage), with
/// its slot and grains on the stack; off to `out` for an unknown device.
fn counters(a: &mut Asm, stage: Stage, maps: &Maps, out: Label) {
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
fn incr(a: &mut Asm, word: usize) {
    a.load(Size::DW, R1, R6, off(word));
    a.alu_imm(Alu::Add, R1, 1);
    a.store(Size::DW, R6, off(word), R1);
}

/// counts[base + idx] += 1 for idx below `buckets`, a power of two (the
/// mask tells the verifier the bound; clobbers idx, r1, r2).
fn incr_at(a: &mut Asm, base: usize, idx: Reg, buckets: i32) {
    incr_in_at(a, R6, base, idx, buckets);
}

/// The same in the value `value` points to.
fn incr_in_at(a: &mut Asm, value: Reg, base: usize, idx: Reg, buckets: i32) {
    a.alu_imm(Alu::And, idx, buckets - 1);
    a.alu_imm(Alu::Lsh, idx, 3);
    a.mov(R2, value);
    a.alu(Alu::Add, R2, idx);
    a.load(Size::DW, R1, R2, off(base));
    a.alu_imm(Alu::Add, R1, 1);
    a.store(Size::DW, R2, off(base), R1);
}

/// value[word] += src (clobbers r1).
fn add_in(a: &mut Asm, value: Reg, word: usize, src: Reg) {
    a.load(Size::DW, R1, value, off(word));
    a.alu(Alu::Add, R1, src);
    a.store(Size::DW, value, off(word), R1);
}

/// out = min(floor(log2(v)), 31), 0 for 0; clobbers v and tmp.
fn log2(a: &mut Asm, v: Reg, out: Reg, tmp: Reg) {
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

fn count(a: &mut Asm, stage: Stage, f: Fields, maps: &Maps, out: Label) {
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

/// r0 = map[the key at `slots.0`], inserted first as `words` zero u64
/// (built at `slots.1`) when it is not there, then off to `have`; falls
/// through with r0 = 0 when the map is full. Another CPU inserting the
/// same key first is as good as inserting it.
fn value_or_insert(a: &mut Asm, map: i32, slots: (i16, i16), words: usize, have: Label) {
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
fn lookup(a: &mut Asm, map: i32, key: i16) {
    a.map(R1, map);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, key as i32);
    a.call(MAP_LOOKUP);
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

/// Off to `skip` unless the request at the sector in `sector` is in the
/// latency sample (`sampled`; clobbers r1 only).
fn sample(a: &mut Asm, maps: &Maps, sector: Reg, skip: Label) {
    if maps.sample_bits == 0 {
        return;
    }
    a.mov(R1, sector);
    a.alu_imm(Alu::Mul, R1, DEV_HASH as i32);
    a.alu_imm(Alu::Lsh, R1, 32);
    a.alu_imm(Alu::Rsh, R1, 64 - maps.sample_bits as i32);
    a.jump_imm(Jmp::Ne, R1, 0, skip);
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

/// S_TIDX = the `timers` entry of the request at (S_DEV, r8 = sector):
/// the top timer_bits of ((sector + dev) × TIMER_HASH) mod 2^32.
fn timer_home(a: &mut Asm, maps: &Maps) {
    a.load(Size::W, R1, FP, S_DEV);
    a.alu(Alu::Add, R1, R8);
    a.alu_imm(Alu::Mul, R1, TIMER_HASH);
    a.alu_imm(Alu::Lsh, R1, 32);
    a.alu_imm(Alu::Rsh, R1, 64 - maps.timer_bits as i32);
    a.store(Size::W, FP, S_TIDX, R1);
}

/// r0 = timers[S_TIDX], S_TIDX moved on to the next entry; off to
/// `none` if there is none (never: the index is masked).
fn timer_entry(a: &mut Asm, maps: &Maps, none: Label) {
    lookup(a, maps.timers, S_TIDX);
    a.jump_imm(Jmp::Eq, R0, 0, none);
    a.load(Size::W, R1, FP, S_TIDX);
    a.alu_imm(Alu::Add, R1, 1);
    a.alu_imm(Alu::And, R1, (1 << maps.timer_bits) - 1);
    a.store(Size::W, FP, S_TIDX, R1);
}

/// Off to `to` if the `timers` entry `entry` points to is of the device
/// at S_DEV (clobbers r1 and r3).
fn timer_of_dev(a: &mut Asm, entry: Reg, to: Label) {
    a.load(Size::W, R1, entry, 20);
    a.load(Size::W, R3, FP, S_DEV);
    a.jump_reg(Jmp::Eq, R1, R3, to);
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

/// r0 = the `who` value of the current task at (the slot at S_SLOT,
/// direction r7, stage), inserted at zero the first time. When the map is
/// full: counts[W_UNATTRIBUTED] += 1 (r6 the counts) if `count_full`,
/// and off to `out`.
fn who_value(a: &mut Asm, stage: Stage, maps: &Maps, count_full: bool, out: Label) {
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
fn attribute(a: &mut Asm, stage: Stage, maps: &Maps, out: Label) {
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

/// A split or a merge of the device's queued I/O; a split is counted for
/// its submitter too.
fn tick(a: &mut Asm, word: usize, arg: Arg, f: Fields, maps: &Maps, out: Label) {
    fields(a, f, arg, out);
    counters(a, Stage::Queue, maps, out);
    incr(a, word);
    if word == W_SPLITS {
        who_value(a, Stage::Queue, maps, false, out);
        a.mov_imm(R3, 1);
        add_in(a, R0, WHO_SPLITS, R3);
    }
}

/// The request's latency into `lat`. A request outside the latency
/// sample (`sampled`, from its sector alone) is left before anything
/// else is read: its device is two pointers away on the typed path.
fn complete(a: &mut Asm, f: Fields, maps: &Maps, out: Label) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::trace::format::{self, Event};

    /// The format files of Linux 6.18 (fuzz/corpus/trace_format).
    fn layout(e: Event) -> Layout {
        let text = match e {
            Event::BioQueue => include_str!("../../../../fuzz/corpus/trace_format/block_bio_queue"),
            Event::BioRemap => include_str!("../../../../fuzz/corpus/trace_format/block_bio_remap"),
            Event::Split => include_str!("../../../../fuzz/corpus/trace_format/block_split"),
            Event::BackMerge => {
                include_str!("../../../../fuzz/corpus/trace_format/block_bio_backmerge")
            }
            Event::FrontMerge => {
                include_str!("../../../../fuzz/corpus/trace_format/block_bio_frontmerge")
            }
            Event::RqIssue => include_str!("../../../../fuzz/corpus/trace_format/block_rq_issue"),
            Event::RqComplete => {
                include_str!("../../../../fuzz/corpus/trace_format/block_rq_complete")
            }
        };
        format::layout(e, &format::parse(text).unwrap()).unwrap()
    }

    const MAPS: Maps = Maps {
        devs: 3,
        counts: 4,
        inflight: 5,
        timers: 9,
        timer_bits: 14,
        lat: 6,
        who: 7,
        whocache: 10,
        legs: 8,
        dev_bits: 4,
        sample_bits: 3,
    };

    #[test]
    fn every_program_assembles_without_a_loop() {
        let kinds = [
            (Event::BioQueue, Kind::Count(Stage::Queue)),
            (Event::BioRemap, Kind::Count(Stage::RemapFrom)),
            (Event::RqIssue, Kind::Count(Stage::Issue)),
            (Event::Split, Kind::Split),
            (Event::BackMerge, Kind::Merge),
            (Event::RqComplete, Kind::Complete),
        ];
        for (e, k) in kinds {
            let code = program(k, Fields::Tracefs(&layout(e)), &MAPS).unwrap();
            assert!(code.len() < 512, "{e:?}: {} instructions", code.len());
            let jumps = code
                .iter()
                .filter(|i| i.code & 0x07 == 0x05 && i.code != 0x85 && i.code != 0x95);
            assert!(jumps.clone().count() > 0);
            for j in jumps {
                assert!(j.off >= 0, "{e:?}: a backward jump is a loop");
            }
            let last = code.last().unwrap();
            assert_eq!(last.code, 0x95, "{e:?} ends in exit");
        }
    }

    #[test]
    fn one_request_in_2_to_the_bits_is_timed() {
        for bits in [0, 1, 3, 5] {
            let n = (0..1u64 << 16).filter(|s| sampled(s * 8 + 1, bits)).count();
            let want = (1usize << 16) >> bits;
            assert!(n.abs_diff(want) * 50 <= want, "{bits}: {n} of 65536");
        }
        assert!(sampled(12345, 0));
    }

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
