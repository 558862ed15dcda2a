//! diskalign: is my storage aligned, does misalignment hurt, how do I fix it.
//!
//! Data flows one way: [`topology`] (what the kernel or `--topology` says
//! about a disk) → [`layout`] (partition tables read from raw bytes) →
//! [`check`] (rules turning both into [`findings`]) → [`export`] (JSON) and
//! [`output`] (human tables).

#[cfg(not(target_os = "linux"))]
compile_error!("diskalign supports Linux only");

pub mod check;
pub mod cli;
pub mod export;
pub mod findings;
pub mod layout;
pub mod output;
pub mod probe;
pub mod stack;
pub mod topology;
pub mod units;
