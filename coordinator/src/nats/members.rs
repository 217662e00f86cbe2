//! Membership: joining, heartbeats (one compare-and-set on the revision we last wrote),
//! leaving, and the incarnation a node is live with.

use async_nats::jetstream::kv::UpdateErrorKind;

use super::{lock, stored, Inner, MARKER_TTL};
use crate::keys::encode;
use crate::record::{check_member, new_incarnation, unavailable, MemberRecord};
use crate::{CoordinatorError, Member, NodeId, Result};

/// The member key of a node.
fn member_key(node: &NodeId) -> String {
    encode(node.as_str())
}

impl Inner {
    pub(super) async fn join(&self, member: Member) -> Result<()> {
        check_member(&member)?;
        let key = member_key(&member.id);
        let old = stored(&self.members, &key, "nats join").await?;
        // Joining again while live keeps the incarnation (and so the node's slots and leases).
        let inc = match old.and_then(|e| MemberRecord::parse(&e.value)) {
            Some(live) => live.inc,
            None => {
                self.rejoins.send_modify(|n| *n += 1);
                new_incarnation()
            }
        };
        let record = MemberRecord::new(&member, inc);
        let rev = self
            .members
            .put(key.as_str(), record.to_json().into())
            .await
            .map_err(|e| unavailable("nats join", e))?;
        self.view.seen(&record);
        lock(&self.own_members).insert(member.id, (rev, record));
        self.view.announce(&self.hub, None);
        Ok(())
    }

    pub(super) async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<()> {
        let key = member_key(node);
        let known = lock(&self.own_members).get(node).cloned();
        let (rev, mut record) = match known {
            Some(k) => k,
            None => {
                let entry = stored(&self.members, &key, "nats heartbeat").await?;
                let entry = entry.ok_or(CoordinatorError::Lost)?;
                let r = MemberRecord::parse(&entry.value).ok_or(CoordinatorError::Lost)?;
                (entry.revision, r)
            }
        };
        let changed = record.draining != draining;
        record.draining = draining;
        match self
            .members
            .update(key.as_str(), record.to_json().into(), rev)
            .await
        {
            Ok(new_rev) => {
                self.view.seen(&record);
                lock(&self.own_members).insert(node.clone(), (new_rev, record));
                if changed {
                    self.view.announce(&self.hub, None);
                }
                Ok(())
            }
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                // Lapsed (a marker), left, or joined again elsewhere: the fleet moved on.
                lock(&self.own_members).remove(node);
                Err(CoordinatorError::Lost)
            }
            Err(e) => Err(unavailable("nats heartbeat", e)),
        }
    }

    pub(super) async fn evict(&self, node: &NodeId, address: &str) -> Result<bool> {
        let key = member_key(node);
        let Some(entry) = stored(&self.members, &key, "nats evict").await? else {
            return Ok(false);
        };
        let record = MemberRecord::parse(&entry.value);
        if !record.is_some_and(|r| r.address == address && !r.draining) {
            return Ok(false);
        }
        // Only the record as read: a heartbeat since then means it is alive after all.
        // What is left is a marker that expires within a second, as for a released lease.
        let ended = self
            .members
            .purge_expect_revision_with_ttl(key.as_str(), entry.revision, MARKER_TTL)
            .await
            .is_ok();
        if ended && self.view.forget(node) {
            self.view.announce(&self.hub, None);
        }
        Ok(ended)
    }

    pub(super) async fn members(&self) -> Result<Vec<Member>> {
        self.view.wait_synced(self.settings.lease * 2).await?;
        Ok(self.view.members())
    }

    pub(super) async fn leave(&self, node: &NodeId) -> Result<()> {
        self.members
            .delete(member_key(node))
            .await
            .map_err(|e| unavailable("nats leave", e))?;
        lock(&self.own_members).remove(node);
        if self.view.forget(node) {
            self.view.announce(&self.hub, None);
        }
        Ok(())
    }

    /// The incarnation `node` is live with: this instance's view first, else its record in
    /// the members bucket (the view may not have seen a node that joined a moment ago), so a
    /// live holder is never taken for a dead one. `None` when it is not a member.
    pub(super) async fn live_incarnation(&self, node: &str) -> Result<Option<String>> {
        let Ok(id) = NodeId::parse(node) else {
            return Ok(None);
        };
        if let Some(inc) = self.view.incarnation(&id) {
            return Ok(Some(inc));
        }
        self.read_incarnation(&id).await
    }

    /// The incarnation of `node`'s membership record as the server has it now (and into the
    /// view with it).
    pub(super) async fn read_incarnation(&self, id: &NodeId) -> Result<Option<String>> {
        let entry = stored(&self.members, &member_key(id), "nats membership").await?;
        Ok(entry
            .and_then(|e| MemberRecord::parse(&e.value))
            .map(|record| {
                self.view.seen(&record);
                record.inc
            }))
    }
}
