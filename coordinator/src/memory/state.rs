//! The in-memory backend's state: members, leases and counter slots behind one mutex, and
//! the liveness rules every call judges them by.

use std::collections::HashMap;

use tokio::time::Instant;

use crate::{Member, NodeId};

/// Maps are swept for dead entries when they reach this size, then again each time they
/// double, so sweeps cost O(1) per insertion on average.
pub(super) const MIN_SWEEP: usize = 1024;

pub(super) struct State {
    pub members: HashMap<NodeId, MemberRecord>,
    pub leases: HashMap<String, LeaseRecord>,
    /// counter -> node -> slots held by that node.
    pub counters: HashMap<String, HashMap<NodeId, u64>>,
    /// Each node's latest room report (dropped when it leaves; read only while it lives).
    pub reports: HashMap<NodeId, Vec<u8>>,
    /// One sequence for all files: epochs then grow across holders without remembering
    /// released files, so the lease map only holds files that are being served.
    pub last_epoch: u64,
    /// The last incarnation given to a joining node.
    pub last_incarnation: u64,
    pub lease_sweep_at: usize,
    counter_sweep_at: usize,
}

pub(super) struct MemberRecord {
    pub address: String,
    pub draining: bool,
    pub expires: Instant,
    pub incarnation: u64,
}

pub(super) struct LeaseRecord {
    pub node: NodeId,
    /// The holder's incarnation when it took the lease: held while that one lives.
    pub incarnation: u64,
    pub epoch: u64,
}

type Members = HashMap<NodeId, MemberRecord>;

pub(super) fn is_live(members: &Members, node: &NodeId, now: Instant) -> bool {
    members.get(node).is_some_and(|m| m.expires > now)
}

/// The live member holding `lease`, if its incarnation is the one that took it.
pub(super) fn holding<'a>(
    members: &'a Members,
    lease: &LeaseRecord,
    now: Instant,
) -> Option<&'a MemberRecord> {
    members
        .get(&lease.node)
        .filter(|m| m.expires > now && m.incarnation == lease.incarnation)
}

pub(super) fn live_members(members: &Members, now: Instant) -> Vec<Member> {
    members
        .iter()
        .filter(|(_, m)| m.expires > now)
        .map(|(id, m)| Member {
            id: id.clone(),
            address: m.address.clone(),
            draining: m.draining,
        })
        .collect()
}

impl State {
    pub fn new() -> Self {
        Self {
            members: HashMap::new(),
            leases: HashMap::new(),
            counters: HashMap::new(),
            reports: HashMap::new(),
            last_epoch: 0,
            last_incarnation: 0,
            lease_sweep_at: MIN_SWEEP,
            counter_sweep_at: MIN_SWEEP,
        }
    }

    /// Forgets every slot `node` holds. Only on join, leave and lapse (rare), never per socket.
    pub fn purge_slots(&mut self, node: &NodeId) {
        self.counters.retain(|_, slots| {
            slots.remove(node);
            !slots.is_empty()
        });
    }

    pub fn sweep_leases(&mut self, now: Instant) {
        if self.leases.len() >= self.lease_sweep_at {
            let members = &self.members;
            self.leases
                .retain(|_, l| holding(members, l, now).is_some());
            self.lease_sweep_at = (self.leases.len() * 2).max(MIN_SWEEP);
        }
    }

    pub fn sweep_counters(&mut self, now: Instant) {
        if self.counters.len() >= self.counter_sweep_at {
            let members = &self.members;
            self.counters.retain(|_, slots| {
                slots.retain(|n, _| is_live(members, n, now));
                !slots.is_empty()
            });
            self.counter_sweep_at = (self.counters.len() * 2).max(MIN_SWEEP);
        }
    }
}
