//! Webhooks (docs/webhooks.md): events of rooms and files, sent to the app's endpoints
//! as the Standard Webhooks specification describes, at least once, through a durable
//! outbox in the store.
//!
//! ```text
//! journal commit ── file.updated (same transaction) ──┐
//! room ── Effect::Webhook ──▶ recorder (batches) ─────┴──▶ store: webhook_outbox
//!                                                              │ due, oldest per (endpoint, file)
//!        endpoint ◀── POST, signed ── sender (owner of the file) ◀┘
//! ```
//!
//! - [`event`]: the JSON bodies; [`sign`]: secrets and signatures;
//! - [`target`]: endpoint URLs and which addresses may be called; [`client`]: one request;
//! - `recorder`: room events into the outbox, off the room's task;
//! - `sender`: delivery by the file's owner, in order per (endpoint, file), with retries.

pub mod client;
pub mod event;
mod recorder;
mod sender;
pub mod sign;
mod statics;
pub mod target;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, Notify};

use crate::metrics::Metrics;
use crate::state::AppState;
use crate::store::WebhookEvent;

pub use statics::static_endpoint;

/// The coordinator topic that tells every node of a fleet an endpoint was made or
/// changed, so its rooms start recording events for it at once (else within 2 s).
pub const CHANGED: &str = "webhooks-changed";

/// Tells every node (this one too) that endpoints changed.
pub async fn announce_change(state: &AppState) {
    if let Err(e) = state.coordinator.publish(CHANGED, Vec::new()).await {
        tracing::debug!(error = %e, "webhook change not announced; nodes see it within 2 s");
    }
}

/// Room events waiting to be recorded, at most; beyond it they are dropped and counted.
pub const RECORD_BACKLOG: usize = 10_000;

/// What rooms and routes share: the way into the recorder, and the sender's wake-up.
pub struct Webhooks {
    tx: mpsc::Sender<WebhookEvent>,
    rx: std::sync::Mutex<Option<mpsc::Receiver<WebhookEvent>>>,
    /// Whether any endpoint is enabled (refreshed from the store): without one, rooms'
    /// events are not even queued.
    active: AtomicBool,
    wake: Notify,
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
    fn written(&self, n: usize) {
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
}

/// Starts the recorder and the sender; they stop with the node.
pub fn spawn(state: Arc<AppState>) {
    let rx = state
        .webhooks
        .rx
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some(rx) = rx {
        tokio::spawn(recorder::run(state.clone(), rx));
    }
    tokio::spawn(sender::run(state));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FileId;

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
