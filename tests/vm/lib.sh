# Helpers for scenario scripts inside the guest (busybox sh). The host
# turns each scenario line into one call: `run CMD` (must succeed) or
# `capture KEY CMD` (stdout and exit status go back to the host).

# Prints $1 on the serial console between markers; the host strips "\r".
capture() {
  key=$1; shift
  out=/tmp/capture.$$
  status=0
  ( eval "$*" ) > "$out" 2> "$out.err" || status=$?
  echo "@@vm begin $key"
  cat "$out"
  echo "@@vm end $key $status"
  if [ -s "$out.err" ]; then
    sed "s/^/@@vm log: $key: /" "$out.err"
  fi
  rm -f "$out" "$out.err"
}

# Runs a preparation step; a failure stops the scenario with its output.
run() {
  echo "@@vm run $*"
  status=0
  ( eval "$*" ) > /tmp/run.out 2>&1 || status=$?
  sed 's/^/@@vm log: /' /tmp/run.out
  if [ $status -ne 0 ]; then
    echo "@@vm failed $status: $*"
    exit $status
  fi
}

# Prints the /dev node of the first disk for which `$1 SYSDIR $2` holds.
# Device scanning is asynchronous: waits up to 30 s.
_find_disk() {
  i=0
  while [ $i -lt 300 ]; do
    for d in /sys/block/*; do
      if "$1" "$d" "$2"; then echo "/dev/${d##*/}"; return 0; fi
    done
    sleep 0.1; i=$((i + 1))
  done
  echo "@@vm log: no disk matches $1 $2" >&2
  return 1
}
# virtio-blk has `serial`; SCSI disks carry it in VPD page 0x80; an NVMe
# namespace's controller has it (space-padded). libata shows no serial in
# sysfs: the harness gives an AHCI disk its name as its model too.
_has_serial() {
  [ "$(cat "$1/serial" 2>/dev/null)" = "$2" ] || grep -aq "$2\$" "$1/device/vpd_pg80" 2>/dev/null ||
    [ "$(sed 's/ *$//' "$1/device/serial" 2>/dev/null)" = "$2" ] || _has_model "$1" "$2"
}
_has_model() { [ "$(sed 's/ *$//' "$1/device/model" 2>/dev/null)" = "$2" ]; }

# The /dev node of the disk whose serial is $1 (the scenario's disk name).
disk_by_serial() { _find_disk _has_serial "$1"; }
# The /dev node of the boot's SD card: the disk the mmc core made (its
# card directory has preferred_erase_size); one card per boot.
_is_mmc() { [ -e "$1/device/preferred_erase_size" ]; }
disk_by_mmc() { _find_disk _is_mmc "$1"; }
# The /dev node of the disk whose SCSI model is $1 (scsi_debug: "scsi_debug").
disk_by_model() { _find_disk _has_model "$1"; }

# The kernel name (dm-N) of the device-mapper device called $1.
dm_kname() {
  for d in /sys/block/dm-*; do
    [ "$(cat "$d/dm/name" 2>/dev/null)" = "$1" ] && { echo "${d##*/}"; return 0; }
  done
  return 1
}

# The kernel's own limits of block device $1 (kernel name or /dev path; a
# partition works too) as one JSON object.
limits() {
  n=${1#/dev/}
  if [ -d "/sys/class/block/$n" ]; then d=/sys/class/block/$n; else echo null; return 1; fi
  q=$d/queue
  [ -d "$q" ] || q=$d/../queue
  printf '{"logical_block_size":%s,"physical_block_size":%s,"minimum_io_size":%s,"optimal_io_size":%s,"alignment_offset":%s,"size_bytes":%s}\n' \
    "$(cat $q/logical_block_size)" "$(cat $q/physical_block_size)" "$(cat $q/minimum_io_size)" \
    "$(cat $q/optimal_io_size)" "$(cat $d/alignment_offset)" "$(($(cat $d/size) * 512))"
}

# busybox sh runs its own applets (fdisk, blockdev, ...) before anything on
# PATH; these functions make the names mean the real tools copied into the
# guest, which are the ones diskalign is compared with.
for _t in /usr/sbin/*; do
  _n=${_t##*/}
  case $_n in *[!a-z0-9_]*) continue ;; esac
  eval "$_n() { $_t \"\$@\"; }"
done
unset _t _n

# setvar NAME CMD: NAME=$(CMD) for the steps after it; a failure stops.
setvar() {
  _v=$1; shift
  _st=0
  _val=$(eval "$*") || _st=$?
  if [ $_st -ne 0 ] || [ -z "$_val" ]; then
    echo "@@vm failed $_st: set $_v: $*"
    exit 1
  fi
  eval "$_v=\$_val"; export "$_v"
  echo "@@vm set $_v=$_val"
}

