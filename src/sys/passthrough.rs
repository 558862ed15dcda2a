//! What a device says about itself, asked read-only: NVMe Identify
//! Namespace through the admin passthrough ioctl, and SCSI READ
//! CAPACITY(16) and ATA IDENTIFY DEVICE (wrapped in the SAT ATA
//! PASS-THROUGH(16) command, as hdparm and smartctl send it) through SG_IO;
//! plus the raw VPD pages the kernel already keeps in sysfs. Every command
//! reads, is bounded (a fixed buffer) and has a timeout; a node that cannot
//! be opened or a device that does not answer is an error value. The bytes
//! are handed up unparsed: `identify/` reads them.

use super::ioctl::open_read_only;
use super::sysfs::read_attr;
use core::ffi::c_void;
use rustix::fd::AsFd;
use rustix::ioctl::{ioctl, opcode, Ioctl, IoctlOutput, Opcode};
use std::io;
use std::path::{Path, PathBuf};

/// How long one command may take before the kernel aborts it. A drive
/// spinning up answers within this; a bridge that swallows a command does
/// not hold the run longer.
pub const TIMEOUT_MS: u32 = 5000;

/// The size of the Identify Namespace data structure (NVMe Base
/// Specification, Identify command, CNS 00h).
pub const NVME_IDENTIFY_BYTES: usize = 4096;
/// READ CAPACITY(16) parameter data as SBC defines it (32 bytes).
pub const READ_CAPACITY16_BYTES: usize = 32;
/// One IDENTIFY DEVICE data block: 256 words.
pub const ATA_IDENTIFY_BYTES: usize = 512;

/// Why a command gave no data: the node did not open, or the command
/// failed (the ioctl's errno, or the device's status).
#[derive(Debug, thiserror::Error)]
pub enum PassthroughError {
    #[error("cannot open {}: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("{0}")]
    Command(io::Error),
}

impl PassthroughError {
    /// The errno, when the system refused (not the device).
    pub fn raw_os_error(&self) -> Option<i32> {
        let (Self::Open { source: e, .. } | Self::Command(e)) = self;
        e.raw_os_error()
    }
}

impl From<rustix::io::Errno> for PassthroughError {
    fn from(e: rustix::io::Errno) -> Self {
        Self::Command(e.into())
    }
}

fn open(node: &Path) -> Result<rustix::fd::OwnedFd, PassthroughError> {
    open_read_only(node).map_err(|source| PassthroughError::Open {
        path: node.to_path_buf(),
        source,
    })
}

fn failed(why: String) -> PassthroughError {
    PassthroughError::Command(io::Error::other(why))
}

/// An ioctl whose argument is a pointer to `T` the kernel reads and fills,
/// and whose return value means something (the NVMe status, the namespace
/// ID): rustix's `Updater` drops the return value.
struct Call<'a, T> {
    opcode: Opcode,
    arg: Option<&'a mut T>,
}

// SAFETY: each use below pairs an opcode with the struct the kernel's
// handler reads and writes for it (checked against the uapi headers in the
// unit tests: the opcodes encode the struct's size), or with no argument
// for NVME_IOCTL_ID, whose handler ignores it.
unsafe impl<T> Ioctl for Call<'_, T> {
    type Output = IoctlOutput;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn as_ptr(&mut self) -> *mut c_void {
        match &mut self.arg {
            Some(a) => core::ptr::from_mut::<T>(&mut **a).cast(),
            None => core::ptr::null_mut(),
        }
    }

    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// `struct nvme_passthru_cmd` (`nvme_admin_cmd`) of include/uapi/linux/nvme_ioctl.h.
