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
    /// When the bucket last told us anything (a write, a lapse marker), or we wrote to it.
    heard: Mutex<Instant>,
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
            heard: Mutex::new(Instant::now()),
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<NodeId, Seen>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn heard_now(&self) {
        *self.heard.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Records a membership write (ours or one the watch delivered).
    pub fn seen(&self, record: &MemberRecord) {
        self.heard_now();
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
    ///
    /// Only while the bucket is heard from: live members write every heartbeat and lapsed
    /// ones leave a marker, so a bucket silent for `limit` means this instance is cut off
    /// from it (a partition, a server gone), not that every member died. Its last view is
    /// then kept: a router goes on sending to the members it knew, whose leases and the
    /// store's epoch still decide who writes, instead of emptying its ring.
    pub fn expire(&self, limit: Duration) -> bool {
        let now = Instant::now();
        let heard = *self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        if now.duration_since(heard) >= limit {
            return false;
        }
        let mut live = self.live();
        let before = live.len();
        live.retain(|_, s| now.duration_since(s.at) < limit);
        live.len() != before
    }

    pub fn apply(&self, entry: &Entry) -> bool {
        self.heard_now();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> MemberRecord {
        MemberRecord::new(
            &Member {
                id: NodeId::parse(id).unwrap(),
                address: format!("127.0.0.1:1{}", id.len()),
                draining: false,
            },
            "inc-1".into(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_member_not_heard_from_expires_while_others_write() {
        let view = View::new();
        view.seen(&record("a"));
        view.seen(&record("bb"));
        for _ in 0..5 {
            tokio::time::advance(Duration::from_secs(1)).await;
            view.seen(&record("bb"));
        }
        assert!(view.expire(Duration::from_millis(4500)));
        let ids: Vec<String> = view.members().iter().map(|m| m.id.to_string()).collect();
        assert_eq!(ids, ["bb"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_bucket_keeps_the_last_view() {
        let view = View::new();
        view.seen(&record("a"));
        view.seen(&record("bb"));
        // Nothing heard for longer than the limit: cut off, not everyone dead.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(!view.expire(Duration::from_millis(4500)));
        assert_eq!(view.members().len(), 2);
        // Heard from again: the one that stopped writing goes.
        view.seen(&record("bb"));
        assert!(view.expire(Duration::from_millis(4500)));
        assert_eq!(view.members().len(), 1);
    }
}
