//! One contract, three backends: every test below runs against the in-memory coordinator,
//! a real `nats-server -js` and a real `redis-server`, in real time with 600 ms leases.
//!
//! The networked runs need the servers: `scripts/services.sh start && source .services/env`
//! (it sets ATRIUM_TEST_NATS_URL and ATRIUM_TEST_REDIS_URL). Without them these tests fail,
//! never pass silently. Each test uses its own namespace, so they run in parallel.

use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_coordinator::{
    Coordinator, CoordinatorError, CoordinatorEvent, CoordinatorSettings, Member,
    MemoryCoordinator, NatsCoordinator, NodeId, RedisCoordinator,
};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

const LEASE: Duration = Duration::from_millis(600);
/// Long enough for any backend to notice a lapse (NATS expires up to ~250 ms late).
const LAPSE: Duration = Duration::from_millis(1_500);

#[derive(Clone, Copy)]
enum Backend {
    Memory,
    Nats,
    Redis,
}

fn settings() -> CoordinatorSettings {
    CoordinatorSettings::from_lease(LEASE)
}

fn env_url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is unset: run `scripts/services.sh start && source .services/env` first")
    })
}

/// Instances of one coordinator namespace, as separate processes of a fleet would hold them.
struct Fleet {
    backend: Backend,
    ns: String,
    memory: Option<Arc<MemoryCoordinator>>,
    nats: Vec<Arc<NatsCoordinator>>,
    redis: Vec<Arc<RedisCoordinator>>,
}

impl Fleet {
    fn new(backend: Backend) -> Self {
        Self {
            backend,
            ns: format!("t{:016x}", rand::random::<u64>()),
            memory: None,
            nats: Vec::new(),
            redis: Vec::new(),
        }
    }

    /// A coordinator instance; for the in-memory backend, the same one every time.
    async fn instance(&mut self) -> Arc<dyn Coordinator> {
        match self.backend {
            Backend::Memory => self
                .memory
                .get_or_insert_with(|| Arc::new(MemoryCoordinator::new(settings())))
                .clone(),
            Backend::Nats => {
                let url = env_url("ATRIUM_TEST_NATS_URL");
                let c = NatsCoordinator::connect(&url, &self.ns, settings())
                    .await
                    .expect("connect to NATS");
                self.nats.push(Arc::new(c));
                self.nats.last().unwrap().clone()
            }
            Backend::Redis => {
                let url = env_url("ATRIUM_TEST_REDIS_URL");
                let c = RedisCoordinator::connect(&url, &self.ns, settings())
                    .await
                    .expect("connect to Redis");
                self.redis.push(Arc::new(c));
                self.redis.last().unwrap().clone()
            }
        }
    }

    async fn cleanup(self) {
        if let Some(c) = self.nats.first() {
            c.destroy().await.unwrap();
        }
        if let Some(c) = self.redis.first() {
            c.destroy().await.unwrap();
        }
    }
}

fn node(id: &str) -> NodeId {
    NodeId::parse(id).unwrap()
}

fn member(id: &str, draining: bool) -> Member {
    Member {
        id: node(id),
        address: format!("{id}.internal:8080"),
        draining,
    }
}

/// Heartbeats `id` every heartbeat interval until dropped.
struct Beating(JoinHandle<()>);

