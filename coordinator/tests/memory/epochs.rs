//! Epochs only grow, across holders and across a node's incarnations.

use atrium_coordinator::{Coordinator, CoordinatorError};
use tokio::time::advance;

use crate::{coordinator, joined, member, node};

#[tokio::test(start_paused = true)]
async fn a_node_that_joins_again_after_a_lapse_holds_nothing_from_before() {
    let (c, s) = coordinator();
    let a = node("a");
    joined(&c, &["a"]).await;
    let first = c.acquire("f1", &a).await.unwrap();
    advance(s.lease).await;
    assert_eq!(
        c.heartbeat(&a, false).await.unwrap_err(),
        CoordinatorError::Lost
    );
    let mut rejoins = c.rejoins();
    joined(&c, &["a"]).await;
    assert!(
        rejoins.has_changed().unwrap(),
        "a new incarnation is reported"
    );
    assert_eq!(c.holder("f1").await.unwrap(), None);
    assert_eq!(c.renew(&first).await.unwrap_err(), CoordinatorError::Lost);
    let again = c.acquire("f1", &a).await.unwrap();
    assert!(again.epoch > first.epoch, "taken afresh");
    // Joining again while live keeps the incarnation and its leases.
    rejoins.mark_unchanged();
    joined(&c, &["a"]).await;
    assert!(!rejoins.has_changed().unwrap());
    assert_eq!(c.acquire("f1", &a).await.unwrap().epoch, again.epoch);
}

#[tokio::test(start_paused = true)]
async fn epochs_only_grow() {
    let (c, s) = coordinator();
    let (a, b) = (node("a"), node("b"));
    let mut last = 0;
    for round in 0..6 {
        // One of the two is alive each round; the other's leases lapsed with it.
        let who = if round % 2 == 0 { &a } else { &b };
        c.join(member(who.as_str(), false)).await.unwrap();
        for file in ["f1", "f2"] {
            let lease = c.acquire(file, who).await.unwrap();
            assert!(lease.epoch > last, "round {round} {file}");
            last = lease.epoch;
            if round % 3 == 0 {
                c.release(&lease).await.unwrap();
            }
        }
        advance(s.lease).await;
    }
    // Taking again a lease one already holds keeps its epoch.
    c.join(member("a", false)).await.unwrap();
    let first = c.acquire("f3", &a).await.unwrap();
    advance(s.heartbeat).await;
    c.heartbeat(&a, false).await.unwrap();
    let again = c.acquire("f3", &a).await.unwrap();
    assert_eq!(again.epoch, first.epoch);
    assert!(again.expires_at > first.expires_at);
    assert!(c.renew(&first).await.is_ok(), "the same lease, still ours");
}
