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

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;
use tokio::time::Instant;

use crate::delegate::coordinator_via_inner;
use crate::events::Hub;
use crate::{CoordinatorEvent, CoordinatorSettings, NodeId};

mod counters;
mod events;
mod leases;
mod members;
mod reports;
mod state;
#[cfg(test)]
mod tests;

use state::{live_members, State};

pub struct MemoryCoordinator {
    inner: Inner,
}

struct Inner {
    settings: CoordinatorSettings,
    state: Arc<Mutex<State>>,
    hub: Arc<Hub>,
    ticking: AtomicBool,
    rejoins: watch::Sender<u64>,
}

impl MemoryCoordinator {
    /// A coordinator with the given timing; check it with
    /// [`CoordinatorSettings::validate`] first when it comes from configuration.
    pub fn new(settings: CoordinatorSettings) -> Self {
        let inner = Inner {
            settings,
            hub: Hub::new(),
            ticking: AtomicBool::new(false),
            rejoins: watch::Sender::new(0),
            state: Arc::new(Mutex::new(State::new())),
        };
        Self { inner }
    }

    pub fn settings(&self) -> CoordinatorSettings {
        self.inner.settings
    }
}

impl Default for MemoryCoordinator {
    fn default() -> Self {
        Self::new(CoordinatorSettings::default())
    }
}

/// Every critical section is a few map operations with no await and no panics midway,
/// so a poisoned lock still guards consistent state and is simply taken over.
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
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
}

coordinator_via_inner!(MemoryCoordinator);
