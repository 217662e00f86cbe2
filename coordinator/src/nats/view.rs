//! The live members as this instance has seen them in the members bucket: what `members()`
//! and the counters' liveness checks read, fed by the watch in `follow.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::kv::{Entry, Operation};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::events::Hub;
use crate::keys::decode;
use crate::record::MemberRecord;
use crate::{CoordinatorError, Member, NodeId};

/// The live members as this instance has seen them in the members bucket.
pub(super) struct View {
    live: Mutex<HashMap<NodeId, Seen>>,
    synced: watch::Sender<bool>,
}

struct Seen {
    member: Member,
    inc: String,
    at: Instant,
}

impl View {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            live: Mutex::default(),
            synced: watch::Sender::new(false),
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<NodeId, Seen>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a membership write (ours or one the watch delivered).
    pub fn seen(&self, record: &MemberRecord) {
        if let Some(member) = record.member() {
            let seen = Seen {
                member,
                inc: record.inc.clone(),
                at: Instant::now(),
            };
            self.live().insert(seen.member.id.clone(), seen);
        }
    }

    /// Drops a member; `true` if it was there.
    pub fn forget(&self, node: &NodeId) -> bool {
        self.live().remove(node).is_some()
    }

    pub fn members(&self) -> Vec<Member> {
        self.live().values().map(|s| s.member.clone()).collect()
    }

    pub fn incarnation(&self, node: &NodeId) -> Option<String> {
        self.live().get(node).map(|s| s.inc.clone())
    }

    /// Whether `node` (as stored in a counter) is live with incarnation `inc`.
    pub fn is_live(&self, node: &str, inc: &str) -> bool {
        NodeId::parse(node)
            .ok()
            .and_then(|n| self.live().get(&n).map(|s| s.inc == inc))
            .unwrap_or(false)
    }

    pub fn announce(&self, hub: &Hub, refresh: Option<Duration>) {
        if *self.synced.borrow() {
            hub.members_from(|| self.members(), refresh);
        }
    }

    pub fn mark_synced(&self) {
        self.synced
            .send_if_modified(|s| !std::mem::replace(s, true));
    }

    /// Waits until the first listing of the bucket has arrived.
    pub async fn wait_synced(&self, at_most: Duration) -> Result<(), CoordinatorError> {
        let mut rx = self.synced.subscribe();
        let synced = tokio::time::timeout(at_most, rx.wait_for(|s| *s))
            .await
            .is_ok_and(|r| r.is_ok());
        match synced {
            true => Ok(()),
            false => Err(CoordinatorError::Unavailable(
                "membership not listed yet".into(),
            )),
        }
    }

    /// Drops members with no write seen for `limit` (a marker missed); `true` if any went.
    pub fn expire(&self, limit: Duration) -> bool {
        let now = Instant::now();
        let mut live = self.live();
        let before = live.len();
        live.retain(|_, s| now.duration_since(s.at) < limit);
        live.len() != before
    }

    pub fn apply(&self, entry: &Entry) -> bool {
        let Some(node) = decode(&entry.key).and_then(|k| NodeId::parse(&k).ok()) else {
            return false;
        };
        match entry.operation {
            Operation::Put => match MemberRecord::parse(&entry.value) {
                Some(record) => {
                    self.seen(&record);
                    true
                }
                None => false,
            },
            Operation::Delete | Operation::Purge => self.forget(&node),
        }
    }
}
