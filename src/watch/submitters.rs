//! Who misaligns: the tasks and cgroups that submitted a device's I/O,
//! counted where each bio is submitted (`block_bio_queue`, or a
//! partition's `block_bio_remap`: both run in the task that called
//! submit_bio). Kernel threads are told from processes by their names
//! (the kernel's own, without BTF to ask more): every `kworker/*` is
//! one submitter, "writeback (kworker)", and so on (`KERNEL_THREADS`).
//! A device shows its top N submitters by the I/Os they misaligned, the
//! rest summed as "other", and the I/Os a full table left unattributed.

use super::counts::{off, padded, share, shifted};
use crate::sys::{Counters, Direction, Snapshot, Stage, SubmitterKey};
use crate::topology::Watched;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Submitters shown per device and direction unless `--top` says.
#[cfg(test)]
pub const TOP: usize = 10;

/// What a submitter is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubmitterKind {
    /// A user's process (or thread), by its `comm`.
    #[default]
    Process,
    /// A kernel thread, named by what it does (`KERNEL_THREADS`).
    KernelThread,
    /// Every submitter beyond the top N, summed.
    Other,
    /// I/Os whose submitter was not counted: the kernel's table of
    /// submitters was full.
    Unattributed,
}

crate::spelled_as_serde!(SubmitterKind);

/// Kernel threads by the start of their name: the name they are shown
/// by, and the one `comm` all of them are summed under. The flusher that
/// writes dirty pages back is a kworker (`wb_workfn`); below dm-crypt,
/// md or a loop device, a kworker may be that layer's worker instead.
const KERNEL_THREADS: [(&str, &str, &str); 9] = [
    ("kworker/", "writeback (kworker)", "kworker"),
    ("flush-", "writeback (flush)", "flush"),
    ("jbd2/", "ext4 journal (jbd2)", "jbd2"),
    ("xfsaild/", "XFS log (xfsaild)", "xfsaild"),
    ("kswapd", "reclaim (kswapd)", "kswapd"),
    ("kcryptd", "dm-crypt (kcryptd)", "kcryptd"),
    ("dmcrypt_write", "dm-crypt (dmcrypt_write)", "dmcrypt_write"),
    ("btrfs-", "btrfs worker", "btrfs"),
    ("md", "md array thread", "md"),
];

/// A kernel thread's shown name and summed comm, by its `comm`; None for
/// a process. md's threads are `mdN_raidL`, `mdN_resync`.
pub fn kernel_thread(comm: &str) -> Option<(&'static str, &'static str)> {
    KERNEL_THREADS
        .iter()
        .find(|(prefix, _, _)| {
            comm.starts_with(prefix)
                && (*prefix != "md" || comm[2..].split('_').next().is_some_and(is_number))
        })
        .map(|(_, name, comm)| (*name, *comm))
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// One submitter of a device's I/O in one direction, over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Submitter {
    /// As shown: the process's `comm`, a kernel thread's job
    /// ("writeback (kworker)"), `other` or `unattributed`.
    pub name: String,
    pub kind: SubmitterKind,
    /// The task's `comm`; for a kernel thread the common start of its
    /// kind (`kworker`); empty for `other` and `unattributed`.
    pub comm: String,
    /// Its cgroup's path under the cgroup2 mount (`/system.slice/...`);
    /// null where unknown (gone, or no cgroup2) and for `other`.
    pub cgroup: Option<String>,
    /// The cgroup v2 id (the directory's inode number); 0 where unknown.
    pub cgroup_id: u64,
    pub ios: u64,
    pub bytes: u64,
    pub straddle_4k: u64,
    pub straddle_grain: u64,
    pub sub_physical: u64,
    pub splits: u64,
    /// Starts off 4 KiB on the disk below, where the device's offset on
    /// it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_4k_on_disk: Option<u64>,
    /// The straddling I/Os as the device's row counts them:
    /// max(straddle_4k, straddle_grain, off_4k_on_disk).
    pub straddling: u64,
    /// straddling / ios.
    pub straddle_share: f64,
}

impl Submitter {
    /// The most I/Os it misaligned in one way: straddling, below the
    /// physical block or split.
    pub fn affected(&self) -> u64 {
        self.straddling.max(self.sub_physical).max(self.splits)
    }

    /// A process or kernel thread (not `other`, not `unattributed`).
    pub fn is_task(&self) -> bool {
        matches!(
            self.kind,
            SubmitterKind::Process | SubmitterKind::KernelThread
        )
    }

    /// The name with its cgroup where that says more than the root:
    /// `postgres in /system.slice/postgresql.service`.
    pub fn label(&self) -> String {
        match self.cgroup.as_deref() {
            Some(c) if c != "/" && self.is_task() => format!("{} in {c}", self.name),
            _ => self.name.clone(),
        }
    }

