//! The bulk lane: work on a whole large document (building an upload, loading a room,
//! writing a snapshot) takes milliseconds per megabyte. On one of the runtime's few
//! workers it would hold up every socket that shares the worker, so pieces above
//! [`INLINE_BYTES`] run on the lane instead: a few threads of their own (half the
//! cores, at least one), at a lower scheduling priority than the runtime
//! (`priority::bulk_thread`). However many large uploads or loads arrive together,
//! they queue for the lane, and when the machine is busy the kernel serves relaying
//! first.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::oneshot;

/// Work on documents up to this size (in JSON bytes) runs where it is called: handing
/// it to another thread would cost more than doing it.
pub const INLINE_BYTES: usize = 64 * 1024;

/// A piece of work for a thread of [`niced_threads`].
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// How often an idle lane thread looks whether the node asked threads to give back
/// freed memory (`allocator::on_idle`).
const IDLE_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

fn lane() -> &'static mpsc::Sender<Job> {
    static LANE: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    LANE.get_or_init(|| niced_threads("atrium-lane", width()))
}

/// Starts `width` threads named `{name}-N` at the bulk priority (`priority::bulk_thread`),
/// taking jobs in turn from the returned sender until it is dropped. The lane is one such
/// pool; password hashing is another (`auth`).
pub(crate) fn niced_threads(name: &str, width: usize) -> mpsc::Sender<Job> {
    let (tx, rx) = mpsc::channel::<Job>();
    let rx = Arc::new(Mutex::new(rx));
    for n in 0..width.max(1) {
        let rx = rx.clone();
        std::thread::Builder::new()
            .name(format!("{name}-{n}"))
            .spawn(move || {
                crate::priority::bulk_thread();
                loop {
                    let job = rx
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .recv_timeout(IDLE_CHECK);
                    match job {
                        Ok(job) => job(),
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                    // Memory freed here stays this thread's until it collects.
                    crate::allocator::on_idle();
                }
            })
            .expect("bulk threads start");
    }
    tx
}

/// Threads in the lane: half the cores, at least one.
pub fn width() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / 2).max(1)
}

/// Runs `work`, which handles about `bytes` of document, inline when it is small and
/// otherwise on the lane, after the work queued before it. A lane run is counted
/// when asked for; the future borrows nothing, so it may be spawned.
pub fn run<T: Send + 'static>(
    bytes: usize,
    metrics: &crate::metrics::Metrics,
    work: impl FnOnce() -> T + Send + 'static,
) -> impl std::future::Future<Output = T> + Send + 'static {
    let on_lane = bytes > INLINE_BYTES;
    if on_lane {
        metrics.lane_runs.inc();
    }
    async move {
        if !on_lane {
            return work();
        }
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move || {
            // Its caller left while it waited (a client gone mid-request): nobody would
            // read the answer, so it is not worked out.
            if done.is_closed() {
                return;
            }
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            let _ = done.send(out);
        });
        lane().send(job).expect("the lane's threads never stop");
        match result.await.expect("the lane answers every job") {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

#[cfg(test)]
mod tests;
