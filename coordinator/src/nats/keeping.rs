//! Keeping and giving up a lease: both only act while the record is still the one we wrote
//! (a compare-and-set on its revision).

use async_nats::jetstream::kv::UpdateErrorKind;

use super::leases::lease_key;
use super::{lock, stored, Inner, MARKER_TTL};
use crate::record::{unavailable, LeaseRecord};
use crate::{CoordinatorError, Lease, Result};

impl Inner {
    pub(super) async fn renew(&self, lease: &Lease) -> Result<Lease> {
        let key = lease_key(&lease.file);
        // Held only while the holder's membership lives with the incarnation that took it.
        let Some(inc) = self.live_incarnation(lease.node.as_str()).await? else {
            lock(&self.own_leases).remove(&lease.file);
            return Err(CoordinatorError::Lost);
        };
        let value = LeaseRecord {
            node: lease.node.as_str().to_owned(),
            epoch: lease.epoch,
            inc,
        };
        let cached = lock(&self.own_leases)
            .get(&lease.file)
            .filter(|(epoch, inc, _)| *epoch == lease.epoch && *inc == value.inc)
            .map(|(_, _, rev)| *rev);
        let rev = match cached {
            Some(rev) => rev,
            None => {
                let entry = stored(&self.leases, &key, "nats renew").await?;
                let ours = entry.filter(|e| LeaseRecord::parse(&e.value).as_ref() == Some(&value));
                ours.ok_or(CoordinatorError::Lost)?.revision
            }
        };
        match self
            .leases
            .update(key.as_str(), value.to_json().into(), rev)
            .await
        {
            Ok(new_rev) => {
                self.remember_lease_rev(&lease.file, lease.epoch, value.inc, new_rev);
                Ok(self.lease(&lease.file, &lease.node, lease.epoch))
            }
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                lock(&self.own_leases).remove(&lease.file);
                if cached.is_some() {
                    // Another instance may have renewed it for us: check once more.
                    return Box::pin(self.renew(lease)).await;
                }
                Err(CoordinatorError::Lost)
            }
            Err(e) => Err(unavailable("nats renew", e)),
        }
    }

    pub(super) async fn release(&self, lease: &Lease) -> Result<()> {
        let key = lease_key(&lease.file);
        let cached = lock(&self.own_leases)
            .remove(&lease.file)
            .filter(|(epoch, _, _)| *epoch == lease.epoch);
        if let Some((_, _, rev)) = cached {
            if self.free_lease(&key, rev).await {
                return Ok(());
            }
        }
        // Not known here, or the fast path failed: delete only if the record is ours.
        if let Some(e) = stored(&self.leases, &key, "nats release").await? {
            let held = LeaseRecord::parse(&e.value);
            if held.is_some_and(|h| h.node == lease.node.as_str() && h.epoch == lease.epoch) {
                // A failure here means it changed meanwhile, so it is no longer ours.
                self.free_lease(&key, e.revision).await;
            }
        }
        Ok(())
    }

    /// Removes a lease record still at revision `rev`; `false` when it changed (or the server
    /// did not answer). What is left is a marker that expires within a second, not one per
    /// file for the records' whole lifetime (hours), so a fleet opening and closing many rooms
    /// does not fill the bucket with markers.
    async fn free_lease(&self, key: &str, rev: u64) -> bool {
        self.leases
            .purge_expect_revision_with_ttl(key, rev, MARKER_TTL)
            .await
            .is_ok()
    }
}
