//! CPU seconds of this process and of the whole machine, from /proc.

/// User plus system CPU seconds of this process: its CPU clock (nanoseconds), else
/// /proc/self/stat (clock ticks, usually 10 ms).
pub fn own_cpu_seconds() -> Option<f64> {
    crate::node::process_cpu_seconds(std::process::id()).or_else(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        crate::node::cpu_seconds_from_stat(&stat)
    })
}

/// (busy, total) CPU seconds of the whole machine since boot, from the text of /proc/stat.
pub fn machine_cpu_from_stat(stat: &str) -> Option<(f64, f64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    let total: f64 = v.iter().take(8).sum();
    let idle = v[3] + v[4];
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    Some(((total - idle) / ticks, total / ticks))
}

/// The whole machine's busy CPU seconds so far.
pub fn machine_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    machine_cpu_from_stat(&stat).map(|(busy, _)| busy)
}
