//! The fuzz targets' entry functions, one per parser or layer entry point.
//! The libFuzzer binaries (fuzz/fuzz_targets) and the regression test of
//! the main crate (tests/fuzz_regressions.rs) call these same functions, so
//! a crash saved in fuzz/regressions replays under plain `cargo test`.
//!
//! Each function only requires "no panic" (and, under the fuzzer, no hang
//! and bounded memory); results are dropped. See docs/fuzzing.md.

use diskalign::bytes::ReadAt;
use diskalign::bytes::SharedReader;
use diskalign::iolimits::Topology;
use diskalign::layout;
use diskalign::stack::{self, Pending, Region};
use diskalign::topology::{self, Sysfs, TopologyOverride};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A fixed host and start for the documents rendered.
fn stamp() -> diskalign::report::Stamp {
    diskalign::report::Stamp {
        host: "fuzz".into(),
        started: std::time::UNIX_EPOCH,
    }
}

/// A target's entry: takes the fuzz input, must not panic.
pub type Entry = fn(&[u8]);

/// Every target by name, for the regression test and the tools.
pub const TARGETS: &[(&str, Entry)] = &[
    ("gpt", gpt_probe),
    ("mbr", mbr_table),
    ("table", read_table),
    ("lvm_label", lvm_label),
    ("lvm_text", lvm_text),
    ("lvm", lvm_read),
    ("md", md_read),
    ("luks", luks_read),
    ("bcache", bcache_read),
    ("boot_sector", boot_sector),
    ("zfs", zfs_read),
    ("fs", fs_read),
    ("stack", stack_walk),
    ("check_image", check_image),
    ("sysfs", sysfs_tree),
    ("topology_spec", topology_spec),
    ("sizes", sizes),
    ("saved", saved),
    ("identify_nvme", identify_nvme),
    ("identify_scsi", identify_scsi),
    ("identify_ata", identify_ata),
    ("trace_format", trace_format),
    ("btf", btf),
    ("image", image_container),
    ("bluestore", bluestore_read),
    ("dm_thin", dm_thin),
];

// ---------------------------------------------------------------------------
// Sparse images: how the layout, stack and check targets get large devices
// (a GPT backup at the last LBA of a 2 TiB disk, partitions at 1 MiB) out
// of a few KiB of input.
//
//   u64 LE   virtual size in bytes (any value: nothing is allocated for it)
//   then chunks, until the input ends:
//   u64 LE   offset; with the top bit set it counts back from the end
//   u16 LE   length n
//   n bytes  the data (cut short when the input ends; cut at the end of
//            the image)
//
// Bytes no chunk covers read as zero; a later chunk wins over an earlier one.
// ---------------------------------------------------------------------------

const FROM_END: u64 = 1 << 63;

/// An image held as a few chunks over zeros.
pub struct Sparse {
    pub len: u64,
    pub chunks: Vec<(u64, Vec<u8>)>,
}

fn take<const N: usize>(data: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = data.split_first_chunk::<N>()?;
    *data = rest;
    Some(*head)
}

impl Sparse {
    /// Decode the format above; `max_len` bounds the virtual size.
    pub fn decode(mut data: &[u8], max_len: u64) -> Sparse {
        let len = take::<8>(&mut data).map_or(0, u64::from_le_bytes) % max_len.saturating_add(1);
        let mut chunks = Vec::new();
        while let Some(off) = take::<8>(&mut data).map(u64::from_le_bytes) {
            let n = take::<2>(&mut data).map_or(0, u16::from_le_bytes) as usize;
            let n = n.min(data.len());
            let (bytes, rest) = data.split_at(n);
            data = rest;
            let start = if off & FROM_END != 0 {
                len.saturating_sub(off & !FROM_END)
            } else {
                off
            };
            if start >= len {
                continue;
            }
            let keep = (len - start).min(bytes.len() as u64) as usize;
            chunks.push((start, bytes[..keep].to_vec()));
        }
        Sparse { len, chunks }
    }