impl Drop for Beating {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn beat(c: &Arc<dyn Coordinator>, id: &str) -> Beating {
    beat_as(c, id, false)
}

fn beat_as(c: &Arc<dyn Coordinator>, id: &str, draining: bool) -> Beating {
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
async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F)
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

async fn ids(c: &Arc<dyn Coordinator>) -> Vec<String> {
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
async fn next_event<T>(
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
async fn live(c: &Arc<dyn Coordinator>, id: &str) -> Beating {
    c.join(member(id, false)).await.unwrap();
    beat(c, id)
}

async fn leases_hang_on_their_holders_membership(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let (a, b) = (node("a"), node("b"));
    let (a_beats, _b) = (live(&c1, "a").await, live(&c2, "b").await);
    let file = "docs/plan v1.txt";

    let la = c1.acquire(file, &a).await.unwrap();
    assert_eq!(
        c2.acquire(file, &b).await.unwrap_err(),
        CoordinatorError::Held { holder: a.clone() }
    );
    assert_eq!(c2.holder(file).await.unwrap(), Some(a.clone()));
    // Held across many lease times with no renewal: the holder's heartbeats keep it.
    tokio::time::sleep(LEASE * 3).await;
    assert!(c2.acquire(file, &b).await.is_err(), "held while a lives");
    // Renewing confirms it, and acquiring again while ours keeps the epoch.
    assert_eq!(c1.renew(&la).await.unwrap().epoch, la.epoch);
    assert_eq!(c1.acquire(file, &a).await.unwrap().epoch, la.epoch);

    drop(a_beats);
    eventually(LAPSE, "the lease lapsed with its holder", || async {
        c2.holder(file).await.unwrap().is_none()
    })
    .await;
    let lb = c2.acquire(file, &b).await.unwrap();
    assert!(lb.epoch > la.epoch, "{} > {}", lb.epoch, la.epoch);
    assert_eq!(c1.renew(&la).await.unwrap_err(), CoordinatorError::Lost);
    assert_eq!(c1.holder(file).await.unwrap(), Some(b.clone()));
    // A stale release must not free the successor's lease.
    c1.release(&la).await.unwrap();
    assert_eq!(c1.holder(file).await.unwrap(), Some(b));
    fleet.cleanup().await;
}

/// A node that dies holding many files frees them all when its membership lapses; when it
/// comes back it is told it began again, and holds none of them.
async fn a_dead_holders_files_are_all_free_when_it_lapses(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let (a, b) = (node("a"), node("b"));
    let (a_beats, _b) = (live(&c1, "a").await, live(&c2, "b").await);
    let mut taken = Vec::new();
    for i in 0..40 {
        taken.push(c1.acquire(&format!("dead-{i}"), &a).await.unwrap());
    }
    drop(a_beats);
    eventually(LAPSE, "a's leases lapsed", || async {
        c2.holder("dead-0").await.unwrap().is_none()
    })
    .await;
    for held in &taken {
        let lb = c2
            .acquire(&held.file, &b)
            .await
            .unwrap_or_else(|e| panic!("{} still held after a lapsed: {e:?}", held.file));
        assert!(lb.epoch > held.epoch);
    }
    let mut rejoins = c1.rejoins();
    rejoins.mark_unchanged();
    assert_eq!(
        c1.heartbeat(&a, false).await.unwrap_err(),
        CoordinatorError::Lost
    );
    c1.join(member("a", false)).await.unwrap();
    assert!(
        rejoins.has_changed().unwrap(),
        "a new incarnation is reported"
    );
    assert_eq!(
        c1.renew(&taken[0]).await.unwrap_err(),
        CoordinatorError::Lost
    );
    assert_eq!(
        c1.acquire("dead-0", &a).await.unwrap_err(),
        CoordinatorError::Held { holder: b }
    );
    fleet.cleanup().await;
}

async fn release_lets_others_in_at_once(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let (a, b) = (node("a"), node("b"));
    let (_a, _b) = (live(&c1, "a").await, live(&c2, "b").await);
    assert_eq!(
        c1.acquire("f", &node("stranger")).await.unwrap_err(),
        CoordinatorError::Lost,
        "only members take leases"
    );
    let la = c1.acquire("f", &a).await.unwrap();
    c1.release(&la).await.unwrap();
    let lb = c2.acquire("f", &b).await.unwrap();
    assert!(lb.epoch > la.epoch);
    assert_eq!(c1.renew(&la).await.unwrap_err(), CoordinatorError::Lost);
    // The holder renews through another instance too (another process of the same node).
    let lb = c1.renew(&lb).await.unwrap();
    c2.release(&lb).await.unwrap();
    assert_eq!(c1.holder("f").await.unwrap(), None);
    let la2 = c1.acquire("f", &a).await.unwrap();
    assert!(la2.epoch > lb.epoch);
    fleet.cleanup().await;
}

/// Rooms that open together must not fail one another: 600 files taken at once by
/// three nodes (a dead node's files coming back) are all granted, none refused for
/// contention; each file's epoch still grows when it changes hands.
async fn files_opening_together_never_contend(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let instances = [
        fleet.instance().await,
        fleet.instance().await,
        fleet.instance().await,
    ];
    let nodes = [node("a"), node("b"), node("c")];
    let mut beats = Vec::new();
    for (c, n) in instances.iter().zip(&nodes) {
        beats.push(live(c, n.as_str()).await);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..600usize {
        let (c, n) = (instances[i % 3].clone(), nodes[i % 3].clone());
        tasks.spawn(async move { (i, c.acquire(&format!("storm-{i}"), &n).await) });
    }
    let mut leases = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let (i, got) = done.expect("acquire task");
        let lease = got.unwrap_or_else(|e| panic!("file storm-{i} was refused: {e:?}"));
        leases.push((i, lease));
    }
    assert_eq!(leases.len(), 600);
    // Released, then taken by another node: every file's epoch is higher than before.
    for (i, lease) in &leases {
        instances[i % 3].release(lease).await.unwrap();
    }
    for (i, lease) in leases.iter().step_by(50) {
        let other = (i + 1) % 3;
        let again = instances[other]
            .acquire(&lease.file, &nodes[other])
            .await
            .unwrap();
        assert!(
            again.epoch > lease.epoch,
            "{}: {} > {}",
            lease.file,
            again.epoch,
            lease.epoch
        );
    }
    fleet.cleanup().await;
}

async fn membership_lapses_and_carries_draining(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    c1.join(member("a", false)).await.unwrap();
    c2.join(member("b", false)).await.unwrap();
    let a_beats = beat(&c1, "a");
    for c in [&c1, &c2] {
        eventually(LEASE, "both members seen", || async {
            ids(c).await == ["a", "b"]
        })
        .await;
    }

    drop(a_beats);
    c1.heartbeat(&node("a"), true).await.unwrap();
    let _a = beat_as(&c1, "a", true);
    let draining = || async {
        let seen = c2.members().await.unwrap();
        seen.iter().any(|m| m.id.as_str() == "a" && m.draining)
    };
    eventually(LEASE, "a seen draining", draining).await;
    let seen = c2.members().await.unwrap();
    let a = seen.iter().find(|m| m.id.as_str() == "a").unwrap();
    assert_eq!(a.address, "a.internal:8080");

    for c in [&c1, &c2] {
        eventually(LAPSE, "b lapsed", || async { ids(c).await == ["a"] }).await;
    }
    assert_eq!(
        c2.heartbeat(&node("b"), false).await.unwrap_err(),
        CoordinatorError::Lost
    );
    c1.leave(&node("a")).await.unwrap();
    eventually(LEASE, "a gone at once", || async {
        ids(&c2).await.is_empty()
    })
    .await;
    fleet.cleanup().await;
}

async fn counter_slots_vanish_with_their_node(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let (a, b) = (node("a"), node("b"));
    c1.join(member("a", false)).await.unwrap();
    c2.join(member("b", false)).await.unwrap();
    let _a = beat(&c1, "a");
    for c in [&c1, &c2] {
        eventually(LEASE, "both members seen", || async {
            ids(c).await == ["a", "b"]
        })
        .await;
    }

    let acct = "sockets:acct 1";
    assert!(c1.count_up(acct, &a, 3).await.unwrap());
    assert!(c1.count_up(acct, &a, 3).await.unwrap());
    assert!(c2.count_up(acct, &b, 3).await.unwrap());
    assert!(!c1.count_up(acct, &a, 3).await.unwrap(), "at the limit");
    assert_eq!(c2.count(acct).await.unwrap(), 3);
    c1.count_down(acct, &a).await.unwrap();
    assert_eq!(c1.count(acct).await.unwrap(), 2);
    assert!(c1.count_up(acct, &a, 3).await.unwrap());

    // b stops heartbeating: its slot stops counting.
    eventually(LAPSE, "b's slot stops counting", || async {
        c1.count(acct).await.unwrap() == 2
    })
    .await;
    assert!(c1.count_up(acct, &a, 3).await.unwrap());
    assert_eq!(
        c2.count_up(acct, &b, 9).await.unwrap_err(),
        CoordinatorError::Lost
    );
    // Coming back, b starts with no slots.
    c2.join(member("b", false)).await.unwrap();
    eventually(LEASE, "b back", || async { ids(&c1).await == ["a", "b"] }).await;
    assert_eq!(c1.count(acct).await.unwrap(), 3);
    c2.count_down(acct, &b).await.unwrap();
    assert_eq!(
        c1.count(acct).await.unwrap(),
        3,
        "b had nothing to give back"
    );
    for _ in 0..3 {
        c1.count_down(acct, &a).await.unwrap();
    }
    assert_eq!(c2.count(acct).await.unwrap(), 0);
    assert!(!c1.count_up("other", &a, 0).await.unwrap());
    fleet.cleanup().await;
}

async fn watchers_see_a_lapse_within_the_lease_time(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let mut rx = c2.watch().await.unwrap();
    c1.join(member("a", false)).await.unwrap();
    // b's join is its last heartbeat: its lease starts no earlier than this instant, so
    // a lapse reported less than a lease time after it would be early, however slowly
    // the events below arrive.
    let b_joining = Instant::now();
    c1.join(member("b", false)).await.unwrap();
    let _a = beat(&c1, "a");
    next_event(&mut rx, LAPSE, |e| match e {
        CoordinatorEvent::MembersChanged(m) if m.len() == 2 => Some(()),
        _ => None,
    })
    .await;
    // It must be reported gone soon after one lease time.
    let members = next_event(&mut rx, LAPSE + LEASE, |e| match e {
        CoordinatorEvent::MembersChanged(m) if m.len() == 1 => Some(m.clone()),
        _ => None,
    })
    .await;
    assert_eq!(members[0].id, node("a"));
    let took = b_joining.elapsed();
    assert!(
        took >= LEASE,
        "reported gone {took:?} after its join, within the lease"
    );
    println!("lapse seen by a watcher after {took:?} (lease {LEASE:?})");
    fleet.cleanup().await;
}

async fn watchers_see_leases_and_messages(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let mut rx = c2.watch().await.unwrap();
    let _a = live(&c1, "a").await;
    let la = c1.acquire("doc.1", &node("a")).await.unwrap();
    let holder = next_event(&mut rx, Duration::from_secs(1), |e| match e {
        CoordinatorEvent::LeaseChanged { file, holder } if file == "doc.1" => Some(holder.clone()),
        _ => None,
    })
    .await;
    assert_eq!(holder, Some(node("a")));
    c1.release(&la).await.unwrap();
    let holder = next_event(&mut rx, Duration::from_secs(1), |e| match e {
        CoordinatorEvent::LeaseChanged { file, holder } if file == "doc.1" => Some(holder.clone()),
        _ => None,
    })
    .await;
    assert_eq!(holder, None);

    let sent = Instant::now();
    c1.publish("signed-out", b"token-hash".to_vec())
        .await
        .unwrap();
    let payload = next_event(&mut rx, Duration::from_secs(1), |e| match e {
        CoordinatorEvent::Message { topic, payload } if topic == "signed-out" => {
            Some(payload.clone())
        }
        _ => None,
    })
    .await;
    assert_eq!(payload, b"token-hash");
    println!("message delivered after {:?}", sent.elapsed());
    fleet.cleanup().await;
}

macro_rules! contract {
    ($backend:ident, $module:ident) => {
        mod $module {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn leases_hang_on_their_holders_membership() {
                super::leases_hang_on_their_holders_membership(Backend::$backend).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_dead_holders_files_are_all_free_when_it_lapses() {
                super::a_dead_holders_files_are_all_free_when_it_lapses(Backend::$backend).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn release_lets_others_in_at_once() {
                super::release_lets_others_in_at_once(Backend::$backend).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn files_opening_together_never_contend() {
                super::files_opening_together_never_contend(Backend::$backend).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn membership_lapses_and_carries_draining() {
                super::membership_lapses_and_carries_draining(Backend::$backend).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn counter_slots_vanish_with_their_node() {
                super::counter_slots_vanish_with_their_node(Backend::$backend).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn watchers_see_a_lapse_within_the_lease_time() {
                super::watchers_see_a_lapse_within_the_lease_time(Backend::$backend).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn watchers_see_leases_and_messages() {
                super::watchers_see_leases_and_messages(Backend::$backend).await
            }
        }
    };
}

contract!(Memory, memory);
contract!(Nats, nats);
contract!(Redis, redis);

/// Lease records live for hours (leases hang on membership, the record's lifetime only clears
/// dead holders' files), so a released lease must not leave a marker for that long: rooms that
/// open and close all day would fill the bucket. What release leaves expires within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_released_leases_leave_nothing_behind() {
    let url = env_url("ATRIUM_TEST_NATS_URL");
    let ns = format!("t{:016x}", rand::random::<u64>());
    let c = Arc::new(
        NatsCoordinator::connect(&url, &ns, settings())
            .await
            .expect("connect to NATS"),
    );
    let dynamic: Arc<dyn Coordinator> = c.clone();
    let _a = live(&dynamic, "a").await;
    for i in 0..50 {
        let lease = c.acquire(&format!("brief-{i}"), &node("a")).await.unwrap();
        c.release(&lease).await.unwrap();
    }
    eventually(Duration::from_secs(10), "the markers expired", || async {
        c.lease_bucket_messages().await.unwrap() == 0
    })
    .await;
    c.destroy().await.unwrap();
}
