//! Process statistics for `/health`: CPU, resident memory, and the runtime's
//! scheduling delay (how late a timer wakes up: our event-loop delay).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the delay probe wakes, and how many samples it keeps (10 s).
const PROBE_EVERY: Duration = Duration::from_millis(10);
const SAMPLES: usize = 1000;

#[derive(Default)]
pub struct DelayProbe {
    samples: Mutex<VecDeque<Duration>>,
}

impl DelayProbe {
    /// Starts sampling on the current runtime.
    pub fn start() -> Arc<Self> {
        let probe = Arc::new(Self::default());
        let p = probe.clone();
        tokio::spawn(async move {
            loop {
                let asked = Instant::now();
                tokio::time::sleep(PROBE_EVERY).await;
                let late = asked.elapsed().saturating_sub(PROBE_EVERY);
                let mut samples = p.samples.lock().unwrap_or_else(|e| e.into_inner());
                if samples.len() == SAMPLES {
                    samples.pop_front();
                }
                samples.push_back(late);
            }
        });
        probe
    }

    /// The 99th percentile of recent delays.
    pub fn p99(&self) -> Duration {
        let mut v: Vec<Duration> = self
            .samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        if v.is_empty() {
            return Duration::ZERO;
        }
        v.sort_unstable();
        v[(v.len() * 99 / 100).min(v.len() - 1)]
    }
}

/// User plus system CPU time of this process, from /proc/self/stat.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces, so split after ')').
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name
    // and state. Linux reports them in USER_HZ, which is 100 on every platform.
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// Resident memory of this process, from /proc/self/status.
pub fn rss_bytes() -> u64 {
    proc_kib("/proc/self/status", "VmRSS:").map_or(0, |kb| kb * 1024)
}

/// A `Name: <n> kB` line of a /proc file (`/proc/meminfo`, `/proc/self/status`).
pub fn proc_kib(path: &str, name: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_process() {
        // Burn a little CPU so the counter moves past zero.
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        assert!(x != 1);
        assert!(cpu_seconds() > 0.0);
        assert!(rss_bytes() > 1024 * 1024);
    }
}
