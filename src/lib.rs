//! diskalign: is my storage aligned, does misalignment hurt, how do I fix it.
//!
//! Data flows one way: [`topology`] (what the kernel or `--topology` says
//! about a disk) → [`layout`] (partition tables read from raw bytes) →
//! [`stack`] (LVM, md, LUKS, filesystems found inside, assembled across
//! targets) → [`check`] (rules turning all of it into [`findings`]) →
//! [`export`] (JSON, CSV) and [`output`] (human tables and trees). The
//! [`probe`] is the second pipeline, measuring instead of reading.

#[cfg(not(target_os = "linux"))]
compile_error!("diskalign supports Linux only");

pub mod bytes;
pub mod check;
pub mod cli;
pub mod export;
pub mod findings;
pub mod iolimits;
pub mod layout;
pub mod names;
pub mod output;
pub mod probe;
pub mod stack;
pub mod sys;
pub mod topology;
pub mod units;
