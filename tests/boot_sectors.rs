//! The FAT, exFAT and NTFS boot sector parsers (stack::parse_fat,
//! parse_exfat, parse_ntfs) on volumes made here by mkfs.fat, mkfs.exfat
//! and mkntfs over the options that move their layout, every field against
//! what the tools' own readers print: `fsck.fat -v -n` (dosfstools),
//! `dump.exfat` (exfatprogs), `ntfsinfo -m -f` (ntfs-3g), and blkid for the
//! serial.

mod common;
use common::*;
use diskalign::stack::{parse_exfat, parse_fat, parse_ntfs, FatType};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The first 48 KiB of a volume: a whole exFAT boot region of 4 KiB sectors.
fn head(path: &Path) -> Vec<u8> {
    bytes_at(path, 0, 48 << 10)
}

fn bytes_at(path: &Path, offset: u64, len: u64) -> Vec<u8> {
    let mut f = std::fs::File::open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    let mut b = Vec::new();
    f.take(len).read_to_end(&mut b).unwrap();
    b
}

/// The first number on the line holding `label` (fsck.fat's "   N label").
fn before(txt: &str, label: &str) -> u64 {
    let line = txt.lines().find(|l| l.contains(label));
    let line = line.unwrap_or_else(|| panic!("no {label:?} in\n{txt}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

/// The number after `label` ("Data area starts at byte N", "Label:\tN"),
/// decimal or 0x hex.
fn after(txt: &str, label: &str) -> u64 {
    let line = txt.lines().find(|l| l.trim_start().starts_with(label));
    let line = line.unwrap_or_else(|| panic!("no {label:?} in\n{txt}"));
    let v = line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .unwrap();
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap_or_else(|_| panic!("{line}")),
    }
}

/// blkid's UUID of the volume, its dashes dropped.
fn blkid_serial(path: &Path) -> String {
    let out = sh(
        "blkid",
        &["-p", "-o", "value", "-s", "UUID", path.to_str().unwrap()],
    );
    String::from_utf8_lossy(&out.stdout).trim().replace('-', "")
}

#[test]
fn fat_boot_sectors_read_as_fsck_fat_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, u64, &[&str])] = &[
        ("fat12", 8 << 20, &["-F", "12", "-n", "SMALL"]),
        ("fat16", 64 << 20, &["-F", "16"]),
        ("fat16-4k", 256 << 20, &["-F", "16", "-S", "4096"]),
        ("fat32", 256 << 20, &["-F", "32"]),
        (
            "fat32-s1",
            256 << 20,
            &["-F", "32", "-s", "1", "-n", "CARD"],
        ),
        ("fat32-s8", 256 << 20, &["-F", "32", "-s", "8"]),
        ("fat32-s8-a", 256 << 20, &["-F", "32", "-s", "8", "-a"]),
        (
            "fat32-R33",
            256 << 20,
            &["-F", "32", "-s", "8", "-a", "-R", "33"],
        ),
        (
            "fat32-4k",
            512 << 20,
            &["-F", "32", "-S", "4096", "-h", "2048"],
        ),
        ("fat32-f1", 256 << 20, &["-F", "32", "-f", "1", "-h", "63"]),
    ];
    for &(name, size, opts) in cases {
        let img = image(dir.path(), name, size);
        let path = img.to_str().unwrap();
        sh("mkfs.fat", &[opts, &[path]].concat());
        let (_, txt) = sh_status("fsck.fat", &["-v", "-n", path]);
        let f = parse_fat(&head(&img)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let bits = match f.fat_type {
            FatType::Fat12 => 12,
            FatType::Fat16 => 16,
            FatType::Fat32 => 32,
        };
        assert_eq!(format!("-F {bits}"), format!("{} {}", opts[0], opts[1]));
        assert!(
            txt.contains(&format!("{bits} bit entries")),
            "{name}: {txt}"
        );
        assert_eq!(
            u64::from(f.bytes_per_sector),
            before(&txt, "bytes per logical sector")
        );
        assert_eq!(
            f.cluster_bytes(),
            before(&txt, "bytes per cluster"),
            "{name}"
        );
        assert_eq!(
            u64::from(f.reserved_sectors),
            before(&txt, "reserved sector")
        );
        assert_eq!(u64::from(f.fats), before(&txt, "FATs,"), "{name}");
        let fat_bytes = f.fat_sectors * u64::from(f.bytes_per_sector);
        assert_eq!(fat_bytes, before(&txt, "bytes per FAT"), "{name}");
        assert_eq!(f.fat_offset_bytes, after(&txt, "First FAT starts at byte"));
        let data = after(&txt, "Data area starts at byte");
        assert_eq!(f.data_offset_bytes, data, "{name}");
        assert_eq!(f.cluster_count, before(&txt, "data clusters"), "{name}");
        assert_eq!(u64::from(f.hidden_sectors), before(&txt, "hidden sectors"));
        assert_eq!(f.total_sectors, before(&txt, "sectors total"), "{name}");
        assert_eq!(f.size_bytes(), size, "{name}");
        if let Some(root) = f.root_cluster {
            assert_eq!(
                u64::from(root),
                after(&txt, "Root directory start at cluster")
            );
        } else {
            assert_eq!(
                u64::from(f.root_entries),
                before(&txt, "root directory entries")
            );
        }
        let serial = format!("{:08X}", f.serial.unwrap());
        assert_eq!(serial, blkid_serial(&img), "{name}");
        // check's layer of the whole image says the same.
        let (doc, _) = check(&img, &[]);
        let l = layer_in(&doc, 0);
        agree_fat(path, l, 0);
        let v = &l["filesystem"]["volume"];
        assert_eq!(num(v, "region_bytes"), size);
        let backup = if bits == 32 { "same" } else { "none" };
        assert_eq!(v["backup"]["state"], backup, "{name}");
    }
}

