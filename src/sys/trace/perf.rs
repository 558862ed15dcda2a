//! perf_event_open(2) on a tracepoint, and its ioctls. struct
//! perf_event_attr is written as its first 64 bytes (PERF_ATTR_SIZE_VER0
//! in include/uapi/linux/perf_event.h), which every kernel takes.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const PERF_TYPE_TRACEPOINT: u32 = 2;
const ATTR_SIZE: usize = 64;
/// PERF_FLAG_FD_CLOEXEC.
const FD_CLOEXEC: libc::c_ulong = 8;
/// _IO('$', 0), _IO('$', 5) and _IOW('$', 8, __u32).
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
const IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_RAW: u64 = 1 << 10;
/// The task's cgroup v2 id, after the raw record (Linux 5.7).
pub const SAMPLE_CGROUP: u64 = 1 << 21;
/// attr.flags bits: disabled, watermark.
const DISABLED: u64 = 1;
const WATERMARK: u64 = 1 << 14;

/// Samples wanted from an event: every record, written to a ring that
/// wakes its reader once `wakeup_bytes` are waiting.
#[derive(Clone, Copy, Debug)]
pub struct Sampling {
    pub sample_type: u64,
    pub wakeup_bytes: u32,
}

fn attr(id: u64, sampling: Option<Sampling>) -> [u8; ATTR_SIZE] {
    let mut a = [0u8; ATTR_SIZE];
    let mut put = |at: usize, v: &[u8]| a[at..at + v.len()].copy_from_slice(v);
    put(0, &PERF_TYPE_TRACEPOINT.to_ne_bytes());
    put(4, &(ATTR_SIZE as u32).to_ne_bytes());
    put(8, &id.to_ne_bytes());
    let mut flags = DISABLED;
    if let Some(s) = sampling {
        put(16, &1u64.to_ne_bytes()); // sample_period
        put(24, &s.sample_type.to_ne_bytes());
        put(48, &s.wakeup_bytes.to_ne_bytes()); // wakeup_watermark
        flags |= WATERMARK;
    }
    put(40, &flags.to_ne_bytes());
    a
}

/// The tracepoint `id` on one CPU, for every process (pid -1), disabled.
pub fn open_tracepoint(id: u64, cpu: i32, sampling: Option<Sampling>) -> io::Result<OwnedFd> {
    let a = attr(id, sampling);
    let (any_pid, no_group): (libc::pid_t, libc::c_int) = (-1, -1);
    // SAFETY: the kernel reads ATTR_SIZE bytes of `a`, as attr.size says.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            a.as_ptr(),
            any_pid,
            cpu,
            no_group,
            FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor the kernel just returned.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn ioctl(fd: &OwnedFd, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: these perf ioctls take an integer argument, no pointer.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req, arg) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub fn enable(fd: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_ENABLE, 0)
}

/// Run the BPF program `prog` on every hit of the event's tracepoint.
pub fn set_bpf(fd: &OwnedFd, prog: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_SET_BPF, prog.as_raw_fd() as libc::c_ulong)
}

/// Write `fd`'s samples into `target`'s ring (same CPU).
pub fn set_output(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    ioctl(fd, IOC_SET_OUTPUT, target.as_raw_fd() as libc::c_ulong)
}

/// A CPU list as /sys/devices/system/cpu/online prints it: `0-3,5,7-8`.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let c: u32 = part.trim().parse().ok()?;
                (c, c)
            }
        };
        if hi < lo || hi - lo > 65_536 || cpus.len() > 65_536 {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    Some(cpus)
}

/// The CPUs of /sys/devices/system/cpu/{online,possible}.
pub fn cpus(which: &str) -> io::Result<Vec<u32>> {
    let path = format!("/sys/devices/system/cpu/{which}");
    let text = std::fs::read_to_string(&path)?;
    parse_cpu_list(&text)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("{path}: {text:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-3,7"), Some(vec![0, 2, 3, 7]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list("0-4294967295"), None);
    }

    #[test]
    fn the_attribute_layout() {
        let a = attr(
            2104,
            Some(Sampling {
                sample_type: SAMPLE_RAW | SAMPLE_TIME,
                wakeup_bytes: 4096,
            }),
        );
        assert_eq!(u32::from_ne_bytes(a[0..4].try_into().unwrap()), 2);
        assert_eq!(u64::from_ne_bytes(a[8..16].try_into().unwrap()), 2104);
        assert_eq!(u64::from_ne_bytes(a[24..32].try_into().unwrap()), 0x404);
        assert_eq!(
            u64::from_ne_bytes(a[40..48].try_into().unwrap()),
            1 | 1 << 14
        );
    }
}
