//! The only code that touches the live system: sysfs, procfs, the
//! block-device ioctls, opening device nodes and the host name (uname). Everything above takes what these return, so every rule runs in
//! tests without root.

pub mod dev;
pub mod host;
pub mod ioctl;
pub mod procfs;
pub mod sysfs;
pub mod term;
