//! The node's memory allocator: mimalloc, chosen by measurement.
//!
//! A node allocates and frees a little for every message (frames, presence
//! entries, parsed messages). Against glibc's allocator, mimalloc took 15-20%
//! less CPU per delivered update at 1,000 people (docs/scaling.md, "Allocator").
//! The binary sets it ([`Allocator`] in `main.rs`); a library may not, since some
//! tests count allocations with an allocator of their own.
//!
//! Transparent huge pages are turned off for the process: mimalloc asks for them
//! on its arenas, and a huge page backing a mostly empty 2 MiB cost the node
//! about 40% more resident memory per connection in the same runs.
//!
//! The embedded store's SQLite is C and allocates with the C library's malloc, on the
//! runtime's blocking threads, each of which glibc gives an arena of its own. A version
//! blob of 20 MB read or written there stayed in that thread's arena for good (glibc
//! raises its mmap threshold to the largest block freed, so later ones come from the
//! arenas too): after a few operations on a large file's versions, nine arenas held
//! 210 MiB with no room open, and the node refused all new work at its mark (the ninth
//! review). So large blocks are always mapped on their own (returned when freed), and
//! giving memory back trims the C library's arenas too.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The allocator `main.rs` installs.
pub type Allocator = mimalloc::MiMalloc;

/// Called first thing in `main`: no huge pages from here on.
pub fn init() {
    // SAFETY: prctl with PR_SET_THP_DISABLE takes integers only and changes one
    // flag of this process; it cannot touch memory we hold.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if rc != 0 {
        // Old kernels lack it; memory is then merely larger, never wrong.
        tracing::debug!("could not turn off transparent huge pages");
    }
    c_malloc::map_large_blocks();
}

/// Gives freed memory back to the system now, rather than after mimalloc's
/// purge delay: called when resident memory nears the budget (memory.rs).
///
/// mimalloc keeps memory freed on a thread in that thread's heap until the thread
/// allocates again, and a collect only reaches the calling thread's heap. So this
/// collects here and asks every other thread to collect its own when it next goes
/// idle ([`on_idle`]): after a burst, the runtime's workers and the lane's threads
/// are idle, and what they hold would otherwise stay resident, and keep the node
/// refusing work, for minutes.
pub fn give_back_free_memory() {
    COLLECTS_ASKED.fetch_add(1, Ordering::AcqRel);
    collect(true);
    c_malloc::trim();
}

/// Times a collect was asked for; each thread remembers the last it answered.
static COLLECTS_ASKED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COLLECTS_DONE: Cell<u64> = const { Cell::new(0) };
}

/// Called by a thread about to go idle (the runtime's `on_thread_park`, the lane between
/// jobs): collects its own heap if a collect was asked for since it last did. Otherwise
/// it costs one atomic load.
pub fn on_idle() {
    let asked = COLLECTS_ASKED.load(Ordering::Acquire);
    if COLLECTS_DONE.get() != asked {
        COLLECTS_DONE.set(asked);
        // Not forced: a worker parks here, and a forced purge took tens of milliseconds that
        // the next socket to wake it waited for (under every attack at once, relays of 30
        // ms); the blocking thread's [`give_back_free_memory`] forces it.
        collect(false);
    }
}

/// Returns the calling thread's free pages to the OS; `force`d, also purges what mimalloc
/// would keep for a while (free arenas, delayed frees).
fn collect(force: bool) {
    // SAFETY: mi_collect takes no pointers; it only returns the calling thread's free
    // pages (and free arenas) to the OS and is safe from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(force) }
}

/// The C library's allocator, which SQLite uses (glibc only; elsewhere nothing to do).
mod c_malloc {
    /// Blocks from this size on are mapped on their own and unmapped when freed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    const MAP_FROM: libc::c_int = 256 * 1024;

    /// Fixes the mmap threshold (glibc would otherwise raise it to the largest block freed,
    /// up to 32 MiB, and keep such blocks in its arenas).
    pub(super) fn map_large_blocks() {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt takes two integers and changes a setting of glibc's allocator;
        // called once at start, before SQLite allocates.
        unsafe {
            if libc::mallopt(libc::M_MMAP_THRESHOLD, MAP_FROM) != 1 {
                tracing::debug!("could not fix the C allocator's mmap threshold");
            }
        }
    }

    /// Returns free memory at the top of, and whole free pages inside, every arena.
    pub(super) fn trim() {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim takes an integer and only releases memory glibc holds free.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// In the library's own tests: the system's allocator, counting what each thread holds,
/// so a test can bound the memory a piece of work takes on its thread.
#[cfg(test)]
pub(crate) mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    struct Counting;

    #[global_allocator]
    static COUNTING: Counting = Counting;

    thread_local! {
        static HELD: Cell<i64> = const { Cell::new(0) };
        static PEAK: Cell<i64> = const { Cell::new(0) };
    }

    fn count(bytes: i64) {
        // A thread being torn down has no counters left: nothing to count then.
        let _ = HELD.try_with(|held| {
            let now = held.get() + bytes;
            held.set(now);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
        });
    }

    // SAFETY: every call goes to the system allocator unchanged; counting touches only
    // this thread's counters and never allocates.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count(layout.size() as i64);
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            count(-(layout.size() as i64));
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            count(layout.size() as i64);
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count(new_size as i64 - layout.size() as i64);
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// Runs `work` on this thread, and the most bytes it held at once above what the
    /// thread held before (what it returns included).
    pub(crate) fn peak_of<T>(work: impl FnOnce() -> T) -> (T, u64) {
        let start = HELD.with(Cell::get);
        PEAK.with(|p| p.set(start));
        let out = work();
        (out, (PEAK.with(Cell::get) - start).max(0) as u64)
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Whether a block of `size` from the C library is mapped on its own (so freeing it
    /// returns it to the system), judged by glibc's count of mapped bytes; tried a few
    /// times, since other tests may free mapped blocks meanwhile.
    fn mapped_on_its_own(size: usize) -> bool {
        (0..3).any(|_| {
            // SAFETY: a plain malloc and free of a block this function owns throughout;
            // mallinfo2 only reads glibc's statistics.
            unsafe {
                let before = libc::mallinfo2().hblkhd;
                let p = libc::malloc(size);
                assert!(!p.is_null());
                let during = libc::mallinfo2().hblkhd;
                libc::free(p);
                during >= before + size
            }
        })
    }

    /// A version blob SQLite frees goes back to the system, the second as the first: glibc
    /// would raise its threshold to the first block freed and keep the next in an arena.
    #[test]
    fn large_c_blocks_are_mapped_every_time() {
        super::c_malloc::map_large_blocks();
        const BLOB: usize = 20 << 20;
        let rounds =
            std::thread::spawn(|| (0..3).map(|_| mapped_on_its_own(BLOB)).collect::<Vec<_>>())
                .join()
                .expect("a thread of its own, with an arena of its own");
        assert_eq!(rounds, [true, true, true]);
    }
}
