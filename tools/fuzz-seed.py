#!/usr/bin/env python3
"""Helpers of tools/fuzz-seed: turn images made by the real tools into small
fuzz seeds, and write md superblocks where the md driver is missing.

  fuzz-seed.py cut IMAGE OUT LEN [OFFSET] [--trim]
      the raw bytes OFFSET..OFFSET+LEN of IMAGE (the window a parser reads),
      with --trim without its trailing zero sectors
  fuzz-seed.py sparse IMAGE OUT [--prefix BYTE] [--ss N] [--all] [--keep START:LEN]...
      IMAGE in the sparse format of fuzz/src/entries.rs (virtual size, then
      chunks), keeping only the non-zero 512-byte blocks of the first and
      last WINDOW bytes of the image and of every partition sfdisk lists,
      and of each --keep window (bytes: a FAT's root directory, an NTFS's
      MFT records, far from the start); with --all every non-zero block (a
      container file, whose metadata lies MiBs apart)
  fuzz-seed.py lvm-text PV OUT
      the committed metadata text of the PV's first metadata area
  fuzz-seed.py md FILE VERSION LEVEL RAID_DISKS ROLE CHUNK_KIB DATA_OFFSET_SECTORS UUID_HEX NAME
      an md superblock (0.90, 1.0, 1.1, 1.2) as the kernel's md_p.h lays it out
"""
import json
import os
import struct
import subprocess
import sys

WINDOW = 68 * 1024  # btrfs reads 64 KiB + 4 KiB; md 0.90 sits 64 KiB from the end