    /// Write the image as a sparse file (for the path `check` opens).
    pub fn write_file(&self, path: &Path) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(path)?;
        f.set_len(self.len)?;
        for (off, bytes) in &self.chunks {
            f.write_all_at(bytes, *off)?;
        }
        Ok(())
    }
}

impl ReadAt for Sparse {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.len)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.fill(0);
        for (start, bytes) in &self.chunks {
            let cend = start + bytes.len() as u64;
            if cend <= offset || *start >= end {
                continue;
            }
            let from = (*start).max(offset);
            let to = cend.min(end);
            buf[(from - offset) as usize..(to - offset) as usize]
                .copy_from_slice(&bytes[(from - start) as usize..(to - start) as usize]);
        }
        Ok(())
    }
}

/// Virtual sizes up to 16 EiB for the in-memory targets; the check target
/// writes a real (sparse) file, so it stays within what tmpfs accepts.
const ANY_LEN: u64 = u64::MAX;
const FILE_LEN: u64 = 1 << 40;

/// The topologies the layered targets judge against, picked by one byte.
fn topology_pick(b: u8) -> Topology {
    let base = Topology::IMAGE_DEFAULT;
    match b % 8 {
        0 => base,
        1 => Topology::plain(4096),
        2 => Topology {
            physical_block_size: 4096,
            minimum_io_size: 4096,
            ..base
        },
        3 => Topology {
            physical_block_size: 4096,
            minimum_io_size: 65536,
            optimal_io_size: 196_608,
            ..base
        },
        4 => Topology {
            physical_block_size: 4096,
            minimum_io_size: 4096,
            alignment_offset: 3584,
            ..base
        },
        5 => Topology {
            optimal_io_size: 33_553_920,
            ..base
        },
        6 => Topology {
            alignment_offset: -1,
            ..base
        },
        _ => Topology {
            logical_block_size: 4096,
            physical_block_size: 4096,
            minimum_io_size: 524_288,
            optimal_io_size: 1_048_576,
            discard_granularity: 4096,
            ..base
        },
    }
}

// ---------------------------------------------------------------------------
// Partition tables.
// ---------------------------------------------------------------------------

/// `gpt::probe` with 512- and 4096-byte sectors over a sparse image.
pub fn gpt_probe(data: &[u8]) {
    let img = Sparse::decode(data, ANY_LEN);
    for ss in [512, 4096] {
        let _ = layout::probe_gpt(&img, ss);
        let _ = layout::read_gpt_header(&img, 1, ss);
    }
}

/// The MBR alone: primary entries, then the EBR chain at both sector sizes.
pub fn mbr_table(data: &[u8]) {
    let img = Sparse::decode(data, ANY_LEN);
    if let Ok(Some(entries)) = layout::read_mbr_primary(&img) {
        for ss in [512, 4096] {
            let mut findings = Vec::new();
            let _ = layout::mbr_partitions(&img, &entries, ss, &mut findings);
        }
    }
}

/// `layout::read_table` as check calls it, for both sector sizes, known or not.
pub fn read_table(data: &[u8]) {
    let img = Sparse::decode(data, ANY_LEN);
    for lbs in [512, 4096] {
        for known in [false, true] {
            let _ = layout::read_table(&img, lbs, known);
        }
    }
}

// ---------------------------------------------------------------------------
// Image containers.
// ---------------------------------------------------------------------------

