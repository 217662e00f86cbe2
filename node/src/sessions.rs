//! Live sockets by session token, so a sign-out closes them at once (4001), and
//! so does the session's expiry: [`run`] looks up the expiry of each token with
//! sockets (once), closes them with 4001 when it passes, and deletes expired
//! sessions from the store now and then.

mod sweeper;

pub use sweeper::run;

use atrium_protocol::CloseCode;
use std::collections::HashMap;
use std::sync::Mutex;

use crate::outbox::{ConnId, Outbox};

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
    pub(super) fn unknown(&self, at_most: usize) -> Vec<[u8; 32]> {
        let map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .filter(|(_, t)| t.expires_at.is_none())
            .map(|(d, _)| *d)
            .take(at_most)
            .collect()
    }

    /// Closes the sockets of every token whose session expired by `now_ms`.
    pub(super) fn close_expired(&self, now_ms: i64) -> usize {
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
