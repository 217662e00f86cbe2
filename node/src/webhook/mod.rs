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
//! - [`handle`]: what rooms and routes share (the way into the recorder);
//! - `recorder`: room events into the outbox, off the room's task;
//! - `sender`: delivery by the file's owner, in order per (endpoint, file), with retries.

pub mod client;
pub mod event;
pub mod handle;
mod pool;
mod recorder;
mod sender;
pub mod sign;
mod statics;
pub mod target;

use std::sync::Arc;

use crate::state::AppState;

pub use handle::{Webhooks, RECORD_BACKLOG};
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

/// Starts the recorder and the sender; they stop with the node.
pub fn spawn(state: Arc<AppState>) {
    if let Some(rx) = state.webhooks.take_receiver() {
        tokio::spawn(recorder::run(state.clone(), rx));
    }
    tokio::spawn(sender::run(state));
}
