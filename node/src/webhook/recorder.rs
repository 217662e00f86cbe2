//! Rooms' events into the outbox: batched, one transaction a batch, off every room's
//! task. A store outage holds the batch and retries; the bounded channel in front
//! drops (and counts) what does not fit meanwhile.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::state::AppState;
use crate::store::WebhookEvent;

/// Events written in one transaction, at most.
const BATCH: usize = 256;

pub(super) async fn run(state: Arc<AppState>, mut rx: mpsc::Receiver<WebhookEvent>) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        if rx.recv_many(&mut batch, BATCH).await == 0 {
            return;
        }
        loop {
            match state.store.record_webhooks(&batch).await {
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(error = %e, events = batch.len(), "webhook events not recorded yet; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
        state.webhooks.written(batch.len());
        batch.clear();
        state.webhooks.wake();
    }
}
