//! Leases: held while the incarnation that took them lives; epochs come from one sequence for
//! all files.

use tokio::time::Instant;

use super::state::{holding, LeaseRecord};
use super::Inner;
use crate::types::check_key;
use crate::{CoordinatorError, Lease, NodeId, Result};

fn lease_of(file: &str, node: &NodeId, epoch: u64, expires: Instant) -> Lease {
    Lease::new(file, node, epoch, expires.into_std())
}

impl Inner {
    pub(super) async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease> {
        check_key("file id", file)?;
        let now = Instant::now();
        let mut st = self.lock();
        let me = match st.members.get(node) {
            Some(m) if m.expires > now => (m.incarnation, m.expires),
            _ => return Err(CoordinatorError::Lost),
        };
        if let Some(held) = st.leases.get(file) {
            if holding(&st.members, held, now).is_some() {
                if held.node != *node || held.incarnation != me.0 {
                    return Err(CoordinatorError::Held {
                        holder: held.node.clone(),
                    });
                }
                return Ok(lease_of(file, node, held.epoch, me.1));
            }
        }
        st.last_epoch += 1;
        let epoch = st.last_epoch;
        st.leases.insert(
            file.to_owned(),
            LeaseRecord {
                node: node.clone(),
                incarnation: me.0,
                epoch,
            },
        );
        st.sweep_leases(now);
        drop(st);
        self.announce_lease(file, Some(node));
        Ok(lease_of(file, node, epoch, me.1))
    }

    pub(super) async fn renew(&self, lease: &Lease) -> Result<Lease> {
        let now = Instant::now();
        let mut st = self.lock();
        let Some(held) = st.leases.get(&lease.file) else {
            return Err(CoordinatorError::Lost);
        };
        match holding(&st.members, held, now) {
            Some(m) if held.node == lease.node && held.epoch == lease.epoch => {
                Ok(lease_of(&lease.file, &lease.node, lease.epoch, m.expires))
            }
            Some(_) => Err(CoordinatorError::Lost),
            None => {
                st.leases.remove(&lease.file);
                Err(CoordinatorError::Lost)
            }
        }
    }

    pub(super) async fn release(&self, lease: &Lease) -> Result<()> {
        let mut st = self.lock();
        // The epoch tells our lease from a later one the same node took afresh.
        if st
            .leases
            .get(&lease.file)
            .is_some_and(|held| held.node == lease.node && held.epoch == lease.epoch)
        {
            st.leases.remove(&lease.file);
            drop(st);
            self.announce_lease(&lease.file, None);
        }
        Ok(())
    }

    pub(super) async fn holder(&self, file: &str) -> Result<Option<NodeId>> {
        let now = Instant::now();
        let st = self.lock();
        Ok(st
            .leases
            .get(file)
            .filter(|held| holding(&st.members, held, now).is_some())
            .map(|held| held.node.clone()))
    }
}
