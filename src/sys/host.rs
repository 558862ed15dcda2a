//! The machine's own name, for the `host` of every JSON document.

/// The host name as uname(2) gives it (`nodename`, what `hostname` and
/// smartctl print); empty when the kernel has none set.
pub fn name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_name_is_the_kernels() {
        let proc = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(super::name(), proc.trim_end_matches('\n'));
    }
}