#[test]
fn exfat_boot_regions_read_as_dump_exfat_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, u64, &[&str])] = &[
        ("c4k", 256 << 20, &["-c", "4K", "-L", "CAMERA"]),
        ("c128k", 256 << 20, &["-c", "128K"]),
        ("b1m", 256 << 20, &["-b", "1M"]),
        ("b16m", 256 << 20, &["-c", "32K", "-b", "16M"]),
        ("64g", 64 << 30, &[]),
    ];
    for &(name, size, opts) in cases {
        let img = image(dir.path(), name, size);
        let path = img.to_str().unwrap();
        sh("mkfs.exfat", &[opts, &[path]].concat());
        let out = sh("dump.exfat", &[path]);
        let txt = String::from_utf8_lossy(&out.stdout);
        let x = parse_exfat(&head(&img)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(x.volume_length, after(&txt, "Volume Length(sectors):"));
        assert_eq!(
            u64::from(x.fat_offset),
            after(&txt, "FAT Offset(sector offset):")
        );
        assert_eq!(u64::from(x.fat_length), after(&txt, "FAT Length(sectors):"));
        let heap = after(&txt, "Cluster Heap Offset (sector offset):");
        assert_eq!(u64::from(x.cluster_heap_offset), heap, "{name}");
        assert_eq!(u64::from(x.cluster_count), after(&txt, "Cluster Count:"));
        assert_eq!(
            u64::from(x.root_cluster),
            after(&txt, "Root Cluster (cluster offset):")
        );
        assert_eq!(u64::from(x.serial), after(&txt, "Volume Serial:"), "{name}");
        let bits = after(&txt, "Sector Size Bits:");
        assert_eq!(u64::from(x.bytes_per_sector_shift), bits);
        let spc = after(&txt, "Sector per Cluster bits:");
        assert_eq!(u64::from(x.sectors_per_cluster_shift), spc, "{name}");
        assert_eq!(x.cluster_bytes(), after(&txt, "Cluster size:"), "{name}");
        assert_eq!(x.size_bytes(), size, "{name}");
        assert_eq!(format!("{:08X}", x.serial), blkid_serial(&img));
        // The backup boot region (sectors 12 to 23) carries the same sum.
        let sector = x.sector_bytes() as usize;
        let backup = &head(&img)[12 * sector..24 * sector];
        assert_eq!(parse_exfat(backup).map(|b| b.checksum), Ok(x.checksum));
        let (doc, _) = check(&img, &[]);
        let l = layer_in(&doc, 0);
        agree_exfat(path, l, 0);
        assert_eq!(l["filesystem"]["volume"]["backup"]["state"], "same");
    }
}

#[test]
fn ntfs_boot_sectors_read_as_ntfsinfo_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, u64, &[&str])] = &[
        ("c512", 64 << 20, &["-c", "512", "-p", "2048"]),
        (
            "c4096",
            256 << 20,
            &["-c", "4096", "-p", "63", "-L", "WINDOWS"],
        ),
        ("c65536", 256 << 20, &["-c", "65536"]),
        (
            "s4096",
            256 << 20,
            &["-s", "4096", "-c", "4096", "-p", "256"],
        ),
        ("c2m", 1 << 30, &["-c", "2097152"]),
    ];
    for &(name, size, opts) in cases {
        let img = image(dir.path(), name, size);
        let path = img.to_str().unwrap();
        sh("mkntfs", &[&["-F", "-Q", "-q"], opts, &[path]].concat());
        let out = sh("ntfsinfo", &["-m", "-f", path]);
        let txt = String::from_utf8_lossy(&out.stdout);
        let n = parse_ntfs(&head(&img)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let opt = |flag: &str| {
            let i = opts.iter().position(|&o| o == flag)?;
            opts[i + 1].parse::<u64>().ok()
        };
        assert_eq!(u64::from(n.bytes_per_sector), after(&txt, "Sector Size:"));
        assert_eq!(u64::from(n.bytes_per_sector), opt("-s").unwrap_or(512));
        assert_eq!(n.cluster_bytes(), after(&txt, "Cluster Size:"), "{name}");
        assert_eq!(Some(n.cluster_bytes()), opt("-c"));
        assert_eq!(n.clusters(), after(&txt, "Volume Size in Clusters:"));
        assert_eq!(n.mft_record_bytes, after(&txt, "MFT Record Size:"));
        let mft = after(&txt, "LCN of Data Attribute for FILE_MFT:");
        assert_eq!(n.mft_lcn, mft, "{name}");
        let mirr = after(&txt, "LCN of Data Attribute for File_MFTMirr:");
        assert_eq!(n.mftmirr_lcn, mirr, "{name}");
        assert_eq!(u64::from(n.hidden_sectors), opt("-p").unwrap_or(0));
        // mkntfs leaves the last sector out of the volume: its backup
        // boot sector, a copy of the first.
        let bps = u64::from(n.bytes_per_sector);
        assert_eq!(n.total_sectors, size / bps - 1, "{name}");
        let last = bytes_at(&img, size - bps, bps);
        assert_eq!(parse_ntfs(&last).as_ref(), Ok(&n), "{name}");
        assert_eq!(format!("{:016X}", n.serial), blkid_serial(&img));
        let (doc, _) = check(&img, &[]);
        agree_ntfs(path, layer_in(&doc, 0), 0, opt("-p").unwrap_or(0));
    }
}

// ---------------------------------------------------------------------------
// The volumes as `check` sees them: layers of a partition or a whole image,
// judged, in every output form.
// ---------------------------------------------------------------------------

const MIB: u64 = 1 << 20;

/// `check IMG --json` with `extra` options: the document and the exit code.
fn check(img: &Path, extra: &[&str]) -> (serde_json::Value, i32) {
    let p = img.display().to_string();
    let mut args = vec!["check", p.as_str()];
    args.extend_from_slice(extra);
    run_json(&args)
}

/// The layer inside stack root `root` of the first target (a partition,
/// or the whole device of an image without a table).
fn layer_in(doc: &serde_json::Value, root: usize) -> &serde_json::Value {
    &doc["targets"][0]["stack"][root]["children"][0]
}

/// The findings of a layer as (code, severity).
fn findings_of(l: &serde_json::Value) -> Vec<(String, String)> {
    l["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_string();
            (s("code"), s("severity"))
        })
        .collect()
}

/// The finding `code` of a layer.
fn finding<'a>(l: &'a serde_json::Value, code: &str) -> &'a serde_json::Value {
    l["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == code)
        .unwrap_or_got(code, l)
}

