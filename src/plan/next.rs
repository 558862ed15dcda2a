//! The next step `check` and `watch` name after a finding a layout change
//! fixes: the `diskalign plan` command of its disk, with the options the
//! check ran with (`--sysfs-root`, `--topology`, `--probe`), so that it runs as
//! printed, and only where planning that disk has work (the command would
//! exit 1): never for a partition (plan takes its disk), a table not read
//! (plan needs it), or a layout plan refuses.

use super::{plan, PlanOptions};
use crate::inspect::{InspectOptions, Inspection};
use crate::names::shell_word;

/// `diskalign [--sysfs-root DIR] plan DISK [--topology SPEC] [--probe RUN.json ...]`.
pub fn command(disk: &str, opts: &InspectOptions) -> String {
    let mut c = String::from("diskalign ");
    if !opts.sysfs.is_live() {
        let root = opts.sysfs.root().display().to_string();
        c.push_str(&format!("--sysfs-root {} ", shell_word(&root)));
    }
    c.push_str("plan ");
    c.push_str(&shell_word(disk));
    if let Some(t) = &opts.topology {
        c.push_str(&format!(" --topology {t}"));
    }
    let mut runs: Vec<&str> = opts.measured.iter().map(|m| m.file.as_str()).collect();
    runs.dedup();
    for r in runs {
        c.push_str(&format!(" --probe {}", shell_word(r)));
    }
    c
}

/// Each target of `i` whose plan has work, by its path as given, with
/// its command. A partition target has none: the caller plans its disk.
pub fn commands(i: Inspection, opts: &InspectOptions) -> Vec<(String, String)> {
    plan(i, &PlanOptions::default())
        .targets
        .iter()
        .filter(|d| d.has_work())
        .map(|d| (d.path.clone(), command(&d.path, opts)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Sysfs;

    #[test]
    fn the_command_repeats_what_the_check_ran_with() {
        let live = InspectOptions::default();
        assert_eq!(command("/dev/sda", &live), "diskalign plan /dev/sda");
        assert_eq!(command("a disk.img", &live), "diskalign plan 'a disk.img'");
        let what_if = InspectOptions {
            sysfs: Sysfs::new(std::path::Path::new("tests/fixtures/sysfs/usb-bridge")),
            topology: Some("pbs=4096,opt=33553920".parse().unwrap()),
            measured: vec![crate::inspect::Measured {
                path: "/dev/sda1".into(),
                disk: Some("sda".into()),
                unit_bytes: 4096,
                file: "a run.json".into(),
            }],
            ..InspectOptions::default()
        };
        assert_eq!(
            command("/dev/sda", &what_if),
            "diskalign --sysfs-root tests/fixtures/sysfs/usb-bridge plan /dev/sda --topology pbs=4096,opt=33553920 --probe 'a run.json'"
        );
    }
}
