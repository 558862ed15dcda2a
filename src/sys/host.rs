//! The machine's own name, for the `host` of every JSON document.

/// The host name as uname(2) gives it (`nodename`, what `hostname` and
/// smartctl print); empty when the kernel has none set.
pub fn host_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// The running kernel as uname(2) gives it.
pub struct Kernel {
    /// `release version`, as `uname -rv` prints them.
    pub release_version: String,
    /// The machine's architecture (`uname -m`).
    pub machine: String,
}

pub fn running_kernel() -> Kernel {
    let u = rustix::system::uname();
    Kernel {
        release_version: format!(
            "{} {}",
            u.release().to_string_lossy(),
            u.version().to_string_lossy()
        ),
        machine: u.machine().to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_name_is_the_kernels() {
        let proc = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(super::host_name(), proc.trim_end_matches('\n'));
    }
}
