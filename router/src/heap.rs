//! Giving back what a burst took. The router allocates with the C library's malloc, whose
//! arenas keep memory that was freed: after three waves of 1,000 unfinished request heads,
//! with no connection left open, the router held 52 MiB against 24 before
//! (`cluster::costs::a_burst_of_connections_is_given_back_once_they_are_gone`; about 100 MiB
//! after such waves in release). A thread looks every [`LOOK_EVERY`] at what the arenas
//! hold free, and when it is past [`TRIM_PAST`] and more than what they hold in use (a
//! burst has ended: under a steady load little is free), asks the C library to return it
//! (`malloc_trim`, which locks each arena in turn while it walks it).

#![allow(unsafe_code)]

use std::time::Duration;

/// How often the free memory is looked at.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Free bytes held in the arenas past which they are returned. Below it, what is free is
/// what the next connections will take anyway.
const TRIM_PAST: usize = 8 << 20;

/// Starts the thread that returns freed memory, for the life of the process.
pub fn give_back_in_the_background() {
    let started = std::thread::Builder::new()
        .name("atrium-heap".into())
        .spawn(|| loop {
            std::thread::sleep(LOOK_EVERY);
            let (free, used) = arenas();
            if free > TRIM_PAST && free > used {
                trim();
                let freed = free.saturating_sub(arenas().0);
                tracing::debug!(freed, used, "heap trimmed");
            }
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "no heap thread: memory freed after bursts stays held");
    }
}

/// Bytes the C library's arenas hold free, and in use (neither counting blocks mapped on
/// their own, which go back when freed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn arenas() -> (usize, usize) {
    // SAFETY: mallinfo2 takes no arguments and returns a struct by value; it reads the
    // allocator's own statistics under its locks.
    let info = unsafe { libc::mallinfo2() };
    (info.fordblks, info.uordblks)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim takes a byte count (0: keep nothing spare) and only returns free
    // pages of the allocator's arenas to the kernel; no block in use moves.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn arenas() -> (usize, usize) {
    (0, 0)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
