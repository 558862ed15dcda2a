//! The maps' keys and values as the programs write them and user space
//! reads them back (bpf/mod.rs), the hashes that place an entry, and the
//! maps' fds as the programs name them.

use crate::sys::blocktrace::Stage;

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
pub(super) const WHO_CACHE_BITS: i32 = 6;
/// The bit of a `whocache` entry's first word (byte 6 of the key, a zero
/// byte of a `who` key) that says the entry is taken.
pub const WHO_CACHED: u64 = 1 << 48;
/// The multiplier of the `whocache` hash.
pub(super) const WHO_HASH: i32 = 0x27D4_EB2Fu32 as i32;

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
pub(super) const DEV_HASH: u32 = 0x9E37_79B1;

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
pub(super) const TIMER_PROBES: i32 = 2;
/// The multiplier of the `timers` hash (MurmurHash3's, another than the
/// sample's, so the sampled requests spread over the whole table).
pub(super) const TIMER_HASH: i32 = 0x85EB_CA6Bu32 as i32;
/// lat key: latency key (u32), µs bucket (u32).
pub const LAT_KEY_BYTES: usize = 8;

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

pub(super) fn stage_index(s: Stage) -> u32 {
    match s {
        Stage::Queue => 0,
        Stage::RemapFrom => 1,
        Stage::Issue => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_in_2_to_the_bits_is_timed() {
        for bits in [0, 1, 3, 5] {
            let n = (0..1u64 << 16).filter(|s| sampled(s * 8 + 1, bits)).count();
            let want = (1usize << 16) >> bits;
            assert!(n.abs_diff(want) * 50 <= want, "{bits}: {n} of 65536");
        }
        assert!(sampled(12345, 0));
    }
}
