//! The watchdog's clock: when the client was last heard from.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// When the client was last heard from (any frame at all, pongs included).
pub(super) struct Liveness {
    started: Instant,
    /// Milliseconds after `started`.
    heard: AtomicU64,
}

impl Liveness {
    pub(super) fn new() -> Self {
        Self {
            started: Instant::now(),
            heard: AtomicU64::new(0),
        }
    }

    pub(super) fn heard_now(&self) {
        let ms = self.started.elapsed().as_millis() as u64;
        self.heard.store(ms, Ordering::Relaxed);
    }

    fn last_heard(&self) -> Instant {
        self.started + Duration::from_millis(self.heard.load(Ordering::Relaxed))
    }
}

/// Completes once nothing was heard from the client for `limit`.
pub(super) async fn silence(liveness: &Liveness, limit: Duration) {
    loop {
        let deadline = liveness.last_heard() + limit;
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline).await;
    }
}
