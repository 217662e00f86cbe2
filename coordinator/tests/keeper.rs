//! LeaseKeeper over the in-memory backend, with Tokio's clock paused so sleeps are instant.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::{
    Coordinator, CoordinatorError, CoordinatorEvent, CoordinatorSettings, Lease, LeaseKeeper,
    Member, MemoryCoordinator, NodeId,
};
use tokio::time::{sleep, timeout};

fn node(id: &str) -> NodeId {
    NodeId::parse(id).unwrap()
}

/// Wraps the memory backend and, while `stalled`, drops renewals: what the fleet sees of
/// a holder that is paused or cut off from the coordinator.
struct Stalling {
    inner: MemoryCoordinator,
    stalled: AtomicBool,
}

#[async_trait::async_trait]
impl Coordinator for Stalling {
    async fn join(&self, m: Member) -> Result<(), CoordinatorError> {
        self.inner.join(m).await
    }
    async fn heartbeat(&self, n: &NodeId, d: bool) -> Result<(), CoordinatorError> {
        self.inner.heartbeat(n, d).await
    }
    async fn leave(&self, n: &NodeId) -> Result<(), CoordinatorError> {
        self.inner.leave(n).await
    }
    async fn members(&self) -> Result<Vec<Member>, CoordinatorError> {
        self.inner.members().await
    }
    async fn acquire(&self, f: &str, n: &NodeId) -> Result<Lease, CoordinatorError> {
        self.inner.acquire(f, n).await
    }
    async fn renew(&self, l: &Lease) -> Result<Lease, CoordinatorError> {
        if self.stalled.load(Ordering::SeqCst) {
            return Err(CoordinatorError::Unavailable("stalled".into()));
        }
        self.inner.renew(l).await
    }
    async fn release(&self, l: &Lease) -> Result<(), CoordinatorError> {
        self.inner.release(l).await
    }
    async fn holder(&self, f: &str) -> Result<Option<NodeId>, CoordinatorError> {
        self.inner.holder(f).await
    }
    async fn count_up(&self, c: &str, n: &NodeId, l: u64) -> Result<bool, CoordinatorError> {
        self.inner.count_up(c, n, l).await
    }
    async fn count_down(&self, c: &str, n: &NodeId) -> Result<(), CoordinatorError> {
        self.inner.count_down(c, n).await
    }
    async fn count(&self, c: &str) -> Result<u64, CoordinatorError> {
        self.inner.count(c).await
    }

    async fn watch(
        &self,
    ) -> Result<tokio::sync::broadcast::Receiver<CoordinatorEvent>, CoordinatorError> {
        self.inner.watch().await
    }

    async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<(), CoordinatorError> {
        self.inner.publish(topic, payload).await
    }
}

fn stalling() -> (Arc<Stalling>, CoordinatorSettings) {
    let settings = CoordinatorSettings::default();
    let c = Arc::new(Stalling {
        inner: MemoryCoordinator::new(settings),
        stalled: AtomicBool::new(false),
    });
    (c, settings)
}

#[tokio::test(start_paused = true)]
async fn keeps_a_lease_alive_and_releases_it() {
    let settings = CoordinatorSettings::default();
    let c: Arc<dyn Coordinator> = Arc::new(MemoryCoordinator::new(settings));
    let (a, b) = (node("a"), node("b"));
    let lease = c.acquire("f1", &a).await.unwrap();
    let keeper = LeaseKeeper::start(c.clone(), lease.clone(), settings.heartbeat);

    sleep(settings.lease * 5).await;
    assert!(matches!(
        c.acquire("f1", &b).await,
        Err(CoordinatorError::Held { .. })
    ));
    assert!(!*keeper.lost().borrow());
    assert_eq!(keeper.lease().epoch, lease.epoch);
    assert!(keeper.lease().expires_at > lease.expires_at);

    keeper.release().await.unwrap();
    let lb = c.acquire("f1", &b).await.unwrap();
    assert!(lb.epoch > lease.epoch);
}

#[tokio::test(start_paused = true)]
async fn reports_loss_when_another_node_took_the_file_during_a_stall() {
    let (c, settings) = stalling();
    let (a, b) = (node("a"), node("b"));
    let lease = c.acquire("f1", &a).await.unwrap();
    let keeper = LeaseKeeper::start(c.clone(), lease.clone(), settings.heartbeat);
    let mut lost = keeper.lost();

    c.stalled.store(true, Ordering::SeqCst);
    sleep(settings.lease + settings.heartbeat).await;
    // Failed renewals alone are not a loss: the holder goes on under its store epoch.
    assert!(!*lost.borrow());
    let lb = c.acquire("f1", &b).await.unwrap();
    assert!(lb.epoch > lease.epoch);

    c.stalled.store(false, Ordering::SeqCst);
    timeout(settings.heartbeat * 2, lost.wait_for(|l| *l))
        .await
        .expect("loss reported within two renewal intervals")
        .unwrap();

    // Releasing the lost lease is harmless to the new holder.
    keeper.release().await.unwrap();
    assert_eq!(c.holder("f1").await.unwrap(), Some(b));
}

