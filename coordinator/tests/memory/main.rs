//! The in-memory backend against the contract of the `Coordinator` trait.

use std::time::Duration;

use atrium_coordinator::{Coordinator, CoordinatorSettings, Member, MemoryCoordinator, NodeId};

mod counters;
mod epochs;
mod leases;
mod membership;

const MS: Duration = Duration::from_millis(1);

fn node(id: &str) -> NodeId {
    NodeId::parse(id).unwrap()
}

fn coordinator() -> (MemoryCoordinator, CoordinatorSettings) {
    let settings = CoordinatorSettings::default();
    (MemoryCoordinator::new(settings), settings)
}

fn member(id: &str, draining: bool) -> Member {
    Member {
        id: node(id),
        address: format!("{id}.internal:8080"),
        draining,
    }
}

/// Joins every node of `ids`.
async fn joined(c: &MemoryCoordinator, ids: &[&str]) {
    for id in ids {
        c.join(member(id, false)).await.unwrap();
    }
}

/// a and b joined, each to take what the test gives it.
async fn a_and_b_joined() -> (MemoryCoordinator, CoordinatorSettings, NodeId, NodeId) {
    let (c, s) = coordinator();
    joined(&c, &["a", "b"]).await;
    (c, s, node("a"), node("b"))
}