/// `image::open` of a container file (a sparse image: a VHDX's metadata
/// lies MiBs apart), which names itself and `base.img` (the same bytes
/// again) as its backing file, extent or data file; then reads of its
/// guest disk at the start, the end and spots between, and the partition
/// table read through it.
pub fn image_container(data: &[u8]) {
    use diskalign::image::{self, MemFiles};
    let img: SharedReader = Rc::new(Sparse::decode(data, ANY_LEN));
    let mut files = MemFiles::default();
    for name in ["/fuzz/image", "/fuzz/base.img", "/fuzz/image-flat.vmdk"] {
        files.files.push((PathBuf::from(name), img.clone()));
    }
    let Ok(opened) = image::open(Path::new("/fuzz/image"), &files) else {
        return;
    };
    let Some(guest) = opened.guest else { return };
    let len = guest.len();
    let mut buf = vec![0u8; 65536];
    for i in 0..=16u64 {
        let at = (len / 16).saturating_mul(i).min(len.saturating_sub(4096));
        let n = (len - at).min(buf.len() as u64) as usize;
        let _ = guest.read_exact_at(&mut buf[..n], at);
    }
    let _ = layout::read_table(&*guest, 512, false);
}

// ---------------------------------------------------------------------------
// Stack metadata, each parser over the raw bytes of a region.
// ---------------------------------------------------------------------------

/// The PV label, then the metadata area it points to.
pub fn lvm_label(data: &[u8]) {
    if let Ok(Some(label)) = stack::read_label(data) {
        let _ = stack::read_metadata(data, &label);
    }
}

/// The LVM2 metadata text parser and the VG built from what it parsed.
pub fn lvm_text(data: &[u8]) {
    if let Ok(top) = stack::parse_lvm_text(data) {
        let _ = stack::volume_group(&top);
    }
}

/// `lvm::read`: label, metadata and VG together.
pub fn lvm_read(data: &[u8]) {
    let _ = stack::read_lvm(data);
}

pub fn md_read(data: &[u8]) {
    let _ = stack::read_md(data);
}

pub fn luks_read(data: &[u8]) {
    let _ = stack::read_luks(data);
}

/// The input as it is, then with its checksum set right, so mutations of
/// the fields behind the checksum reach their checks too.
pub fn bcache_read(data: &[u8]) {
    let _ = stack::read_bcache(data);
    let at = stack::BCACHE_SUPERBLOCK_AT as usize;
    let Some(sb) = data.get(at..at + 4096) else {
        return;
    };
    if let Some(sum) = stack::bcache_checksum(sb) {
        let mut sealed = data.to_vec();
        sealed[at..at + 8].copy_from_slice(&sum.to_le_bytes());
        let _ = stack::read_bcache(&sealed[..]);
    }
}

/// The input as a BlueStore label (zero-padded to its 4096 bytes), as it
/// is and then with its checksum set right, so mutations of the fields
/// behind the checksum (lengths, the meta count) reach their checks too.
pub fn bluestore_read(data: &[u8]) {
    let _ = stack::read_bluestore(data);
    let mut label = data.to_vec();
    label.resize(label.len().max(stack::BLUESTORE_LABEL_BYTES), 0);
    let _ = stack::parse_bluestore(&label);
    if let Some(end) = stack::bluestore_checksum_end(&label) {
        let sum = stack::bluestore_checksum(&label[..end]);
        label[end..end + 4].copy_from_slice(&sum.to_le_bytes());
        let _ = stack::parse_bluestore(&label);
    }
}

/// The input as a dm-thin pool's metadata: as it is, then with every 4 KiB
/// block's checksum set right (block 0 as the superblock, the rest as btree
/// nodes), so mutations reach the node checks; the first devices' maps are
/// read through to a small data area.
pub fn dm_thin(data: &[u8]) {
    use stack::{
        thin_block_checksum as block_checksum, thin_device_map as device_map, thin_map,
        thin_superblock as superblock, THIN_NODE_XOR as NODE_XOR,
        THIN_SUPERBLOCK_XOR as SUPERBLOCK_XOR,
    };
    let mut sealed = data.to_vec();
    for (i, b) in sealed.chunks_exact_mut(4096).enumerate() {
        let sum = block_checksum(b, if i == 0 { SUPERBLOCK_XOR } else { NODE_XOR });
        b[..4].copy_from_slice(&sum.to_le_bytes());
    }
    for meta in [data.to_vec(), sealed] {
        let Ok(sb) = superblock(&meta) else { continue };
        for dev in 0..4 {
            if let Ok(Some(map)) = device_map(&meta, &sb, dev) {
                let area: SharedReader = Rc::new(vec![7u8; 1 << 20]);
                let m = thin_map(area, sb.data_block_bytes, map, 64 << 20);
                let mut buf = [0u8; 4096];
                for at in [0, 1024, 65536, 1 << 20] {
                    let _ = m.read_exact_at(&mut buf, at);
                }
            }
        }
    }
}