# difflayout DEV SCRIPT [N]: one layout of a `differential` (tests/vm/
# differential.rs). Clears both ends of DEV, writes SCRIPT (printf %b)
# with sfdisk, has the kernel re-read the table, then prints sections
# "@@ NAME": diskalign's JSON (messages emptied: the serial line is slow),
# fdisk's and sgdisk's warnings, parted's align-check opt and min of every
# partition the kernel registered (one interactive parted: each exec costs
# tens of ms under TCG), the exit statuses of `parted -s align-check` for
# partition N, and per partition the kernel's start, size and
# alignment_offset and the node's block size (BLKBSZGET).
difflayout() {
  _d=$1; _k=${1#/dev/}
  read _ss < /sys/block/$_k/queue/logical_block_size
  read _sz < /sys/block/$_k/size
  _n=$((_sz * 512 / _ss))
  dd if=/dev/zero of=$_d bs=$_ss count=34 conv=notrunc 2>/dev/null
  dd if=/dev/zero of=$_d bs=$_ss seek=$((_n - 34)) count=34 conv=notrunc 2>/dev/null
  echo "@@ sfdisk"
  printf '%b' "$2" | sfdisk -q --no-reread --no-tell-kernel --wipe never "$_d" 2>&1
  echo "@@ status $?"
  blockdev --rereadpt "$_d" 2>&1
  echo "@@ check"
  diskalign check --json "$_d" | sed -e 's/^ *//' -e 's/"message": ".*"/"message":""/'
  echo "@@ fdisk"
  fdisk -l "$_d" 2>&1 | grep 'physical sector boundary'
  case $2 in label:\ gpt*)
    echo "@@ sgdisk"
    sgdisk -v "$_d" 2>&1 | grep "^Caution: Partition" ;;
  esac
  _parts=; _nodes=
  echo "@@ sysfs"
  for _p in /sys/block/$_k/$_k*; do
    [ -e "$_p/partition" ] || continue
    read _pn < $_p/partition; read _st < $_p/start; read _ps < $_p/size; read _ao < $_p/alignment_offset
    echo "$_pn ${_p##*/} $_st $_ps $_ao"
    _parts="$_parts $_pn"; _nodes="$_nodes /dev/${_p##*/}"
  done
  echo "@@ parted"
  for _pn in $_parts; do printf 'align-check opt %s\nalign-check min %s\n' $_pn $_pn; done | parted "$_d" 2>&1 | grep align
  if [ -n "$3" ]; then
    echo "@@ exit"
    parted -s "$_d" align-check opt "$3" >/dev/null 2>&1; echo "opt $3 $?"
    parted -s "$_d" align-check min "$3" >/dev/null 2>&1; echo "min $3 $?"
  fi
  echo "@@ bsz$_parts"
  [ -z "$_nodes" ] || blockdev --getbsz $_nodes 2>&1
  echo "@@ end"
}