    fn add(&mut self, c: &Counters) {
        self.ios += c.ios;
        self.bytes += c.bytes;
        self.straddle_4k += c.straddle_4k;
        self.straddle_grain += c.straddle_grain;
        self.sub_physical += c.sub_physical;
        self.splits += c.splits;
    }

    fn sum(&mut self, o: &Submitter) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.straddle_4k += o.straddle_4k;
        self.straddle_grain += o.straddle_grain;
        self.sub_physical += o.sub_physical;
        self.splits += o.splits;
        self.straddling += o.straddling;
        self.off_4k_on_disk = match (self.off_4k_on_disk, o.off_4k_on_disk) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.straddle_share = share(self.straddling, self.ios);
    }
}

/// The stage a device's submitters are counted at: the bios queued to it
/// (a disk, dm, md or loop device), else, for a partition, as they were
/// addressed to it before they were moved onto its disk.
pub fn stage_of(w: &Watched, d: Direction, snap: &Snapshot) -> Option<Stage> {
    let dev = w.dev();
    let has = |stage: Stage| {
        snap.submitters
            .iter()
            .any(|(k, c)| (k.dev, k.direction, k.stage) == (dev, d, stage) && c.ios > 0)
            || snap
                .counters
                .iter()
                .any(|((v, dir, st), c)| (*v, *dir, *st) == (dev, d, stage) && c.unattributed > 0)
    };
    [Stage::Queue, Stage::RemapFrom]
        .into_iter()
        .find(|s| has(*s))
}

/// The submitters of device `w` in direction `d` at `stage`: the top `top`
/// by the I/Os they misaligned (then by I/Os), the rest as `other`, and
/// the I/Os left unattributed.
pub fn submitters(
    w: &Watched,
    d: Direction,
    stage: Stage,
    snap: &Snapshot,
    top: usize,
) -> Vec<Submitter> {
    let dev = w.dev();
    let mut by_who: BTreeMap<(String, u64), (Submitter, Vec<u64>)> = BTreeMap::new();
    for (k, c) in snap
        .submitters
        .iter()
        .filter(|(k, _)| (k.dev, k.direction, k.stage) == (dev, d, stage))
    {
        let e = by_who
            .entry(identity(k))
            .or_insert_with(|| (named(k, snap), vec![0; 8]));
        e.0.add(c);
        for (i, n) in padded(&c.start_mod_4k, 8).iter().enumerate() {
            e.1[i] += n;
        }
    }
    let mut all: Vec<Submitter> = by_who
        .into_values()
        .filter(|(s, _)| s.ios > 0 || s.splits > 0)
        .map(|(mut s, mod4k)| {
            s.off_4k_on_disk = w.offset_on_disk_bytes.map(|o| off(&shifted(&mod4k, o)));
            s.straddling = s
                .straddle_4k
                .max(s.straddle_grain)
                .max(s.off_4k_on_disk.unwrap_or(0));
            s.straddle_share = share(s.straddling, s.ios);
            s
        })
        .collect();
    all.sort_by(|a, b| {
        (b.affected(), b.ios, &a.name)
            .cmp(&(a.affected(), a.ios, &b.name))
            .then(a.cgroup_id.cmp(&b.cgroup_id))
    });
    let rest = all.split_off(top.min(all.len()));
    if !rest.is_empty() {
        let mut other = Submitter {
            name: "other".into(),
            kind: SubmitterKind::Other,
            ..Submitter::default()
        };
        for s in &rest {
            other.sum(s);
        }
        all.push(other);
    }
    let unattributed: u64 = snap
        .counters
        .iter()
        .filter(|((v, dir, st), _)| (*v, *dir, *st) == (dev, d, stage))
        .map(|(_, c)| c.unattributed)
        .sum();
    if unattributed > 0 {
        all.push(Submitter {
            name: "unattributed".into(),
            kind: SubmitterKind::Unattributed,
            ios: unattributed,
            ..Submitter::default()
        });
    }
    all
}

/// Who a key is, once kernel threads of one kind are summed: the comm
/// (a kernel thread's common one) and the cgroup.
fn identity(k: &SubmitterKey) -> (String, u64) {
    let comm = kernel_thread(&k.comm).map_or(k.comm.as_str(), |(_, c)| c);
    (comm.to_string(), k.cgroup_id)
}

/// A submitter with its name, kind and cgroup, and no counts yet.
fn named(k: &SubmitterKey, snap: &Snapshot) -> Submitter {
    let cgroup = snap
        .cgroups
        .iter()
        .find(|(id, _)| *id == k.cgroup_id)
        .map(|(_, p)| p.clone());
    let (name, kind, comm) = match kernel_thread(&k.comm) {
        Some((name, comm)) => (name.to_string(), SubmitterKind::KernelThread, comm),
        None => (k.comm.clone(), SubmitterKind::Process, k.comm.as_str()),
    };
    Submitter {
        name,
        kind,
        comm: comm.to_string(),
        cgroup,
        cgroup_id: k.cgroup_id,
        ..Submitter::default()
    }
}