trait OrGot<'a> {
    fn unwrap_or_got(self, code: &str, l: &serde_json::Value) -> &'a serde_json::Value;
}

impl<'a> OrGot<'a> for Option<&'a serde_json::Value> {
    fn unwrap_or_got(self, code: &str, l: &serde_json::Value) -> &'a serde_json::Value {
        self.unwrap_or_else(|| panic!("no {code} in {l:#}"))
    }
}

/// The CSV of `check` as rows of (column, value), the header's names.
fn csv_rows(text: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), head.len(), "a quoted comma? {l}");
            head.iter()
                .zip(cells)
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        })
        .collect()
}

/// Every form of `check IMG extra` says what the JSON `doc` says: the
/// human report each layer finding (severity and code) and the verdict,
/// `-q` the verdict, the CSV the target's status and the codes of the
/// warnings and errors (not the info findings) in `problems`; the exit
/// codes are one. Returns the CSV's rows.
fn forms_agree(
    img: &Path,
    extra: &[&str],
    doc: &serde_json::Value,
    code: i32,
) -> Vec<std::collections::HashMap<String, String>> {
    let p = img.display().to_string();
    let with = |form: &[&str]| {
        let mut a = vec!["check", p.as_str()];
        a.extend_from_slice(extra);
        a.extend_from_slice(form);
        run(&a)
    };
    let t = &doc["targets"][0];
    let verdict = t["verdict"].as_str().unwrap();
    let (human, hc) = with(&["--width", "0"]);
    // The stack tree shows a layer's info findings with -v only.
    let (verbose, _) = with(&["--width", "0", "-v"]);
    let (quiet, qc) = with(&["-q", "--width", "0"]);
    let (csv, cc) = with(&["--format", "csv"]);
    assert_eq!((hc, qc, cc), (code, code, code), "{human}");
    assert!(human.contains(&format!("verdict: {verdict}")), "{human}");
    assert_eq!(
        quiet.lines().next(),
        Some(format!("{p}: {verdict}").as_str())
    );
    let mut problems = Vec::new();
    for root in t["stack"].as_array().unwrap() {
        for l in root["children"].as_array().unwrap() {
            for (code, severity) in findings_of(l) {
                let line = format!("{severity} {code}:");
                assert!(verbose.contains(&line), "no {line:?} in\n{verbose}");
                let shown = human.contains(&line);
                assert_eq!(shown, severity != "info", "{line:?} in\n{human}");
                if severity != "info" && !problems.contains(&code) {
                    problems.push(code);
                }
            }
        }
    }
    let rows = csv_rows(&csv);
    let status = t["summary"]["status"].as_str().unwrap();
    for r in &rows {
        assert_eq!(r["target_status"], status, "{csv}");
    }
    let in_csv: Vec<String> = rows
        .iter()
        .flat_map(|r| r["problems"].split_whitespace().map(String::from))
        .collect();
    for c in &problems {
        assert!(in_csv.contains(c), "{c} not in the CSV's problems:\n{csv}");
    }
    rows
}

/// `fsck.fat -v -n`'s "Data area starts at byte N" for a volume.
fn fsck_data_area(node: &str) -> u64 {
    let (_, txt) = sh_status("fsck.fat", &["-v", "-n", node]);
    after(&txt, "Data area starts at byte")
}

/// The issue's table (issue 50): a Raspberry Pi style card, a DOS table
/// with a FAT32 partition at 4 MiB, made by mkfs.fat on the partition's
/// node four ways: the data area at 5,259,264, ~12.4 MB, 5,257,216 and
/// 5,257,728 on the disk, which check calls aligned, then misaligned by
/// 1024, 2048 and 2560 bytes. The partition is 1,048,448 sectors (64 KiB
/// short of the Pi's 512 MiB): the size at which Debian's mkfs.fat 4.2
/// puts rows 1, 3 and 4 at the table's bytes and row 2 (`-s 1`) 1024 past
/// 4 KiB. The table's 8,340,480 for row 2 is no partition's at 4 MiB: it
/// is where `-s 1` puts the data area from the start of a 516 MiB volume
/// (the whole card), and the other three rows hold for no size near that.
/// Then the fix the finding names, run as it says (its command before
/// "without -a"), makes check say aligned.
#[test]
fn the_issue_table_of_a_pi_card_reads_as_the_issue_says() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let (start, sectors) = (8192u64, 1_048_448u64);
    let card = image(dir.path(), "card.img", (start + sectors) * 512);
    sfdisk(
        &card,
        &format!("label: dos\nstart={start}, size={sectors}, type=c\n"),
    );
    let lo = LoopDev::attach(&card, None);
    let node = lo.part(1);
    let mkfs = |opts: &[&str]| {
        sh("mkfs.fat", &[opts, &[node.as_str()]].concat());
        sh("sync", &[&node]);
    };
    let rows: [(&[&str], u64, u64); 4] = [
        (&["-F", "32"], 5_259_264, 0),
        (&["-F", "32", "-s", "1"], 12_469_248, 1024),
        (&["-F", "32", "-s", "8", "-a"], 5_257_216, 2048),
        (&["-F", "32", "-s", "8", "-a", "-R", "33"], 5_257_728, 2560),
    ];
    let mut fixes = Vec::new();
    for (opts, data_start, off) in rows {
        mkfs(opts);
        let (doc, code) = check(&card, &[]);
        let l = layer_in(&doc, 0);
        assert_eq!(l["name"], "FAT32", "{l:#}");
        let v = &l["filesystem"]["volume"];
        assert_eq!(v["data_start_bytes"], data_start, "{opts:?}: {v:#}");
        assert_eq!(start * 512 + fsck_data_area(&node), data_start);
        assert_eq!(v["hidden_sectors"], start, "mkfs.fat reads the start");
        assert_eq!(v["start_sectors"], start);
        if off == 0 {
            assert_eq!(code, 0, "{doc:#}");
            // On 4 KiB, not on 1 MiB: said, not a problem.
            let codes = findings_of(l);
            assert_eq!(codes, [("layer-start-not-1mib".into(), "info".into())]);
            assert_eq!(l["status"], "aligned");
        } else {
            assert_eq!(code, 1, "{doc:#}");
            let codes = findings_of(l);
            assert_eq!(codes, [("layer-start-not-4k".into(), "error".into())]);
            let f = &finding(l, "layer-start-not-4k")["facts"];
            assert_eq!(f["misalignment_bytes"], off, "{opts:?}");
            assert_eq!(f["offset_bytes"], data_start);
            assert_eq!(f["share"], 1.0);
            fixes.push(f["fix"].as_str().unwrap().to_string());
        }
        forms_agree(&card, &[], &doc, code);
        volumes_shown_alike(&card, &doc);
        if opts.contains(&"1") {
            // 512-byte clusters on a drive of 4 KiB sectors, as an ext4 of
            // 1 KiB blocks is judged.
            let pbs = ["--topology", "pbs=4096"];
            let (doc, code) = check(&card, &pbs);
            let l = layer_in(&doc, 0);
            let codes = findings_of(l);
            let want = [
                ("fs-block-below-physical", "warning"),
                ("layer-start-misaligned", "error"),
            ];
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(c, s)| (c.to_string(), s.to_string()))
                .collect();
            assert_eq!(codes, want);
            let f = &finding(l, "fs-block-below-physical")["facts"];
            assert_eq!(
                (&f["block_size_bytes"], &f["fix"]),
                (&512.into(), &"mkfs.fat -s 8".into())
            );
            forms_agree(&card, &pbs, &doc, code);
        }
    }
    // The same fix for all three: 4 KiB clusters, reserved sectors padded.
    assert!(fixes.iter().all(|f| *f == fixes[0]), "{fixes:?}");
    let cmd = fixes[0].split(" without -a").next().unwrap();
    assert_eq!(cmd, "mkfs.fat -F 32 -s 8", "{}", fixes[0]);
    let args: Vec<&str> = cmd.split(' ').skip(1).collect();
    mkfs(&args);
    let (doc, code) = check(&card, &[]);
    let l = layer_in(&doc, 0);
    assert_eq!((code, &l["status"]), (0, &"aligned".into()), "{l:#}");
    assert_eq!(
        l["filesystem"]["volume"]["data_start_bytes"]
            .as_u64()
            .unwrap()
            % 4096,
        0
    );
}

