//! An orderly stop: no new work, rooms closed (their sockets get 1012), the fleet
//! left, and the journal's last writes made.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::journal::Journal;
use crate::state::AppState;

/// What an orderly stop ends, in order.
pub(super) struct Stopping {
    pub(super) state: Arc<AppState>,
    pub(super) stop_tx: watch::Sender<bool>,
    pub(super) accept: JoinHandle<()>,
    pub(super) heartbeats: JoinHandle<()>,
    pub(super) journal: Journal,
    pub(super) journal_task: JoinHandle<()>,
}

pub(super) async fn stop(stopping: Stopping) {
    let Stopping {
        state,
        stop_tx,
        accept,
        heartbeats,
        journal,
        journal_task,
    } = stopping;
    tracing::info!("shutting down: no new work, finishing what was accepted");
    state.accepting.store(false, Ordering::Release);
    let _ = stop_tx.send(true);
    let _ = accept.await;
    let _ = heartbeats.await;
    let drained = tokio::time::timeout(state.config.shutdown_timeout(), async {
        state.rooms.shutdown().await;
        // Sockets get their 1012 from their rooms; wait for them to go.
        while state.metrics.connections.get() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!("shutdown deadline passed with work left; exiting anyway");
    }
    // The rooms' last webhook events (`room.closed`) reach the store before the stop.
    if !state
        .webhooks
        .flush(std::time::Duration::from_secs(2))
        .await
    {
        tracing::warn!("webhook events of the last rooms not all recorded before the stop");
    }
    let _ = state.coordinator.leave(&state.node).await;
    // Every room is gone; the journal writes what they handed it, then ends.
    journal.finish();
    drop(state);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), journal_task).await;
    tracing::info!("stopped");
}
