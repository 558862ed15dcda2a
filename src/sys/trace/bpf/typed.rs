//! What the typed raw tracepoint programs read, found in the kernel's BTF.
//! A `tp_btf` program runs on the tracepoint's own arguments (a `struct
//! bio *`, a `struct request *`, as include/trace/events/block.h's
//! TP_PROTO gives them) instead of a record the perf event built first,
//! and reads their fields directly at the offsets this kernel's BTF
//! says. The fields are the ones block.h's TP_fast_assign reads:
//!
//! - a bio event's device is `bio_dev(bio)`, the whole disk's
//!   `disk_devt(bio->bi_bdev->bd_disk)` (MKDEV(major, first_minor)), its
//!   sector `bio->bi_iter.bi_sector`, its length `bi_iter.bi_size`, its
//!   rwbs from `bio->bi_opf`; `block_bio_remap` adds the upper device and
//!   sector as its second and third arguments;
//! - a request's device is `disk_devt(rq->q->disk)`, its sector
//!   `rq->__sector`, its length `rq->__data_len`, its rwbs from
//!   `rq->cmd_flags`.
//!
//! The direction comes from the operation (`opf & REQ_OP_MASK`, the mask
//! `REQ_OP_BITS` wide, which is `__REQ_FAILFAST_DEV`'s value: the first
//! flag bit after the operation's) and `REQ_PREFLUSH`, as blk_fill_rwbs
//! reads them. A kernel whose BTF lacks any of these (before 5.12 a bio
//! has `bi_disk` rather than `bi_bdev`) gets the tracefs programs.

use crate::sys::trace::btf::{Btf, Member};
use crate::sys::trace::format::Event;

/// The offsets (and checked sizes) the typed programs read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Typed {
    pub bio_bdev: usize,
    pub bio_opf: usize,
    pub bio_sector: usize,
    pub bio_size: usize,
    pub bdev_disk: usize,
    pub disk_major: usize,
    pub disk_first_minor: usize,
    pub rq_q: usize,
    pub rq_cmd_flags: usize,
    pub rq_sector: usize,
    pub rq_data_len: usize,
    pub q_disk: usize,
    /// The operation's bits of an opf: `opf & op_mask`.
    pub op_mask: u32,
    /// REQ_PREFLUSH's bit.
    pub preflush_bit: u32,
    pub op_read: u32,
    pub op_write: u32,
    pub op_flush: u32,
    pub op_discard: u32,
    pub op_secure_erase: u32,
    /// Each event's `btf_trace_*` typedef id, in `Event::ALL`'s order.
    pub attach_ids: Vec<(Event, u32)>,
}

fn member(btf: &Btf, strukt: &str, path: &[&str], size: usize) -> Result<usize, String> {
    match btf.member(strukt, path) {
        Some(Member { offset, size: s }) if s == size => Ok(offset),
        Some(m) => Err(format!(
            "struct {strukt} {}: {} bytes, not {size}",
            path.join("."),
            m.size
        )),
        None => Err(format!("no struct {strukt} {} in the BTF", path.join("."))),
    }
}

fn enumerator(btf: &Btf, name: &str) -> Result<u32, String> {
    btf.enumerator(name)
        .and_then(|v| u32::try_from(v).ok())
        .filter(|v| *v < 64)
        .ok_or_else(|| format!("no enumerator {name} in the BTF"))
}

impl Typed {
    /// The fields, operations and attach points of `btf`; one line saying
    /// what is missing.
    pub fn from(btf: &Btf) -> Result<Typed, String> {
        let op_bits = enumerator(btf, "__REQ_FAILFAST_DEV")?;
        if !(1..=31).contains(&op_bits) {
            return Err(format!("REQ_OP_BITS of {op_bits}"));
        }
        let attach_ids = Event::ALL
            .iter()
            .map(|e| {
                let name = format!("btf_trace_{}", e.name());
                btf.typedef(&name)
                    .map(|id| (*e, id))
                    .ok_or_else(|| format!("no typedef {name} in the BTF"))
            })
            .collect::<Result<_, String>>()?;
        Ok(Typed {
            bio_bdev: member(btf, "bio", &["bi_bdev"], 8)?,
            bio_opf: member(btf, "bio", &["bi_opf"], 4)?,
            bio_sector: member(btf, "bio", &["bi_iter", "bi_sector"], 8)?,
            bio_size: member(btf, "bio", &["bi_iter", "bi_size"], 4)?,
            bdev_disk: member(btf, "block_device", &["bd_disk"], 8)?,
            disk_major: member(btf, "gendisk", &["major"], 4)?,
            disk_first_minor: member(btf, "gendisk", &["first_minor"], 4)?,
            rq_q: member(btf, "request", &["q"], 8)?,
            rq_cmd_flags: member(btf, "request", &["cmd_flags"], 4)?,
            rq_sector: member(btf, "request", &["__sector"], 8)?,
            rq_data_len: member(btf, "request", &["__data_len"], 4)?,
            q_disk: member(btf, "request_queue", &["disk"], 8)?,
            op_mask: (1 << op_bits) - 1,
            preflush_bit: enumerator(btf, "__REQ_PREFLUSH")?,
            op_read: enumerator(btf, "REQ_OP_READ")?,
            op_write: enumerator(btf, "REQ_OP_WRITE")?,
            op_flush: enumerator(btf, "REQ_OP_FLUSH")?,
            op_discard: enumerator(btf, "REQ_OP_DISCARD")?,
            op_secure_erase: enumerator(btf, "REQ_OP_SECURE_ERASE")?,
            attach_ids,
        })
    }

    /// The typedef id `event`'s program is loaded against.
    pub fn attach_id(&self, event: Event) -> Option<u32> {
        self.attach_ids
            .iter()
            .find(|(e, _)| *e == event)
            .map(|(_, id)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_of_a_blob_that_has_them() {
        // The synthetic blob of the btf fuzz target's seeds.
        let blob = include_bytes!("../../../../fuzz/corpus/btf/block-types");
        let t = Typed::from(&Btf::parse(blob).unwrap()).unwrap();
        assert_eq!(
            (t.bio_bdev, t.bio_opf, t.bio_sector, t.bio_size),
            (8, 16, 24, 32)
        );
        assert_eq!(
            (t.rq_q, t.rq_cmd_flags, t.rq_data_len, t.rq_sector),
            (0, 24, 36, 40)
        );
        assert_eq!((t.bdev_disk, t.q_disk, t.disk_first_minor), (8, 8, 4));
        assert_eq!(
            (t.op_mask, t.preflush_bit, t.op_secure_erase),
            (0xff, 18, 5)
        );
        assert_eq!(t.attach_ids.len(), 7);
        let without = include_bytes!("../../../../fuzz/corpus/btf/block-types-without-enums");
        let e = Typed::from(&Btf::parse(without).unwrap()).unwrap_err();
        assert_eq!(e, "no enumerator __REQ_FAILFAST_DEV in the BTF");
    }

    #[test]
    fn what_is_missing_is_named() {
        let btf = Btf::parse(&crate::sys::trace::btf::tests::blob()).unwrap();
        let e = Typed::from(&btf).unwrap_err();
        assert_eq!(e, "no enumerator __REQ_FAILFAST_DEV in the BTF");
    }
}
