//! Broadcast events: from the server API and from sockets (viewers too), bounded in size
//! and rate, never stored.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_everyone_else_and_are_never_stored() {
    let (node, _, key, key_id) = node_with_key(
        &[
            ("ATRIUM_EVENT_MAX_BYTES", "256"),
            ("ATRIUM_EVENTS_PER_SECOND", "5"),
        ],
        &["server"],
    )
    .await;
    let file = shared_file(&node, "edit").await;
    let path = format!("/api/files/{}/events", file.id);
    // Nobody in the file: sent to nobody, no room opened for it.
    let r = send_json(&node, "POST", &path, Some(&key), &json!({"data": {"x": 1}})).await;
    r.assert_status(200);
    assert_eq!(r.body()["people"], json!(0));

    let (mut owner, _) = Client::join(&node, &file.id, &file.by_owner()).await;
    let (mut viewer, w_viewer) = Client::join(&node, &file.id, &file.by_view_key()).await;
    // From the server: everyone gets it, from the service person.
    let r = send_json(
        &node,
        "POST",
        &path,
        Some(&key),
        &json!({"data": {"thinking": true}, "name": "AI"}),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["people"], json!(2));
    for c in [&mut owner, &mut viewer] {
        let e = c.recv_type("event", WAIT).await.expect("an event");
        assert_eq!(e["by"], json!(format!("svc-{key_id}")));
        assert_eq!(e["name"], "AI");
        assert_eq!(e["data"], json!({"thinking": true}));
    }
    // From a viewer: the others get it, not the sender.
    viewer
        .send_json(&json!({"type": "event", "data": {"emoji": "🎉"}}))
        .await;
    let e = owner
        .recv_type("event", WAIT)
        .await
        .expect("the viewer's event");
    assert_eq!(e["by"], w_viewer["you"]);
    assert_eq!(e["data"]["emoji"], "🎉");
    assert!(viewer
        .recv_type("event", Duration::from_millis(300))
        .await
        .is_none());
    // Too big: refused (socket) and 413 (HTTP); no data: invalid.
    viewer
        .send_json(&json!({"type": "event", "data": "x".repeat(300)}))
        .await;
    let rej = viewer.recv_type("reject", WAIT).await.expect("a reject");
    assert_eq!(rej["code"], "too-large");
    viewer.send_json(&json!({"type": "event"})).await;
    let rej = viewer.recv_type("reject", WAIT).await.expect("a reject");
    assert_eq!(rej["code"], "invalid");
    send_json(
        &node,
        "POST",
        &path,
        Some(&key),
        &json!({"data": "x".repeat(300)}),
    )
    .await
    .assert_error(413, "too-large");
    send_json(&node, "POST", &path, Some(&key), &json!({}))
        .await
        .assert_error(400, "bad-request");
    // Over the rate: dropped, counted; the socket stays open.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for i in 0..20 {
        viewer.send_json(&json!({"type": "event", "data": i})).await;
    }
    let got = owner.collect_for(Duration::from_millis(500)).await;
    let events = got.iter().filter(|m| m["type"] == "event").count();
    assert!(
        (1..=6).contains(&events),
        "{events} of 20 events passed a rate of 5"
    );
    let dropped = wait_metric(
        &node,
        "atrium_events_dropped_total",
        &[],
        |v| v >= 14.0,
        WAIT,
    )
    .await;
    assert!(dropped >= 14.0);
    // Never stored: the document and its version are untouched.
    let (version, doc) = get_doc(&node, &file.owner, &file.id).await;
    assert_eq!((version, doc), (0, json!({})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_relays_its_sockets_events_within_its_byte_budget() {
    let (node, _, key, _) = node_with_key(
        &[
            ("ATRIUM_ROOM_EVENT_BYTES_PER_SECOND", "1000"),
            ("ATRIUM_EVENTS_PER_SECOND", "100"),
        ],
        &["server"],
    )
    .await;
    let file = shared_file(&node, "edit").await;
    let (mut owner, _) = Client::join(&node, &file.id, &file.by_owner()).await;
    let (mut v1, _) = Client::join(&node, &file.id, &file.by_view_key()).await;
    let (mut v2, _) = Client::join(&node, &file.id, &file.by_view_key()).await;
    // Two viewers, 10 events of about 400 bytes each, at once: what the room's 1,000 bytes
    // (and what refills meanwhile) allow passes, the rest is dropped. Both sockets are of one
    // address, so they share its quarter of the room's bytes.
    let data = "x".repeat(400);
    for _ in 0..10 {
        v1.send_json(&json!({"type": "event", "data": data})).await;
        v2.send_json(&json!({"type": "event", "data": data})).await;
    }
    let got = owner.collect_for(Duration::from_millis(500)).await;
    let events = got.iter().filter(|m| m["type"] == "event").count();
    assert!(
        (1..=3).contains(&events),
        "{events} of 20 events within a quarter of 1,000 bytes a second"
    );
    // The server's own events are not charged to the sockets' budget.
    let path = format!("/api/files/{}/events", file.id);
    for i in 0..5 {
        send_json(&node, "POST", &path, Some(&key), &json!({"data": {"i": i}}))
            .await
            .assert_status(200);
    }
    let got = owner.collect_for(Duration::from_millis(500)).await;
    assert_eq!(got.iter().filter(|m| m["type"] == "event").count(), 5);
    let dropped = metric(
        &metrics_text(&node).await,
        "atrium_events_dropped_total",
        &[],
    );
    assert!(dropped >= 15.0, "{dropped}");
}

/// The room's budget counts the whole `event` message each other person gets, so events
/// with almost no `data` cannot multiply past it (before: charged 1 byte, sent ~45).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_events_are_charged_by_the_message_everyone_gets() {
    let (node, _, _, _) = node_with_key(
        &[
            ("ATRIUM_ROOM_EVENT_BYTES_PER_SECOND", "1000"),
            ("ATRIUM_EVENTS_PER_SECOND", "100"),
        ],
        &["server"],
    )
    .await;
    let file = shared_file(&node, "edit").await;
    let (mut owner, _) = Client::join(&node, &file.id, &file.by_owner()).await;
    let mut viewers = Vec::new();
    for _ in 0..3 {
        viewers.push(Client::join(&node, &file.id, &file.by_view_key()).await.0);
    }
    let started = std::time::Instant::now();
    for _ in 0..30 {
        for v in &mut viewers {
            v.send_json(&json!({"type": "event", "data": 0})).await;
        }
    }
    let got = owner.collect_for(Duration::from_millis(500)).await;
    let seconds = started.elapsed().as_secs_f64();
    let bytes: usize = got
        .iter()
        .filter(|m| m["type"] == "event")
        .map(|m| m.to_string().len())
        .sum();
    // The burst (1,000 bytes), what refilled meanwhile, and the one message that may go
    // past the budget before it counts as spent.
    let bound = 1000.0 + 1000.0 * seconds + 100.0;
    assert!(
        (bytes as f64) <= bound,
        "{bytes} bytes of 90 tiny events reached the owner; the budget allows {bound:.0}"
    );
    assert!(bytes > 0, "no event at all was relayed");
}

/// An event far over `ATRIUM_EVENT_MAX_BYTES` is refused before it is parsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_event_is_refused_too_large() {
    let (node, _, _, _) = node_with_key(&[], &["server"]).await;
    let file = shared_file(&node, "edit").await;
    let (mut viewer, _) = Client::join(&node, &file.id, &file.by_view_key()).await;
    let data: Vec<u8> = vec![0; 64 * 1024];
    viewer
        .send_json(&json!({"type": "event", "data": data}))
        .await;
    let rej = viewer.recv_type("reject", WAIT).await.expect("a reject");
    assert_eq!(rej["code"], "too-large");
    // The socket goes on.
    viewer.send_json(&json!({"type": "event", "data": 1})).await;
    assert!(viewer
        .recv_type("reject", Duration::from_millis(300))
        .await
        .is_none());
}
