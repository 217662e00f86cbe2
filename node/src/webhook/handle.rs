//! What rooms and routes share with the webhook tasks: the bounded way into the recorder,
//! whether any endpoint is enabled, and the sender's wake-up.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Notify};

use crate::metrics::Metrics;
use crate::store::WebhookEvent;

/// Room events waiting to be recorded, at most; beyond it they are dropped and counted.
pub const RECORD_BACKLOG: usize = 10_000;

/// What rooms and routes share: the way into the recorder, and the sender's wake-up.
pub struct Webhooks {
    tx: mpsc::Sender<WebhookEvent>,
    rx: std::sync::Mutex<Option<mpsc::Receiver<WebhookEvent>>>,
    /// Whether any endpoint is enabled (refreshed from the store): without one, rooms'
    /// events are not even queued.
    active: AtomicBool,
    pub(super) wake: Notify,
    /// Events queued and not yet written (for an orderly stop).
    unwritten: AtomicUsize,
    metrics: Arc<Metrics>,
}

impl Webhooks {
    pub fn new(metrics: Arc<Metrics>) -> Arc<Self> {
        let (tx, rx) = mpsc::channel(RECORD_BACKLOG);
        Arc::new(Self {
            tx,
            rx: std::sync::Mutex::new(Some(rx)),
            active: AtomicBool::new(false),
            wake: Notify::new(),
            unwritten: AtomicUsize::new(0),
            metrics,
        })
    }

    /// Queues a room's event for the recorder; never waits (a full backlog drops it).
    pub fn emit(&self, event: WebhookEvent) {
        if !self.active.load(Ordering::Acquire) {
            return;
        }
        self.unwritten.fetch_add(1, Ordering::AcqRel);
        if self.tx.try_send(event).is_err() {
            self.unwritten.fetch_sub(1, Ordering::AcqRel);
            self.metrics.webhooks.dropped.inc();
        }
    }

    /// The recorder wrote `n` events.
    pub(super) fn written(&self, n: usize) {
        self.unwritten.fetch_sub(n, Ordering::AcqRel);
    }

    /// Waits, at most `within`, until every queued event is written (an orderly stop:
    /// the rooms' last events, `room.closed` among them, reach the store).
    pub async fn flush(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while self.unwritten.load(Ordering::Acquire) > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    /// Whether any endpoint is enabled, as last seen.
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Sets whether any endpoint is enabled.
    pub fn set_active(&self, active: bool) {
        self.active.store(active, Ordering::Release);
    }

    /// Has the sender look for due messages now.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// The recorder's end of the queue, once (the recorder task takes it).
    pub(super) fn take_receiver(&self) -> Option<mpsc::Receiver<WebhookEvent>> {
        self.rx.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FileId;
    use crate::webhook::event;

    fn an_event() -> WebhookEvent {
        event::event(
            &FileId::parse("f").unwrap(),
            "room.opened",
            0,
            serde_json::json!({}),
        )
    }

    #[test]
    fn rooms_queue_nothing_without_an_endpoint_and_never_more_than_the_backlog() {
        let metrics = Metrics::new();
        let hooks = Webhooks::new(metrics.clone());
        hooks.emit(an_event());
        assert_eq!(
            hooks.tx.capacity(),
            RECORD_BACKLOG,
            "nothing queued while inactive"
        );
        hooks.set_active(true);
        for _ in 0..RECORD_BACKLOG + 5 {
            hooks.emit(an_event());
        }
        assert_eq!(hooks.tx.capacity(), 0);
        assert_eq!(metrics.webhooks.dropped.get(), 5, "the overflow is counted");
    }
}
