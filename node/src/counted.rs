//! The coordinator as the node uses it, with every call counted by operation
//! (`atrium_coordinator_operations_total{operation}`), so coordinator traffic per
//! socket and per patch is measured rather than guessed.

use std::sync::Arc;

use async_trait::async_trait;
use atrium_coordinator::{Coordinator, CoordinatorError, CoordinatorEvent, Lease, Member, NodeId};
use tokio::sync::broadcast;

use crate::metrics::metrics;

pub struct Counted(pub Arc<dyn Coordinator>);

fn count(operation: &str) {
    debug_assert!(
        crate::metrics::COORDINATOR_OPERATIONS.contains(&operation),
        "{operation} is not exported at zero"
    );
    metrics()
        .coordinator_operations
        .with_label_values(&[operation])
        .inc();
}

#[async_trait]
impl Coordinator for Counted {
    async fn join(&self, member: Member) -> Result<(), CoordinatorError> {
        count("join");
        self.0.join(member).await
    }

    async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<(), CoordinatorError> {
        count("heartbeat");
        self.0.heartbeat(node, draining).await
    }

    async fn leave(&self, node: &NodeId) -> Result<(), CoordinatorError> {
        count("leave");
        self.0.leave(node).await
    }

    async fn members(&self) -> Result<Vec<Member>, CoordinatorError> {
        count("members");
        self.0.members().await
    }

    async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease, CoordinatorError> {
        count("acquire");
        self.0.acquire(file, node).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, CoordinatorError> {
        count("renew");
        self.0.renew(lease).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        count("release");
        self.0.release(lease).await
    }

    async fn holder(&self, file: &str) -> Result<Option<NodeId>, CoordinatorError> {
        count("holder");
        self.0.holder(file).await
    }

    async fn count_up(
        &self,
        counter: &str,
        node: &NodeId,
        limit: u64,
    ) -> Result<bool, CoordinatorError> {
        count("count_up");
        self.0.count_up(counter, node, limit).await
    }

    async fn count_down(&self, counter: &str, node: &NodeId) -> Result<(), CoordinatorError> {
        count("count_down");
        self.0.count_down(counter, node).await
    }

    async fn count(&self, counter: &str) -> Result<u64, CoordinatorError> {
        count("count");
        self.0.count(counter).await
    }

    async fn watch(&self) -> Result<broadcast::Receiver<CoordinatorEvent>, CoordinatorError> {
        count("watch");
        self.0.watch().await
    }

    async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<(), CoordinatorError> {
        count("publish");
        self.0.publish(topic, payload).await
    }
}
