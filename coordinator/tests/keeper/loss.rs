//! When a keeper reports its lease lost, and when it takes a lapsed lease back because the
//! document store says the file is still its holder's.

use std::sync::atomic::Ordering;
use std::time::Duration;

use atrium_coordinator::{Coordinator, CoordinatorError, CoordinatorSettings};
use tokio::time::sleep;

use crate::fleet::{a_alone_holds_f1, a_holds_f1, keeper, loss_reported, node, retake_asking};

#[tokio::test(start_paused = true)]
async fn reports_loss_when_another_node_took_the_file_while_it_was_cut_off() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, lease, keeper) = a_holds_f1(settings).await;
    let mut lost = keeper.lost();

    a.cut(true);
    sleep(settings.lease + settings.heartbeat).await;
    // Being cut off is not a loss by itself: the holder goes on under its store epoch.
    assert!(!*lost.borrow());
    let lb = b.acquire("f1", &node("b")).await.unwrap();
    assert!(lb.epoch > lease.epoch);

    // Back in touch, its heartbeat finds the membership gone and joins again; the keeper
    // checks at that rejoin.
    a.cut(false);
    loss_reported(
        &mut lost,
        settings.heartbeat * 2,
        "loss reported within two heartbeats",
    )
    .await;

    // Releasing the lost lease is harmless to the new holder.
    keeper.release().await.unwrap();
    assert_eq!(b.holder("f1").await.unwrap(), Some(node("b")));
}

#[tokio::test(start_paused = true)]
async fn a_lease_that_lapsed_in_an_outage_is_taken_back_when_the_store_agrees() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, lease, keeper) = a_holds_f1(settings).await;
    let asked = retake_asking(&keeper, true);

    // Cut off for longer than the lease: the membership lapses, and nobody takes the file.
    a.cut(true);
    sleep(settings.lease + settings.heartbeat * 2).await;
    assert_eq!(b.holder("f1").await.unwrap(), None);
    a.cut(false);
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
    let (_fleet, a, lease) = a_alone_holds_f1(settings).await;
    let keeper = keeper(&a, lease, settings);
    let mut lost = keeper.lost();
    retake_asking(&keeper, false);

    a.cut(true);
    sleep(settings.lease + settings.heartbeat * 2).await;
    a.cut(false);
    loss_reported(&mut lost, settings.heartbeat * 2, "loss reported").await;
    // The lease it took back to ask was given back at once.
    assert_eq!(a.holder("f1").await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_lease_another_node_holds_is_lost_without_asking_the_store() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, _, keeper) = a_holds_f1(settings).await;
    let mut lost = keeper.lost();
    let asked = retake_asking(&keeper, true);

    a.cut(true);
    sleep(settings.lease + settings.heartbeat).await;
    b.acquire("f1", &node("b")).await.unwrap();
    a.cut(false);
    loss_reported(&mut lost, settings.heartbeat * 2, "loss reported").await;
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    assert_eq!(b.holder("f1").await.unwrap(), Some(node("b")));
}

#[tokio::test(start_paused = true)]
async fn a_lease_taken_from_under_a_live_holder_is_lost_once_checked() {
    let settings = CoordinatorSettings::default();
    let (_fleet, a, b, lease, keeper) = a_holds_f1(settings).await;
    let mut lost = keeper.lost();
    retake_asking(&keeper, true);
    // A stale release frees the lease while a lives (a room of a's that ended raced a new
    // one); b takes the file.
    a.release(&lease).await.unwrap();
    b.acquire("f1", &node("b")).await.unwrap();
    // Nothing tells the keeper on its own before the next refresh...
    sleep(settings.lease * 3).await;
    assert!(!*lost.borrow());
    // ...but a check (the node heard the file changed hands) finds it at once.
    keeper.check_now();
    loss_reported(
        &mut lost,
        Duration::from_millis(10),
        "loss reported at once",
    )
    .await;
}
