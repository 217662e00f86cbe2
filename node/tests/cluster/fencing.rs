//! A paused owner cannot write once its lease is gone.

use super::*;

crate::both_backends!(a_paused_owner_cannot_write);

/// (5) A holder paused past its lease cannot write once it runs again: the
/// patch it had waiting is never acked, its room closes with 4009, and the
/// document holds exactly the acked patches with gapless versions.
async fn a_paused_owner_cannot_write(backend: Backend) {
    let mut cluster = Cluster::start(backend, 3, LEASE_MS, &[]).await;
    let owner = cluster.account("owner").await;
    // The ring puts the file on n1, with or without n0, so no rebalancing
    // moves it while n0 leaves and comes back; n0 takes it first because a
    // client reaches it first and nobody holds it.
    let files = cluster.files_owned_by(&owner, "n1", &THREE, 1).await;
    let (id, key) = files[0].clone();

    let mut a = Peer::new(&id, Hello::token(&owner));
    a.connect(&cluster.dir, Some("n0"), WAIT).await;
    assert_eq!(a.at.as_deref(), Some("n0"));
    let first = a.edit().await;
    a.pump_until(&cluster.dir, WAIT, "ack", |p| p.acked.contains_key(&first))
        .await;

    cluster.sigstop("n0");
    // Sent to the frozen node: it waits in its socket buffer.
    let stale = a.edit().await;
    tokio::time::sleep(Duration::from_millis(LEASE_MS + 1000)).await;

    // Another node takes the file and accepts patches.
    let mut b = Peer::new(&id, Hello::key(&key));
    b.connect(&cluster.dir, None, Duration::from_secs(15)).await;
    assert_eq!(b.at.as_deref(), Some("n1"));
    assert_eq!(b.version, 1);
    for _ in 0..5 {
        let op = b.edit().await;
        b.pump_until(&cluster.dir, WAIT, "ack", |p| p.acked.contains_key(&op))
            .await;
    }
    assert_eq!(b.version, 6);

    cluster.sigcont("n0");
    cluster.mark_up("n0");
    // The paused node wakes up: the stale patch must not be acked, and the
    // room closes with 4009.
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.ws.is_some() {
        assert!(
            Instant::now() < deadline,
            "the paused node's room was not closed within 10 s of SIGCONT\n{}",
            cluster.logs()
        );
        a.pump(Duration::from_millis(100)).await;
        assert!(
            !a.acked.contains_key(&stale),
            "the stale owner acked op {stale} at v{}: two nodes wrote one file\n{}",
            a.acked[&stale],
            cluster.logs()
        );
    }
    assert_eq!(a.closes.len(), 1);
    assert_eq!(
        a.closes[0].1, 4009,
        "the stale owner's room must close with 4009"
    );
    assert_eq!(a.version, 1, "the client saw versions from the stale owner");

    // The woken node did not give the lease away (it was n1's): it points
    // at n1.
    let r = get(
        cluster.node("n0"),
        &format!("/api/files/{id}/doc"),
        Some(&owner),
    )
    .await;
    assert_eq!(moved_to(&r), "n1");

    // The client resumes at n1 and resends its patch with its op id.
    a.pump_until(
        &cluster.dir,
        Duration::from_secs(15),
        "stale patch acked",
        |p| p.unacked.is_empty(),
    )
    .await;
    assert_eq!(a.at.as_deref(), Some("n1"));
    assert_eq!(a.acked[&stale], 7);
    let (holder, version) = verify_file(&cluster, &owner, &id, &mut [&mut a, &mut b]).await;
    assert_eq!((holder.as_str(), version), ("n1", 7));
    assert!(b.closes.is_empty(), "{:?}", b.closes);
}
