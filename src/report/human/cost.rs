//! `check --stats`: what reading cost, one line per target and one for
//! the run, for stderr.

use crate::check::RunCost;
use crate::units::human;
use std::time::Duration;

/// `stats: /dev/sdb: 9 reads of 576 KiB, 31 sysfs reads` per target, then
/// the run: its totals, per target on average, and its wall time.
pub fn lines(run: &RunCost, elapsed: Duration) -> String {
    let mut out = String::new();
    for t in &run.targets {
        let c = &t.cost;
        out += &format!(
            "stats: {}: {} reads of {}, {} sysfs reads\n",
            t.path,
            c.device_reads,
            human(c.bytes_read),
            c.sysfs_reads
        );
    }
    let c = &run.total;
    let n = run.targets.len().max(1) as u64;
    out += &format!(
        "stats: {} targets in {:.3} s: {} reads of {} ({:.1} reads, {} a target), {} sysfs reads ({:.1} a target)\n",
        run.targets.len(),
        elapsed.as_secs_f64(),
        c.device_reads,
        human(c.bytes_read),
        c.device_reads as f64 / n as f64,
        human(c.bytes_read / n),
        c.sysfs_reads,
        c.sysfs_reads as f64 / n as f64,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::TargetCost;
    use crate::sys::Cost;

    #[test]
    fn a_line_per_target_and_the_run() {
        let cost = |r, b, s| Cost {
            device_reads: r,
            bytes_read: b,
            sysfs_reads: s,
        };
        let run = RunCost {
            total: cost(20, 1 << 20, 70),
            targets: vec![
                TargetCost {
                    path: "/dev/sdb".into(),
                    cost: cost(9, 589_824, 31),
                },
                TargetCost {
                    path: "/dev/sdc".into(),
                    cost: cost(9, 458_752, 31),
                },
            ],
        };
        let s = lines(&run, Duration::from_millis(1500));
        assert_eq!(
            s,
            "stats: /dev/sdb: 9 reads of 576 KiB, 31 sysfs reads\n\
             stats: /dev/sdc: 9 reads of 448 KiB, 31 sysfs reads\n\
             stats: 2 targets in 1.500 s: 20 reads of 1 MiB (10.0 reads, 512 KiB a target), 70 sysfs reads (35.0 a target)\n"
        );
    }
}
