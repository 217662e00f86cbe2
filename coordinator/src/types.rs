//! The values that cross the [`Coordinator`](crate::Coordinator) interface.

use std::fmt;
use std::time::Instant;

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
}
