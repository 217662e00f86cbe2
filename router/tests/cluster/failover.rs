//! A killed owner's files come back through the routers; a new node gets files.

use std::time::{Duration, Instant};

use serde_json::json;

use super::common::client::{Client, Event};
use super::common::http::{account, create_file, get_doc};
use super::common::*;

/// A killed owner's sockets come back through the routers to the new owner and converge;
/// a node added to the fleet starts receiving new files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_and_scale_out_through_the_routers() {
    let _serial = serial().await;
    let mut fleet = fleet(3, 2).await;
    let ports = [fleet.routers[0].port, fleet.routers[1].port];
    let token = account(ports[0]).await;
    let file = create_file(ports[1], &token).await;
    let (ca, cb) = (secret(), secret());
    let mut a = Client::try_join(ports[0], &file, &token, &ca, None)
        .await
        .expect("join a");
    let mut b = Client::try_join(ports[1], &file, &token, &cb, None)
        .await
        .expect("join b");
    for i in 1..=5 {
        a.send_patch(i, &format!("a{i}"), json!(i)).await;
        a.expect("ack", Some(i), WAIT).await;
    }
    while b.version < 5 {
        b.expect("patch", None, WAIT).await;
    }
    let owner = fleet.serving(&token, &file).await.expect("an owner");

    let t0 = Instant::now();
    fleet.node_mut(&owner).proc.kill9();
    // Both sockets end promptly (the router does not keep a dead node's sockets open).
    // Messages the node sent before it died (a presence tick) may still arrive first.
    for c in [&mut a, &mut b] {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match c
                .next(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                Event::Close(_) | Event::Ended => break,
                Event::Json(sent_before) => eprintln!("before the end: {sent_before}"),
                Event::Timeout => panic!("socket stayed open 5 s after its node died"),
            }
        }
    }
    let ended = t0.elapsed();
    let patience = Duration::from_millis(LEASE_MS * 4);
    let mut a = Client::rejoin(&ports, &file, &token, &ca, a.version, patience).await;
    let mut b = Client::rejoin(&ports[1..], &file, &token, &cb, b.version, patience).await;
    let back = t0.elapsed();
    let new_owner = fleet.serving(&token, &file).await.expect("a new owner");
    assert_ne!(new_owner, owner);
    for i in 6..=8 {
        a.send_patch(i, &format!("a{i}"), json!(i)).await;
        a.expect("ack", Some(i), WAIT).await;
    }
    b.send_patch(1, "b1", json!(9)).await;
    b.expect("ack", Some(1), WAIT).await;
    while a.version < 9 {
        a.expect("patch", None, WAIT).await;
    }
    while b.version < 9 {
        b.expect("patch", None, WAIT).await;
    }
    let (v, doc) = get_doc(ports[0], &token, &file).await;
    assert_eq!(v, 9, "every acked patch kept: {doc}");
    for k in ["a1", "a5", "a8", "b1"] {
        assert!(
            doc.get(k).is_some() || doc.to_string().contains(&format!("\"{k}\"")),
            "{k} missing from {doc}"
        );
    }
    println!("failover: sockets ended after {ended:?}, both back after {back:?}");

    // Scale out: the routers see the new node and send it files.
    let n = fleet.add_node().await;
    let new_id = fleet.nodes[n].id.clone();
    fleet.wait_members(0, 3).await;
    fleet.wait_members(1, 3).await;
    let mut got = 0;
    for _ in 0..40 {
        let f = create_file(ports[0], &token).await;
        let mut c = Client::join(ports[1], &f, &token).await;
        c.send_patch(1, "x", json!(1)).await;
        c.expect("ack", Some(1), WAIT).await;
        if fleet.serving(&token, &f).await.as_deref() == Some(new_id.as_str()) {
            got += 1;
            if got == 3 {
                break;
            }
        }
    }
    assert_eq!(got, 3, "the new node {new_id} received too few new files");
}