#[tokio::test(start_paused = true)]
async fn a_short_stall_is_survived() {
    let (c, settings) = stalling();
    let lease = c.acquire("f1", &node("a")).await.unwrap();
    let keeper = LeaseKeeper::start(c.clone(), lease, settings.heartbeat);

    // One missed renewal fits inside the lease: nothing is lost.
    c.stalled.store(true, Ordering::SeqCst);
    sleep(settings.heartbeat + Duration::from_millis(10)).await;
    c.stalled.store(false, Ordering::SeqCst);
    sleep(settings.lease * 3).await;
    assert!(!*keeper.lost().borrow());
    assert_eq!(c.holder("f1").await.unwrap(), Some(node("a")));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_keeper_lets_the_lease_lapse() {
    let settings = CoordinatorSettings::default();
    let c: Arc<dyn Coordinator> = Arc::new(MemoryCoordinator::new(settings));
    let lease = c.acquire("f1", &node("a")).await.unwrap();
    drop(LeaseKeeper::start(c.clone(), lease, settings.heartbeat));
    sleep(settings.lease).await;
    assert_eq!(c.holder("f1").await.unwrap(), None);
}

/// A `StillMine` check that answers `mine` and counts how often it was asked.
fn check(
    mine: bool,
) -> (
    atrium_coordinator::StillMine,
    Arc<std::sync::atomic::AtomicUsize>,
) {
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = asked.clone();
    let check: atrium_coordinator::StillMine = Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { mine })
    });
    (check, asked)
}

#[tokio::test(start_paused = true)]
async fn a_lease_that_lapsed_in_an_outage_is_taken_back_when_the_store_agrees() {
    let (c, settings) = stalling();
    let lease = c.acquire("f1", &node("a")).await.unwrap();
    let keeper = LeaseKeeper::start(c.clone(), lease.clone(), settings.heartbeat);
    let (still_mine, asked) = check(true);
    keeper.retake_when(still_mine);

    // Renewals fail for longer than the lease: it lapses, and nobody takes the file.
    c.stalled.store(true, Ordering::SeqCst);
    sleep(settings.lease + settings.heartbeat * 2).await;
    assert_eq!(c.holder("f1").await.unwrap(), None);
    c.stalled.store(false, Ordering::SeqCst);
    sleep(settings.heartbeat * 2).await;

    assert!(!*keeper.lost().borrow(), "the room goes on");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the store was asked once");
    assert_eq!(c.holder("f1").await.unwrap(), Some(node("a")));
    assert!(keeper.lease().epoch > lease.epoch);
    // And it is kept alive from then on.
    sleep(settings.lease * 3).await;
    assert!(!*keeper.lost().borrow());
    assert!(matches!(
        c.acquire("f1", &node("b")).await,
        Err(CoordinatorError::Held { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_lease_is_lost_when_the_store_says_another_node_took_the_file() {
    let (c, settings) = stalling();
    let lease = c.acquire("f1", &node("a")).await.unwrap();
    let keeper = LeaseKeeper::start(c.clone(), lease, settings.heartbeat);
    let mut lost = keeper.lost();
    let (still_mine, _) = check(false);
    keeper.retake_when(still_mine);

    c.stalled.store(true, Ordering::SeqCst);
    sleep(settings.lease + settings.heartbeat * 2).await;
    c.stalled.store(false, Ordering::SeqCst);
    timeout(settings.heartbeat * 2, lost.wait_for(|l| *l))
        .await
        .expect("loss reported")
        .unwrap();
    // The lease it took back to ask was given back at once.
    assert_eq!(c.holder("f1").await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_lease_another_node_holds_is_lost_without_asking_the_store() {
    let (c, settings) = stalling();
    let lease = c.acquire("f1", &node("a")).await.unwrap();
    let keeper = LeaseKeeper::start(c.clone(), lease, settings.heartbeat);
    let mut lost = keeper.lost();
    let (still_mine, asked) = check(true);
    keeper.retake_when(still_mine);

    c.stalled.store(true, Ordering::SeqCst);
    sleep(settings.lease + settings.heartbeat).await;
    c.acquire("f1", &node("b")).await.unwrap();
    c.stalled.store(false, Ordering::SeqCst);
    timeout(settings.heartbeat * 2, lost.wait_for(|l| *l))
        .await
        .expect("loss reported")
        .unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    assert_eq!(c.holder("f1").await.unwrap(), Some(node("b")));
}
