//! What the machine gives a process, as the node and the router size their defaults by it.

/// The memory this process may use: the container's limit (cgroup v2 `memory.max`, or v1's
/// `memory.limit_in_bytes`) when it has one below the machine's, else the machine's memory
/// (4 GiB when neither can be read).
pub fn memory_limit_bytes() -> u64 {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(4 << 30, |kib| kib * 1024);
    // A cgroup without a limit says `max` (v2) or a huge number (v1): neither is below the
    // machine's.
    let container = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    .find_map(|s| s.trim().parse::<u64>().ok());
    container.map_or(machine, |c| c.min(machine))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_process_has_some_memory_and_no_more_than_the_machine() {
        let limit = super::memory_limit_bytes();
        assert!(limit >= 64 << 20, "{limit}");
        let text = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
        let total: u64 = text
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|k| k.parse().ok())
            .expect("MemTotal");
        assert!(
            limit <= total * 1024,
            "{limit} over the machine's {total} KiB"
        );
    }
}
