//! The [`Coordinator`](crate::Coordinator) impl of a backend (NATS, Redis or in
//! memory), written once.
//!
//! A trait impl is one block, so a backend that keeps its calls in one file per concept
//! (membership, leases, counters, events) writes each call as an inherent method of its
//! shared state `inner`, with the trait's name and arguments, and forwards the trait to them
//! with this macro. `inner.rejoins` is the `watch::Sender<u64>` behind `rejoins()`.

macro_rules! coordinator_via_inner {
    ($backend:ty) => {
        #[async_trait::async_trait]
        impl $crate::Coordinator for $backend {
            async fn join(&self, member: $crate::Member) -> $crate::Result<()> {
                self.inner.join(member).await
            }

            async fn heartbeat(&self, node: &$crate::NodeId, draining: bool) -> $crate::Result<()> {
                self.inner.heartbeat(node, draining).await
            }

            async fn leave(&self, node: &$crate::NodeId) -> $crate::Result<()> {
                self.inner.leave(node).await
            }

            async fn evict(&self, node: &$crate::NodeId, address: &str) -> $crate::Result<bool> {
                self.inner.evict(node, address).await
            }

            async fn members(&self) -> $crate::Result<Vec<$crate::Member>> {
                self.inner.members().await
            }

            async fn acquire(
                &self,
                file: &str,
                node: &$crate::NodeId,
            ) -> $crate::Result<$crate::Lease> {
                self.inner.acquire(file, node).await
            }

            async fn renew(&self, lease: &$crate::Lease) -> $crate::Result<$crate::Lease> {
                self.inner.renew(lease).await
            }

            async fn release(&self, lease: &$crate::Lease) -> $crate::Result<()> {
                self.inner.release(lease).await
            }

            async fn holder(&self, file: &str) -> $crate::Result<Option<$crate::NodeId>> {
                self.inner.holder(file).await
            }

            fn rejoins(&self) -> tokio::sync::watch::Receiver<u64> {
                self.inner.rejoins.subscribe()
            }

            async fn count_up(
                &self,
                counter: &str,
                node: &$crate::NodeId,
                limit: u64,
            ) -> $crate::Result<bool> {
                self.inner.count_up(counter, node, limit).await
            }

            async fn count_down(&self, counter: &str, node: &$crate::NodeId) -> $crate::Result<()> {
                self.inner.count_down(counter, node).await
            }

            async fn count(&self, counter: &str) -> $crate::Result<u64> {
                self.inner.count(counter).await
            }

            async fn watch(
                &self,
            ) -> $crate::Result<tokio::sync::broadcast::Receiver<$crate::CoordinatorEvent>> {
                self.inner.watch().await
            }

            async fn publish(&self, topic: &str, payload: Vec<u8>) -> $crate::Result<()> {
                self.inner.publish(topic, payload).await
            }

            async fn report_rooms(
                &self,
                node: &$crate::NodeId,
                report: Vec<u8>,
            ) -> $crate::Result<()> {
                self.inner.report_rooms(node, report).await
            }

            async fn room_reports(&self) -> $crate::Result<Vec<($crate::NodeId, Vec<u8>)>> {
                self.inner.room_reports().await
            }
        }
    };
}

pub(crate) use coordinator_via_inner;