/// The submitters behind most of `affected` misaligned I/Os: the fewest
/// tasks, most first, that together did at least half of them (at most
/// three), by `of` (straddling, sub_physical or splits).
pub fn behind(subs: &[Submitter], of: fn(&Submitter) -> u64, affected: u64) -> Vec<&Submitter> {
    let mut tasks: Vec<&Submitter> = subs.iter().filter(|s| s.is_task() && of(s) > 0).collect();
    tasks.sort_by_key(|s| std::cmp::Reverse(of(s)));
    let mut out = Vec::new();
    let mut covered = 0;
    for s in tasks.into_iter().take(3) {
        if 2 * covered >= affected && !out.is_empty() {
            break;
        }
        covered += of(s);
        out.push(s);
    }
    out
}

#[cfg(test)]
mod tests {
    //! Synthetic snapshots, made up here.
    use super::*;
    use crate::sys::DevNum;
    use crate::watch::fixture::{snapshot, watched_ao};

    fn key(minor: u32, comm: &str, cgroup_id: u64, stage: Stage) -> SubmitterKey {
        SubmitterKey {
            dev: DevNum { major: 8, minor },
            direction: Direction::Write,
            stage,
            comm: comm.into(),
            cgroup_id,
        }
    }

    fn counts(ios: u64, straddle: u64, mod4k_0: u64) -> Counters {
        let mut m = vec![0; 8];
        m[0] = mod4k_0;
        m[1] = ios - mod4k_0;
        Counters {
            ios,
            bytes: ios * 4096,
            straddle_4k: straddle,
            straddle_grain: straddle,
            start_mod_4k: m,
            ..Counters::default()
        }
    }

    #[test]
    fn kernel_threads_are_named_by_what_they_do() {
        assert_eq!(
            kernel_thread("kworker/u8:3"),
            Some(("writeback (kworker)", "kworker"))
        );
        assert_eq!(
            kernel_thread("jbd2/sda1-8"),
            Some(("ext4 journal (jbd2)", "jbd2"))
        );
        assert_eq!(
            kernel_thread("md127_raid5"),
            Some(("md array thread", "md"))
        );
        assert_eq!(kernel_thread("mdadm"), None, "a process");
        assert_eq!(kernel_thread("postgres"), None);
    }

    #[test]
    fn the_top_submitters_then_other_then_unattributed() {
        let w = watched_ao();
        let disk = &w[0];
        let mut s = snapshot(vec![], 1.0);
        s.submitters = vec![
            (key(16, "fio", 40, Stage::Queue), counts(100, 100, 0)),
            (key(16, "dd", 41, Stage::Queue), counts(500, 0, 500)),
            (key(16, "kworker/u8:1", 1, Stage::Queue), counts(30, 10, 30)),
            (key(16, "kworker/1:0", 1, Stage::Queue), counts(20, 5, 20)),
            (key(16, "cp", 1, Stage::Queue), counts(7, 0, 7)),
            (key(17, "fio", 40, Stage::RemapFrom), counts(9, 0, 9)),
        ];
        s.cgroups = vec![(40, "/test.slice".into()), (1, "/".into())];
        let mut c = counts(10, 0, 10);
        c.unattributed = 3;
        s.counters
            .push(((disk.dev(), Direction::Write, Stage::Queue), c));
        assert_eq!(stage_of(disk, Direction::Write, &s), Some(Stage::Queue));
        assert_eq!(
            stage_of(&w[1], Direction::Write, &s),
            Some(Stage::RemapFrom)
        );
        let v = submitters(disk, Direction::Write, Stage::Queue, &s, 2);
        let rows: Vec<(&str, SubmitterKind, u64, u64)> = v
            .iter()
            .map(|x| (x.name.as_str(), x.kind, x.ios, x.straddling))
            .collect();
        assert_eq!(
            rows,
            [
                ("fio", SubmitterKind::Process, 100, 100),
                ("writeback (kworker)", SubmitterKind::KernelThread, 50, 15),
                ("other", SubmitterKind::Other, 507, 0),
                ("unattributed", SubmitterKind::Unattributed, 3, 0),
            ]
        );
        assert_eq!(v[0].label(), "fio in /test.slice");
        assert_eq!(
            v[1].label(),
            "writeback (kworker)",
            "the root cgroup is not named"
        );
        assert_eq!(v[1].comm, "kworker");
        assert_eq!(v[2].cgroup, None);
        // A partition at sector 63: its aligned starts are off on the disk.
        let p = submitters(&w[1], Direction::Write, Stage::RemapFrom, &s, 10);
        assert_eq!(
            (p[0].straddle_4k, p[0].off_4k_on_disk, p[0].straddling),
            (0, Some(9), 9)
        );
        let most = behind(&v, |s| s.straddling, 115);
        assert_eq!(most.len(), 1, "fio did 100 of 115");
    }
}
