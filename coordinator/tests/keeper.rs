//! LeaseKeeper over the in-memory backend, with Tokio's clock paused so sleeps are instant.
//!
//! Each test runs its nodes' heartbeats the way a node does (join again when the membership
//! was lost), and cuts a node off from the coordinator to play a pause or a partition.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::{
    Coordinator, CoordinatorError, CoordinatorEvent, CoordinatorSettings, Lease, LeaseKeeper,
    Member, MemoryCoordinator, NodeId, StillMine,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};

fn node(id: &str) -> NodeId {
    NodeId::parse(id).unwrap()
}

fn member(id: &str) -> Member {
    Member {
        id: node(id),
        address: format!("{id}.internal:8080"),
        draining: false,
    }
}

/// The memory backend as one node's process sees it: while `cut_off`, every call fails as
/// if the coordinator could not be reached. Counts the renewals that went through.
struct Link {
    inner: Arc<MemoryCoordinator>,
    cut_off: AtomicBool,
    renewals: AtomicUsize,
}

impl Link {
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
}

/// A fleet of nodes sharing one in-memory coordinator, each through its own `Link`, each
/// heartbeating in the background until the fleet is dropped.
struct Fleet {
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
    fn new(settings: CoordinatorSettings) -> Self {
        Self {
            settings,
            shared: Arc::new(MemoryCoordinator::new(settings)),
            beats: Vec::new(),
        }
    }

    /// Joins `id` and keeps it alive as a node does: a lost membership is joined again.
    async fn node(&mut self, id: &str) -> Arc<Link> {
        let link = Arc::new(Link {
            inner: self.shared.clone(),
            cut_off: AtomicBool::new(false),
            renewals: AtomicUsize::new(0),
        });
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

fn keeper(link: &Arc<Link>, lease: Lease, settings: CoordinatorSettings) -> LeaseKeeper {
    LeaseKeeper::start(link.clone(), lease, settings)
}

/// A fleet of `a` and `b`, with `a` holding "f1" and a keeper watching over it.
async fn a_holds_f1(
    settings: CoordinatorSettings,
) -> (Fleet, Arc<Link>, Arc<Link>, Lease, LeaseKeeper) {
    let mut fleet = Fleet::new(settings);
    let (a, b) = (fleet.node("a").await, fleet.node("b").await);
    let lease = a.acquire("f1", &node("a")).await.unwrap();
    let keeper = keeper(&a, lease.clone(), settings);
    (fleet, a, b, lease, keeper)
}

/// A `StillMine` check that answers `mine` and counts how often it was asked.
fn check(mine: bool) -> (StillMine, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let check: StillMine = Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { mine })
    });
    (check, asked)
}

#[tokio::test(start_paused = true)]
async fn a_lease_is_kept_by_the_membership_alone_and_released_at_once() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, lease, keeper) = a_holds_f1(settings).await;

    sleep(settings.lease * 20).await;
    assert!(matches!(
        b.acquire("f1", &node("b")).await,
        Err(CoordinatorError::Held { .. })
    ));
    assert!(!*keeper.lost().borrow());
    assert_eq!(keeper.lease().epoch, lease.epoch);
    assert_eq!(
        a.renewals.load(Ordering::SeqCst),
        0,
        "nothing per file before the first refresh"
    );

    keeper.release().await.unwrap();
    let lb = b.acquire("f1", &node("b")).await.unwrap();
    assert!(lb.epoch > lease.epoch);
}

#[tokio::test(start_paused = true)]
async fn the_record_is_rewritten_every_refresh() {
    let settings = CoordinatorSettings {
        lease_refresh: Duration::from_secs(10),
        ..CoordinatorSettings::default()
    };
    let mut fleet = Fleet::new(settings);
    let a = fleet.node("a").await;
    let lease = a.acquire("f1", &node("a")).await.unwrap();
    let _keeper = keeper(&a, lease, settings);
    sleep(Duration::from_secs(100)).await;
    // The first after 5 to 10 s, then every 10 s.
    let renewals = a.renewals.load(Ordering::SeqCst);
    assert!((9..=10).contains(&renewals), "{renewals} rewrites in 100 s");
}

