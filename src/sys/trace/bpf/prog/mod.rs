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

//!
//! One program a file: `count.rs` counts the I/O of block_bio_queue,
//! block_bio_remap and block_rq_issue (and times the issue), `tick.rs`
//! a split or a merge, `complete.rs` a completion's latency. What they
//! share: `maps.rs` (the maps' keys and values, as user space reads them
//! too), `emit.rs` (the helper calls, the stack frame and the
//! instruction sequences every program uses), `fields.rs` (an event's
//! fields, from its record or its typed arguments) and `who.rs` (the
//! submitter counts). This file builds the program of an event.

mod complete;
mod count;
mod emit;
mod fields;
mod maps;
mod tick;
mod who;

pub use maps::{
    dev_home, sampled, Maps, DEVINFO_BYTES, DEV_PROBES, DIRECTIONS, INFLIGHT_KEY_BYTES,
    INFLIGHT_VALUE_BYTES, LAT_KEY_BYTES, LEG_BYTES, LEG_IOS, LEG_KEY_BYTES, LEG_MOD_4K,
    LEG_STRADDLE_4K, LEG_WORDS, STAGES, TIMER_VALUE_BYTES, WHO_BYTES, WHO_CACHE, WHO_CACHED,
    WHO_IOS, WHO_KEY_BYTES, WHO_MOD_4K, WHO_SPLITS, WHO_STRADDLE_4K, WHO_STRADDLE_GRAIN,
    WHO_SUB_PHYSICAL, WHO_WORDS, WORDS, W_ALIGN, W_BYTES, W_IOS, W_MERGES, W_MOD_4K,
    W_PREFLUSH_WRITES, W_SIZE, W_SPLITS, W_STRADDLE_4K, W_STRADDLE_GRAIN, W_SUB_PHYSICAL,
    W_UNATTRIBUTED, W_UNMAPPED, W_UNTIMED, W_ZONE_CROSSING,
};

use super::asm::{Asm, AsmError, Insn, R0};
use super::typed::Typed;
use crate::sys::blocktrace::Stage;
use crate::sys::trace::format::Layout;
use complete::complete;
use count::count;
use fields::Arg;
use tick::tick;

/// Where a program reads its event's fields.
#[derive(Clone, Copy, Debug)]
pub enum Fields<'a> {
    /// The record a perf event built, at its tracefs format's offsets.
    Tracefs(&'a Layout),
    /// The tracepoint's own arguments, typed by the kernel's BTF
    /// (a `tp_btf` program: no record is built).
    Typed(&'a Typed),
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

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests {
    use super::test_support::{layout, MAPS};
    use super::*;
    use crate::sys::trace::format::Event;

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
}
