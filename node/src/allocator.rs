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
    collect();
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
        collect();
    }
}

fn collect() {
    // SAFETY: mi_collect takes no pointers; it only returns the calling thread's free
    // pages (and free arenas) to the OS and is safe from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
