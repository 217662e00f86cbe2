//! Leases: held while the holder's membership lives, renewed and released only while ours.

use atrium_coordinator::{Coordinator, CoordinatorError};
use tokio::time::advance;

use crate::{a_and_b_joined, coordinator, joined, node, MS};

#[tokio::test(start_paused = true)]
async fn a_lease_is_held_while_its_holder_lives_and_free_when_it_lapses() {
    let (c, s, a, b) = a_and_b_joined().await;
    let la = c.acquire("f1", &a).await.unwrap();
    assert_eq!(la.node, a);
    assert_eq!(
        c.acquire("f1", &b).await.unwrap_err(),
        CoordinatorError::Held { holder: a.clone() }
    );
    assert_eq!(c.holder("f1").await.unwrap(), Some(a.clone()));

    // Both heartbeat for many lease times, with no renewal: a keeps the file.
    for _ in 0..30 {
        advance(s.heartbeat).await;
        c.heartbeat(&a, false).await.unwrap();
        c.heartbeat(&b, false).await.unwrap();
    }
    assert!(
        c.acquire("f1", &b).await.is_err(),
        "still held by its live holder"
    );

    // a falls silent: just before its membership lapses the lease is held, then it is free.
    advance(s.heartbeat).await;
    c.heartbeat(&b, false).await.unwrap();
    advance(s.lease - s.heartbeat - MS).await;
    assert!(
        c.acquire("f1", &b).await.is_err(),
        "held just before the lapse"
    );
    advance(MS).await;
    assert_eq!(c.holder("f1").await.unwrap(), None);
    let lb = c.acquire("f1", &b).await.unwrap();
    assert!(lb.epoch > la.epoch);
    assert_eq!(c.renew(&la).await.unwrap_err(), CoordinatorError::Lost);
    assert_eq!(c.holder("f1").await.unwrap(), Some(b));
}

#[tokio::test(start_paused = true)]
async fn only_live_members_take_leases() {
    let (c, _) = coordinator();
    assert_eq!(
        c.acquire("f1", &node("a")).await.unwrap_err(),
        CoordinatorError::Lost
    );
    joined(&c, &["a"]).await;
    c.acquire("f1", &node("a")).await.unwrap();
    c.leave(&node("a")).await.unwrap();
    assert_eq!(
        c.holder("f1").await.unwrap(),
        None,
        "leaving frees every lease"
    );
}

#[tokio::test(start_paused = true)]
async fn renewing_confirms_a_lease_and_keeps_its_epoch() {
    let (c, s, a, b) = a_and_b_joined().await;
    let mut lease = c.acquire("f1", &a).await.unwrap();
    for _ in 0..10 {
        advance(s.heartbeat).await;
        c.heartbeat(&a, false).await.unwrap();
        c.heartbeat(&b, false).await.unwrap();
        let renewed = c.renew(&lease).await.unwrap();
        assert_eq!(renewed.epoch, lease.epoch);
        assert!(renewed.expires_at > lease.expires_at);
        lease = renewed;
    }
    assert!(matches!(
        c.acquire("f1", &b).await,
        Err(CoordinatorError::Held { .. })
    ));
    // A renewal after the holder's membership lapsed is refused even though nobody took
    // the file.
    advance(s.lease).await;
    assert_eq!(c.renew(&lease).await.unwrap_err(), CoordinatorError::Lost);
}

#[tokio::test(start_paused = true)]
async fn release_lets_a_successor_in_at_once() {
    let (c, _, a, b) = a_and_b_joined().await;
    let la = c.acquire("f1", &a).await.unwrap();
    c.release(&la).await.unwrap();
    assert_eq!(c.holder("f1").await.unwrap(), None);
    let lb = c.acquire("f1", &b).await.unwrap();
    assert!(lb.epoch > la.epoch);

    // Releasing a stale lease again is Ok and must not touch the successor's.
    c.release(&la).await.unwrap();
    assert_eq!(c.holder("f1").await.unwrap(), Some(b.clone()));
    c.release(&lb).await.unwrap();
    let la2 = c.acquire("f1", &a).await.unwrap();
    c.release(&lb).await.unwrap();
    assert_eq!(c.holder("f1").await.unwrap(), Some(a));
    assert!(la2.epoch > lb.epoch);
}
