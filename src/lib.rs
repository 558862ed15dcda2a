//! diskalign: is my storage aligned, does misalignment hurt, how do I fix it.
//!
//! Read first, judge second, render third, on floors that import only
//! downwards (docs/architecture.md; `tests/floors.rs` enforces it):
//!
//! 1. vocabulary: [`units`], [`names`], [`errors`], [`bytes`],
//!    [`findings`] (codes, subjects, typed facts, sentences), [`iolimits`],
//!    [`schema`] (the header and version of every JSON document);
//! 2. [`sys`]: the only code that touches /sys, /proc, /dev and ioctls;
//! 3. readers: [`image`] (the guest disk inside qcow2, VMDK, VHDX, VDI,
//!    VHD), [`topology`], [`layout`] (GPT/MBR), [`stack`] (the format
//!    registry: LVM, md, LUKS, bcache, filesystems), [`identify`] (what a
//!    device says about itself: NVMe, SCSI and ATA identify data);
//! 4. [`inspect`]: the whole picture of every target, before any rule;
//! 5. [`check`] (pure rules), [`probe`] (measurement), [`saved`] and
//!    [`compare`] (saved runs), [`plan`] (the fix that keeps the data),
//!    [`watch`] (the alignment of the real I/O, from the block tracepoints);
//! 6. [`report`]: one exporter per format, one column model;
//! 7. [`cli`]: parsing and dispatch.

#[cfg(not(target_os = "linux"))]
compile_error!("diskalign supports Linux only");

pub mod bytes;
pub mod check;
pub mod cli;
pub mod compare;
pub mod errors;
pub mod findings;
pub mod identify;
pub mod image;
pub mod inspect;
pub mod iolimits;
pub mod layout;
pub mod names;
pub mod plan;
pub mod probe;
pub mod report;
pub mod saved;
pub mod schema;
pub mod stack;
pub mod sys;
pub mod topology;
pub mod units;
pub mod watch;
