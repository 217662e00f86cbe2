use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

#[tokio::test(flavor = "current_thread")]
async fn small_work_runs_inline_and_large_work_on_the_lane() {
    let here = std::thread::current().id();
    let small = run(10, &crate::metrics::Metrics::unshared(), move || {
        std::thread::current().id()
    })
    .await;
    assert_eq!(small, here);
    let name = run(
        INLINE_BYTES + 1,
        &crate::metrics::Metrics::unshared(),
        || std::thread::current().name().map(str::to_owned),
    )
    .await;
    assert!(name.is_some_and(|n| n.starts_with("atrium-lane-")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lane_runs_at_most_its_width_at_once() {
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut tasks = Vec::new();
    for _ in 0..(width() * 3 + 2) {
        let (now, most) = (now.clone(), most.clone());
        tasks.push(tokio::spawn(run(
            INLINE_BYTES * 2,
            &crate::metrics::Metrics::unshared(),
            move || {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(20));
                now.fetch_sub(1, Ordering::SeqCst);
            },
        )));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        most >= 1 && most <= width(),
        "{most} at once, width {}",
        width()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_panic_on_the_lane_reaches_the_caller_and_the_lane_goes_on() {
    let caught = tokio::spawn(run(
        INLINE_BYTES + 1,
        &crate::metrics::Metrics::unshared(),
        || panic!("boom"),
    ))
    .await;
    assert!(caught.unwrap_err().is_panic());
    assert_eq!(
        run(INLINE_BYTES + 1, &crate::metrics::Metrics::unshared(), || 7).await,
        7
    );
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "current_thread")]
async fn the_lane_runs_at_a_lower_priority() {
    #[allow(unsafe_code)]
    fn nice() -> i32 {
        // SAFETY: reads this thread's nice value; no pointers.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }
    let here = nice();
    let there = run(INLINE_BYTES + 1, &crate::metrics::Metrics::unshared(), nice).await;
    assert_eq!(there, (here + crate::priority::LANE_NICENESS).min(19));
}

/// Work whose caller left while it waited for the lane (a client gone mid-request) is not
/// worked out: nobody would read its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_whose_caller_left_is_skipped() {
    let metrics = crate::metrics::Metrics::unshared();
    // Every lane thread held until the gate opens, so the next job waits its turn.
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let mut holders = Vec::new();
    for _ in 0..width() {
        let gate = gate.clone();
        holders.push(tokio::spawn(run(INLINE_BYTES + 1, &metrics, move || {
            let (open, opened) = &*gate;
            let mut open = open.lock().unwrap();
            while !*open {
                open = opened.wait(open).unwrap();
            }
        })));
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let worked = Arc::new(AtomicUsize::new(0));
    let counted = worked.clone();
    let left = run(INLINE_BYTES + 1, &metrics, move || {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    // Asked for, then given up on before the lane got to it.
    let gave_up = tokio::time::timeout(std::time::Duration::from_millis(20), left).await;
    assert!(gave_up.is_err(), "the lane was held");
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    for h in holders {
        h.await.unwrap();
    }
    // Work queued after it is done, so it was taken from the queue by then.
    for _ in 0..width() + 1 {
        run(INLINE_BYTES + 1, &metrics, || ()).await;
    }
    assert_eq!(
        worked.load(Ordering::SeqCst),
        0,
        "work nobody waited for ran"
    );
}