/// The input as a FAT, an exFAT and an NTFS boot sector; as an exFAT boot
/// region also with its checksum sector set right for each sector size, so
/// mutations of the fields behind the checksum reach their checks too.
pub fn boot_sector(data: &[u8]) {
    let _ = stack::parse_fat(data);
    let _ = stack::parse_ntfs(data);
    let _ = stack::parse_exfat(data);
    for sector in [512usize, 1024, 2048, 4096] {
        let Some(sum) = stack::exfat_boot_checksum(data, sector) else {
            break;
        };
        let mut sealed = data[..(12 * sector).min(data.len())].to_vec();
        sealed.resize(12 * sector, 0);
        for w in sealed[11 * sector..].chunks_exact_mut(4) {
            w.copy_from_slice(&sum.to_le_bytes());
        }
        let _ = stack::parse_exfat(&sealed);
    }
}

/// The input as a ZFS label's configuration (the nvlist stream of a
/// `vdev_phys_t`): decoded alone, then in a 1 MiB + 37 KiB device as
/// label 0 unsealed (its checksum fails), then sealed into labels 0 and 3
/// so the label reader decodes it and types its fields.
pub fn zfs_read(data: &[u8]) {
    let _ = stack::decode_nvlist(data, "fuzz", 0);
    let len = (1 << 20) + 37 * 1024;
    let mut phys = data[..data.len().min(stack::PHYS_SIZE)].to_vec();
    phys.resize(stack::PHYS_SIZE, 0);
    let mut dev = vec![0u8; len];
    let Some(l0) = stack::phys_offset(len as u64, 0) else {
        return;
    };
    let l0 = l0 as usize;
    dev[l0..l0 + stack::PHYS_SIZE].copy_from_slice(&phys);
    let _ = stack::read_zfs(&dev[..]);
    for l in [0, 3] {
        let Some(at) = stack::phys_offset(len as u64, l) else {
            return;
        };
        let mut p = phys.clone();
        stack::seal(&mut p, at);
        dev[at as usize..at as usize + stack::PHYS_SIZE].copy_from_slice(&p);
    }
    let _ = stack::read_zfs(&dev[..]);
}

pub fn fs_read(data: &[u8]) {
    let _ = stack::read_filesystem(data);
}

// ---------------------------------------------------------------------------
// Whole stacks.
// ---------------------------------------------------------------------------

/// The stack walk over one sparse region: what sits at its start, the md
/// arrays and VGs assembled from it, and the rules judging every layer.
/// The first byte picks the topology below.
pub fn stack_walk(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let img = Sparse::decode(rest, ANY_LEN);
    let len = img.len;
    let src: SharedReader = Rc::new(img);
    let region = Region {
        src,
        device: "fuzz".into(),
        offset: 0,
        len,
        below: topology_pick(pick),
    };
    let mut pending = Pending::default();
    let mut layers: Vec<_> = stack::walk_region(&region, &mut pending)
        .into_iter()
        .collect();
    layers.extend(stack::assemble(&mut pending));
    for l in &mut layers {
        diskalign::check::judge_layer(l);
    }
}

