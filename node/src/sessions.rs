//! Live sockets by session token, so a sign-out closes them at once (4001).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::outbox::{ConnId, Outbox};

#[derive(Default)]
pub struct SessionSockets {
    by_token: Mutex<HashMap<[u8; 32], HashMap<ConnId, Outbox>>>,
}

impl SessionSockets {
    pub fn add(&self, token: [u8; 32], outbox: Outbox) {
        let mut map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(token).or_default().insert(outbox.id, outbox);
    }

    pub fn remove(&self, token: [u8; 32], conn: ConnId) {
        let mut map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(conns) = map.get_mut(&token) {
            conns.remove(&conn);
            if conns.is_empty() {
                map.remove(&token);
            }
        }
    }

    /// Closes every socket opened with the token.
    pub fn sign_out(&self, token: [u8; 32]) {
        let conns = self
            .by_token
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&token);
        for outbox in conns.into_iter().flat_map(HashMap::into_values) {
            outbox.close(4001, "signed out");
        }
    }
}
