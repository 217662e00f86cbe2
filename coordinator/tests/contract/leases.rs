//! Leases hang on their holders' membership, and release lets a successor in at once.

use atrium_coordinator::CoordinatorError;

use crate::fleet::{Backend, LAPSE, LEASE};
use crate::support::{a_and_b_live, eventually, member, node};

pub async fn leases_hang_on_their_holders_membership(backend: Backend) {
    let (fleet, [c1, c2], [a_beats, _b]) = a_and_b_live(backend).await;
    let (a, b) = (node("a"), node("b"));
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
pub async fn a_dead_holders_files_are_all_free_when_it_lapses(backend: Backend) {
    let (fleet, [c1, c2], [a_beats, _b]) = a_and_b_live(backend).await;
    let (a, b) = (node("a"), node("b"));
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

pub async fn release_lets_others_in_at_once(backend: Backend) {
    let (fleet, [c1, c2], [_a, _b]) = a_and_b_live(backend).await;
    let (a, b) = (node("a"), node("b"));
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
