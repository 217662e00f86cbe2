//! The watchdog's clock: how long the client has been silent while the node listened.
//!
//! Silence counts only while the reader waits on the socket. When the node itself stops
//! reading (the client is over a byte rate, a large frame waits for the memory budget,
//! handled messages wait for their room), what the client sends meanwhile, its pongs
//! included, waits unread in the buffers: that is not the client going quiet. The first
//! hostile runs closed a hundred patient editors 1001 "no answer to pings" because their
//! address's byte rate had kept the node from reading them for 45 s.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// When the client was last heard from, or when the node last began to listen to it.
pub struct Liveness {
    started: Instant,
    /// Milliseconds after `started`.
    heard: AtomicU64,
    /// Whether the reader is waiting on the socket now.
    listening: AtomicBool,
}

impl Default for Liveness {
    fn default() -> Self {
        Self::new()
    }
}

impl Liveness {
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
            heard: AtomicU64::new(0),
            listening: AtomicBool::new(false),
        }
    }

    /// Bytes came from the client.
    pub fn heard_now(&self) {
        let ms = self.started.elapsed().as_millis() as u64;
        self.heard.store(ms, Ordering::Relaxed);
    }

    /// The reader waits on the socket until the returned guard is dropped; the client's
    /// silence is counted from now.
    pub(super) fn listen(&self) -> Listening<'_> {
        self.heard_now();
        self.listening.store(true, Ordering::Relaxed);
        Listening(self)
    }

    fn last_heard(&self) -> Instant {
        self.started + Duration::from_millis(self.heard.load(Ordering::Relaxed))
    }

    /// Completes once the node has listened for `limit` and heard nothing.
    pub async fn silence(&self, limit: Duration) {
        loop {
            let deadline = self.last_heard() + limit;
            if Instant::now() < deadline {
                tokio::time::sleep_until(deadline).await;
            } else if self.listening.load(Ordering::Relaxed) {
                return;
            } else {
                // Not reading now: the clock starts again when the reader listens.
                tokio::time::sleep(limit).await;
            }
        }
    }
}

/// The reader is waiting on the socket (cancel-safe: dropping it ends the wait).
pub(super) struct Listening<'a>(&'a Liveness);

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        self.0.listening.store(false, Ordering::Relaxed);
        self.0.heard_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn silence_counts_only_while_listening() {
        let liveness = Liveness::new();
        let limit = Duration::from_secs(45);
        // Not listening for far longer than the limit: no silence.
        let quiet = tokio::time::timeout(limit * 3, liveness.silence(limit)).await;
        assert!(quiet.is_err(), "silence while the node was not reading");
        // Listening from now: silence after the limit, not before.
        let listening = liveness.listen();
        let started = Instant::now();
        liveness.silence(limit).await;
        assert!(started.elapsed() >= limit);
        assert!(started.elapsed() < limit * 2, "{:?}", started.elapsed());
        drop(listening);
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_heard_put_silence_off() {
        let liveness = Liveness::new();
        let limit = Duration::from_secs(45);
        let _listening = liveness.listen();
        let started = Instant::now();
        let heard = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            liveness.heard_now();
            std::future::pending::<()>().await;
        };
        tokio::select! {
            _ = liveness.silence(limit) => {}
            _ = heard => unreachable!(),
        }
        assert!(started.elapsed() >= Duration::from_secs(75));
    }
}
