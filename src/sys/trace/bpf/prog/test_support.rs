//! Test helpers the program files share: the format files of Linux 6.18
//! read into layouts, and map fds to build programs with.

use super::Maps;
use crate::sys::trace::format::{self, Event, Layout};

/// The format files of Linux 6.18 (fuzz/corpus/trace_format).
pub(super) fn layout(e: Event) -> Layout {
    let text = match e {
        Event::BioQueue => include_str!("../../../../../fuzz/corpus/trace_format/block_bio_queue"),
        Event::BioRemap => include_str!("../../../../../fuzz/corpus/trace_format/block_bio_remap"),
        Event::Split => include_str!("../../../../../fuzz/corpus/trace_format/block_split"),
        Event::BackMerge => {
            include_str!("../../../../../fuzz/corpus/trace_format/block_bio_backmerge")
        }
        Event::FrontMerge => {
            include_str!("../../../../../fuzz/corpus/trace_format/block_bio_frontmerge")
        }
        Event::RqIssue => include_str!("../../../../../fuzz/corpus/trace_format/block_rq_issue"),
        Event::RqComplete => {
            include_str!("../../../../../fuzz/corpus/trace_format/block_rq_complete")
        }
    };
    format::layout(e, &format::parse(text).unwrap()).unwrap()
}

pub(super) const MAPS: Maps = Maps {
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
