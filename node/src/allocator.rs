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
pub fn give_back_free_memory() {
    // SAFETY: mi_collect takes no pointers; it only returns free pages to the OS
    // and is safe from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
