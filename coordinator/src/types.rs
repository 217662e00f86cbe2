//! The values that cross the [`Coordinator`](crate::Coordinator) interface, and its settings.

use std::fmt;
use std::time::{Duration, Instant};

/// The longest file id or counter name a backend must store; keys stay small so every
/// backend (KV stores limit key length) can hold them as they are or lightly encoded.
pub const MAX_KEY_LEN: usize = 256;

/// The longest advertised address accepted in a membership record.
pub const MAX_ADDRESS_LEN: usize = 256;

/// A node id, key or setting the coordinator will never accept (a
/// [`CoordinatorError::Invalid`](crate::CoordinatorError::Invalid) to callers).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// A node's identity in the fleet: `[A-Za-z0-9_.-]{1,64}`, checked once at the edge so
/// every backend can use it in keys and subjects without escaping.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(String);

impl NodeId {
    pub fn parse(s: &str) -> Result<Self, Invalid> {
        let ok = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(Invalid(format!(
                "node id {s:?} must match [A-Za-z0-9_.-]{{1,64}}"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One node's membership record, as the router sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: NodeId,
    /// Where the router can reach the node (`ATRIUM_ADVERTISE`).
    pub address: String,
    /// A draining node finishes what it has but should be sent nothing new.
    pub draining: bool,
}

/// The right to serve one file, for `node`, for as long as `node`'s membership lives.
///
/// A lease hangs on its holder's membership (the incarnation that took it): it needs no
/// renewal of its own, and every lease of a node that dies is free the moment its membership
/// lapses. `expires_at` is the earliest the holder's membership could lapse as last seen, and
/// only a hint for the holder: a paused process can overshoot it, which is why the document
/// store's fenced epoch, not this lease, decides whose writes count. The in-memory backend reads its clock from `tokio::time`, so compare
/// against `tokio::time::Instant::now().into_std()` when time may be paused in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub file: String,
    pub node: NodeId,
    /// Grows every time the file changes hands (or the same node takes it afresh).
    pub epoch: u64,
    pub expires_at: Instant,
}

impl Lease {
    /// The lease of `file` for `node` at `epoch`, its holder's membership seen to last until
    /// `expires_at`.
    pub(crate) fn new(file: &str, node: &NodeId, epoch: u64, expires_at: Instant) -> Self {
        Self {
            file: file.to_owned(),
            node: node.clone(),
            epoch,
            expires_at,
        }
    }
}

/// Default lease: long enough that a GC-free Rust node never misses it under load, short
/// enough that a dead node's files are served again within the 5 s target.
pub const DEFAULT_LEASE: Duration = Duration::from_millis(DEFAULT_LEASE_MS);
const DEFAULT_LEASE_MS: u64 = 3_000;
/// Default heartbeat interval: a third of the lease, so two heartbeats in a row can fail
/// before the membership (and every lease hanging on it) lapses.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_millis(DEFAULT_LEASE_MS / 3);

/// How long a networked backend keeps a lease record after its last write. Whether a lease is
/// held is judged by its holder's membership, not by this: the lifetime only clears away the
/// records of holders that died and files nobody opened again, so it is long, and holders
/// rewrite their records every [`DEFAULT_LEASE_REFRESH`].
pub const LEASE_RECORD_LIFETIME: Duration = Duration::from_secs(6 * 3600);
/// Default interval between a holder's rewrites of its lease records ([`LeaseKeeper`]): a
/// sixth of their lifetime, so a few failed rewrites in a row cost nothing.
///
/// [`LeaseKeeper`]: crate::LeaseKeeper
pub const DEFAULT_LEASE_REFRESH: Duration = Duration::from_secs(3600);

// The defaults must satisfy the rule `validate` enforces on configured values.
const _: () = assert!(DEFAULT_LEASE.as_millis() > 2 * DEFAULT_HEARTBEAT.as_millis());

/// Timing shared by every backend and by [`LeaseKeeper`](crate::LeaseKeeper).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoordinatorSettings {
    /// How long a membership record (and so every lease hanging on it) lives without a
    /// heartbeat (`ATRIUM_LEASE_MS`).
    pub lease: Duration,
    /// How often a node heartbeats.
    pub heartbeat: Duration,
    /// How often a holder rewrites each lease record it holds, so the records of live
    /// holders never reach [`LEASE_RECORD_LIFETIME`].
    pub lease_refresh: Duration,
}

impl Default for CoordinatorSettings {
    fn default() -> Self {
        Self::from_lease(DEFAULT_LEASE)
    }
}

impl CoordinatorSettings {
    /// Settings for a given lease, heartbeating at a third of it (as the defaults do).
    pub fn from_lease(lease: Duration) -> Self {
        Self {
            lease,
            heartbeat: lease / 3,
            lease_refresh: DEFAULT_LEASE_REFRESH,
        }
    }

    /// The lease must outlast more than two heartbeat intervals, so one late or failed
    /// renewal never costs a healthy node its files.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.heartbeat.is_zero() {
            return Err(Invalid("heartbeat interval must be above zero".into()));
        }
        if self.lease <= self.heartbeat.saturating_mul(2) {
            return Err(Invalid(format!(
                "lease ({:?}) must be more than twice the heartbeat interval ({:?})",
                self.lease, self.heartbeat
            )));
        }
        if self.lease_refresh.is_zero() || self.lease_refresh > LEASE_RECORD_LIFETIME / 3 {
            return Err(Invalid(format!(
                "lease refresh ({:?}) must be above zero and at most a third of {:?}",
                self.lease_refresh, LEASE_RECORD_LIFETIME
            )));
        }
        Ok(())
    }
}

/// Checks a file id or counter name: non-empty and at most [`MAX_KEY_LEN`] bytes.
pub(crate) fn check_key(what: &str, key: &str) -> Result<(), Invalid> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(Invalid(format!("{what} must be 1 to {MAX_KEY_LEN} bytes")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_follow_the_rule() {
        for ok in ["a", "node-1", "n_2.eu-west", &"x".repeat(64)] {
            assert_eq!(NodeId::parse(ok).unwrap().as_str(), ok);
        }
        for bad in ["", "a b", "n/1", "é", &"x".repeat(65)] {
            assert!(NodeId::parse(bad).is_err());
        }
        assert_eq!(NodeId::parse("n1").unwrap().to_string(), "n1");
    }

    #[test]
    fn heartbeat_consts() {
        let default = CoordinatorSettings::default();
        assert_eq!(default.lease, Duration::from_secs(3));
        assert!(default.lease > default.heartbeat * 2);
        default.validate().unwrap();
        CoordinatorSettings::from_lease(Duration::from_millis(3_000))
            .validate()
            .unwrap();

        let too_short = CoordinatorSettings {
            lease: Duration::from_secs(2),
            heartbeat: Duration::from_secs(1),
            ..default
        };
        assert!(too_short.validate().is_err());
        let zero = CoordinatorSettings {
            lease: Duration::from_secs(2),
            heartbeat: Duration::ZERO,
            ..default
        };
        assert!(zero.validate().is_err());
        for refresh in [Duration::ZERO, LEASE_RECORD_LIFETIME / 2] {
            let bad = CoordinatorSettings {
                lease_refresh: refresh,
                ..default
            };
            assert!(bad.validate().is_err(), "{refresh:?}");
        }
    }
}