/// A file of 64 KiB (past what NTFS keeps resident in its MFT record)
/// starting with `marker`.
fn pattern_file(dir: &Path, marker: &str) -> std::path::PathBuf {
    let p = dir.join(marker);
    let mut b = marker.as_bytes().to_vec();
    b.extend((0..65536u32).map(|i| (i % 251) as u8));
    std::fs::write(&p, b).unwrap();
    p
}

/// The one byte where `marker` is in `img` (grep's byte offset).
fn find_in(img: &Path, marker: &str) -> u64 {
    let out = sh("grep", &["-obaF", marker, img.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let at: Vec<u64> = text
        .lines()
        .map(|l| l.split(':').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(at.len(), 1, "{marker} in {}: {text}", img.display());
    at[0]
}

/// An mtools command on a FAT (mtools checks a geometry a loop partition
/// does not have: MTOOLS_SKIP_CHECK turns that off).
fn mtools(cmd: &str, args: &[&str]) -> String {
    require_tool(cmd);
    let out = std::process::Command::new(cmd)
        .args(args)
        .env("MTOOLS_SKIP_CHECK", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd} {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where a volume's first file lands is where check says its clusters
/// are: a file with a known pattern written into a fresh FAT16, FAT32,
/// exFAT and NTFS on partitions of a loop disk (mtools' mcopy for the
/// FATs; the exfat-fuse and ntfs-3g drivers, mounted, for the others),
/// the pattern found in the disk image, and its byte is cluster 2's byte
/// in check's JSON (`data_start_bytes`, on the disk) plus whole clusters:
/// the cluster mshowfat names (FAT32 puts its root directory in cluster
/// 2, so the file takes 3; FAT16's root is before the data area, so 2),
/// the one after the root directory dump.exfat names, the LCN ntfscluster
/// names counted from the NTFS's own start.
#[test]
fn the_first_file_lands_where_check_says_clusters_start() {
    require_root();
    for t in [
        "mkfs.exfat",
        "mkntfs",
        "mount.exfat-fuse",
        "ntfs-3g",
        "ntfscluster",
    ] {
        require_tool(t);
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = image(dir.path(), "disk.img", 200 * MIB);
    sfdisk(
        &disk,
        "label: dos\nstart=2048, size=32768, type=6\nstart=34816, size=133120, type=c\nstart=167936, size=65536, type=7\nstart=233472, size=65536, type=7\n",
    );
    let lo = LoopDev::attach(&disk, None);
    sh("mkfs.fat", &["-F", "16", &lo.part(1)]);
    sh("mkfs.fat", &["-F", "32", &lo.part(2)]);
    sh("mkfs.exfat", &[&lo.part(3)]);
    sh("mkntfs", &["-F", "-Q", "-q", &lo.part(4)]);
    let marks = [
        "FIRST-FILE-FAT16",
        "FIRST-FILE-FAT32",
        "FIRST-FILE-EXFAT",
        "FIRST-FILE-NTFS",
    ];
    let files: Vec<_> = marks.iter().map(|m| pattern_file(dir.path(), m)).collect();
    let mut fat_clusters = Vec::new();
    for (n, file) in (1..=2).zip(&files) {
        let (node, f) = (lo.part(n), file.to_str().unwrap());
        mtools("mcopy", &["-i", &node, f, "::/first"]);
        let shown = mtools("mshowfat", &["-i", &node, "::/first"]);
        // "::/first <3-131>": its first cluster.
        let first = shown
            .split('<')
            .nth(1)
            .and_then(|s| s.split(['-', '>']).next());
        fat_clusters.push(first.unwrap().parse::<u64>().unwrap());
    }
    assert_eq!(
        fat_clusters,
        [2, 3],
        "FAT16's root is no cluster, FAT32's is 2"
    );
    for (i, fstype) in [(3, "exfat-fuse"), (4, "ntfs-3g")] {
        let m = Mounted::typed(&lo.part(i), fstype);
        std::fs::copy(&files[i as usize - 1], m.dir.path().join("first")).unwrap();
    }
    let (_, dump) = sh_status("dump.exfat", &[&lo.part(3)]);
    let root = after(&dump, "Root Cluster (cluster offset):");
    let lcn_text = sh("ntfscluster", &["-F", "/first", &lo.part(4)]);
    // "    VCN     LCN     Length" then "      0    8576      17".
    let lcn_text = String::from_utf8_lossy(&lcn_text.stdout).into_owned();
    let lcn: u64 = lcn_text
        .lines()
        .last()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    drop(lo);
    let (doc, _) = check(&disk, &[]);
    let at: Vec<u64> = marks.iter().map(|m| find_in(&disk, m)).collect();
    let v = |root: usize| layer_in(&doc, root)["filesystem"]["volume"].clone();
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v:#}"));
    for (i, first) in [(0, fat_clusters[0]), (1, fat_clusters[1]), (2, root + 1)] {
        let v = v(i);
        let (start, cluster) = (n(&v, "data_start_bytes"), n(&v, "cluster_bytes"));
        assert_eq!(at[i], start + (first - 2) * cluster, "{}: {v:#}", marks[i]);
    }
    let ntfs = layer_in(&doc, 3);
    let volume_start = n(ntfs, "offset_bytes");
    assert_eq!(volume_start, 233472 * 512);
    let cluster = n(&ntfs["filesystem"]["volume"], "cluster_bytes");
    assert_eq!(at[3] - volume_start, lcn * cluster, "{lcn_text}");
}

/// A tag blkid reads from a volume (`blkid -p`: the device itself, not
/// its cache); empty when it has none.
fn blkid_tag(path: &str, tag: &str) -> String {
    let (_, txt) = sh_status("blkid", &["-p", "-o", "value", "-s", tag, path]);
    txt.lines()
        .next()
        .filter(|l| !l.contains("blkid"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A number of a JSON object.
fn num(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v:#}"))
}

/// A volume layer's `filesystem` facts against blkid on the volume at
/// `path` (a partition node or an image): its type, label and serial.
fn agree_blkid(path: &str, l: &serde_json::Value) {
    let fs = &l["filesystem"];
    let v = &fs["volume"];
    assert_eq!(fs["type"], blkid_tag(path, "TYPE"), "{path}");
    let label = v["label"].as_str().unwrap_or_default();
    assert_eq!(label, blkid_tag(path, "LABEL"), "{path}: {v:#}");
    assert_eq!(v["serial"], blkid_tag(path, "UUID"), "{path}");
    assert_eq!(
        num(l, "offset_bytes") + num(v, "data_offset_bytes"),
        num(v, "data_start_bytes")
    );
}

/// A FAT layer's volume facts against `fsck.fat -v -n` and blkid on the
/// volume at `path`, which starts at byte `start` of the disk check read.
fn agree_fat(path: &str, l: &serde_json::Value, start: u64) {
    let (_, txt) = sh_status("fsck.fat", &["-v", "-n", path]);
    let v = &l["filesystem"]["volume"];
    let bps = before(&txt, "bytes per logical sector");
    assert_eq!(
        num(v, "cluster_bytes"),
        before(&txt, "bytes per cluster"),
        "{path}"
    );
    assert_eq!(
        num(v, "fat_offset_bytes"),
        after(&txt, "First FAT starts at byte")
    );
    let data = after(&txt, "Data area starts at byte");
    assert_eq!(num(v, "data_start_bytes"), start + data, "{path}: {v:#}");
    assert_eq!(num(v, "cluster_count"), before(&txt, "data clusters"));
    assert_eq!(num(v, "hidden_sectors"), before(&txt, "hidden sectors"));
    assert_eq!(num(v, "span_bytes"), before(&txt, "sectors total") * bps);
    // "2 FATs, 32 bit entries".
    let line = txt.lines().find(|l| l.contains("bit entries")).unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    let bits = words[words.iter().position(|&w| w == "bit").unwrap() - 1];
    assert_eq!(v["fat_type"], format!("fat{bits}"));
    assert_eq!(num(l, "offset_bytes"), start);
    if start % bps == 0 {
        assert_eq!(num(v, "start_sectors"), start / bps);
    }
    agree_blkid(path, l);
}

/// An exFAT layer's volume facts against dump.exfat and blkid.
fn agree_exfat(path: &str, l: &serde_json::Value, start: u64) {
    let out = sh("dump.exfat", &[path]);
    let txt = String::from_utf8_lossy(&out.stdout);
    let v = &l["filesystem"]["volume"];
    let ss = 1 << after(&txt, "Sector Size Bits:");
    assert_eq!(
        num(v, "cluster_bytes"),
        after(&txt, "Cluster size:"),
        "{path}"
    );
    let fat = after(&txt, "FAT Offset(sector offset):") * ss;
    assert_eq!(num(v, "fat_offset_bytes"), fat);
    let heap = after(&txt, "Cluster Heap Offset (sector offset):") * ss;
    assert_eq!(num(v, "data_start_bytes"), start + heap, "{path}: {v:#}");
    assert_eq!(num(v, "cluster_count"), after(&txt, "Cluster Count:"));
    assert_eq!(
        num(v, "span_bytes"),
        after(&txt, "Volume Length(sectors):") * ss
    );
    let label = v["label"].as_str().unwrap_or_default();
    let said = txt
        .lines()
        .find(|l| l.trim_start().starts_with("Volume label:"));
    assert_eq!(label, said.unwrap().split(':').nth(1).unwrap().trim());
    assert_eq!(num(l, "offset_bytes"), start);
    agree_blkid(path, l);
}

/// An NTFS layer's volume facts against `ntfsinfo -m -f` and blkid; its
/// hidden sectors are what mkntfs was given (`-p`, else 0: mkntfs reads
/// no start from a loop partition).
fn agree_ntfs(path: &str, l: &serde_json::Value, start: u64, hidden: u64) {
    let out = sh("ntfsinfo", &["-m", "-f", path]);
    let txt = String::from_utf8_lossy(&out.stdout);
    let v = &l["filesystem"]["volume"];
    let cluster = after(&txt, "Cluster Size:");
    assert_eq!(num(v, "cluster_bytes"), cluster, "{path}");
    assert_eq!(
        num(v, "cluster_count"),
        after(&txt, "Volume Size in Clusters:")
    );
    let mft = after(&txt, "LCN of Data Attribute for FILE_MFT:") * cluster;
    assert_eq!(num(v, "mft_offset_bytes"), mft);
    assert_eq!(
        num(v, "data_start_bytes"),
        start,
        "its clusters count from its start"
    );
    assert_eq!(num(v, "hidden_sectors"), hidden);
    // mkntfs leaves the last sector to the backup boot sector: the volume
    // and its backup span the whole partition.
    assert_eq!(num(v, "span_bytes"), num(v, "region_bytes"));
    assert_eq!(v["backup"]["state"], "same");
    let label = v["label"].as_str().unwrap_or_default();
    let said = txt
        .lines()
        .find(|l| l.trim_start().starts_with("Volume Name:"));
    let said = said.unwrap().split(':').nth(1).unwrap().trim();
    assert_eq!(label, said);
    assert_eq!(num(l, "offset_bytes"), start);
    agree_blkid(path, l);
}

/// The matrix on loop partitions, where the tools read the partition's
/// start themselves (mkfs.fat and mkfs.exfat write it as hidden sectors
/// and PartitionOffset; mkntfs only with `-p`): one GPT disk of nine
/// volumes, one at a start off 4 KiB and one exFAT of 64 GiB (sparse),
/// read by one `check` of the disk image, each layer's facts against the
/// tools on its partition node.
#[test]
fn volumes_on_loop_partitions_read_as_their_tools_read_them() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(u64, &str, &[&str])] = &[
        (16 << 10, "mkfs.fat", &["-F", "12", "-n", "SMALL"]),
        (
            64 << 10,
            "mkfs.fat",
            &["-F", "16", "-s", "1", "-f", "1", "-n", "F16"],
        ),
        (
            1 << 20,
            "mkfs.fat",
            &["-F", "32", "-S", "4096", "-n", "BIG4K"],
        ),
        (
            128 << 10,
            "mkfs.fat",
            &["-F", "32", "-s", "1", "-a", "-R", "33", "-n", "R33"],
        ),
        (
            128 << 10,
            "mkfs.exfat",
            &["-c", "64K", "-b", "1M", "-L", "EX64K"],
        ),
        (128 << 10, "mkfs.exfat", &["-c", "4K", "-L", "EX4K"]),
        (128 << 10, "mkntfs", &["-c", "512", "-L", "N512"]),
        (
            128 << 10,
            "mkntfs",
            &["-s", "4096", "-c", "65536", "-L", "N64K"],
        ),
        (128 << 27, "mkfs.exfat", &["-L", "EX64G"]),
    ];
    // Sectors of 512 bytes; the fifth starts 7 sectors past 1 MiB.
    let mut starts = Vec::new();
    let mut script = String::from("label: gpt\n");
    let mut at = 2048u64;
    for (i, (sectors, _, _)) in cases.iter().enumerate() {
        let start = if i == 4 { at + 7 } else { at };
        script.push_str(&format!("start={start}, size={sectors}\n"));
        starts.push(start);
        at = (start + sectors).next_multiple_of(2048);
    }
    let disk = image(dir.path(), "disk.img", (at + 2048) * 512);
    sfdisk(&disk, &script);
    let lo = LoopDev::attach(&disk, None);
    let mut hidden = Vec::new();
    for (i, &(_, tool, opts)) in cases.iter().enumerate() {
        let node = lo.part(i as u32 + 1);
        let p = format!("{}", starts[i]);
        let mut a: Vec<&str> = opts.to_vec();
        if tool == "mkntfs" {
            a.splice(0..0, ["-F", "-Q", "-q"]);
            if i == 6 {
                a.extend(["-p", &p]);
            }
        }
        a.push(&node);
        sh(tool, &a);
        sh("sync", &[&node]);
        hidden.push(if tool != "mkntfs" || i == 6 {
            starts[i]
        } else {
            0
        });
    }
    let (doc, _) = check(&disk, &[]);
    for (i, &(_, tool, _)) in cases.iter().enumerate() {
        let (node, start) = (lo.part(i as u32 + 1), starts[i] * 512);
        let l = layer_in(&doc, i);
        match tool {
            "mkfs.fat" => agree_fat(&node, l, start),
            "mkfs.exfat" => agree_exfat(&node, l, start),
            _ => agree_ntfs(&node, l, start, hidden[i]),
        }
        let v = &l["filesystem"]["volume"];
        assert_eq!(num(v, "hidden_sectors"), hidden[i], "{node}: {v:#}");
        let size = sh("blockdev", &["--getsize64", &node]);
        let size: u64 = String::from_utf8_lossy(&size.stdout)
            .trim()
            .parse()
            .unwrap();
        assert_eq!(num(v, "region_bytes"), size);
        let codes: Vec<String> = findings_of(l)
            .into_iter()
            .map(|(c, s)| format!("{c} {s}"))
            .collect();
        // mkntfs without -p records no start: said as info, as mkfs does
        // on an image; the others record theirs.
        let told = codes.iter().any(|c| c.starts_with("fs-hidden-sectors"));
        assert_eq!(told, hidden[i] == 0, "{node}: {codes:?}");
        if told {
            assert!(codes.contains(&"fs-hidden-sectors info".to_string()));
        }
        assert!(
            !codes.iter().any(|c| c.starts_with("fs-b")),
            "{node}: {codes:?}"
        );
    }
    volumes_shown_alike(&disk, &doc);
    // -b 1M on the partition's node counts from the disk's start: the
    // heap of the volume 7 sectors off 1 MiB is on 1 MiB of the disk.
    assert_eq!(
        num(
            &layer_in(&doc, 4)["filesystem"]["volume"],
            "data_start_bytes"
        ) % MIB,
        0
    );
}

/// Write `bytes` at byte `at` of `path`.
fn poke(path: &Path, at: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, at).unwrap();
}

/// A sparse copy of `from` named `name` beside it.
fn copy_of(from: &Path, name: &str) -> std::path::PathBuf {
    let to = from.with_file_name(name);
    sh(
        "cp",
        &[
            "--sparse=always",
            from.to_str().unwrap(),
            to.to_str().unwrap(),
        ],
    );
    to
}

/// An exFAT's main boot region sealed again after a change: sector 11's
/// words set to the region's checksum (exFAT specification section 3.4),
/// so the change itself is what the reader meets.
fn reseal_exfat(path: &Path) {
    let mut region = bytes_at(path, 0, 12 * 512);
    let sum = diskalign::stack::exfat_boot_checksum(&region, 512).unwrap();
    for w in region[11 * 512..].chunks_exact_mut(4) {
        w.copy_from_slice(&sum.to_le_bytes());
    }
    poke(path, 11 * 512, &region[11 * 512..]);
}

/// `check` of `img`, whose volume is the whole image: its layer's
/// findings as (code, severity), every form agreeing, no panic and
/// nothing on stderr.
fn judged(img: &Path) -> (serde_json::Value, Vec<(String, String)>) {
    let p = img.display().to_string();
    let (_, stderr, _) = run_full(&["check", &p, "--json"]);
    assert_eq!(stderr, "", "{p}");
    let (doc, code) = check(img, &[]);
    forms_agree(img, &[], &doc, code);
    let l = layer_in(&doc, 0).clone();
    let f = findings_of(&l);
    (l, f)
}

/// A volume whose boot sector lies (a cluster count its FAT or volume
/// cannot hold, a data area or heap past the end, no cluster size) is
/// one damaged layer with one `metadata-invalid` finding naming the
/// image and the byte, in every form, never a panic; what the rules of a
/// sound one judge shows in every form too: a FAT32's backup boot sector
/// zeroed (missing) or changed (differs), an exFAT's backup boot region
/// zeroed, an NTFS cut short (beyond its partition, its backup gone),
/// hidden sectors that are not the start (a warning; 0, an info).
#[test]
fn lying_and_damaged_volumes_are_named_in_every_form() {
    let dir = tempfile::tempdir().unwrap();
    let fat = image(dir.path(), "fat.img", 64 * MIB);
    sh("mkfs.fat", &["-F", "32", "-s", "8", fat.to_str().unwrap()]);
    let exfat = image(dir.path(), "exfat.img", 64 * MIB);
    sh("mkfs.exfat", &[exfat.to_str().unwrap()]);
    let ntfs = image(dir.path(), "ntfs.img", 64 * MIB);
    sh(
        "mkntfs",
        &["-F", "-Q", "-q", "-p", "63", ntfs.to_str().unwrap()],
    );
    // The volume made by the tool, its name, the copy's name, where the
    // lie is written and what, what the finding says.
    type Lie<'a> = (&'a Path, &'a str, &'a str, u64, &'a [u8], &'a str);
    let damaged: &[Lie] = &[
        (&fat, "FAT", "fat-spc0", 13, &[0], "0 sectors per cluster"),
        // FATSz32 of a million sectors: the data area past the end.
        (
            &fat,
            "FAT",
            "fat-beyond",
            36,
            &[0, 0, 0x10, 0],
            "the FATs and root end at sector",
        ),
        // TotSec32 four times the image: more clusters than its FAT holds.
        (
            &fat,
            "FAT",
            "fat-lies",
            32,
            &(4 * 131_072u32).to_le_bytes(),
            "but the FAT has room for",
        ),
        // ClusterCount doubled: the heap past the volume's end.
        (
            &exfat,
            "exFAT",
            "exfat-lies",
            92,
            &[0, 0, 0, 0x80],
            "past the volume's",
        ),
        // ClusterHeapOffset past VolumeLength.
        (
            &exfat,
            "exFAT",
            "exfat-beyond",
            88,
            &(1u32 << 20).to_le_bytes(),
            "past the volume's",
        ),
        (
            &ntfs,
            "NTFS",
            "ntfs-spc0",
            13,
            &[0],
            "sectors per cluster byte 0x00",
        ),
        // 64 sectors in all: $MFT and $MFTMirr outside the volume.
        (
            &ntfs,
            "NTFS",
            "ntfs-lies",
            40,
            &64u64.to_le_bytes(),
            "outside the volume's",
        ),
    ];
    for &(base, kind, name, at, bytes, says) in damaged {
        let img = copy_of(base, name);
        poke(&img, at, bytes);
        if kind == "exFAT" {
            reseal_exfat(&img);
        }
        let (l, f) = judged(&img);
        assert_eq!(l["name"], format!("{kind} (damaged)"), "{name}: {l:#}");
        assert_eq!(l["status"], "damaged");
        assert_eq!(f, [("metadata-invalid".into(), "error".into())], "{name}");
        let m = l["findings"][0]["message"].as_str().unwrap();
        assert!(
            m.contains(&format!(" of {}: ", img.display())),
            "{name}: {m}"
        );
        assert!(m.contains(says), "{name}: {m}");
    }
    // The volume, the copy's name, where it is changed and how many bytes
    // (0: cut there), the fs- findings and the backup's state.
    type Change<'a> = (
        &'a Path,
        &'a str,
        u64,
        u64,
        &'a [(&'a str, &'a str)],
        &'a str,
    );
    let sound: &[Change] = &[
        // The backup boot sector, sector 6, zeroed, then its OEM name changed.
        (
            &fat,
            "fat-backup-zeroed",
            6 * 512,
            512,
            &[("fs-backup-boot-sector", "warning")],
            "missing",
        ),
        (
            &fat,
            "fat-backup-changed",
            6 * 512 + 3,
            1,
            &[("fs-backup-boot-sector", "warning")],
            "differs",
        ),
        // The backup boot region zeroed.
        (
            &exfat,
            "exfat-backup-zeroed",
            12 * 512,
            12 * 512,
            &[("fs-backup-boot-sector", "warning")],
            "missing",
        ),
        (
            &ntfs,
            "ntfs-cut",
            48 * MIB,
            0,
            &[
                ("fs-hidden-sectors", "info"),
                ("fs-beyond-partition", "error"),
                ("fs-backup-boot-sector", "warning"),
            ],
            "missing",
        ),
    ];
    for &(base, name, at, len, want, state) in sound {
        let img = copy_of(base, name);
        if len == 0 {
            sh("truncate", &["-s", &at.to_string(), img.to_str().unwrap()]);
        } else {
            let b = if len == 1 {
                vec![b'X']
            } else {
                vec![0; len as usize]
            };
            poke(&img, at, &b);
        }
        let (l, f) = judged(&img);
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(c, s)| (c.to_string(), s.to_string()))
            .collect();
        let f: Vec<_> = f
            .into_iter()
            .filter(|(c, _)| c.starts_with("fs-"))
            .collect();
        assert_eq!(f, want, "{name}: {l:#}");
        let b = &finding(&l, "fs-backup-boot-sector")["facts"];
        assert_eq!(b["backup_state"], state, "{name}");
    }
    // Hidden sectors: 63 where it starts at 0 (an image of a partition,
    // which keeps its partition's start) and 0 where it starts at 2048
    // (mkfs.fat --offset on an image writes none) are info; 63 where it
    // starts at 2048 (a moved volume) is a warning.
    let (l, f) = judged(&ntfs);
    let f: Vec<_> = f
        .into_iter()
        .filter(|(c, _)| c.starts_with("fs-"))
        .collect();
    assert_eq!(f, [("fs-hidden-sectors".into(), "info".into())]);
    let h = &finding(&l, "fs-hidden-sectors")["facts"];
    assert_eq!(
        (num(h, "recorded_sectors"), num(h, "start_sectors")),
        (63, 0)
    );
    let disk = image(dir.path(), "offset.img", 16 * MIB);
    sfdisk(&disk, "label: dos\nstart=2048, type=c\n");
    sh("mkfs.fat", &["--offset", "2048", disk.to_str().unwrap()]);
    let (l, f) = judged(&disk);
    let f: Vec<_> = f
        .into_iter()
        .filter(|(c, _)| c.starts_with("fs-"))
        .collect();
    assert_eq!(f, [("fs-hidden-sectors".into(), "info".into())]);
    let h = &finding(&l, "fs-hidden-sectors")["facts"];
    assert_eq!(
        (num(h, "recorded_sectors"), num(h, "start_sectors")),
        (0, 2048)
    );
    sh(
        "mkfs.fat",
        &["--offset", "2048", "-h", "63", disk.to_str().unwrap()],
    );
    let (_, f) = judged(&disk);
    let f: Vec<_> = f
        .into_iter()
        .filter(|(c, _)| c.starts_with("fs-"))
        .collect();
    assert_eq!(f, [("fs-hidden-sectors".into(), "warning".into())]);
    let (cut, _) = judged(&dir.path().join("ntfs-cut"));
    let cut = &finding(&cut, "fs-beyond-partition")["facts"];
    let sizes = (num(cut, "size_bytes"), num(cut, "region_bytes"));
    assert_eq!(sizes, (64 * MIB, 48 * MIB));
}

/// The volume facts of every FAT, exFAT and NTFS layer of `doc` (the
/// JSON of `check IMG`) in the other forms: the CSV's `volume_` columns
/// of its partition's row, the human stack tree's line and the page's
/// stack table (the same words as the tree).
fn volumes_shown_alike(img: &Path, doc: &serde_json::Value) {
    let p = img.display().to_string();
    let (csv, _) = run(&["check", &p, "--format", "csv"]);
    let rows = csv_rows(&csv);
    let (human, _) = run(&["check", &p, "--width", "0"]);
    let (page, _) = run(&["check", &p, "--format", "html"]);
    let mut seen = 0;
    for root in doc["targets"][0]["stack"].as_array().unwrap() {
        let number = root["name"].as_str().unwrap().strip_prefix("partition ");
        let row = rows
            .iter()
            .find(|r| Some(r["number"].as_str()) == number.or(Some("")))
            .unwrap_or_else(|| panic!("no row for {}", root["name"]));
        let Some(l) = root["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["filesystem"]["volume"].is_object())
        else {
            assert_eq!(row["volume"], "", "{csv}");
            continue;
        };
        seen += 1;
        let v = &l["filesystem"]["volume"];
        let text = |k: &str| match &v[k] {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(s) => s.clone(),
            x => x.to_string(),
        };
        assert_eq!(row["volume"], l["name"].as_str().unwrap(), "{csv}");
        for (column, key) in [
            ("volume_cluster_bytes", "cluster_bytes"),
            ("volume_data_start_bytes", "data_start_bytes"),
            ("volume_fat_offset_bytes", "fat_offset_bytes"),
            ("volume_hidden_sectors", "hidden_sectors"),
            ("volume_start_sectors", "start_sectors"),
            ("volume_size_bytes", "span_bytes"),
            ("volume_region_bytes", "region_bytes"),
            ("volume_label", "label"),
            ("volume_serial", "serial"),
        ] {
            assert_eq!(row[column], text(key), "{column} of {p}: {v:#}");
        }
        // The tree's line of the layer, and the page's row of it.
        let line = human
            .lines()
            .find(|h| {
                h.contains(&format!(
                    "{}  at byte {} ",
                    l["name"].as_str().unwrap(),
                    l["offset_bytes"]
                ))
            })
            .unwrap_or_else(|| panic!("no line of {} in\n{human}", l["name"]));
        let mut facts = vec![
            format!("hidden sectors {}", v["hidden_sectors"]),
            format!("serial {}", text("serial")),
        ];
        if let Some(label) = v["label"].as_str() {
            facts.push(format!("label {label:?}"));
        }
        if v["fat_offset_bytes"].is_u64() {
            facts.push(" in, ".to_string());
        }
        if num(v, "data_offset_bytes") > 0 {
            facts.push(format!("at byte {} (", v["data_start_bytes"]));
        }
        for f in &facts {
            assert!(line.contains(f.as_str()), "{f:?} not in {line}");
        }
        let said = line.split_once("  at ").unwrap().1;
        let said = said.rsplit_once("  ").unwrap().0;
        let said = format!("at {said}").replace('"', "&quot;");
        assert!(
            page.contains(&format!("<td>{said}</td>")),
            "no {said} in the page"
        );
    }
    assert!(seen > 0, "no volume in {p}");
}
