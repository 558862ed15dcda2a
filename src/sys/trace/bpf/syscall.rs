//! bpf(2): maps created, read and written, programs loaded. The attribute
//! layouts are union bpf_attr's in include/uapi/linux/bpf.h; a zeroed
//! 128-byte buffer is passed (the kernel requires bytes it does not know
//! to be zero, and these commands' fields all lie within it).

use super::asm::Insn;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const MAP_CREATE: u32 = 0;
const MAP_LOOKUP_ELEM: u32 = 1;
const MAP_UPDATE_ELEM: u32 = 2;
const MAP_GET_NEXT_KEY: u32 = 4;
const PROG_LOAD: u32 = 5;
const OBJ_GET_INFO_BY_FD: u32 = 15;
const RAW_TRACEPOINT_OPEN: u32 = 17;

pub const MAP_HASH: u32 = 1;
pub const MAP_ARRAY: u32 = 2;
pub const MAP_PERCPU_HASH: u32 = 5;
pub const MAP_PERCPU_ARRAY: u32 = 6;
pub const PROG_TRACEPOINT: u32 = 5;
/// BPF_PROG_TYPE_TRACING, attached as BPF_TRACE_RAW_TP (a `tp_btf`).
pub const PROG_TRACING: u32 = 26;
const TRACE_RAW_TP: u32 = 23;
/// BPF_ANY: create or replace.
pub const ANY: u64 = 0;

struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32(mut self, at: usize, v: u32) -> Attr {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(mut self, at: usize, v: u64) -> Attr {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn name(mut self, at: usize, name: &str) -> Attr {
        let n = name.len().min(15);
        self.0[at..at + n].copy_from_slice(&name.as_bytes()[..n]);
        self
    }
    fn call(mut self, cmd: u32) -> io::Result<i64> {
        // SAFETY: the kernel reads (and for some commands writes) at most
        // the 128 bytes given as the size.
        let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, self.0.as_mut_ptr(), self.0.len()) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }
}

fn ptr<T>(p: *const T) -> u64 {
    p as usize as u64
}

