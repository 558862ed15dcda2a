//! The only code that touches the live system: sysfs, procfs, the
//! block-device ioctls, opening device nodes, the probe's own files
//! (`file.rs`), where a file's extents lie (`fiemap.rs`), the host name
//! (uname), and the block tracepoints traced for `watch` (`trace/`, into
//! the types of `blocktrace.rs`). Everything above takes what these
//! return, so every rule runs in tests without root. Outside `sys/`, only
//! the probe's I/O engines call the kernel themselves (`tests/floors.rs`
//! checks).

mod blocktrace;
mod cgroup;
mod dev;
mod dm;
mod fiemap;
mod file;
mod host;
mod ioctl;
mod passthrough;
mod procfs;
mod sysfs;
mod term;
mod trace;

pub use blocktrace::{
    Accounted, BpfAttach, Counters, DevNum, Direction, Grains, Latency, LegKey, Snapshot, Stage,
    SubmitterKey, TracePath, LOG2_BUCKETS,
};
pub use cgroup::mount_point;
pub use dev::rdev_of;
pub use dev::{allocated_bytes, major_minor, node_block_size, open_source, OpenError};
pub use dm::{dm_table, linear_origin};
pub use fiemap::extents;
pub use fiemap::{Extent, ExtentFlags, Map};
pub use file::{allocate, dio_offset_align, nameless, open_device, open_file, room, size_limit};
pub use file::{Allocated, Mode};
pub use host::{host_name, running_kernel};
pub use ioctl::IoctlValues;
pub use ioctl::{conventional_zones, device_block_size, open_read_only, read_fd, read_path};
pub use passthrough::{
    ata_identify, nvme_identify_namespace, scsi_read_capacity16, vpd_page, PassthroughError,
};
pub use procfs::storage_read_bytes;
pub use procfs::{cpu_model, fs_type_of, mountinfo, parse_mountinfo, swaps, unescape};
pub use sysfs::{devnum, read_attr};
pub use sysfs::{list_dir, read_num, read_str, DmIds, KernelPartition, Sysfs};
pub use term::terminal_width;
pub use trace::{
    count_record, dev_num, event_layout, parse_event_format, sampled, Btf, Capacity, Event, Prefer,
    Tally, TraceError, Tracer, Typed,
};