/// A scratch path in /dev/shm (or the temp dir) unique to this process.
fn scratch(what: &str) -> PathBuf {
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let tid = format!("{:?}", std::thread::current().id());
    let tid: String = tid.chars().filter(char::is_ascii_digit).collect();
    base.join(format!(
        "diskalign-fuzz-{what}-{}-{tid}",
        std::process::id()
    ))
}

/// `diskalign check IMAGE [--topology SPEC]`: the sparse image is written
/// to a file and checked through the same path the command takes. The
/// first byte picks a `--topology` (or none).
pub fn check_image(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    const SPECS: &[&str] = &[
        "lbs=4096",
        "pbs=4096",
        "pbs=4096,min=65536,opt=196608",
        "ao=3584,pbs=4096",
        "opt=33553920",
        "ao=-1",
        "lbs=4096,min=524288,opt=1m,discard=4k",
    ];
    let topology = match usize::from(pick) % (SPECS.len() + 1) {
        0 => None,
        i => Some(
            SPECS[i - 1]
                .parse::<TopologyOverride>()
                .expect("a valid spec"),
        ),
    };
    let img = Sparse::decode(rest, FILE_LEN);
    let path = scratch("image");
    if img.write_file(&path).is_ok() {
        let opts = diskalign::check::CheckOptions {
            sysfs: Sysfs::new("/nonexistent-sysfs"),
            topology,
            ..Default::default()
        };
        let run = diskalign::check::check_all(std::slice::from_ref(&path), &opts);
        let _ = run.summary.exit_status;
        // The planner over the same hostile table, and its script.
        let i = diskalign::inspect::inspect(std::slice::from_ref(&path), &opts);
        let plan = diskalign::plan::plan(i, &diskalign::plan::PlanOptions::default());
        for d in &plan.targets {
            if d.refused.is_empty() {
                let _ = diskalign::report::render_script(d, "fuzz");
            }
        }
        let _ = diskalign::report::plan_json(&plan, &stamp());
    }
    let _ = std::fs::remove_file(&path);
}

// ---------------------------------------------------------------------------
// A sysfs tree generated from the input.
// ---------------------------------------------------------------------------

/// Values a sysfs attribute may hold: real ones, edge cases and garbage.
fn sysfs_value(sel: u8, raw: u64) -> String {
    match sel % 16 {
        0 => "512".into(),
        1 => "4096".into(),
        2 => "0".into(),
        3 => "-1".into(),
        4 => "4294967295".into(),
        5 => "18446744073709551615".into(),
        6 => "99999999999999999999999".into(),
        7 => "".into(),
        8 => "  \n".into(),
        9 => "abc".into(),
        10 => "0x200".into(),
        11 => "33553920".into(),
        12 => (raw % 1_000_000).to_string(),
        13 => raw.to_string(),
        14 => (1u64 << (raw % 64)).to_string(),
        _ => format!("{}\n", raw as i64),
    }
}