fn owned(fd: i64) -> OwnedFd {
    // SAFETY: the kernel just returned this new descriptor to us.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// BPF_F_NO_PREALLOC: a hash map's elements are allocated as they are
/// inserted, so an unused map costs no memory.
pub const NO_PREALLOC: u32 = 1;

/// BPF_MAP_CREATE: map_type, key_size, value_size, max_entries,
/// map_flags, inner_map_fd, numa_node, map_name at byte 28.
pub fn map_create(
    kind: u32,
    key: u32,
    value: u32,
    max: u32,
    flags: u32,
    name: &str,
) -> io::Result<OwnedFd> {
    Attr::new()
        .u32(0, kind)
        .u32(4, key)
        .u32(8, value)
        .u32(12, max)
        .u32(16, flags)
        .name(28, name)
        .call(MAP_CREATE)
        .map(owned)
}

/// The element ops: map_fd, key at 8, value (or next_key) at 16, flags at 24.
fn elem(map: &OwnedFd, key: *const u8, value: *const u8, flags: u64) -> Attr {
    Attr::new()
        .u32(0, map.as_raw_fd() as u32)
        .u64(8, ptr(key))
        .u64(16, ptr(value))
        .u64(24, flags)
}

/// Fills `value` (the map's value size times the possible CPUs for a
/// per-CPU map); false when the key is absent.
pub fn lookup(map: &OwnedFd, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
    match elem(map, key.as_ptr(), value.as_mut_ptr(), 0).call(MAP_LOOKUP_ELEM) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

pub fn update(map: &OwnedFd, key: &[u8], value: &[u8], flags: u64) -> io::Result<()> {
    elem(map, key.as_ptr(), value.as_ptr(), flags)
        .call(MAP_UPDATE_ELEM)
        .map(drop)
}

/// The key after `key` (the first key for None); false at the end.
pub fn next_key(map: &OwnedFd, key: Option<&[u8]>, next: &mut [u8]) -> io::Result<bool> {
    let k = key.map_or(std::ptr::null(), <[u8]>::as_ptr);
    match elem(map, k, next.as_mut_ptr(), 0).call(MAP_GET_NEXT_KEY) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// A tracepoint program, run by a perf event.
pub fn prog_load(insns: &[Insn], name: &str) -> Result<OwnedFd, String> {
    load(insns, name, None)
}

/// A typed raw tracepoint program (`tp_btf`) for the tracepoint whose
/// `btf_trace_*` typedef has the vmlinux BTF id `attach_btf_id`.
pub fn prog_load_typed(insns: &[Insn], name: &str, attach_btf_id: u32) -> Result<OwnedFd, String> {
    load(insns, name, Some(attach_btf_id))
}

/// BPF_PROG_LOAD: prog_type, insn_cnt, insns at 8, license at 16,
/// log_level at 24, log_size at 28, log_buf at 32, prog_name at 48,
/// expected_attach_type at 68, attach_btf_id at 108 (0 there names
/// vmlinux's BTF). On a refusal, loads again with the verifier's log and
/// returns its last lines with the error.
fn load(insns: &[Insn], name: &str, typed: Option<u32>) -> Result<OwnedFd, String> {
    let license = c"GPL";
    let attr = || {
        let a = Attr::new()
            .u32(4, insns.len() as u32)
            .u64(8, ptr(insns.as_ptr()))
            .u64(16, ptr(license.as_ptr()))
            .name(48, name);
        match typed {
            Some(id) => a.u32(0, PROG_TRACING).u32(68, TRACE_RAW_TP).u32(108, id),
            None => a.u32(0, PROG_TRACEPOINT),
        }
    };
    let err = match attr().call(PROG_LOAD) {
        Ok(fd) => return Ok(owned(fd)),
        Err(e) => e,
    };
    let mut log = vec![0u8; 1 << 20];
    let _ = attr()
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, ptr(log.as_mut_ptr()))
        .call(PROG_LOAD);
    Err(format!("{name}: {err}{}", verifier_tail(&log)))
}

/// BPF_RAW_TRACEPOINT_OPEN: name (null: a typed program names its
/// tracepoint by its attach_btf_id) at 0, prog_fd at 8. The link is a
/// descriptor: closing it detaches the program.
pub fn raw_tracepoint_open(prog: &OwnedFd) -> io::Result<OwnedFd> {
    Attr::new()
        .u64(0, 0)
        .u32(8, prog.as_raw_fd() as u32)
        .call(RAW_TRACEPOINT_OPEN)
        .map(owned)
}

/// The bytes of struct bpf_prog_info asked for: up to and including
/// `recursion_misses` (a u64 at byte 208, since Linux 5.12); an older
/// kernel fills fewer and leaves the rest zero.
const PROG_INFO_BYTES: usize = 216;

/// How many times the kernel skipped `prog` because a BPF program was
/// already running on that CPU (struct bpf_prog_info's
/// `recursion_misses`: a tracepoint that fires in an interrupt taken
/// while another tracing program runs is not run, kernel/trace/
/// bpf_trace.c trace_call_bpf and __bpf_trace_run).
/// BPF_OBJ_GET_INFO_BY_FD: bpf_fd at 0, info_len at 4, info at 8.
pub fn prog_misses(prog: &OwnedFd) -> io::Result<u64> {
    let mut info = [0u8; PROG_INFO_BYTES];
    Attr::new()
        .u32(0, prog.as_raw_fd() as u32)
        .u32(4, PROG_INFO_BYTES as u32)
        .u64(8, ptr(info.as_mut_ptr()))
        .call(OBJ_GET_INFO_BY_FD)?;
    let mut w = [0u8; 8];
    w.copy_from_slice(&info[208..216]);
    Ok(u64::from_ne_bytes(w))
}

/// The verifier log's last non-empty lines, on one line.
fn verifier_tail(log: &[u8]) -> String {
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        String::new()
    } else {
        format!(" (verifier: {})", tail.join(" / "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_log_is_cut_to_one_line() {
        let log = b"0: (b7) r0 = 0\n1: (95) exit\n\nR0 !read_ok\nprocessed 2 insns\n\0garbage";
        assert_eq!(
            verifier_tail(log),
            " (verifier: 1: (95) exit / R0 !read_ok / processed 2 insns)"
        );
        assert_eq!(verifier_tail(b"\0"), "");
    }
}