#[tokio::test(start_paused = true)]
async fn a_dead_holders_leases_are_all_free_when_its_membership_lapses() {
    let settings = CoordinatorSettings::default();
    let mut fleet = Fleet::new(settings);
    let (a, b) = (fleet.node("a").await, fleet.node("b").await);
    let mut taken = Vec::new();
    for i in 0..100 {
        taken.push(a.acquire(&format!("f{i}"), &node("a")).await.unwrap());
    }
    a.cut_off.store(true, Ordering::SeqCst);
    sleep(settings.lease).await;
    for held in &taken {
        let lb = b.acquire(&held.file, &node("b")).await.unwrap();
        assert!(lb.epoch > held.epoch);
    }
}

#[tokio::test(start_paused = true)]
async fn reports_loss_when_another_node_took_the_file_while_it_was_cut_off() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, lease, keeper) = a_holds_f1(settings).await;
    let mut lost = keeper.lost();

    a.cut_off.store(true, Ordering::SeqCst);
    sleep(settings.lease + settings.heartbeat).await;
    // Being cut off is not a loss by itself: the holder goes on under its store epoch.
    assert!(!*lost.borrow());
    let lb = b.acquire("f1", &node("b")).await.unwrap();
    assert!(lb.epoch > lease.epoch);

    // Back in touch, its heartbeat finds the membership gone and joins again; the keeper
    // checks at that rejoin.
    a.cut_off.store(false, Ordering::SeqCst);
    timeout(settings.heartbeat * 2, lost.wait_for(|l| *l))
        .await
        .expect("loss reported within two heartbeats")
        .unwrap();

    // Releasing the lost lease is harmless to the new holder.
    keeper.release().await.unwrap();
    assert_eq!(b.holder("f1").await.unwrap(), Some(node("b")));
}

#[tokio::test(start_paused = true)]
async fn a_short_cut_is_survived() {
    let settings = CoordinatorSettings::default();
    let mut fleet = Fleet::new(settings);
    let a = fleet.node("a").await;
    let lease = a.acquire("f1", &node("a")).await.unwrap();
    let keeper = keeper(&a, lease.clone(), settings);

    // One missed heartbeat fits inside the lease: nothing is lost.
    a.cut_off.store(true, Ordering::SeqCst);
    sleep(settings.heartbeat + Duration::from_millis(10)).await;
    a.cut_off.store(false, Ordering::SeqCst);
    sleep(settings.lease * 3).await;
    assert!(!*keeper.lost().borrow());
    assert_eq!(a.holder("f1").await.unwrap(), Some(node("a")));
    assert_eq!(keeper.lease().epoch, lease.epoch);
}

