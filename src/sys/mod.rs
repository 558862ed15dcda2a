//! The only code that touches the live system: sysfs, procfs, the
//! block-device ioctls, opening device nodes, the probe's own files
//! (`file.rs`), where a file's extents lie (`fiemap.rs`), the host name
//! (uname), and the block tracepoints traced for `watch` (`trace/`, into
//! the types of `blocktrace.rs`). Everything above takes what these
//! return, so every rule runs in tests without root. Outside `sys/`, only
//! the probe's I/O engines call the kernel themselves (`tests/floors.rs`
//! checks).

pub mod blocktrace;
pub mod cgroup;
pub mod dev;
pub mod dm;
pub mod fiemap;
pub mod file;
pub mod host;
pub mod ioctl;
pub mod passthrough;
pub mod procfs;
pub mod sysfs;
pub mod term;
pub mod trace;
