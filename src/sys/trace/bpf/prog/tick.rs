//! The program of block_split and the merges (block_bio_backmerge,
//! block_bio_frontmerge): a tick of the device's queued I/O, and a split
//! counted for its submitter.

use super::emit::{add_in, counters, incr};
use super::fields::{fields, Arg};
use super::maps::{Maps, WHO_SPLITS, W_SPLITS};
use super::who::who_value;
use super::Fields;
use crate::sys::blocktrace::Stage;
use crate::sys::trace::bpf::asm::{Asm, Label, R0, R3};

/// A split or a merge of the device's queued I/O; a split is counted for
/// its submitter too.
pub(super) fn tick(a: &mut Asm, word: usize, arg: Arg, f: Fields, maps: &Maps, out: Label) {
    fields(a, f, arg, out);
    counters(a, Stage::Queue, maps, out);
    incr(a, word);
    if word == W_SPLITS {
        who_value(a, Stage::Queue, maps, false, out);
        a.mov_imm(R3, 1);
        add_in(a, R0, WHO_SPLITS, R3);
    }
}
