//! Taking a file's lease, and asking who holds one (renewing and releasing are in
//! `keeping.rs`).
//!
//! The leases bucket holds `{node, epoch, inc}` per file, where `inc` is the holder's
//! incarnation: the lease is held while that incarnation's membership lives, so a dead node's
//! leases are all free when its membership lapses, and a live holder writes nothing per file
//! to keep them. `max_age` = [`LEASE_RECORD_LIFETIME`](crate::LEASE_RECORD_LIFETIME) (hours),
//! which only clears records nobody will take again; holders rewrite theirs well within it
//! (`renew`). Releasing purges the record, leaving a marker that expires within a second (a
//! delete marker would stay for the records' whole lifetime, one per file opened). Taking a
//! lease is a write expecting the key's last revision (0, a marker's, or a dead holder's
//! record's); renewing and releasing expect the revision we last wrote, so they only succeed
//! while the lease is still ours (compare-and-set on the revision). A file's epoch is one above
//! the bucket's last revision when the lease is taken (the bucket's revisions are one sequence
//! for all its keys, so a file's epochs only grow, and no key is written by every acquire).

use async_nats::jetstream::kv::{Operation, UpdateErrorKind};

use std::time::Instant;

use super::{lock, stored, Inner, CAS_TRIES};
use crate::keys::encode;
use crate::record::{unavailable, LeaseRecord};
use crate::types::check_key;
use crate::{CoordinatorError, Lease, NodeId, Result};

/// The lease key of a file.
pub(super) fn lease_key(file: &str) -> String {
    encode(file)
}

impl Inner {
    pub(super) fn lease(&self, file: &str, node: &NodeId, epoch: u64) -> Lease {
        Lease::new(file, node, epoch, Instant::now() + self.settings.lease)
    }

    /// Remembers the revision a file's lease of ours stands at (written now, or found
    /// already ours on acquire), so renewing it is one write.
    pub(super) fn remember_lease_rev(&self, file: &str, epoch: u64, inc: String, rev: u64) {
        lock(&self.own_leases).insert(file.to_owned(), (epoch, inc, rev));
    }

    /// An epoch for a file being taken now: one above the last revision the leases bucket
    /// has given to any key. Every earlier lease of the file was written at a revision at
    /// most that, and its epoch was at most its revision, so a file's epochs only grow
    /// (while the bucket lives) without a counter that every acquire must update: two
    /// files opening together never contend; two nodes taking one file may compute the
    /// same epoch, but only one wins the file's compare-and-set.
    async fn next_epoch(&self) -> Result<u64> {
        let info = self
            .leases
            .stream
            .get_info()
            .await
            .map_err(|e| unavailable("nats epoch", e))?;
        Ok(info.state.last_sequence + 1)
    }

    /// Whether a lease record's holder still holds it: live with the incarnation that took it.
    /// Only a yes is taken from the view: a view that is behind (the holder joined again a
    /// moment ago and took the file under its new incarnation) must not make a live holder
    /// look dead, so a no is asked of the server before a file is taken over.
    async fn holds(&self, record: &LeaseRecord) -> Result<bool> {
        let Ok(id) = NodeId::parse(&record.node) else {
            return Ok(false);
        };
        if self.view.incarnation(&id).as_deref() == Some(record.inc.as_str()) {
            return Ok(true);
        }
        Ok(self.read_incarnation(&id).await?.as_deref() == Some(record.inc.as_str()))
    }

    pub(super) async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease> {
        check_key("file id", file)?;
        let mine = self
            .live_incarnation(node.as_str())
            .await?
            .ok_or(CoordinatorError::Lost)?;
        let key = lease_key(file);
        for _ in 0..CAS_TRIES {
            let entry = self
                .leases
                .entry(key.as_str())
                .await
                .map_err(|e| unavailable("nats acquire", e))?;
            let rev = match entry {
                Some(e) if e.operation == Operation::Put => {
                    let held: LeaseRecord = serde_json::from_slice(&e.value)
                        .map_err(|e| unavailable("nats lease record", e))?;
                    if held.node == node.as_str() && held.inc == mine {
                        self.remember_lease_rev(file, held.epoch, mine, e.revision);
                        return Ok(self.lease(file, node, held.epoch));
                    }
                    if self.holds(&held).await? {
                        let holder = NodeId::parse(&held.node)?;
                        return Err(CoordinatorError::Held { holder });
                    }
                    // Its holder is gone (or it is ours from an earlier incarnation).
                    e.revision
                }
                Some(e) => e.revision,
                None => 0,
            };
            let epoch = self.next_epoch().await?;
            let value = LeaseRecord {
                node: node.as_str().to_owned(),
                epoch,
                inc: mine.clone(),
            };
            match self
                .leases
                .update(key.as_str(), value.to_json().into(), rev)
                .await
            {
                Ok(new_rev) => {
                    self.remember_lease_rev(file, epoch, value.inc, new_rev);
                    return Ok(self.lease(file, node, epoch));
                }
                // Someone else wrote first: look again (probably Held now).
                Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => continue,
                Err(e) => return Err(unavailable("nats acquire", e)),
            }
        }
        Err(CoordinatorError::Unavailable("lease contended".into()))
    }

    pub(super) async fn holder(&self, file: &str) -> Result<Option<NodeId>> {
        let entry = stored(&self.leases, &lease_key(file), "nats holder").await?;
        match entry.and_then(|e| LeaseRecord::parse(&e.value)) {
            Some(r) if self.holds(&r).await? => Ok(NodeId::parse(&r.node).ok()),
            _ => Ok(None),
        }
    }
}
