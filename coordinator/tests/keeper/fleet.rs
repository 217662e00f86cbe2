//! Nodes sharing one coordinator, each heartbeating as a node does, and the keepers and
//! checks the tests give them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::{
    Coordinator, CoordinatorError, CoordinatorSettings, Lease, LeaseKeeper, Member,
    MemoryCoordinator, NodeId, StillMine,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};

use crate::link::Link;

pub fn node(id: &str) -> NodeId {
    NodeId::parse(id).unwrap()
}

fn member(id: &str) -> Member {
    Member {
        id: node(id),
        address: format!("{id}.internal:8080"),
        draining: false,
    }
}

/// A fleet of nodes sharing one in-memory coordinator, each through its own `Link`, each
/// heartbeating in the background until the fleet is dropped.
pub struct Fleet {
    settings: CoordinatorSettings,
    shared: Arc<MemoryCoordinator>,
    beats: Vec<JoinHandle<()>>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.beats.iter().for_each(JoinHandle::abort);
    }
}

impl Fleet {
    pub fn new(settings: CoordinatorSettings) -> Self {
        Self {
            settings,
            shared: Arc::new(MemoryCoordinator::new(settings)),
            beats: Vec::new(),
        }
    }

    /// Joins `id` and keeps it alive as a node does: a lost membership is joined again.
    pub async fn node(&mut self, id: &str) -> Arc<Link> {
        let link = Arc::new(Link::new(self.shared.clone()));
        link.join(member(id)).await.unwrap();
        let (beating, every, me) = (link.clone(), self.settings.heartbeat, member(id));
        self.beats.push(tokio::spawn(async move {
            loop {
                sleep(every).await;
                if let Err(CoordinatorError::Lost) = beating.heartbeat(&me.id, false).await {
                    let _ = beating.join(me.clone()).await;
                }
            }
        }));
        link
    }
}

pub fn keeper(link: &Arc<Link>, lease: Lease, settings: CoordinatorSettings) -> LeaseKeeper {
    LeaseKeeper::start(link.clone(), lease, settings)
}

/// A fleet of `a` alone, holding "f1".
pub async fn a_alone_holds_f1(settings: CoordinatorSettings) -> (Fleet, Arc<Link>, Lease) {
    let mut fleet = Fleet::new(settings);
    let a = fleet.node("a").await;
    let lease = a.acquire("f1", &node("a")).await.unwrap();
    (fleet, a, lease)
}

/// A fleet of `a` and `b`, with `a` holding "f1" and a keeper watching over it.
pub async fn a_holds_f1(
    settings: CoordinatorSettings,
) -> (Fleet, Arc<Link>, Arc<Link>, Lease, LeaseKeeper) {
    let mut fleet = Fleet::new(settings);
    let (a, b) = (fleet.node("a").await, fleet.node("b").await);
    let lease = a.acquire("f1", &node("a")).await.unwrap();
    let keeper = keeper(&a, lease.clone(), settings);
    (fleet, a, b, lease, keeper)
}

/// Gives `keeper` a `StillMine` check that answers `mine`; returns how often it was asked.
pub fn retake_asking(keeper: &LeaseKeeper, mine: bool) -> Arc<AtomicUsize> {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let check: StillMine = Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { mine })
    });
    keeper.retake_when(check);
    asked
}

/// Waits for the keeper to report its lease lost, failing after `within`.
pub async fn loss_reported(lost: &mut watch::Receiver<bool>, within: Duration, what: &str) {
    timeout(within, lost.wait_for(|l| *l))
        .await
        .expect(what)
        .unwrap();
}
