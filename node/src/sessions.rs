//! Live sockets by session token, so a sign-out closes them at once (4001), and
//! so does the session's expiry: [`run`] looks up the expiry of each token with
//! sockets (once), closes them with 4001 when it passes, and deletes expired
//! sessions from the store now and then.

use atrium_protocol::CloseCode;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;

use crate::outbox::{ConnId, Outbox};
use crate::store::{Store, StoreError};

/// How often expiries are checked: a socket closes at most this long after its
/// session expired.
const SWEEP: Duration = Duration::from_millis(250);
/// How often expired sessions are deleted from the store.
const CLEANUP: Duration = Duration::from_secs(600);
/// Expiry lookups a sweep makes at most (the rest wait for the next sweep).
const LOOKUPS_PER_SWEEP: usize = 1000;

#[derive(Default)]
pub struct SessionSockets {
    by_token: Mutex<HashMap<[u8; 32], Token>>,
}

/// A token's sockets, and when its session expires (Unix ms; `None`: not yet
/// looked up).
#[derive(Default)]
struct Token {
    conns: HashMap<ConnId, Outbox>,
    expires_at: Option<i64>,
}

impl SessionSockets {
    pub fn add(&self, token: [u8; 32], outbox: Outbox) {
        let mut map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(token)
            .or_default()
            .conns
            .insert(outbox.id, outbox);
    }

    /// Records when the token's session expires (when the caller already knows,
    /// saving the sweeper a lookup).
    pub fn expires_at(&self, token: [u8; 32], at_ms: i64) {
        let mut map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = map.get_mut(&token) {
            t.expires_at = Some(at_ms);
        }
    }

    pub fn remove(&self, token: [u8; 32], conn: ConnId) {
        let mut map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = map.get_mut(&token) {
            t.conns.remove(&conn);
            if t.conns.is_empty() {
                map.remove(&token);
            }
        }
    }

    /// Tokens whose expiry is not known yet.
    fn unknown(&self, at_most: usize) -> Vec<[u8; 32]> {
        let map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .filter(|(_, t)| t.expires_at.is_none())
            .map(|(d, _)| *d)
            .take(at_most)
            .collect()
    }

    /// Closes the sockets of every token whose session expired by `now_ms`.
    fn close_expired(&self, now_ms: i64) -> usize {
        let expired: Vec<Token> = {
            let mut map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
            let gone: Vec<[u8; 32]> = map
                .iter()
                .filter(|(_, t)| t.expires_at.is_some_and(|at| at <= now_ms))
                .map(|(d, _)| *d)
                .collect();
            gone.iter().filter_map(|d| map.remove(d)).collect()
        };
        let mut closed = 0;
        for outbox in expired.into_iter().flat_map(|t| t.conns.into_values()) {
            outbox.close(CloseCode::Unauthorized, "session expired");
            closed += 1;
        }
        closed
    }

    /// Closes every socket opened with the token.
    pub fn sign_out(&self, token: [u8; 32]) {
        let conns = self
            .by_token
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&token);
        for outbox in conns.into_iter().flat_map(|t| t.conns.into_values()) {
            outbox.close(CloseCode::Unauthorized, "signed out");
        }
    }
}

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
