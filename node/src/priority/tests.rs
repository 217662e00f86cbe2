use super::*;

/// The kernel's (major, minor) version.
fn kernel() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let mut parts = release.trim().split(['.', '-']);
    let mut next = || parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (next(), next())
}

/// The calling thread's policy, nice value and slice, as the kernel reports them.
#[allow(unsafe_code)]
fn attributes() -> (u32, i32, u64) {
    // SAFETY: an all-zero `sched_attr` is a valid value of this plain C struct.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as u32;
    // SAFETY: sched_getattr writes at most `size` bytes into the `sched_attr` we own.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut libc::sched_attr,
            size,
            0,
        )
    };
    assert_eq!(rc, 0, "sched_getattr: {}", std::io::Error::last_os_error());
    (attr.sched_policy, attr.sched_nice, attr.sched_runtime)
}

#[test]
fn a_relay_thread_asks_for_a_short_slice_at_its_own_priority() {
    std::thread::spawn(|| {
        let (policy, nice, _) = attributes();
        relay_thread();
        let (after, nice_after, slice) = attributes();
        assert_eq!(after, policy, "the policy is kept");
        assert_eq!(nice_after, nice, "the nice value is kept");
        // Older kernels take the call and ignore the slice.
        if kernel() >= (6, 12) {
            assert_eq!(slice, SHORT_SLICE_NANOS, "kernel {:?}", kernel());
        }
    })
    .join()
    .unwrap();
}
