//! Membership: a join after a lapse begins a new incarnation, whose slots and leases start
//! empty; a heartbeat after a lapse is refused.

use tokio::time::Instant;

use super::state::{live_members, MemberRecord};
use super::Inner;
use crate::record::check_member;
use crate::{CoordinatorError, Member, NodeId, Result};

impl Inner {
    pub(super) async fn join(&self, member: Member) -> Result<()> {
        check_member(&member)?;
        let now = Instant::now();
        let mut st = self.lock();
        let incarnation = match st.members.get(&member.id) {
            // Joining again while live keeps the incarnation, its slots and its leases.
            Some(m) if m.expires > now => m.incarnation,
            // Slots and leases of an earlier, lapsed incarnation must not come back.
            _ => {
                st.purge_slots(&member.id);
                st.last_incarnation += 1;
                self.rejoins.send_modify(|n| *n += 1);
                st.last_incarnation
            }
        };
        st.members.insert(
            member.id,
            MemberRecord {
                address: member.address,
                draining: member.draining,
                expires: now + self.settings.lease,
                incarnation,
            },
        );
        self.announce_members(&st);
        Ok(())
    }

    pub(super) async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<()> {
        let now = Instant::now();
        let mut st = self.lock();
        match st.members.get_mut(node) {
            Some(m) if m.expires > now => {
                m.expires = now + self.settings.lease;
                let changed = m.draining != draining;
                m.draining = draining;
                if changed {
                    self.announce_members(&st);
                }
                Ok(())
            }
            Some(_) => {
                // Too late: the fleet has already treated this node as gone.
                st.members.remove(node);
                st.purge_slots(node);
                Err(CoordinatorError::Lost)
            }
            None => Err(CoordinatorError::Lost),
        }
    }

    pub(super) async fn leave(&self, node: &NodeId) -> Result<()> {
        let mut st = self.lock();
        let was = st.members.remove(node).is_some();
        st.purge_slots(node);
        st.reports.remove(node);
        if was {
            self.announce_members(&st);
        }
        Ok(())
    }

    pub(super) async fn evict(&self, node: &NodeId, address: &str) -> Result<bool> {
        let now = Instant::now();
        let mut st = self.lock();
        let found = st
            .members
            .get(node)
            .is_some_and(|m| m.expires > now && m.address == address && !m.draining);
        if found {
            st.members.remove(node);
            st.purge_slots(node);
            self.announce_members(&st);
        }
        Ok(found)
    }

    pub(super) async fn members(&self) -> Result<Vec<Member>> {
        let now = Instant::now();
        let mut st = self.lock();
        // Dead records are dropped here; their slots already stopped counting and go at
        // the next sweep or when the node joins again.
        st.members.retain(|_, m| m.expires > now);
        Ok(live_members(&st.members, now))
    }
}
