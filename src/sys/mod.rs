//! The only code that touches the live system: sysfs, procfs, the
//! block-device ioctls and opening device nodes. Everything above takes what these return, so every rule runs in
//! tests without root.

pub mod dev;
pub mod ioctl;
pub mod procfs;
pub mod sysfs;
pub mod term;
