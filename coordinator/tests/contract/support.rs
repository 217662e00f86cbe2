//! What every contract test does: name nodes, keep them beating, wait for what travels.

use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::{Coordinator, CoordinatorEvent, Member, NodeId};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::fleet::{settings, Backend, Fleet, LEASE};

pub fn node(id: &str) -> NodeId {
    NodeId::parse(id).unwrap()
}

pub fn member(id: &str, draining: bool) -> Member {
    Member {
        id: node(id),
        address: format!("{id}.internal:8080"),
        draining,
    }
}

/// Heartbeats `id` every heartbeat interval until dropped.
pub struct Beating(JoinHandle<()>);

impl Drop for Beating {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub fn beat(c: &Arc<dyn Coordinator>, id: &str) -> Beating {
    beat_as(c, id, false)
}

pub fn beat_as(c: &Arc<dyn Coordinator>, id: &str, draining: bool) -> Beating {
    let (c, id) = (c.clone(), node(id));
    Beating(tokio::spawn(async move {
        loop {
            tokio::time::sleep(settings().heartbeat).await;
            let _ = c.heartbeat(&id, draining).await;
        }
    }))
}

/// Polls `check` until it holds, failing after `within`: for what other instances see
/// once a write has travelled (a watch, a cache), never a fixed sleep.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {within:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn ids(c: &Arc<dyn Coordinator>) -> Vec<String> {
    let mut ids: Vec<String> = c
        .members()
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id.to_string())
        .collect();
    ids.sort();
    ids
}

/// Waits for the first event `pick` accepts, failing after `within`.
pub async fn next_event<T>(
    rx: &mut broadcast::Receiver<CoordinatorEvent>,
    within: Duration,
    mut pick: impl FnMut(&CoordinatorEvent) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(event)) => {
                if let Some(found) = pick(&event) {
                    return found;
                }
            }
            Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
            Ok(Err(e)) => panic!("watch ended: {e}"),
            Err(_) => panic!("no matching event within {within:?}"),
        }
    }
}

/// Joins `id` through `c` and keeps it alive until the returned guard is dropped.
pub async fn live(c: &Arc<dyn Coordinator>, id: &str) -> Beating {
    c.join(member(id, false)).await.unwrap();
    beat(c, id)
}

/// Joins a through `c1` and b through `c2`, keeps only a beating, and waits until both
/// instances list both: b lapses a little later.
pub async fn a_beating_b_silent(c1: &Arc<dyn Coordinator>, c2: &Arc<dyn Coordinator>) -> Beating {
    c1.join(member("a", false)).await.unwrap();
    c2.join(member("b", false)).await.unwrap();
    let a_beats = beat(c1, "a");
    for c in [c1, c2] {
        eventually(LEASE, "both members seen", || async {
            ids(c).await == ["a", "b"]
        })
        .await;
    }
    a_beats
}

/// A fleet of two instances, with a live through the first and b through the second.
pub async fn a_and_b_live(backend: Backend) -> (Fleet, [Arc<dyn Coordinator>; 2], [Beating; 2]) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let beats = [live(&c1, "a").await, live(&c2, "b").await];
    (fleet, [c1, c2], beats)
}