/// Write `v` to `dir/file`, or remove the file for a missing attribute.
fn put(dir: &Path, file: &str, v: Option<String>) -> io::Result<()> {
    match v {
        Some(v) => std::fs::write(dir.join(file), v),
        None => match std::fs::remove_file(dir.join(file)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    }
}

/// Create `dir`, or remove it and everything in it.
fn keep_dir(dir: &Path, keep: bool) -> io::Result<()> {
    if keep {
        std::fs::create_dir_all(dir)
    } else if dir.exists() {
        std::fs::remove_dir_all(dir)
    } else {
        Ok(())
    }
}

/// Decode the input into a small sysfs tree: one disk `sdf` with queue
/// limits, size, up to four partitions and a few identity files, each
/// attribute present or missing and holding any of `sysfs_value`'s values.
/// The tree is rewritten in place (every file written or removed, every
/// directory made or removed), so it depends on this input alone.
fn build_tree(data: &[u8], root: &Path) -> io::Result<()> {
    let mut data = data;
    let mut byte = || take::<1>(&mut data).map_or(0, |b| b[0]);
    let next = |byte: &mut dyn FnMut() -> u8| -> Option<String> {
        let sel = byte();
        let mut raw = 0u64;
        for _ in 0..8 {
            raw = raw << 8 | u64::from(byte());
        }
        // One value in eight is a missing file.
        (sel & 0x70 != 0x70).then(|| sysfs_value(sel, raw))
    };
    let disk = root.join("block/sdf");
    let queue = disk.join("queue");
    std::fs::create_dir_all(&queue)?;
    for f in [
        "logical_block_size",
        "physical_block_size",
        "minimum_io_size",
        "optimal_io_size",
        "discard_granularity",
        "rotational",
    ] {
        put(&queue, f, next(&mut byte))?;
    }
    for f in ["size", "alignment_offset", "discard_alignment", "removable"] {
        put(&disk, f, next(&mut byte))?;
    }
    let parts = byte() % 5;
    for n in 1..=4 {
        let p = disk.join(format!("sdf{n}"));
        keep_dir(&p, n <= parts)?;
        if n <= parts {
            for f in ["partition", "start", "size", "alignment_offset"] {
                put(&p, f, next(&mut byte))?;
            }
        }
    }
    let flags = byte();
    let dev = disk.join("device");
    keep_dir(&dev, flags & 1 != 0)?;
    if flags & 1 != 0 {
        put(&dev, "model", Some("FUZZ DISK".into()))?;
        put(&dev, "vpd_pg80", next(&mut byte))?;
    }
    keep_dir(&disk.join("slaves/sda"), flags & 2 != 0)?;
    keep_dir(&disk.join("holders/dm-0"), flags & 4 != 0)?;
    Ok(())
}

/// `Sysfs::new(root)` over a generated tree: `disk`, `partitions`,
/// `topology`, `default_disks` and `hints`. The tree of one process and
/// thread is reused from input to input (see `build_tree`); `cleanup`
/// removes it.
pub fn sysfs_tree(data: &[u8]) {
    let root = scratch("sysfs");
    if build_tree(data, &root).is_err() {
        // Start over from nothing next time.
        let _ = std::fs::remove_dir_all(&root);
        return;
    }
    let s = Sysfs::new(&root);
    let _ = s.default_disks();
    let _ = s.topology("sdf");
    let _ = s.partitions("sdf");
    if let Ok(d) = s.disk("sdf") {
        let _ = topology::hints(&d);
    }
}

/// Remove the scratch files and trees of this process and thread.
pub fn cleanup() {
    let _ = std::fs::remove_dir_all(scratch("sysfs"));
    let _ = std::fs::remove_file(scratch("image"));
}

// ---------------------------------------------------------------------------
// Command-line values.
// ---------------------------------------------------------------------------

/// `--topology SPEC`, parsed and applied to a few detected topologies.
pub fn topology_spec(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    if let Ok(o) = s.parse::<TopologyOverride>() {
        for pick in 0..8 {
            let _ = o.apply(topology_pick(pick));
        }
    }
}

/// The size, offset and duration values of `probe` (`--bs`, `--offsets`,
/// `--size`, `--runtime`, `--warmup`) through clap as the command parses
/// them, then the grid plan built from them. The input is NUL-separated:
/// bs, offsets, size, runtime, warmup, rounds.
pub fn sizes(data: &[u8]) {
    use diskalign::cli::{Cli, Command};
    use diskalign::probe::{self, Constraints};
    let s = String::from_utf8_lossy(data);
    let mut f = s.split('\0');
    let mut field = || f.next().unwrap_or("").to_string();
    let (bs, offsets, size, runtime, warmup, rounds) =
        (field(), field(), field(), field(), field(), field());
    for v in [&bs, &offsets, &size] {
        let _ = diskalign::units::parse_size(v);
        let _ = diskalign::units::parse_size_expr(v);
    }
    for v in [&runtime, &warmup] {
        let _ = diskalign::units::parse_duration(v);
    }
    let mut args = vec!["diskalign".to_string(), "probe".into(), "/dev/null".into()];
    for (flag, v) in [
        ("--bs", &bs),
        ("--offsets", &offsets),
        ("--size", &size),
        ("--runtime", &runtime),
        ("--warmup", &warmup),
        ("--rounds", &rounds),
    ] {
        if !v.is_empty() {
            args.push(format!("{flag}={v}"));
        }
    }
    let Ok(cli) = <Cli as clap::Parser>::try_parse_from(&args) else {
        return;
    };
    let Command::Probe(a) = cli.command else {
        return;
    };
    let req = a.grid_request(1);
    for (lbs, pbs) in [(512, 512), (512, 4096), (4096, 4096)] {
        let c = Constraints {
            logical_block_size: lbs,
            physical_block_size: pbs,
            size_bytes: a.size,
            dio_offset_align: lbs,
            dio_rule: probe::DioRule::LogicalBlockSize,
        };
        if let Ok(plan) = probe::lay_out(&req, &c) {
            let _ = plan.shuffled(&plan.cells, 0, |c| (c.pattern, c.block_size));
            let _ = diskalign::probe::contrasts(&plan.all_cells().copied().collect::<Vec<_>>(), 2);
        }
    }
}

// ---------------------------------------------------------------------------
// Saved runs read back.
// ---------------------------------------------------------------------------

/// A saved JSON run as `report` and `compare` read it: `Saved::parse`
/// (check, topology, probe, compare documents and fio's JSON), the run
/// compared with itself, its HTML page and the page's figures, and the
/// comparison (its own, or the saved one) through every exporter.
pub fn saved(data: &[u8]) {
    use diskalign::report::{self as report, Format, Input, Style};
    use diskalign::saved::Saved;
    let text = String::from_utf8_lossy(data);
    let Ok(doc) = Saved::parse(&text, "fuzz<&>\"'.json") else {
        return;
    };
    let comparison = match &doc {
        Saved::Compare(c) => Some((**c).clone()),
        _ => diskalign::saved::compare(&doc, &doc).ok(),
    };
    let page = report::render_html(&[Input {
        name: "fuzz<&>\"'.json".into(),
        doc,
    }]);
    let _ = report::html_figures(&page);
    let Some(c) = comparison else {
        return;
    };
    let _ = c.differs();
    let wide = Style {
        verbose: true,
        width: Some(80),
        ..Style::plain()
    };
    for (format, style) in [
        (Format::Human, Style::plain()),
        (Format::Human, wide),
        (Format::Json, Style::plain()),
        (Format::Csv, Style::plain()),
        (Format::Html, Style::plain()),
    ] {
        let _ = report::exporter(format, style, &stamp()).compare(&c);
    }
}

// ---------------------------------------------------------------------------
// What devices say about themselves (identify data).
// ---------------------------------------------------------------------------

/// The answers set against each of the eight picked kernel topologies,
/// and drawn as the topology details draw them.
fn device_says(answers: &topology::Answers) {
    use diskalign::report::{self as report, Format, Style};
    for pick in 0..8 {
        let kernel = topology_pick(pick);
        let Ok(says) = topology::read_declared(answers, &kernel) else {
            continue;
        };
        let _ = says.disagreements();
        let disk = topology::Disk {
            name: "sdz".into(),
            topology: kernel,
            declared: Some(says),
            ..Default::default()
        };
        let survey = topology::Survey {
            disks: vec![disk],
            errors: vec![],
        };
        for format in [Format::Human, Format::Csv] {
            let _ = report::exporter(format, Style::plain(), &stamp()).topology(&survey);
        }
    }
}

/// NVMe Identify Namespace data: `identify::parse_ata`, then the
/// comparison with the kernel's limits.
pub fn identify_nvme(data: &[u8]) {
    let _ = diskalign::identify::parse_ata(data);
    device_says(&topology::Answers {
        nvme: Some(Ok(data.to_vec())),
        ..Default::default()
    });
}

/// Two length bytes, then the Block Limits page, the Device
/// Identification page and READ CAPACITY(16) data: each parser, then the
/// three as one disk's answers (behind a USB bridge when the first length
/// byte is odd).
pub fn identify_scsi(data: &[u8]) {
    use diskalign::identify;
    let (n0, n1, rest) = match data {
        [a, b, rest @ ..] => (usize::from(*a), usize::from(*b), rest),
        _ => return,
    };
    let (b0, rest) = rest.split_at(n0.min(rest.len()));
    let (p83, rc) = rest.split_at(n1.min(rest.len()));
    let _ = identify::block_limits(b0);
    let _ = identify::naa_wwn(p83);
    let _ = identify::read_capacity16(rc);
    device_says(&topology::Answers {
        vpd_b0: Some(b0.to_vec()),
        vpd_83: Some(p83.to_vec()),
        read_capacity: Some(Ok(rc.to_vec())),
        usb: n0 % 2 == 1,
        ..Default::default()
    });
}

/// ATA IDENTIFY DEVICE data (512 bytes), then READ CAPACITY(16) data as a
/// bridge would answer for the drive: `identify::parse_ata`, then the
/// drive against the bridge and the kernel.
pub fn identify_ata(data: &[u8]) {
    let _ = diskalign::identify::parse_ata(data);
    let (id, rc) = data.split_at(data.len().min(512));
    device_says(&topology::Answers {
        ata: Some(Ok(id.to_vec())),
        read_capacity: (!rc.is_empty()).then(|| Ok(rc.to_vec())),
        usb: true,
        ..Default::default()
    });
}

/// A tracepoint's tracefs `format` file (sys/trace/format.rs): parsed,
/// each block event's layout taken from it, the input decoded as a raw
/// record through each, and as a perf record (sys/trace/ring.rs) counted
/// through the layouts with the decoded device counted.
pub fn trace_format(data: &[u8]) {
    use diskalign::sys::Grains;
    use diskalign::sys::{self, Event};
    let text = String::from_utf8_lossy(data);
    let Ok(f) = sys::parse_event_format(&text) else {
        return;
    };
    let mut layouts = std::collections::HashMap::new();
    let mut grains = Vec::new();
    for e in Event::ALL {
        let Ok(l) = sys::event_layout(e, &f) else {
            continue;
        };
        let _ = l.aligned();
        if let Some(r) = l.decode(data) {
            grains.push(Grains {
                dev: sys::dev_num(r.dev),
                grain_bytes: r.sector,
                physical_bytes: u64::from(r.nr_sector),
                zone_bytes: r.sector ^ u64::from(r.nr_sector),
                legs: r.sector & 1 == 1,
            });
        }
        layouts.insert(f.id.unwrap_or(0) as u16, l);
    }
    let mut t = sys::Tally::new(&grains);
    // As a sample with and without the cgroup id after the raw record.
    sys::count_record(data, &layouts, false, &mut t);
    sys::count_record(data, &layouts, true, &mut t);
    let _ = t.snapshot(0.0);
}

/// `sys::Btf::parse` of the input as a BTF blob, the lookups
/// the typed raw tracepoints make in it, and `Typed::from` of it.
pub fn btf(data: &[u8]) {
    use diskalign::sys::Btf;
    use diskalign::sys::Typed;
    let Ok(b) = Btf::parse(data) else {
        return;
    };
    let _ = b.member("bio", &["bi_iter", "bi_sector"]);
    let _ = b.member("bio", &["bi_opf"]);
    let _ = b.typedef("btf_trace_block_bio_queue");
    let _ = b.enumerator("REQ_OP_WRITE");
    let _ = Typed::from(&b);
}