/// Every field is the kernel's to read or write, not all of them ours.
#[repr(C)]
#[derive(Default)]
#[allow(dead_code)]
struct NvmePassthruCmd {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

const _: () = assert!(core::mem::size_of::<NvmePassthruCmd>() == 72);

/// `NVME_IOCTL_ID`: `_IO('N', 0x40)`, returns the namespace ID of the node.
const NVME_IOCTL_ID: Opcode = opcode::none(b'N', 0x40);
/// `NVME_IOCTL_ADMIN_CMD`: `_IOWR('N', 0x41, struct nvme_admin_cmd)`.
const NVME_IOCTL_ADMIN_CMD: Opcode = opcode::read_write::<NvmePassthruCmd>(b'N', 0x41);
/// The Identify admin command's opcode (NVMe Base Specification, Admin
/// Command Set; libnvme's `nvme_admin_identify`).
const NVME_ADMIN_IDENTIFY: u8 = 0x06;
/// CDW10.CNS 00h: the Identify Namespace data structure of NSID.
const NVME_IDENTIFY_CNS_NS: u32 = 0x00;

/// Identify Namespace (CNS 0) of the namespace behind the block node
/// `node` (`/dev/nvme0n1`): its namespace ID from NVME_IOCTL_ID, then the
/// admin command through NVME_IOCTL_ADMIN_CMD, as `nvme id-ns` sends it.
/// The 4096 bytes are returned unparsed.
pub fn nvme_identify_namespace(node: &Path) -> Result<Vec<u8>, PassthroughError> {
    let fd = open(node)?;
    // SAFETY: NVME_IOCTL_ID takes no argument (drivers/nvme/host/ioctl.c
    // returns the namespace ID as the ioctl's value).
    let nsid = unsafe {
        ioctl(
            fd.as_fd(),
            Call::<u8> {
                opcode: NVME_IOCTL_ID,
                arg: None,
            },
        )
    }?;
    let nsid = u32::try_from(nsid)
        .ok()
        .filter(|&n| n != 0)
        .ok_or_else(|| failed(format!("NVME_IOCTL_ID gave namespace {nsid}")))?;
    let mut buf = vec![0u8; NVME_IDENTIFY_BYTES];
    let mut cmd = NvmePassthruCmd {
        opcode: NVME_ADMIN_IDENTIFY,
        nsid,
        addr: buf.as_mut_ptr() as u64,
        data_len: NVME_IDENTIFY_BYTES as u32,
        cdw10: NVME_IDENTIFY_CNS_NS,
        timeout_ms: TIMEOUT_MS,
        ..Default::default()
    };
    // SAFETY: `cmd` is the struct NVME_IOCTL_ADMIN_CMD reads and writes;
    // `addr`/`data_len` describe `buf`, which outlives the call, and the
    // Identify command transfers device-to-host only.
    let status = unsafe {
        ioctl(
            fd.as_fd(),
            Call {
                opcode: NVME_IOCTL_ADMIN_CMD,
                arg: Some(&mut cmd),
            },
        )
    }?;
    if status != 0 {
        // A positive value is the NVMe completion status (status code
        // type and code), nvme_submit_user_cmd's return.
        return Err(failed(format!(
            "Identify Namespace {nsid} completed with NVMe status {status:#x}"
        )));
    }
    Ok(buf)
}

/// `struct sg_io_hdr` (include/scsi/sg.h in the kernel, the same in
/// glibc's /usr/include/scsi/sg.h): the SG_IO v3 interface, which SCSI
/// disk nodes accept as well (drivers/scsi/scsi_ioctl.c `sg_io`). Every
/// field is the kernel's to read or write, not all of them ours.
#[repr(C)]
#[allow(dead_code)]
struct SgIoHdr {
    interface_id: i32,
    dxfer_direction: i32,
    cmd_len: u8,
    mx_sb_len: u8,
    iovec_count: u16,
    dxfer_len: u32,
    dxferp: *mut c_void,
    cmdp: *const u8,
    sbp: *mut u8,
    timeout: u32,
    flags: u32,
    pack_id: i32,
    usr_ptr: *mut c_void,
    status: u8,
    masked_status: u8,
    msg_status: u8,
    sb_len_wr: u8,
    host_status: u16,
    driver_status: u16,
    resid: i32,
    duration: u32,
    info: u32,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<SgIoHdr>() == 88);

/// `SG_IO` (scsi/sg.h: 0x2285).
const SG_IO: Opcode = 0x2285;
/// `SG_DXFER_FROM_DEV`: data in only; nothing is sent to the device.
const SG_DXFER_FROM_DEV: i32 = -3;
/// `SG_INFO_OK_MASK`/`SG_INFO_CHECK`: something other than a clean completion.
const SG_INFO_CHECK: u32 = 0x1;

/// Send one data-in SCSI command and return the bytes it transferred.
fn sg_io(node: &Path, cdb: &[u8], len: usize) -> Result<Vec<u8>, PassthroughError> {
    let fd = open(node)?;
    let mut buf = vec![0u8; len];
    let mut sense = [0u8; 32];
    let mut hdr = SgIoHdr {
        interface_id: i32::from(b'S'),
        dxfer_direction: SG_DXFER_FROM_DEV,
        cmd_len: cdb.len() as u8,
        mx_sb_len: sense.len() as u8,
        iovec_count: 0,
        dxfer_len: len as u32,
        dxferp: buf.as_mut_ptr().cast(),
        cmdp: cdb.as_ptr(),
        sbp: sense.as_mut_ptr(),
        timeout: TIMEOUT_MS,
        flags: 0,
        pack_id: 0,
        usr_ptr: core::ptr::null_mut(),
        status: 0,
        masked_status: 0,
        msg_status: 0,
        sb_len_wr: 0,
        host_status: 0,
        driver_status: 0,
        resid: 0,
        duration: 0,
        info: 0,
    };
    // SAFETY: `hdr` is the sg_io_hdr SG_IO reads and writes; its pointers
    // name `buf` (dxfer_len bytes), `cdb` (cmd_len bytes) and `sense`
    // (mx_sb_len bytes), all alive across the call; the direction is
    // device-to-host only.
    unsafe {
        ioctl(
            fd.as_fd(),
            Call {
                opcode: SG_IO,
                arg: Some(&mut hdr),
            },
        )
    }?;
    let sense = &sense[..usize::from(hdr.sb_len_wr).min(sense.len())];
    if hdr.info & SG_INFO_CHECK != 0 && !recovered_with_ata_return(sense) {
        return Err(failed(failure(&hdr, sense)));
    }
    let got = len.saturating_sub(usize::try_from(hdr.resid).unwrap_or(0));
    buf.truncate(got);
    Ok(buf)
}

/// The sense key, additional sense code and qualifier, from fixed (0x70,
/// 0x71) or descriptor (0x72, 0x73) sense data (SPC-4, 4.5).
fn sense_key(sense: &[u8]) -> Option<(u8, u8, u8)> {
    match sense.first()? & 0x7f {
        0x70 | 0x71 => Some((sense.get(2)? & 0xf, *sense.get(12)?, *sense.get(13)?)),
        0x72 | 0x73 => Some((sense.get(1)? & 0xf, *sense.get(2)?, *sense.get(3)?)),
        _ => None,
    }
}

/// RECOVERED ERROR with "ATA PASS-THROUGH INFORMATION AVAILABLE"
/// (00h/1Dh): some SAT layers report every pass-through command this way,
/// data transferred (smartmontools' scsiata.cpp accepts it too).
fn recovered_with_ata_return(sense: &[u8]) -> bool {
    sense_key(sense) == Some((0x1, 0x00, 0x1d))
}

/// Why a SCSI command failed, in one line.
fn failure(hdr: &SgIoHdr, sense: &[u8]) -> String {
    let mut why = format!("SCSI status {:#04x}", hdr.status);
    if hdr.host_status != 0 {
        why.push_str(&format!(", host status {:#x}", hdr.host_status));
    }
    if hdr.driver_status != 0 {
        why.push_str(&format!(", driver status {:#x}", hdr.driver_status));
    }
    if let Some((key, asc, ascq)) = sense_key(sense) {
        let name = match key {
            0x2 => " (NOT READY)",
            0x3 => " (MEDIUM ERROR)",
            0x4 => " (HARDWARE ERROR)",
            0x5 => " (ILLEGAL REQUEST)",
            0x6 => " (UNIT ATTENTION)",
            0xb => " (ABORTED COMMAND)",
            _ => "",
        };
        why.push_str(&format!(
            ", sense key {key:#x}{name}, ASC/ASCQ {asc:02x}/{ascq:02x}"
        ));
    }
    why
}

/// READ CAPACITY(16): SERVICE ACTION IN(16) (9Eh) with service action 10h,
/// allocation length 32 (SBC-3, as sd.c `read_capacity_16` sends it).
pub fn read_capacity16_cdb() -> [u8; 16] {
    let mut cdb = [0u8; 16];
    cdb[0] = 0x9e;
    cdb[1] = 0x10;
    cdb[10..14].copy_from_slice(&(READ_CAPACITY16_BYTES as u32).to_be_bytes());
    cdb
}

/// READ CAPACITY(16) of the SCSI (or SAT-translated) device at `node`.
pub fn scsi_read_capacity16(node: &Path) -> Result<Vec<u8>, PassthroughError> {
    sg_io(node, &read_capacity16_cdb(), READ_CAPACITY16_BYTES)
}

/// ATA PASS-THROUGH(16) (85h, SAT) carrying IDENTIFY DEVICE (ECh): PIO
/// data-in (protocol 4), the transfer length in the sector count field,
/// counted in 512-byte blocks, one block, to the host; no check condition
/// asked for. The same command hdparm and smartctl send.
pub fn ata_identify_cdb() -> [u8; 16] {
    let mut cdb = [0u8; 16];
    cdb[0] = 0x85;
    // MULTIPLE_COUNT 0, PROTOCOL 4 (PIO data-in), EXTEND 0.
    cdb[1] = 4 << 1;
    // OFF_LINE 0, CK_COND 0, T_TYPE 0, T_DIR 1 (from the device),
    // BYTE_BLOCK 1 (blocks), T_LENGTH 2 (in the sector count field).
    cdb[2] = (1 << 3) | (1 << 2) | 2;
    cdb[6] = 1; // sector count
    cdb[14] = 0xec; // IDENTIFY DEVICE
    cdb
}

/// IDENTIFY DEVICE of the ATA device at `node`, through libata's SAT
/// translation or a USB bridge that passes it.
pub fn ata_identify(node: &Path) -> Result<Vec<u8>, PassthroughError> {
    sg_io(node, &ata_identify_cdb(), ATA_IDENTIFY_BYTES)
}

/// A raw VPD page the kernel read at probe time (`device/vpd_pgb0`,
/// `device/vpd_pg83`) of the disk whose sysfs directory is `block_dir`;
/// None when the kernel keeps none. Bounded by the sysfs reader.
pub fn vpd_page(block_dir: &Path, page: u8) -> Option<Vec<u8>> {
    read_attr(&block_dir.join(format!("device/vpd_pg{page:02x}"))).filter(|b| !b.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_match_the_uapi_headers() {
        // _IO('N', 0x40) and _IOWR('N', 0x41, 72 bytes) (asm-generic/ioctl.h).
        assert_eq!(NVME_IOCTL_ID as u64, 0x4e40);
        assert_eq!(NVME_IOCTL_ADMIN_CMD as u64, 0xc048_4e41);
        assert_eq!(SG_IO as u64, 0x2285);
    }

    #[test]
    fn command_blocks() {
        let rc = read_capacity16_cdb();
        assert_eq!(&rc[..2], &[0x9e, 0x10]);
        assert_eq!(&rc[10..14], &[0, 0, 0, 32]);
        let id = ata_identify_cdb();
        assert_eq!(
            (id[0], id[1], id[2], id[6], id[14]),
            (0x85, 0x08, 0x0e, 1, 0xec)
        );
    }

    #[test]
    fn sense_data() {
        let mut fixed = [0u8; 18];
        fixed[0] = 0x70;
        fixed[2] = 0x05;
        fixed[12] = 0x20;
        assert_eq!(sense_key(&fixed), Some((5, 0x20, 0)));
        assert_eq!(sense_key(&[0x72, 0x01, 0x00, 0x1d]), Some((1, 0, 0x1d)));
        assert!(recovered_with_ata_return(&[0x72, 0x01, 0x00, 0x1d]));
        assert_eq!(sense_key(&[0x70, 0, 5]), None);
        assert_eq!(sense_key(&[]), None);
    }

    #[test]
    fn a_missing_node_is_an_error() {
        let p = Path::new("/nonexistent/diskalign-node");
        for e in [
            nvme_identify_namespace(p).unwrap_err(),
            scsi_read_capacity16(p).unwrap_err(),
            ata_identify(p).unwrap_err(),
        ] {
            assert!(matches!(e, PassthroughError::Open { .. }), "{e:?}");
            assert_eq!(
                e.to_string(),
                "cannot open /nonexistent/diskalign-node: No such file or directory (os error 2)"
            );
        }
    }
}