# fio_iops: reads fio's `--output-format=json` on stdin and prints one
# line of JSON, each job's read and write IOPS by job name:
# {"randread-4k-at-0":{"read":7566.12,"write":0.0},...}. fio's own
# document is about 4.4 KB a job and the serial console carries about
# 400 KB/s; keep the whole one in a file when it matters.
fio_iops() {
  awk '
    /^ *"jobname" : / { n = $0; sub(/^[^:]*: "/, "", n); sub(/",?[ \r]*$/, "", n); r = ""; d = "" }
    /^ *"read" : \{/ { d = "read" }
    /^ *"write" : \{/ { d = "write" }
    /^ *"iops" : / && d != "" {
      v = $0; sub(/^[^:]*: /, "", v); sub(/,?[ \r]*$/, "", v)
      if (d == "read") r = v
      else { printf "%s\"%s\":{\"read\":%s,\"write\":%s}", (sep ? "," : "{"), n, r, v; sep = 1 }
      d = ""
    }
    END { print (sep ? "}" : "{}") }'
}

# _fio_rows: reads fio's `--output-format=json` on stdin and prints one
# line per job and direction: NAME DIR IOPS P50_NS MEAN_NS (completion
# latency: fio's median is its histogram bucket, 1/64 of a power of two
# wide, so about 1.5 %; the mean is exact).
_fio_rows() {
  awk '
    function num(s) { s = $3; sub(/,?[ \r]*$/, "", s); return s + 0 }
    /^ *"jobname" : / { n = $0; sub(/^[^:]*: "/, "", n); sub(/",?[ \r]*$/, "", n); delete iops; delete p50; delete mean }
    /^ *"(read|write|trim|sync)" : \{/ { d = $1; gsub(/"/, "", d); blk = "" }
    /^ *"(slat_ns|clat_ns|lat_ns)" : \{/ { blk = $1; gsub(/"/, "", blk) }
    /^ *"iops" : / && (d == "read" || d == "write") { iops[d] = num() }
    blk == "clat_ns" && /^ *"mean" : / { mean[d] = num() }
    blk == "clat_ns" && /^ *"50.000000" : / { p50[d] = num() }
    d == "trim" && n != "" {
      printf "%s read %.2f %d %.0f\n", n, iops["read"], p50["read"], mean["read"]
      printf "%s write %.2f %d %.0f\n", n, iops["write"], p50["write"], mean["write"]
      n = ""
    }'
}

# fio_lat: reads fio's `--output-format=json` on stdin and prints one line
# of JSON, per job and direction its IOPS and completion latency (median
# and mean, in microseconds):
# {"w-at-0":{"read":{"iops":0.0,"p50_us":0.0,"mean_us":0.0},"write":{...}},...}
fio_lat() {
  _fio_rows | awk '
    $2 == "read" { r = sprintf("\"read\":{\"iops\":%s,\"p50_us\":%.1f,\"mean_us\":%.1f}", $3, $4 / 1000, $5 / 1000) }
    $2 == "write" { printf "%s\"%s\":{%s,\"write\":{\"iops\":%s,\"p50_us\":%.1f,\"mean_us\":%.1f}}", (sep ? "," : "{"), $1, r, $3, $4 / 1000, $5 / 1000; sep = 1 }
    END { print (sep ? "}" : "{}") }'
}

# fio_pairs: reads fio's JSON on stdin, from jobs named DIR-al-K and
# DIR-mis-K (DIR read or write: an aligned and a misaligned cell measured
# one after the other, K = 1, 2, ...), and prints per direction the median
# over the pairs of how much slower the misaligned cell was, by IOPS and by
# median completion latency, in per cent, and the number of pairs:
# {"write":{"slower_pct":4.8,"p50_pct":5.1,"mean_pct":5.0,"pairs":5},"read":{...}}
fio_pairs() {
  _fio_rows | awk '
    function med(a, k,   i, j, t) {
      for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    { split($1, p, "-") }
    p[1] == $2 && p[2] == "al" { ai[$2, p[3]] = $3; al[$2, p[3]] = $4; am[$2, p[3]] = $5 }
    p[1] == $2 && p[2] == "mis" { mi[$2, p[3]] = $3; ml[$2, p[3]] = $4; mm[$2, p[3]] = $5 }
    END {
      for (q = 1; q <= 2; q++) {
        d = q == 1 ? "write" : "read"; k = 0
        for (i = 1; (d SUBSEP i) in ai && (d SUBSEP i) in mi; i++) {
          k++
          s[k] = ai[d, i] > 0 ? 100 * (1 - mi[d, i] / ai[d, i]) : 0
          l[k] = al[d, i] > 0 ? 100 * (ml[d, i] / al[d, i] - 1) : 0
          m[k] = am[d, i] > 0 ? 100 * (mm[d, i] / am[d, i] - 1) : 0
        }
        if (k == 0) continue
        out = out (out ? "," : "") sprintf("\"%s\":{\"slower_pct\":%.2f,\"p50_pct\":%.2f,\"mean_pct\":%.2f,\"pairs\":%d}", d, med(s, k), med(l, k), med(m, k), k)
      }
      print "{" out "}"
    }'
}

# fio_pair_jobs BS MIS [N]: fio job options for fio_pairs: N (default 5)
# pairs of randwrite and randread cells of BS-byte blocks at offset 0 and
# at offset MIS, the order alternating from pair to pair (so a drift of
# the host's speed falls on both sides alike).
fio_pair_jobs() {
  _k=1
  while [ $_k -le "${3:-5}" ]; do
    for _d in write read; do
      if [ $((_k % 2)) = 1 ]; then _o="0:al $2:mis"; else _o="$2:mis 0:al"; fi
      for _x in $_o; do
        echo "--name=$_d-${_x#*:}-$_k --stonewall --rw=rand$_d --bs=$1 --offset=${_x%:*}"
      done
    done
    _k=$((_k + 1))
  done
}

# timed FILE CMD...: runs CMD with its stdout in FILE (stderr as usual) and
# prints {"status":N,"seconds":S}: its exit status and wall time, from
# /proc/uptime (10 ms steps). The output stays in the guest until a later
# capture sends what is needed of it, so the serial console's speed is
# not part of the time.
timed() {
  _f=$1; shift
  read _t0 _x < /proc/uptime
  _st=0
  "$@" > "$_f" || _st=$?
  read _t1 _x < /proc/uptime
  printf '{"status":%s,"seconds":%s}\n' "$_st" "$(awk "BEGIN { print $_t1 - $_t0 }")"
}

# fill_fs DEV NAME N: N files of random data (64 KiB to 1 MiB) on the ext4
# filesystem on DEV, their SHA-256 sums kept in /tmp/sums-NAME.
fill_fs() {
  mkdir -p /mnt/$2 && mount -t ext4 "$1" /mnt/$2 || return 1
  _i=0
  while [ $_i -lt "$3" ]; do
    dd if=/dev/urandom of=/mnt/$2/f$_i bs=64k count=$((1 + _i % 16)) 2>/dev/null
    _i=$((_i + 1))
  done
  (cd /mnt/$2 && sha256sum f*) > /tmp/sums-$2
  umount /mnt/$2
}

# verify_fs DEV NAME: e2fsck -fn on DEV, then every sum of fill_fs checked
# on a read-only mount. Prints "clean N files" and fails otherwise.
verify_fs() {
  e2fsck -fn "$1" >/tmp/fsck-$2 2>&1 || { cat /tmp/fsck-$2; return 1; }
  mkdir -p /mnt/$2 && mount -t ext4 -o ro "$1" /mnt/$2 || return 1
  _st=0
  (cd /mnt/$2 && sha256sum -c -s /tmp/sums-$2) || _st=1
  umount /mnt/$2
  [ $_st = 0 ] && echo "clean $(wc -l < /tmp/sums-$2) files"
}

# _dd_at DEV BYTES OFFSET [if|of]: one O_DIRECT write (of, the default) or
# read (if) of BYTES at byte OFFSET of DEV, a single dd call each.
_dd_at() {
  if [ "${4:-of}" = if ]; then
    dd if="$1" of=/dev/null bs="$2" count=1 skip="$3" iflag=skip_bytes,direct status=none
  else
    dd if=/dev/zero of="$1" bs="$2" count=1 seek="$3" oflag=seek_bytes,direct status=none
  fi
}

# zone_workload DEV ZONE: O_DIRECT I/O of known shape against zones of
# ZONE bytes on DEV, which must take writes anywhere in its first 6 zones
# (conventional zones, a host-aware or a regular disk): 40 writes of
# 8 KiB, 4 KiB on either side of a zone boundary (the first five in turn);
# 210 that cross none: 200 of 4 KiB from 1 MiB on (one dd), 5 of 4 KiB
# ending on a boundary and 5 starting on one; and 5 reads of 8 KiB across
# a boundary. Each write is one bio: 250 writes, 40 of them across a zone
# boundary.
zone_workload() {
  _i=0
  while [ $_i -lt 40 ]; do
    _dd_at "$1" 8192 $(( (_i % 5 + 1) * $2 - 4096 )) || return 1
    _i=$((_i + 1))
  done
  dd if=/dev/zero of="$1" bs=4096 count=200 seek=256 oflag=direct status=none || return 1
  for _z in 1 2 3 4 5; do
    _dd_at "$1" 4096 $(( _z * $2 - 4096 )) || return 1
    _dd_at "$1" 4096 $(( _z * $2 )) || return 1
    _dd_at "$1" 8192 $(( _z * $2 - 4096 )) if || return 1
  done
}

# bt_zones FILE ZONE_SECTORS: blkparse's count of the writes blktrace
# recorded in FILE, as JSON: `queued` (Q: each bio once, as
# block_bio_queue fires) and `queued_crossing`, those whose sectors
# cross a boundary of zones of ZONE_SECTORS; `split` (X); `issued` (D)
# and `issued_crossing`.
bt_zones() {
  blkparse -i "$1" -f '%a %d %S %n\n' | awk -v z="$2" '
    $2 ~ /W/ && $1 == "Q" { q++; if ($3 % z + $4 > z) qx++ }
    $2 ~ /W/ && $1 == "X" { x++ }
    $2 ~ /W/ && $1 == "D" { d++; if ($3 % z + $4 > z) dx++ }
    END { printf "{\"queued\":%d,\"queued_crossing\":%d,\"split\":%d,\"issued\":%d,\"issued_crossing\":%d}\n", q, qx, x, d, dx }'
}

# bt_writes FILE: blkparse's count of the writes blktrace recorded in
# FILE as issued to the disk (D), as JSON: `issued`, and `off_4k`, those
# whose start sector on the disk is not a multiple of 8.
bt_writes() {
  blkparse -i "$1" -f '%a %d %S %n\n' | awk '
    $2 ~ /W/ && $1 == "D" && $4 > 0 { d++; if ($3 % 8) o++ }
    END { printf "{\"issued\":%d,\"off_4k\":%d}\n", d, o }'
}
