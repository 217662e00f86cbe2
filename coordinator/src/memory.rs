//! The in-memory backend: one process, one mutex, no I/O.
//!
//! Used by a single node (the default) and by tests. Time comes from `tokio::time` so tests
//! can pause and advance it. Lapsed records are not chased by a timer: each call judges
//! liveness against the clock, drops what it finds dead on its way, and the maps get an
//! occasional sweep whose cost is paid for by the growth that triggered it.
//!
//! A lease records the incarnation of the member that took it, and is held while that
//! incarnation is live: when a node lapses or leaves, all its leases are free at once.
//!
//! Watchers are told through an in-process broadcast: membership changes and lease
//! hand-overs at once, lapses at the next periodic listing (every heartbeat interval, started
//! by the first `watch`). Leases freed by their holder's lapse are not announced; their
//! successors' acquires are.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;
use tokio::time::Instant;

use crate::events::{spawn_members_ticker, Hub};
use crate::types::{check_key, MAX_ADDRESS_LEN};
use crate::{
    Coordinator, CoordinatorError, CoordinatorEvent, CoordinatorSettings, Lease, Member, NodeId,
};

/// Maps are swept for dead entries when they reach this size, then again each time they
/// double, so sweeps cost O(1) per insertion on average.
const MIN_SWEEP: usize = 1024;

pub struct MemoryCoordinator {
    settings: CoordinatorSettings,
    state: Arc<Mutex<State>>,
    hub: Arc<Hub>,
    ticking: AtomicBool,
    rejoins: watch::Sender<u64>,
}

struct State {
    members: HashMap<NodeId, MemberRecord>,
    leases: HashMap<String, LeaseRecord>,
    /// counter -> node -> slots held by that node.
    counters: HashMap<String, HashMap<NodeId, u64>>,
    /// One sequence for all files: epochs then grow across holders without remembering
    /// released files, so the lease map only holds files that are being served.
    last_epoch: u64,
    /// The last incarnation given to a joining node.
    last_incarnation: u64,
    lease_sweep_at: usize,
    counter_sweep_at: usize,
}

struct MemberRecord {
    address: String,
    draining: bool,
    expires: Instant,
    incarnation: u64,
}

struct LeaseRecord {
    node: NodeId,
    /// The holder's incarnation when it took the lease: held while that one lives.
    incarnation: u64,
    epoch: u64,
}

type Members = HashMap<NodeId, MemberRecord>;

fn is_live(members: &Members, node: &NodeId, now: Instant) -> bool {
    members.get(node).is_some_and(|m| m.expires > now)
}

/// The live member holding `lease`, if its incarnation is the one that took it.
fn holding<'a>(
    members: &'a Members,
    lease: &LeaseRecord,
    now: Instant,
) -> Option<&'a MemberRecord> {
    members
        .get(&lease.node)
        .filter(|m| m.expires > now && m.incarnation == lease.incarnation)
}

