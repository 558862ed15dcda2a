//! The only code that touches the live system: sysfs, procfs, the
//! block-device ioctls, opening device nodes, the probe's own files
//! (`file.rs`), where a file's extents lie (`fiemap.rs`), the host name
//! (uname), and the block tracepoints traced for `watch` (`trace/`, into
//! the types of `blocktrace.rs`). Everything above takes what these
//! return, so every rule runs in tests without root. Outside `sys/`, only
//! the probe's I/O engines call the kernel themselves (`tests/floors.rs`
//! checks).

mod attr_dir;
mod batch;
mod blocktrace;
mod cgroup;
mod dev;
mod dm;
mod fiemap;
mod file;
mod heap;
mod host;
mod ioctl;
mod passthrough;
mod procfs;
mod stats;
mod sysfs;
mod term;
mod trace;

/// A sysfs directory held open, its attributes read from it.
pub use attr_dir::AttrDir;
/// What the block tracepoints' counts are handed up in.
pub use blocktrace::{
    Accounted, BpfAttach, Counters, DevNum, Direction, Grains, Latency, LegKey, Snapshot, Stage,
    SubmitterKey, TracePath, LOG2_BUCKETS,
};
/// Where the cgroup v2 hierarchy is mounted.
pub use cgroup::mount_point;
/// Device nodes and images opened read-only, and their numbers.
pub use dev::{
    allocated_bytes, major_minor, node_block_size, open_source, rdev_of, FileSource, OpenError,
};
/// A dm device's table, and where a linear target's data lies.
pub use dm::{dm_table, linear_origin};
/// Where a file's extents lie (FS_IOC_FIEMAP).
pub use fiemap::{extents, Extent, ExtentFlags, Map};
/// The probe's own files: direct-I/O opens, scratch files, room and limits.
pub use file::{
    allocate, dio_offset_align, nameless, open_device, open_file, room, size_limit, Allocated, Mode,
};
/// Freed heap memory kept for reuse (set once at start).
pub use heap::keep_freed_heap;
/// The host's name and the running kernel.
pub use host::{host_name, running_kernel};
/// The block-device ioctls.
pub use ioctl::{
    conventional_zones, device_block_size, logical_block_size, open_read_only, read_fd, read_path,
    IoctlValues,
};
/// What a device says about itself, asked read-only (identify data).
pub use passthrough::{
    ata_identify, nvme_identify_namespace, scsi_read_capacity16, vpd_page, PassthroughError,
};
/// /proc: mounts, swaps, the CPU model, a device's read bytes.
pub use procfs::{
    cpu_model, fs_type_of, fs_type_of_file, mount_of, mountinfo, parse_mountinfo,
    storage_read_bytes, swaps, unescape, Mount,
};
/// What a run cost: reads and sysfs attributes counted.
pub use stats::Cost;
/// /sys: bounded reads of attributes, disks and partitions.
pub use sysfs::{
    devnum, dm_ids_in, link_target, list_dir, partitions_from, read_attr, read_num, read_str,
    topology_in, zones_in, DmIds, KernelPartition, Sysfs,
};
/// The terminal's width.
pub use term::terminal_width;
/// The block tracepoints traced for `watch`, and their parsers (fuzzed).
pub use trace::{
    count_record, dev_num, event_layout, parse_event_format, sampled, Btf, Capacity, Event, Prefer,
    Tally, TraceError, Tracer, Typed,
};
