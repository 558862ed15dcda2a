//! Whether this thread may trace the block layer, and the one line that
//! says what is missing. System-wide tracepoint events need CAP_PERFMON
//! (or CAP_SYS_ADMIN) unless kernel.perf_event_paranoid is -1
//! (perf_event_open(2), "perf_event related configuration files");
//! loading the counting programs needs CAP_BPF as well (or CAP_SYS_ADMIN).

use std::fs;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// What this thread holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Privilege {
    /// CapEff of /proc/thread-self/status.
    pub cap_eff: u64,
    /// kernel.perf_event_paranoid; None when unreadable.
    pub paranoid: Option<i32>,
}

impl Privilege {
    fn has(&self, cap: u32) -> bool {
        self.cap_eff & (1 << cap) != 0
    }

    pub fn may_perf(&self) -> bool {
        self.paranoid == Some(-1) || self.has(CAP_PERFMON) || self.has(CAP_SYS_ADMIN)
    }

    pub fn may_bpf(&self) -> bool {
        self.has(CAP_SYS_ADMIN) || (self.has(CAP_BPF) && self.has(CAP_PERFMON))
    }

    /// What is missing to trace at all, as one line; None when nothing.
    pub fn missing(&self) -> Option<String> {
        if self.may_perf() {
            return None;
        }
        let paranoid = match self.paranoid {
            Some(p) => format!("kernel.perf_event_paranoid is {p}"),
            None => "kernel.perf_event_paranoid is unreadable".to_string(),
        };
        Some(format!(
            "needs root, or CAP_PERFMON (and CAP_BPF to count in the kernel), or kernel.perf_event_paranoid = -1; this process has neither and {paranoid}"
        ))
    }
}

/// The CapEff line of a status file.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    let v = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(v.trim(), 16).ok()
}

/// This thread's capabilities and the paranoid setting.
pub fn current() -> Privilege {
    let status = fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    let paranoid = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    Privilege {
        cap_eff: parse_cap_eff(&status).unwrap_or(0),
        paranoid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_may_do_both() {
        let p = Privilege {
            cap_eff: parse_cap_eff("Name:\tx\nCapEff:\t000001ffffffffff\n").unwrap(),
            paranoid: Some(2),
        };
        assert!(p.may_perf() && p.may_bpf());
        assert_eq!(p.missing(), None);
    }

    #[test]
    fn perfmon_alone_falls_back_to_samples() {
        let p = Privilege {
            cap_eff: 1 << CAP_PERFMON,
            paranoid: Some(2),
        };
        assert!(p.may_perf() && !p.may_bpf());
    }

    #[test]
    fn nothing_says_what_is_missing_in_one_line() {
        let p = Privilege {
            cap_eff: 0,
            paranoid: Some(4),
        };
        let m = p.missing().unwrap();
        assert!(
            m.contains("CAP_PERFMON") && m.contains("perf_event_paranoid is 4"),
            "{m}"
        );
        assert!(!m.contains('\n'));
        let open = Privilege {
            cap_eff: 0,
            paranoid: Some(-1),
        };
        assert_eq!(open.missing(), None);
    }
}
