//! Many files at once: rooms opening together, and rooms opening and closing all day.

use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::{Coordinator, NatsCoordinator};

use crate::fleet::{env_url, settings, Backend, Fleet};
use crate::support::{eventually, live, node};

/// Rooms that open together must not fail one another: 1,000 files taken at once by
/// three nodes (a dead node's files coming back) are all granted, none refused for
/// contention; each file's epoch still grows when it changes hands.
pub async fn files_opening_together_never_contend(backend: Backend) {
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
    for i in 0..1000usize {
        let (c, n) = (instances[i % 3].clone(), nodes[i % 3].clone());
        tasks.spawn(async move { (i, c.acquire(&format!("storm-{i}"), &n).await) });
    }
    let mut leases = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let (i, got) = done.expect("acquire task");
        let lease = got.unwrap_or_else(|e| panic!("file storm-{i} was refused: {e:?}"));
        leases.push((i, lease));
    }
    assert_eq!(leases.len(), 1000);
    // Released, then taken by another node: every file's epoch is higher than before.
    for (i, lease) in &leases {
        instances[i % 3].release(lease).await.unwrap();
    }
    for (i, lease) in leases.iter().step_by(80) {
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