def cut(image, out, length, offset=0, trim=False):
    with open(image, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    if trim:
        # Trailing zeros only make the seed bigger (keep sector granularity).
        end = len(data.rstrip(b"\0"))
        data = data[: (end + 511) // 512 * 512]
    with open(out, "wb") as f:
        f.write(data)


def partitions(image, ss):
    """(start, size) in bytes of every partition sfdisk lists, if any."""
    try:
        args = ["sfdisk", "-J", image]
        if ss != 512:
            args = ["sfdisk", "--sector-size", str(ss), "-J", image]
        doc = json.loads(subprocess.run(args, capture_output=True, check=True).stdout)
    except (subprocess.CalledProcessError, json.JSONDecodeError):
        return []
    table = doc.get("partitiontable", {})
    unit = table.get("sectorsize", ss)
    return [(p["start"] * unit, p["size"] * unit) for p in table.get("partitions", [])]


def sparse(image, out, prefix=None, ss=512, everything=False, keep_windows=()):
    size = os.path.getsize(image)
    windows = [(0, WINDOW), (max(0, size - WINDOW), WINDOW)] + list(keep_windows)
    if everything:
        windows = [(0, size)]
    for start, length in [] if everything else partitions(image, ss):
        windows.append((start, WINDOW))
        windows.append((max(start, start + length - WINDOW), WINDOW))
    keep = set()
    for start, length in windows:
        for blk in range(start // 512, (min(size, start + length) + 511) // 512):
            keep.add(blk)
    chunks = []
    with open(image, "rb") as f:
        for blk in sorted(keep):
            f.seek(blk * 512)
            b = f.read(512)
            if not b.strip(b"\0"):
                continue
            off = blk * 512
            if chunks and chunks[-1][0] + len(chunks[-1][1]) == off and len(chunks[-1][1]) < 32768:
                chunks[-1][1] += b
            else:
                chunks.append([off, bytearray(b)])
    enc = bytearray()
    if prefix is not None:
        enc.append(prefix)
    enc += struct.pack("<Q", size)
    for off, b in chunks:
        enc += struct.pack("<QH", off, len(b)) + b
    with open(out, "wb") as f:
        f.write(enc)


def lvm_text(pv, out):
    with open(pv, "rb") as f:
        data = f.read(4 << 20)
    # The label's sector: LABELONE in one of the first four sectors.
    for s in range(4):
        if data[s * 512 : s * 512 + 8] == b"LABELONE":
            break
    else:
        sys.exit("no PV label")
    lab = s * 512
    hdr = lab + struct.unpack_from("<I", data, lab + 20)[0]
    # The data area list (ended by a zero entry), then the metadata areas.
    at = hdr + 40
    while struct.unpack_from("<QQ", data, at) != (0, 0):
        at += 16
    at += 16
    mda = struct.unpack_from("<Q", data, at)[0]
    off, size = struct.unpack_from("<QQ", data, mda + 40)
    with open(out, "wb") as f:
        f.write(data[mda + off : mda + off + size])


def fold(s):
    s = (s & 0xFFFFFFFF) + (s >> 32)
    return s & 0xFFFFFFFF


def md(path, version, level, raid_disks, role, chunk_kib, data_offset, uuid_hex, name):
    level, raid_disks, role, chunk = int(level), int(raid_disks), int(role), int(chunk_kib) * 1024
    data_offset = int(data_offset)
    # left-symmetric RAID5/6, RAID10 with two near copies
    layout = {5: 2, 6: 2, 10: 0x102}.get(level, 0)
    uuid = bytes.fromhex(uuid_hex)
    size = os.path.getsize(path)
    sectors = size // 512
    if version == "0.90":
        at = ((sectors & ~127) - 128) * 512
        w = [0] * 1024
        u = struct.unpack("<4I", uuid)
        w[0], w[1], w[2], w[3] = 0xA92B4EFC, 0, 90, 0
        w[5], w[6], w[7] = u[0], 1_700_000_000, level & 0xFFFFFFFF
        w[8] = (sectors - 128) // 2
        w[9], w[10], w[11] = raid_disks, raid_disks, 0
        w[13], w[14], w[15] = u[1], u[2], u[3]
        w[32], w[33], w[34], w[35], w[36] = 1_700_000_000, 1, raid_disks, raid_disks, 0
        w[39] = 1
        w[64], w[65] = layout, chunk
        for i in range(raid_disks):
            d = 128 + 32 * i
            w[d], w[d + 3], w[d + 4] = i, i, 6
        w[992], w[995], w[996] = role, role, 6
        w[38] = fold(sum(w))
        blob, where = struct.pack("<1024I", *w), at
    else:
        at = {"1.0": ((sectors - 16) & ~7) * 512, "1.1": 0, "1.2": 4096}[version]
        max_dev = max(raid_disks, 1)
        b = bytearray(1024)
        struct.pack_into("<II", b, 0, 0xA92B4EFC, 1)
        b[16:32] = uuid
        nb = name.encode()[:32]
        b[32 : 32 + len(nb)] = nb
        used = sectors - data_offset - (16 if version == "1.0" else 0)
        struct.pack_into("<QiIQII", b, 64, 1_700_000_000, level, layout, used, chunk // 512, raid_disks)
        struct.pack_into("<QQQQ", b, 128, data_offset, used, at // 512, 0)
        struct.pack_into("<I", b, 160, role)
        b[168:184] = bytes([role + 1]) * 16
        struct.pack_into("<QQQ", b, 192, 1_700_000_000, 1, 2**64 - 1)
        struct.pack_into("<I", b, 220, max_dev)
        for i in range(max_dev):
            struct.pack_into("<H", b, 256 + 2 * i, i)
        n = 256 + 2 * max_dev
        s = 0
        i = 0
        while i + 4 <= n:
            s += struct.unpack_from("<I", b, i)[0]
            i += 4
        if i < n:
            s += struct.unpack_from("<H", b, i)[0]
        struct.pack_into("<I", b, 216, fold(s))
        blob, where = bytes(b[: (n + 511) // 512 * 512]), at
    with open(path, "r+b") as f:
        f.seek(where)
        f.write(blob)


def identify(fixtures, out):
    """Seeds of the identify targets from tests/fixtures/identify (synthetic
    bytes laid out from the specifications; see its README): each NVMe and
    ATA fixture as it is, the ATA drive with the bridge's READ CAPACITY(16)
    after it, and the SCSI answers in the identify_scsi framing (two length
    bytes, the B0h page, the 83h page, READ CAPACITY(16) data)."""
    fx = lambda n: open(os.path.join(fixtures, n), "rb").read()
    seeds = {}
    for n in sorted(os.listdir(fixtures)):
        if n.startswith("nvme-"):
            seeds[("identify_nvme", n)] = fx(n)
        elif n.startswith("ata-"):
            seeds[("identify_ata", n)] = fx(n)
    rc, b0, p83 = fx("read-capacity16-bridge.bin"), fx("vpd-b0-bridge.bin"), fx("vpd-83-naa5.bin")
    seeds[("identify_ata", "ata-512n-behind-bridge")] = fx("ata-identify-512n.bin") + rc
    seeds[("identify_scsi", "bridge")] = bytes([len(b0) | 1, len(p83)]) + b0 + p83 + rc
    seeds[("identify_scsi", "sas")] = bytes([len(b0) & ~1, len(p83)]) + b0 + p83 + rc
    for (target, name), data in seeds.items():
        os.makedirs(os.path.join(out, target), exist_ok=True)
        with open(os.path.join(out, target, name), "wb") as f:
            f.write(data)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "cut":
        trim = "--trim" in args
        args = [a for a in args if a != "--trim"]
        cut(args[0], args[1], int(args[2]), int(args[3]) if len(args) > 3 else 0, trim)
    elif cmd == "sparse":
        prefix, ss, everything, rest, keep = None, 512, False, args[2:], []
        while rest:
            if rest[0] == "--all":
                everything, rest = True, rest[1:]
                continue
            if rest[0] == "--prefix":
                prefix = int(rest[1])
            elif rest[0] == "--ss":
                ss = int(rest[1])
            elif rest[0] == "--keep":
                start, length = rest[1].split(":")
                keep.append((int(start), int(length)))
            rest = rest[2:]
        sparse(args[0], args[1], prefix, ss, everything, keep)
    elif cmd == "lvm-text":
        lvm_text(args[0], args[1])
    elif cmd == "md":
        md(*args)
    elif cmd == "identify":
        identify(args[0], args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
