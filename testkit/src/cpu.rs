//! A process's CPU time: for the load tool's reports and the tests' figures alike.

/// User plus system CPU seconds from the text of /proc/<pid>/stat.
pub fn cpu_seconds_from_stat(stat: &str) -> Option<f64> {
    // The command name (field 2) may hold spaces; the fields after its ')' start at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    Some((utime + stime) / ticks)
}

/// User plus system CPU seconds of process `pid`, to the nanosecond, from its CPU-time clock
/// (`clock_getcpuclockid`). /proc/<pid>/stat counts in clock ticks, too coarse for short windows.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let mut clock: libc::clockid_t = 0;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both calls only write the local values they are given.
    unsafe {
        if libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) != 0
            || libc::clock_gettime(clock, &mut ts) != 0
        {
            return None;
        }
    }
    Some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

#[cfg(test)]
mod tests;
