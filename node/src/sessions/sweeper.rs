//! The sweeper: looks up the expiry of tokens with sockets, closes the sockets
//! of expired sessions, and deletes expired sessions from the store.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use super::SessionSockets;
use crate::store::{Store, StoreError};

/// How often expiries are checked: a socket closes at most this long after its
/// session expired.
const SWEEP: Duration = Duration::from_millis(250);
/// How often expired sessions are deleted from the store.
const CLEANUP: Duration = Duration::from_secs(600);
/// Expiry lookups a sweep makes at most (the rest wait for the next sweep).
const LOOKUPS_PER_SWEEP: usize = 1000;

/// Closes sockets whose session expired (4001, within [`SWEEP`] of the expiry) and
/// deletes expired sessions from the store every [`CLEANUP`], until the node stops.
pub async fn run(
    sockets: Arc<SessionSockets>,
    store: Arc<dyn Store>,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) {
    let mut sweep = tokio::time::interval(SWEEP);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut cleanup = tokio::time::interval(CLEANUP);
    cleanup.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = sweep.tick() => sweep_once(&sockets, store.as_ref()).await,
            _ = cleanup.tick() => match store.delete_expired_sessions().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(sessions = n, "deleted expired sessions"),
                Err(e) => tracing::warn!(error = %e, "could not delete expired sessions"),
            },
            _ = stopping.changed() => return,
        }
    }
}

async fn sweep_once(sockets: &SessionSockets, store: &dyn Store) {
    let unknown = sockets.unknown(LOOKUPS_PER_SWEEP);
    let looked_up: Vec<([u8; 32], Result<i64, StoreError>)> = futures_util::stream::iter(unknown)
        .map(|d| async move { (d, store.session_expiry(d).await) })
        .buffer_unordered(16)
        .collect()
        .await;
    for (digest, found) in looked_up {
        match found {
            Ok(at) => sockets.expires_at(digest, at),
            // Gone or expired already: its sockets close on this sweep.
            Err(StoreError::NotFound) => sockets.expires_at(digest, i64::MIN),
            // The store is away: look again next time.
            Err(_) => {}
        }
    }
    let closed = sockets.close_expired(crate::clock::unix_ms());
    if closed > 0 {
        tracing::debug!(sockets = closed, "closed sockets of expired sessions");
    }
}
