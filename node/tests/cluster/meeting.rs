//! Clients of one file meet at its holder; routes elsewhere answer `moved`.

use super::*;

crate::both_backends!(clients_meet_at_the_holder);

/// (1) Clients of one file arriving at different nodes are refused with 4009
/// until they reach the holder, where they see each other's patches; file
/// routes elsewhere answer 409 `moved` with the holder's id, account routes
/// work anywhere.
async fn clients_meet_at_the_holder(backend: Backend) {
    let cluster = Cluster::start(backend, 3, LEASE_MS, &[]).await;
    let owner = cluster.account("owner").await;
    let f = create_file(&cluster.nodes[0], &owner, "Meeting", None).await;
    let id = s(&f["id"]).to_string();
    set_link(&cluster.nodes[0], &owner, &id, "edit").await;
    let key = s(&f["edit_key"]).to_string();

    // Nobody holds the file: the first node a client reaches takes it, ring
    // owner or not.
    let mut a = Peer::new(&id, Hello::token(&owner));
    a.connect(&cluster.dir, Some("n1"), Duration::from_secs(10))
        .await;
    assert_eq!(a.at.as_deref(), Some("n1"), "{:?}", a.refusals);
    assert!(a.refusals.is_empty(), "refused: {:?}", a.refusals);

    // The other nodes refuse a second client with 4009 and no welcome.
    for other in ["n0", "n2"] {
        let port = cluster.node(other).port;
        match attempt(port, &id, &Hello::key(&key), WAIT).await {
            Err(Refusal::Closed(Some(4009))) => {}
            Err(e) => panic!("{other} refused with {e:?}, not 4009"),
            Ok((_, w)) => panic!("{other} welcomed a client of a file n1 holds: {w}"),
        }
    }
    // A client that tries n2, then n0, then n1 meets the first at n1.
    let mut b = Peer::new(&id, Hello::key(&key));
    b.connect(&cluster.dir, Some("n2"), Duration::from_secs(10))
        .await;
    assert_eq!(b.at.as_deref(), Some("n1"));
    assert_eq!(b.refusals.first(), Some(&("n2".to_string(), Some(4009))));
    assert!(
        b.refusals.iter().all(|(_, c)| *c == Some(4009)),
        "{:?}",
        b.refusals
    );

    // File routes on a non-holder: 409 moved, naming n1. On n1: served.
    for other in ["n0", "n2"] {
        let node = cluster.node(other);
        let r = get(node, &format!("/api/files/{id}/doc"), Some(&owner)).await;
        assert_eq!(moved_to(&r), "n1", "GET /doc on {other}");
        let r = get(node, &format!("/api/files/{id}"), Some(&owner)).await;
        assert_eq!(moved_to(&r), "n1", "GET /api/files/{{id}} on {other}");
        let r = get_with_key(node, &format!("/api/files/{id}/doc"), &key).await;
        assert_eq!(moved_to(&r), "n1", "GET /doc with a key on {other}");
        // Account routes answer anywhere.
        get(node, "/api/me", Some(&owner)).await.assert_status(200);
        let r = get(node, "/api/files", Some(&owner)).await;
        r.assert_status(200);
        assert!(
            r.body()["files"]
                .as_array()
                .expect("files")
                .iter()
                .any(|f| f["id"] == json!(id)),
            "{}",
            r.text
        );
    }
    get_doc(cluster.node("n1"), &owner, &id).await;

    // They see each other's patches.
    let op = a.edit().await;
    a.pump_until(&cluster.dir, WAIT, "ack", |p| p.acked.contains_key(&op))
        .await;
    b.pump_until(&cluster.dir, WAIT, "relay", |p| p.version == 1)
        .await;
    let op = b.edit().await;
    b.pump_until(&cluster.dir, WAIT, "ack", |p| p.acked.contains_key(&op))
        .await;
    a.pump_until(&cluster.dir, WAIT, "relay", |p| p.version == 2)
        .await;
    assert!(
        a.closes.is_empty() && b.closes.is_empty(),
        "{:?} {:?}",
        a.closes,
        b.closes
    );
    let (holder, version) = verify_file(&cluster, &owner, &id, &mut [&mut a, &mut b]).await;
    assert_eq!((holder.as_str(), version), ("n1", 2));
}
