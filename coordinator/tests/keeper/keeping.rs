//! A keeper keeps its lease by the membership alone, rewrites its record every refresh, rides
//! out a short cut or a coordinator that does not answer, and releases the lease when done.

use std::time::Duration;

use atrium_coordinator::{Coordinator, CoordinatorError, CoordinatorSettings};
use tokio::time::sleep;

use crate::fleet::{a_alone_holds_f1, a_holds_f1, keeper, node, Fleet};

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
    assert_eq!(a.renewals(), 0, "nothing per file before the first refresh");

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
    let (_fleet, a, lease) = a_alone_holds_f1(settings).await;
    let _keeper = keeper(&a, lease, settings);
    sleep(Duration::from_secs(100)).await;
    // The first after 5 to 10 s, then every 10 s.
    let renewals = a.renewals();
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
    a.cut(true);
    sleep(settings.lease).await;
    for held in &taken {
        let lb = b.acquire(&held.file, &node("b")).await.unwrap();
        assert!(lb.epoch > held.epoch);
    }
}

#[tokio::test(start_paused = true)]
async fn a_short_cut_is_survived() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, lease) = a_alone_holds_f1(settings).await;
    let keeper = keeper(&a, lease.clone(), settings);

    // One missed heartbeat fits inside the lease: nothing is lost.
    a.cut(true);
    sleep(settings.heartbeat + Duration::from_millis(10)).await;
    a.cut(false);
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
    let (_fleet, a, lease) = a_alone_holds_f1(settings).await;
    let keeper = keeper(&a, lease.clone(), settings);
    a.cut(true);
    sleep(Duration::from_secs(15)).await;
    assert!(!*keeper.lost().borrow(), "an outage alone is not a loss");
    assert_eq!(a.renewals(), 0);
    a.cut(false);
    sleep(settings.heartbeat).await;
    assert_eq!(
        a.renewals(),
        1,
        "asked again within a heartbeat of coming back"
    );
    assert!(!*keeper.lost().borrow());
    assert_eq!(keeper.lease().epoch, lease.epoch);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_keeper_releases_the_lease() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, lease) = a_alone_holds_f1(settings).await;
    drop(keeper(&a, lease, settings));
    sleep(Duration::from_millis(1)).await;
    assert_eq!(a.holder("f1").await.unwrap(), None);
}