fn live_members(members: &Members, now: Instant) -> Vec<Member> {
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
    /// Forgets every slot `node` holds. Only on join, leave and lapse (rare), never per socket.
    fn purge_slots(&mut self, node: &NodeId) {
        self.counters.retain(|_, slots| {
            slots.remove(node);
            !slots.is_empty()
        });
    }

    fn sweep_leases(&mut self, now: Instant) {
        if self.leases.len() >= self.lease_sweep_at {
            let members = &self.members;
            self.leases
                .retain(|_, l| holding(members, l, now).is_some());
            self.lease_sweep_at = (self.leases.len() * 2).max(MIN_SWEEP);
        }
    }

    fn sweep_counters(&mut self, now: Instant) {
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

impl MemoryCoordinator {
    /// A coordinator with the given timing; check it with
    /// [`CoordinatorSettings::validate`] first when it comes from configuration.
    pub fn new(settings: CoordinatorSettings) -> Self {
        Self {
            settings,
            hub: Hub::new(),
            ticking: AtomicBool::new(false),
            rejoins: watch::Sender::new(0),
            state: Arc::new(Mutex::new(State {
                members: HashMap::new(),
                leases: HashMap::new(),
                counters: HashMap::new(),
                last_epoch: 0,
                last_incarnation: 0,
                lease_sweep_at: MIN_SWEEP,
                counter_sweep_at: MIN_SWEEP,
            })),
        }
    }

    pub fn settings(&self) -> CoordinatorSettings {
        self.settings
    }

    /// Every critical section is a few map operations with no await and no panics midway,
    /// so a poisoned lock still guards consistent state and is simply taken over.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Announces the live membership to watchers, if any.
    fn announce_members(&self, st: &State) {
        if self.hub.has_watchers() {
            self.hub
                .members(live_members(&st.members, Instant::now()), None);
        }
    }

    fn announce_lease(&self, file: &str, holder: Option<&NodeId>) {
        if self.hub.has_watchers() {
            self.hub.send(CoordinatorEvent::LeaseChanged {
                file: file.to_owned(),
                holder: holder.cloned(),
            });
        }
    }

    fn lease_of(&self, file: &str, node: &NodeId, epoch: u64, expires: Instant) -> Lease {
        Lease {
            file: file.to_owned(),
            node: node.clone(),
            epoch,
            expires_at: expires.into_std(),
        }
    }
}

impl Default for MemoryCoordinator {
    fn default() -> Self {
        Self::new(CoordinatorSettings::default())
    }
}

#[async_trait::async_trait]
impl Coordinator for MemoryCoordinator {
    async fn join(&self, member: Member) -> Result<(), CoordinatorError> {
        if member.address.is_empty() || member.address.len() > MAX_ADDRESS_LEN {
            return Err(CoordinatorError::Invalid(format!(
                "address must be 1 to {MAX_ADDRESS_LEN} bytes"
            )));
        }
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

    async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<(), CoordinatorError> {
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

    async fn leave(&self, node: &NodeId) -> Result<(), CoordinatorError> {
        let mut st = self.lock();
        let was = st.members.remove(node).is_some();
        st.purge_slots(node);
        if was {
            self.announce_members(&st);
        }
        Ok(())
    }

    async fn members(&self) -> Result<Vec<Member>, CoordinatorError> {
        let now = Instant::now();
        let mut st = self.lock();
        // Dead records are dropped here; their slots already stopped counting and go at
        // the next sweep or when the node joins again.
        st.members.retain(|_, m| m.expires > now);
        Ok(live_members(&st.members, now))
    }

    async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease, CoordinatorError> {
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
                return Ok(self.lease_of(file, node, held.epoch, me.1));
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
        Ok(self.lease_of(file, node, epoch, me.1))
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, CoordinatorError> {
        let now = Instant::now();
        let mut st = self.lock();
        let Some(held) = st.leases.get(&lease.file) else {
            return Err(CoordinatorError::Lost);
        };
        match holding(&st.members, held, now) {
            Some(m) if held.node == lease.node && held.epoch == lease.epoch => {
                Ok(self.lease_of(&lease.file, &lease.node, lease.epoch, m.expires))
            }
            Some(_) => Err(CoordinatorError::Lost),
            None => {
                st.leases.remove(&lease.file);
                Err(CoordinatorError::Lost)
            }
        }
    }

    async fn release(&self, lease: &Lease) -> Result<(), CoordinatorError> {
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

    async fn holder(&self, file: &str) -> Result<Option<NodeId>, CoordinatorError> {
        let now = Instant::now();
        let st = self.lock();
        Ok(st
            .leases
            .get(file)
            .filter(|held| holding(&st.members, held, now).is_some())
            .map(|held| held.node.clone()))
    }

    fn rejoins(&self) -> watch::Receiver<u64> {
        self.rejoins.subscribe()
    }

    async fn count_up(
        &self,
        counter: &str,
        node: &NodeId,
        limit: u64,
    ) -> Result<bool, CoordinatorError> {
        check_key("counter", counter)?;
        let now = Instant::now();
        let mut st = self.lock();
        if !is_live(&st.members, node, now) {
            return Err(CoordinatorError::Lost);
        }
        if limit == 0 {
            return Ok(false);
        }
        if !st.counters.contains_key(counter) {
            st.sweep_counters(now);
            st.counters.insert(counter.to_owned(), HashMap::new());
        }
        let State {
            members, counters, ..
        } = &mut *st;
        let slots = counters
            .get_mut(counter)
            .expect("inserted above when missing");
        // O(nodes holding this counter): dead nodes' slots are dropped as we pass.
        slots.retain(|n, _| is_live(members, n, now));
        if slots.values().sum::<u64>() >= limit {
            return Ok(false);
        }
        *slots.entry(node.clone()).or_insert(0) += 1;
        Ok(true)
    }

    async fn count_down(&self, counter: &str, node: &NodeId) -> Result<(), CoordinatorError> {
        let mut st = self.lock();
        if let Some(slots) = st.counters.get_mut(counter) {
            if let Some(n) = slots.get_mut(node) {
                *n -= 1;
                if *n == 0 {
                    slots.remove(node);
                }
            }
            if slots.is_empty() {
                st.counters.remove(counter);
            }
        }
        Ok(())
    }

    async fn count(&self, counter: &str) -> Result<u64, CoordinatorError> {
        let now = Instant::now();
        let st = self.lock();
        Ok(st.counters.get(counter).map_or(0, |slots| {
            slots
                .iter()
                .filter(|(n, _)| is_live(&st.members, n, now))
                .map(|(_, k)| k)
                .sum()
        }))
    }

    async fn watch(
        &self,
    ) -> Result<tokio::sync::broadcast::Receiver<CoordinatorEvent>, CoordinatorError> {
        let rx = self.hub.subscribe();
        if !self.ticking.swap(true, Ordering::AcqRel) {
            let (state, hub) = (Arc::downgrade(&self.state), self.hub.clone());
            let refresh = Some(self.settings.lease);
            spawn_members_ticker(self.settings, move || {
                let alive = state.upgrade().is_some_and(|state| {
                    // Announced under the lock, so a listing never overtakes a newer one.
                    let st = state.lock().unwrap_or_else(PoisonError::into_inner);
                    hub.members(live_members(&st.members, Instant::now()), refresh);
                    true
                });
                std::future::ready(alive)
            });
        }
        // A new watcher hears the membership at once, not only at the next change.
        let members = live_members(&self.lock().members, Instant::now());
        self.hub.members(members, Some(std::time::Duration::ZERO));
        Ok(rx)
    }

    async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<(), CoordinatorError> {
        check_key("topic", topic)?;
        self.hub.send(CoordinatorEvent::Message {
            topic: topic.to_owned(),
            payload,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Files that were served once and then abandoned must not pile up in the lease map.
    #[tokio::test(start_paused = true)]
    async fn lapsed_leases_are_swept_as_the_map_grows() {
        let c = MemoryCoordinator::default();
        let (a, b) = (NodeId::parse("a").unwrap(), NodeId::parse("b").unwrap());
        for id in [&a, &b] {
            let address = "127.0.0.1:1".to_owned();
            c.join(Member {
                id: id.clone(),
                address,
                draining: false,
            })
            .await
            .unwrap();
        }
        for i in 0..MIN_SWEEP - 1 {
            c.acquire(&format!("old{i}"), &a).await.unwrap();
        }
        // a dies; b lives on and takes new files.
        tokio::time::advance(c.settings().heartbeat).await;
        c.heartbeat(&b, false).await.unwrap();
        tokio::time::advance(c.settings().lease - c.settings().heartbeat).await;
        for i in 0..10 {
            c.acquire(&format!("new{i}"), &b).await.unwrap();
        }
        let st = c.lock();
        assert_eq!(st.leases.len(), 10);
        assert_eq!(st.lease_sweep_at, MIN_SWEEP);
    }
}