#[tokio::test(start_paused = true)]
async fn a_coordinator_that_does_not_answer_is_asked_again_every_heartbeat() {
    // Long enough a lease that the membership outlives the cut; refreshes fall inside it.
    let settings = CoordinatorSettings {
        lease: Duration::from_secs(30),
        heartbeat: Duration::from_secs(10),
        lease_refresh: Duration::from_secs(4),
    };
    let mut fleet = Fleet::new(settings);
    let a = fleet.node("a").await;
    let lease = a.acquire("f1", &node("a")).await.unwrap();
    let keeper = keeper(&a, lease.clone(), settings);
    a.cut_off.store(true, Ordering::SeqCst);
    sleep(Duration::from_secs(15)).await;
    assert!(!*keeper.lost().borrow(), "an outage alone is not a loss");
    assert_eq!(a.renewals.load(Ordering::SeqCst), 0);
    a.cut_off.store(false, Ordering::SeqCst);
    sleep(settings.heartbeat).await;
    assert_eq!(
        a.renewals.load(Ordering::SeqCst),
        1,
        "asked again within a heartbeat of coming back"
    );
    assert!(!*keeper.lost().borrow());
    assert_eq!(keeper.lease().epoch, lease.epoch);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_keeper_releases_the_lease() {
    let settings = CoordinatorSettings::default();
    let mut fleet = Fleet::new(settings);
    let a = fleet.node("a").await;
    let lease = a.acquire("f1", &node("a")).await.unwrap();
    drop(keeper(&a, lease, settings));
    sleep(Duration::from_millis(1)).await;
    assert_eq!(a.holder("f1").await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn a_lease_that_lapsed_in_an_outage_is_taken_back_when_the_store_agrees() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, lease, keeper) = a_holds_f1(settings).await;
    let (still_mine, asked) = check(true);
    keeper.retake_when(still_mine);

    // Cut off for longer than the lease: the membership lapses, and nobody takes the file.
    a.cut_off.store(true, Ordering::SeqCst);
    sleep(settings.lease + settings.heartbeat * 2).await;
    assert_eq!(b.holder("f1").await.unwrap(), None);
    a.cut_off.store(false, Ordering::SeqCst);
    sleep(settings.heartbeat * 2).await;

    assert!(!*keeper.lost().borrow(), "the room goes on");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the store was asked once");
    assert_eq!(b.holder("f1").await.unwrap(), Some(node("a")));
    assert!(keeper.lease().epoch > lease.epoch);
    // And it is held from then on.
    sleep(settings.lease * 3).await;
    assert!(!*keeper.lost().borrow());
    assert!(matches!(
        b.acquire("f1", &node("b")).await,
        Err(CoordinatorError::Held { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_lease_is_lost_when_the_store_says_another_node_took_the_file() {
    let settings = CoordinatorSettings::default();
    let mut fleet = Fleet::new(settings);
    let a = fleet.node("a").await;
    let lease = a.acquire("f1", &node("a")).await.unwrap();
    let keeper = keeper(&a, lease, settings);
    let mut lost = keeper.lost();
    let (still_mine, _) = check(false);
    keeper.retake_when(still_mine);

    a.cut_off.store(true, Ordering::SeqCst);
    sleep(settings.lease + settings.heartbeat * 2).await;
    a.cut_off.store(false, Ordering::SeqCst);
    timeout(settings.heartbeat * 2, lost.wait_for(|l| *l))
        .await
        .expect("loss reported")
        .unwrap();
    // The lease it took back to ask was given back at once.
    assert_eq!(a.holder("f1").await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_lease_another_node_holds_is_lost_without_asking_the_store() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, _, keeper) = a_holds_f1(settings).await;
    let mut lost = keeper.lost();
    let (still_mine, asked) = check(true);
    keeper.retake_when(still_mine);

    a.cut_off.store(true, Ordering::SeqCst);
    sleep(settings.lease + settings.heartbeat).await;
    b.acquire("f1", &node("b")).await.unwrap();
    a.cut_off.store(false, Ordering::SeqCst);
    timeout(settings.heartbeat * 2, lost.wait_for(|l| *l))
        .await
        .expect("loss reported")
        .unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    assert_eq!(b.holder("f1").await.unwrap(), Some(node("b")));
}

#[tokio::test(start_paused = true)]
async fn a_lease_taken_from_under_a_live_holder_is_lost_once_checked() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, lease, keeper) = a_holds_f1(settings).await;
    let mut lost = keeper.lost();
    let (still_mine, _) = check(true);
    keeper.retake_when(still_mine);
    // A stale release frees the lease while a lives (a room of a's that ended raced a new
    // one); b takes the file.
    a.release(&lease).await.unwrap();
    b.acquire("f1", &node("b")).await.unwrap();
    // Nothing tells the keeper on its own before the next refresh...
    sleep(settings.lease * 3).await;
    assert!(!*lost.borrow());
    // ...but a check (the node heard the file changed hands) finds it at once.
    keeper.check_now();
    timeout(Duration::from_millis(10), lost.wait_for(|l| *l))
        .await
        .expect("loss reported at once")
        .unwrap();
}
