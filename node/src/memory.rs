//! The node's memory budget (`ATRIUM_MEMORY_BUDGET`): new work is refused, with the
//! contract's codes, before the process grows past what it was told it may use.
//!
//! Two measures meet here. The process's resident memory, sampled a few times a
//! second, catches everything; reservations, taken before a large allocation is
//! made (a room's document being loaded, a file's initial document being read),
//! catch what a sample would see too late. Work is admitted while the sample plus
//! what is reserved stays under the high-water mark (the budget less a tenth of
//! it, and less at least 16 MiB), so the rest is headroom for what is already
//! running: sockets' queues, the patches of rooms that are open, requests in flight.
//!
//! Refusing is all it does: nothing already accepted is dropped. Sockets get 1013
//! (try again later) or an HTTP 503 with `Retry-After` before the upgrade; requests
//! that would make large allocations get 503.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Work is admitted while the process stays this far under its budget: a tenth
/// of it, and at least [`MIN_HEADROOM`], for what is already running.
const HEADROOM: f64 = 0.1;
const MIN_HEADROOM: u64 = 16 << 20;
/// How often resident memory is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// Default budget when none is set: this share of the machine's (or the cgroup's) memory.
const DEFAULT_SHARE: f64 = 0.75;

pub struct MemoryGuard {
    budget: u64,
    /// Resident bytes at the last sample.
    rss: AtomicU64,
    /// Bytes promised to allocations that have not shown up in a sample yet.
    reserved: AtomicU64,
}

/// Bytes promised to one piece of work; given back when dropped.
pub struct Reservation {
    guard: Arc<MemoryGuard>,
    bytes: u64,
}

impl Reservation {
    /// Keeps the promise a little longer, until resident memory samples include
    /// the allocation it was made for.
    pub fn hold_until_sampled(self) {
        tokio::spawn(async move {
            tokio::time::sleep(SAMPLE_EVERY * 3).await;
            drop(self);
        });
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.guard.reserved.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl MemoryGuard {
    pub fn new(budget: u64) -> Arc<Self> {
        Arc::new(Self {
            budget,
            rss: AtomicU64::new(crate::stats::rss_bytes()),
            reserved: AtomicU64::new(0),
        })
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    fn high_water(&self) -> u64 {
        let headroom = ((self.budget as f64 * HEADROOM) as u64).max(MIN_HEADROOM);
        self.budget.saturating_sub(headroom)
    }

    /// Resident bytes at the last sample.
    pub fn rss(&self) -> u64 {
        self.rss.load(Ordering::Acquire)
    }

    /// Whether new work may start now.
    pub fn admits(&self) -> bool {
        self.rss() + self.reserved.load(Ordering::Acquire) < self.high_water()
    }

    /// Whether `bytes` could be promised now (nothing is promised).
    pub fn fits(&self, bytes: u64) -> bool {
        self.rss() + self.reserved.load(Ordering::Acquire) + bytes <= self.high_water()
    }

    /// Promises `bytes` to a piece of work if the budget has room for them.
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let high = self.high_water();
        let rss = self.rss();
        self.reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                (rss + r + bytes <= high).then_some(r + bytes)
            })
            .ok()
            .map(|_| Reservation {
                guard: self.clone(),
                bytes,
            })
    }

    /// Samples resident memory until the process ends. Over the high-water mark,
    /// it also asks the allocator to give freed memory back to the system, so
    /// memory a finished burst left free does not keep the node refusing work.
    pub fn spawn_sampler(self: &Arc<Self>, metrics: Arc<crate::metrics::Metrics>) {
        let guard = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SAMPLE_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut trimmed = tokio::time::Instant::now();
            loop {
                every.tick().await;
                let Some(guard) = guard.upgrade() else { return };
                let rss = crate::stats::rss_bytes();
                guard.rss.store(rss, Ordering::Release);
                metrics.memory_rss.set(rss as i64);
                if rss >= guard.high_water() && trimmed.elapsed() >= Duration::from_secs(1) {
                    trimmed = tokio::time::Instant::now();
                    give_back_free_memory();
                    guard
                        .rss
                        .store(crate::stats::rss_bytes(), Ordering::Release);
                }
            }
        });
    }
}

/// The default budget: a share of the cgroup's memory limit when there is one
/// (a container), else of the machine's memory.
pub fn default_budget() -> u64 {
    let machine =
        crate::stats::proc_kib("/proc/meminfo", "MemTotal:").map_or(4 << 30, |kb| kb * 1024);
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|p| std::fs::read_to_string(p).ok())
    .find_map(|s| s.trim().parse::<u64>().ok());
    let total = cgroup.map_or(machine, |c| c.min(machine));
    (total as f64 * DEFAULT_SHARE) as u64
}

/// Parses a size: bytes, or a number with `K`, `M`, `G` (powers of 1024; `KiB`,
/// `MiB`, `GiB` and `KB`, `MB`, `GB` are read the same). `0` or `auto` means the default.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("auto") {
        return Ok(0);
    }
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 2GiB, 512M, 1073741824)"))?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("{s:?} has an unknown unit (use K, M or G)")),
    };
    Ok((number * scale as f64) as u64)
}

#[cfg(target_env = "gnu")]
#[allow(unsafe_code)]
fn give_back_free_memory() {
    // SAFETY: malloc_trim takes no pointers and only releases memory glibc's
    // allocator holds free; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(target_env = "gnu"))]
fn give_back_free_memory() {}

#[cfg(test)]
mod tests;
