//! Sockets opened with app tokens, each until its token's `exp`: a notice
//! `ATRIUM_APP_TOKEN_NOTICE_MS` before it (so the client refreshes quietly), 4001 at it;
//! and the revocations of `sub`s and token ids, which close their sockets at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use atrium_protocol::CloseCode;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::claims::AppClaims;
use crate::ids::digest;
use crate::outbox::{ConnId, Outbox};

/// Revoked `sub`s (tokens issued at or before the revocation) and token ids, each
/// remembered for `ttl` (longer than any token should live).
#[derive(Clone)]
pub struct Revocations {
    inner: Arc<Mutex<RevocationSets>>,
    ttl_ms: i64,
}

/// The most revocations a node takes from its own route (past it: 503 until some are
/// forgotten); each holds about 100 bytes here (20 MB in all), whatever the length of its `sub` or `jti`.
/// Those other nodes announce are always taken: each was bounded where it was made.
pub const MAX_REVOCATIONS: usize = 200_000;

/// A `sub` or a `jti`, by its digest: the sets cost the same for 256-byte claims as for short
/// ones (the fifteenth review: a kilobyte a revocation, kept a day).
type Claim = [u8; 32];

#[derive(Default)]
struct RevocationSets {
    /// `sub` to (revoked at, Unix s; forgotten at, Unix ms).
    subs: HashMap<Claim, (i64, i64)>,
    /// `jti` to when it is forgotten (Unix ms).
    jtis: HashMap<Claim, i64>,
    /// The sets are swept of forgotten entries once they hold this many (not on every add,
    /// which made adding a million of them quadratic).
    sweep_at: usize,
}

impl RevocationSets {
    fn len(&self) -> usize {
        self.subs.len() + self.jtis.len()
    }

    fn sweep_if_due(&mut self, now: i64) {
        if self.len() >= self.sweep_at {
            self.sweep(now);
        }
    }

    fn sweep(&mut self, now: i64) {
        self.subs.retain(|_, (_, u)| *u > now);
        self.jtis.retain(|_, u| *u > now);
        self.sweep_at = (2 * self.len()).max(1024);
    }
}

/// One revocation, as it travels between nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revocation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// When it was made (Unix s): tokens of the `sub` issued after it still work.
    pub at: i64,
}

impl Revocations {
    pub fn new(ttl: Duration) -> Self {
        Self {
            inner: Arc::default(),
            ttl_ms: ttl.as_millis() as i64,
        }
    }

    pub fn add(&self, r: &Revocation) {
        self.add_until(r, crate::clock::unix_ms() + self.ttl_ms);
    }

    /// Whether this node may take another revocation of its own ([`MAX_REVOCATIONS`]).
    pub fn has_room(&self) -> bool {
        let now = crate::clock::unix_ms();
        let mut sets = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if sets.len() >= MAX_REVOCATIONS {
            sets.sweep(now);
        }
        sets.len() < MAX_REVOCATIONS
    }

    /// Remembers `r` until `until` (Unix ms): as the store has it.
    pub fn add_until(&self, r: &Revocation, until: i64) {
        let now = crate::clock::unix_ms();
        let mut sets = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        sets.sweep_if_due(now);
        if let Some(sub) = &r.sub {
            let e = sets.subs.entry(digest(sub)).or_insert((r.at, until));
            *e = (e.0.max(r.at), until);
        }
        if let Some(jti) = &r.jti {
            sets.jtis.insert(digest(jti), until);
        }
    }

    /// Whether a token with these claims was revoked: its `jti`, or its `sub` with the
    /// token issued at or before the revocation (or with no `iat`).
    pub fn revoked(&self, claims: &AppClaims) -> bool {
        let now = crate::clock::unix_ms();
        let sets = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(jti) = &claims.jti {
            if sets.jtis.get(&digest(jti)).is_some_and(|u| *u > now) {
                return true;
            }
        }
        match sets.subs.get(&digest(&claims.sub)) {
            Some((at, until)) if *until > now => claims.iat.is_none_or(|iat| iat <= *at),
            _ => false,
        }
    }
}

struct Live {
    sub: String,
    jti: Option<String>,
    iat: Option<i64>,
    /// Unix ms.
    expires_at: i64,
    noticed: bool,
    outbox: Outbox,
}

/// Live sockets of app tokens, by connection.
#[derive(Default)]
pub struct AppSockets {
    live: Mutex<HashMap<ConnId, Live>>,
}

impl AppSockets {
    /// Follows a socket from its hello (or its refresh) on.
    pub fn track(&self, outbox: &Outbox, claims: &AppClaims) {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.insert(
            outbox.id,
            Live {
                sub: claims.sub.clone(),
                jti: claims.jti.clone(),
                iat: claims.iat,
                expires_at: claims.exp.saturating_mul(1000),
                noticed: false,
                outbox: outbox.clone(),
            },
        );
    }

    pub fn remove(&self, conn: ConnId) {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&conn);
    }

    /// Closes, with 4001, the sockets a revocation covers; returns how many.
    pub fn revoke(&self, r: &Revocation) -> usize {
        let gone: Vec<Live> = {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            let conns: Vec<ConnId> = live
                .iter()
                .filter(|(_, l)| {
                    r.jti.is_some() && l.jti == r.jti
                        || r.sub.as_ref() == Some(&l.sub) && l.iat.is_none_or(|iat| iat <= r.at)
                })
                .map(|(c, _)| *c)
                .collect();
            conns.iter().filter_map(|c| live.remove(c)).collect()
        };
        for l in &gone {
            l.outbox.close(CloseCode::Unauthorized, "token revoked");
        }
        gone.len()
    }

    /// Sends the expiry notice to sockets within `notice_ms` of their token's `exp`,
    /// and closes those past it with 4001. Returns how many it closed.
    pub fn sweep(&self, now_ms: i64, notice_ms: i64) -> usize {
        let mut expired = Vec::new();
        {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            live.retain(|_, l| {
                if l.expires_at <= now_ms {
                    expired.push(l.outbox.clone());
                    return false;
                }
                if !l.noticed && l.expires_at - notice_ms <= now_ms {
                    l.noticed = true;
                    l.outbox.send_text(expiring(l.expires_at));
                }
                true
            });
        }
        for outbox in &expired {
            outbox.close(CloseCode::Unauthorized, "token expired");
        }
        expired.len()
    }
}

/// The notice before a token's expiry.
fn expiring(expires_at_ms: i64) -> String {
    json!({
        "type": "notice",
        "code": 4001,
        "reason": "token-expiring",
        "exp": expires_at_ms / 1000,
        "message": "the token expires soon; send a refresh with a new one",
    })
    .to_string()
}

/// How often expiries are looked at: a socket closes at most this long after `exp`.
const SWEEP_EVERY: Duration = Duration::from_millis(100);

/// Closes sockets at their token's expiry until the node stops.
pub async fn run(
    sockets: Arc<AppSockets>,
    notice: Duration,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                sockets.sweep(crate::clock::unix_ms(), notice.as_millis() as i64);
            }
            _ = stopping.changed() => return,
        }
    }
}
