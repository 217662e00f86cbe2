//! The coordinator as the node uses it, with every call counted by operation
//! (`atrium_coordinator_operations_total{operation}`), so coordinator traffic per
//! socket and per patch is measured rather than guessed.

use std::sync::Arc;

use async_trait::async_trait;
use atrium_coordinator::{Coordinator, CoordinatorError, CoordinatorEvent, Lease, Member, NodeId};
use tokio::sync::broadcast;

use crate::metrics::Metrics;

pub struct Counted {
    inner: Arc<dyn Coordinator>,
    metrics: Arc<Metrics>,
}

impl Counted {
    pub fn new(inner: Arc<dyn Coordinator>, metrics: Arc<Metrics>) -> Self {
        Self { inner, metrics }
    }

    fn count(&self, operation: &str) {
        debug_assert!(
            crate::metrics::COORDINATOR_OPERATIONS.contains(&operation),
            "{operation} is not exported at zero"
        );
        self.metrics
            .coordinator_operations
            .with_label_values(&[operation])
            .inc();
    }
}

#[async_trait]
impl Coordinator for Counted {
    async fn join(&self, member: Member) -> Result<(), CoordinatorError> {
        self.count("join");
        self.inner.join(member).await
    }

    async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<(), CoordinatorError> {
        self.count("heartbeat");
        self.inner.heartbeat(node, draining).await
    }

    async fn leave(&self, node: &NodeId) -> Result<(), CoordinatorError> {
        self.count("leave");
        self.inner.leave(node).await
    }

    async fn evict(&self, node: &NodeId, address: &str) -> Result<bool, CoordinatorError> {
        self.count("evict");
        self.inner.evict(node, address).await
    }

    async fn members(&self) -> Result<Vec<Member>, CoordinatorError> {
        self.count("members");
        self.inner.members().await
    }

    async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease, CoordinatorError> {
        self.count("acquire");
        self.inner.acquire(file, node).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, CoordinatorError> {
        self.count("renew");
        self.inner.renew(lease).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        self.count("release");
        self.inner.release(lease).await
    }

    async fn holder(&self, file: &str) -> Result<Option<NodeId>, CoordinatorError> {
        self.count("holder");
        self.inner.holder(file).await
    }

    /// Not a call to the coordinator: a signal this process keeps.
    fn rejoins(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.rejoins()
    }

    async fn count_up(
        &self,
        counter: &str,
        node: &NodeId,
        limit: u64,
    ) -> Result<bool, CoordinatorError> {
        self.count("count_up");
        self.inner.count_up(counter, node, limit).await
    }

    async fn count_down(&self, counter: &str, node: &NodeId) -> Result<(), CoordinatorError> {
        self.count("count_down");
        self.inner.count_down(counter, node).await
    }

    async fn count(&self, counter: &str) -> Result<u64, CoordinatorError> {
        self.count("count");
        self.inner.count(counter).await
    }

    async fn watch(&self) -> Result<broadcast::Receiver<CoordinatorEvent>, CoordinatorError> {
        self.count("watch");
        self.inner.watch().await
    }

    async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<(), CoordinatorError> {
        self.count("publish");
        self.inner.publish(topic, payload).await
    }

    async fn report_rooms(&self, node: &NodeId, report: Vec<u8>) -> Result<(), CoordinatorError> {
        self.count("report_rooms");
        self.inner.report_rooms(node, report).await
    }

    async fn room_reports(&self) -> Result<Vec<(NodeId, Vec<u8>)>, CoordinatorError> {
        self.count("room_reports");
        self.inner.room_reports().await
    }
}
