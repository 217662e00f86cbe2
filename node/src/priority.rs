//! How the node's threads ask the kernel for CPU.
//!
//! A relay is a chain of short wake-ups: a socket's read, the room's turn, the
//! journal's commit on a blocking thread, the writes to everyone. On a machine whose
//! cores are busy (other processes, or the node's own bulk work), each wake-up can
//! wait for whatever holds the core to use up its time slice, a few milliseconds
//! each, and that wait is most of an honest person's relay tail under attack
//! (docs/reliability.md). So:
//!
//! - the runtime's threads (workers and blocking threads) ask for a short slice,
//!   which on kernels with EEVDF's custom slices (Linux 6.12 and later) lets a waking
//!   relay thread preempt a task that runs on with a longer slice, at once rather
//!   than when that slice ends; it changes when they run, not their share of the CPU;
//!   older kernels ignore it;
//! - the bulk lane's threads run at a higher nice value, so on a busy core relaying
//!   gets most of the time. Not `SCHED_IDLE`: on a saturated node that would starve
//!   uploads and room loads outright, rather than slowing them.

/// The slice the runtime's threads ask for: the kernel's smallest.
pub const SHORT_SLICE_NANOS: u64 = 100_000;

/// How much lower than the rest of the node the lane runs (a nice value).
pub(crate) const LANE_NICENESS: i32 = 10;

/// For a thread that relays: its own priority, a short slice.
pub fn relay_thread() {
    #[cfg(target_os = "linux")]
    if let Err(e) = ask_for_slice(SHORT_SLICE_NANOS) {
        tracing::debug!(error = %e, "the runtime's threads keep the default slice");
    }
}

/// For a thread of bulk work: a tenth of the weight of the node's other threads.
pub fn bulk_thread() {
    #[cfg(target_os = "linux")]
    set_nice(LANE_NICENESS);
}

/// Asks for a slice of `slice_nanos` for the calling thread, which stays in the normal
/// policy at its nice value.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn ask_for_slice(slice_nanos: u64) -> std::io::Result<()> {
    // SAFETY: getpriority and gettid take plain integers. sched_setattr reads the
    // `sched_attr` we own for the length of the call and changes only the calling
    // thread's (pid 0) scheduling.
    let rc = unsafe {
        let nice = libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t);
        let attr = libc::sched_attr {
            size: std::mem::size_of::<libc::sched_attr>() as u32,
            sched_policy: libc::SCHED_OTHER as u32,
            sched_flags: 0,
            sched_nice: nice,
            sched_priority: 0,
            sched_runtime: slice_nanos,
            sched_deadline: 0,
            sched_period: 0,
        };
        libc::syscall(
            libc::SYS_sched_setattr,
            0,
            &attr as *const libc::sched_attr,
            0,
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Sets the calling thread's nice value to `nice` (only ever raised: lowering needs
/// privilege, and then the thread keeps its value).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_nice(nice: i32) {
    // SAFETY: gettid and setpriority take plain integers and touch only this thread's
    // scheduling priority; raising one's own nice value needs no privilege.
    let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if done != 0 {
        tracing::debug!(nice, "a thread keeps its priority (setpriority failed)");
    }
}

#[cfg(test)]
mod tests;
