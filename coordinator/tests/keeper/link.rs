//! One node's line to the shared in-memory coordinator, which a test can cut.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use atrium_coordinator::{
    Coordinator, CoordinatorError, CoordinatorEvent, Lease, Member, MemoryCoordinator, NodeId,
};
use tokio::sync::watch;

/// The memory backend as one node's process sees it: while cut off, every call fails as
/// if the coordinator could not be reached. Counts the renewals that went through.
pub struct Link {
    inner: Arc<MemoryCoordinator>,
    cut_off: AtomicBool,
    renewals: AtomicUsize,
}

impl Link {
    pub fn new(inner: Arc<MemoryCoordinator>) -> Self {
        Self {
            inner,
            cut_off: AtomicBool::new(false),
            renewals: AtomicUsize::new(0),
        }
    }

    /// Cuts the node off from the coordinator (a pause or a partition), or puts it back.
    pub fn cut(&self, off: bool) {
        self.cut_off.store(off, Ordering::SeqCst);
    }

    /// The renewals that reached the coordinator.
    pub fn renewals(&self) -> usize {
        self.renewals.load(Ordering::SeqCst)
    }

    fn check(&self) -> Result<(), CoordinatorError> {
        match self.cut_off.load(Ordering::SeqCst) {
            true => Err(CoordinatorError::Unavailable("cut off".into())),
            false => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl Coordinator for Link {
    async fn join(&self, m: Member) -> Result<(), CoordinatorError> {
        self.check()?;
        self.inner.join(m).await
    }
    async fn heartbeat(&self, n: &NodeId, d: bool) -> Result<(), CoordinatorError> {
        self.check()?;
        self.inner.heartbeat(n, d).await
    }
    async fn leave(&self, n: &NodeId) -> Result<(), CoordinatorError> {
        self.check()?;
        self.inner.leave(n).await
    }
    async fn evict(&self, n: &NodeId, address: &str) -> Result<bool, CoordinatorError> {
        self.check()?;
        self.inner.evict(n, address).await
    }
    async fn members(&self) -> Result<Vec<Member>, CoordinatorError> {
        self.check()?;
        self.inner.members().await
    }
    async fn acquire(&self, f: &str, n: &NodeId) -> Result<Lease, CoordinatorError> {
        self.check()?;
        self.inner.acquire(f, n).await
    }
    async fn renew(&self, l: &Lease) -> Result<Lease, CoordinatorError> {
        self.check()?;
        self.renewals.fetch_add(1, Ordering::SeqCst);
        self.inner.renew(l).await
    }
    async fn release(&self, l: &Lease) -> Result<(), CoordinatorError> {
        self.check()?;
        self.inner.release(l).await
    }
    async fn holder(&self, f: &str) -> Result<Option<NodeId>, CoordinatorError> {
        self.check()?;
        self.inner.holder(f).await
    }
    fn rejoins(&self) -> watch::Receiver<u64> {
        self.inner.rejoins()
    }
    async fn count_up(&self, c: &str, n: &NodeId, l: u64) -> Result<bool, CoordinatorError> {
        self.check()?;
        self.inner.count_up(c, n, l).await
    }
    async fn count_down(&self, c: &str, n: &NodeId) -> Result<(), CoordinatorError> {
        self.check()?;
        self.inner.count_down(c, n).await
    }
    async fn count(&self, c: &str) -> Result<u64, CoordinatorError> {
        self.check()?;
        self.inner.count(c).await
    }
    async fn watch(
        &self,
    ) -> Result<tokio::sync::broadcast::Receiver<CoordinatorEvent>, CoordinatorError> {
        self.inner.watch().await
    }
    async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<(), CoordinatorError> {
        self.check()?;
        self.inner.publish(topic, payload).await
    }

    async fn report_rooms(&self, node: &NodeId, report: Vec<u8>) -> Result<(), CoordinatorError> {
        self.check()?;
        self.inner.report_rooms(node, report).await
    }

    async fn room_reports(&self) -> Result<Vec<(NodeId, Vec<u8>)>, CoordinatorError> {
        self.check()?;
        self.inner.room_reports().await
    }
}
