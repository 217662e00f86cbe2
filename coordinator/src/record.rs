//! Membership and lease records as the networked backends store them (JSON).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::types::MAX_ADDRESS_LEN;
use crate::{CoordinatorError, Member, NodeId};

/// A membership record. `inc` (incarnation) is new each time the node joins after its
/// record lapsed or was removed: counter slots are kept under `(node, inc)`, so slots of an
/// earlier incarnation stop counting even when the node comes back with the same id.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MemberRecord {
    pub id: String,
    pub address: String,
    pub draining: bool,
    pub inc: String,
}

impl MemberRecord {
    pub fn new(member: &Member, inc: String) -> Self {
        Self {
            id: member.id.as_str().to_owned(),
            address: member.address.clone(),
            draining: member.draining,
            inc,
        }
    }

    pub fn parse(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a record always serializes")
    }

    pub fn member(&self) -> Option<Member> {
        Some(Member {
            id: NodeId::parse(&self.id).ok()?,
            address: self.address.clone(),
            draining: self.draining,
        })
    }
}

/// A lease as NATS stores it: held while `node` is live with incarnation `inc`. Records
/// written before leases hung on membership have no `inc` and so are never held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LeaseRecord {
    pub node: String,
    pub epoch: u64,
    #[serde(default)]
    pub inc: String,
}

impl LeaseRecord {
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a lease always serializes")
    }
}

/// A fresh incarnation: the wall clock in nanoseconds plus a per-process sequence, unique
/// enough for one node id joining again.
pub(crate) fn new_incarnation() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}", SEQ.fetch_add(1, Ordering::Relaxed))
}

pub(crate) fn check_member(member: &Member) -> Result<(), CoordinatorError> {
    if member.address.is_empty() || member.address.len() > MAX_ADDRESS_LEN {
        return Err(CoordinatorError::Invalid(format!(
            "address must be 1 to {MAX_ADDRESS_LEN} bytes"
        )));
    }
    Ok(())
}

pub(crate) fn unavailable(what: &str, err: impl std::fmt::Display) -> CoordinatorError {
    CoordinatorError::Unavailable(format!("{what}: {err}"))
}
