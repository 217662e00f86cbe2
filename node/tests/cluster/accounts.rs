//! Accounts across nodes: signing out and the socket cap.

use super::*;

crate::both_backends!(
    signout_closes_sockets_on_every_node,
    account_cap_holds_across_nodes
);

/// (6) Signing out on one node closes that token's sockets on every node
/// with 4001 within about a second; other sessions of the account stay.
async fn signout_closes_sockets_on_every_node(backend: Backend) {
    let cluster = Cluster::start(backend, 3, LEASE_MS, &[]).await;
    let email = unique_email("leaver");
    let (token, _) = signup(&cluster.nodes[2], &email).await;
    let other = signin(&cluster.nodes[2], &email).await;
    let on0 = cluster.files_owned_by(&token, "n0", &THREE, 1).await;
    let on1 = cluster.files_owned_by(&token, "n1", &THREE, 1).await;

    let mut s0 = Peer::new(&on0[0].0, Hello::token(&token));
    s0.connect(&cluster.dir, None, WAIT).await;
    let mut s1 = Peer::new(&on1[0].0, Hello::token(&token));
    s1.connect(&cluster.dir, None, WAIT).await;
    let mut keep = Peer::new(&on1[0].0, Hello::token(&other));
    keep.connect(&cluster.dir, None, WAIT).await;
    assert_eq!(s0.at.as_deref(), Some("n0"));
    assert_eq!(s1.at.as_deref(), Some("n1"));
    assert_eq!(keep.at.as_deref(), Some("n1"));

    // Sign out on n2, a node holding none of the sockets.
    let out = Instant::now();
    send_empty(&cluster.nodes[2], "POST", "/api/signout", Some(&token))
        .await
        .assert_status(204);
    for (p, node) in [(&mut s0, "n0"), (&mut s1, "n1")] {
        p.ws.as_mut()
            .unwrap()
            .expect_close_within(4001, Duration::from_secs(3))
            .await;
        let took = out.elapsed();
        eprintln!(
            "sign-out ({}): socket on {node} closed with 4001 after {} ms",
            backend.name(),
            ms(took)
        );
        assert!(
            took <= Duration::from_millis(2000),
            "the socket on {node} closed {} ms after the sign-out",
            ms(took)
        );
    }
    for node in &cluster.nodes {
        get(node, "/api/me", Some(&token))
            .await
            .assert_error(401, "unauthorized");
        get(node, "/api/me", Some(&other)).await.assert_status(200);
    }
    // The other session's socket is untouched and still edits.
    let op = keep.edit().await;
    keep.pump_until(&cluster.dir, WAIT, "ack", |p| p.acked.contains_key(&op))
        .await;
    assert!(keep.closes.is_empty(), "{:?}", keep.closes);
}

/// (7) The per-account socket cap counts sockets on every node; a killed
/// node's slots are freed once its heartbeat lapses.
async fn account_cap_holds_across_nodes(backend: Backend) {
    let mut cluster = Cluster::start(backend, 3, LEASE_MS, &[("ATRIUM_WS_PER_ACCOUNT", "3")]).await;
    let token = cluster.account("capped").await;
    let mut files = Vec::new();
    for n in THREE {
        files.push(
            cluster.files_owned_by(&token, n, &THREE, 1).await[0]
                .0
                .clone(),
        );
    }
    let dir = cluster.dir.clone();
    let port = |n: &str| dir.port_of(n);
    // One socket on each node: three, the cap.
    let mut held = Vec::new();
    for (n, f) in THREE.iter().zip(&files) {
        let (c, _) = attempt(port(n), f, &Hello::token(&token), WAIT)
            .await
            .unwrap_or_else(|e| panic!("socket {} of the account on {n}: {e:?}", held.len() + 1));
        held.push(c);
    }
    // A fourth is refused on every node.
    for (n, f) in THREE.iter().zip(&files) {
        match attempt(port(n), f, &Hello::token(&token), WAIT).await {
            Err(Refusal::Closed(Some(4029))) => {}
            Err(e) => panic!("a fourth socket on {n}: {e:?}, not 4029"),
            Ok(_) => panic!("a fourth socket of the account was welcomed on {n} (cap 3)"),
        }
    }
    // Closing one (on n1) frees its slot for a socket elsewhere (n0).
    held.remove(1).close().await;
    let freed = Instant::now();
    let c = loop {
        match attempt(port("n0"), &files[0], &Hello::token(&token), WAIT).await {
            Ok((c, _)) => break c,
            Err(Refusal::Closed(Some(4029))) if freed.elapsed() < Duration::from_secs(3) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("the slot freed on n1 was not usable on n0 within 3 s: {e:?}"),
        }
    };
    held.push(c);
    // held: n0, n2, n0. Killing n2 drops its socket; its slot stays counted until its
    // heartbeat lapses (a refused socket waits up to three seconds for a slot first), then it is
    // free for the person's reconnect.
    cluster.kill9("n2");
    let killed = Instant::now();
    let c = loop {
        match attempt(port("n1"), &files[1], &Hello::token(&token), WAIT).await {
            Ok((c, _)) => break c,
            Err(Refusal::Closed(Some(4029)))
                if killed.elapsed() < Duration::from_millis(LEASE_MS + 5000) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!(
                "the killed node's slot was not freed within {} ms: {e:?}",
                LEASE_MS + 5000
            ),
        }
    };
    eprintln!(
        "account cap ({}): the killed node's slot was free {} ms after kill -9 (lease {LEASE_MS} ms)",
        backend.name(),
        ms(killed.elapsed())
    );
    held.push(c);
    // And the cap still holds with the survivors' three sockets.
    match attempt(port("n0"), &files[0], &Hello::token(&token), WAIT).await {
        Err(Refusal::Closed(Some(4029))) => {}
        Err(e) => panic!("a fourth socket after the failover: {e:?}, not 4029"),
        Ok(_) => panic!("a fourth socket was welcomed after the failover (cap 3)"),
    }
}
