//! Message rates: over the rate waits with a 429 notice, a flood closes with 4013, presence drops quietly.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_over_the_rate_wait_in_order_with_a_429_notice() {
    let (node, f) = node_with_file(&[("ATRIUM_WS_PER_SECOND", "5")]).await;
    let [(mut a, _), (mut o, _)] =
        Client::join_each(&node, &f.id, [f.by_owner(), f.by_view_key()]).await;

    let start = Instant::now();
    for i in 1..=20u64 {
        a.send_patch(i, vec![put(&format!("n{i}"), json!({"i": i}))])
            .await;
    }
    let mut notices = Vec::new();
    let mut next = 1u64;
    let deadline = Instant::now() + Duration::from_secs(30);
    while next <= 20 {
        let left = deadline.saturating_duration_since(Instant::now());
        let m = a
            .recv_any_timeout(left)
            .await
            .unwrap_or_else(|| panic!("ack of op {next} never came"));
        match s(&m["type"]) {
            "ack" => {
                assert_eq!(m["id"], json!(next), "acks in op order: {m}");
                assert_eq!(m["v"], json!(next), "versions in op order: {m}");
                next += 1;
            }
            "notice" => notices.push(m),
            "presences" | "join" | "leave" => {}
            _ => panic!("unexpected while throttled: {m}"),
        }
    }
    let took = start.elapsed();
    assert!(
        notices
            .iter()
            .any(|n| n["code"] == 429 && n["message"].is_string()),
        "no 429 notice while throttled: {notices:?}"
    );
    // 20 messages at 5 a second cannot all pass at once.
    assert!(
        took >= Duration::from_millis(1500),
        "20 patches at 5/s were all acked within {took:?}"
    );
    // Nothing was lost or reordered for the others either.
    let got = o.collect_patches(20).await;
    assert_eq!(got.len(), 20);
    let (v, doc) = get_doc(&node, &f.owner, &f.id).await;
    assert_eq!(v, 20);
    for i in 1..=20u64 {
        assert_eq!(doc[format!("n{i}")]["i"], json!(i));
    }
    let text = metrics_text(&node).await;
    assert!(
        counter(&text, "atrium_rate_limited_total", &[]) >= 1.0,
        "rate limiting is counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_socket_is_closed_with_4013() {
    let (node, f) = node_with_file(&[("ATRIUM_WS_PER_SECOND", "5")]).await;
    let hello = Hello::token(&f.owner);
    let (mut a, _) = Client::join(&node, &f.id, &hello).await;
    // 80 at once: far more than five seconds' worth (25).
    for i in 1..=80u64 {
        let text = patch_msg(i, vec![put(&format!("n{i}"), json!({"i": i}))]).to_string();
        let _ = a.ws.send(Message::text(text)).await;
    }
    let mut notice = false;
    let mut last_ack = 0u64;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match a.next_event(left).await {
            Event::Json(m) => match s(&m["type"]) {
                "ack" => {
                    assert_eq!(m["id"], json!(last_ack + 1), "acks in order: {m}");
                    assert_eq!(m["v"], json!(last_ack + 1), "versions in order: {m}");
                    last_ack += 1;
                }
                "notice" => {
                    assert_eq!(m["code"], 429, "{m}");
                    notice = true;
                }
                "presences" | "join" | "leave" => {}
                _ => panic!("unexpected while flooding: {m}"),
            },
            Event::Close(code) => {
                assert_eq!(code, Some(4013), "a flood closes with 4013");
                break;
            }
            other => panic!("expected a close with 4013, got {other:?}"),
        }
    }
    assert!(notice, "the 429 notice comes before the close");
    assert!(last_ack < 80, "everything was acked, yet the socket closed");
    // The client reconnects and carries on.
    let (mut a2, w) = Client::join(&node, &f.id, &hello.since(Some(last_ack))).await;
    assert!(w["version"].as_u64().expect("version") >= last_ack);
    let v = a2.patch_acked(1000, vec![put("after", json!({}))]).await;
    assert!(v > last_ack, "a patch after the reconnect: v {v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presence_flood_is_dropped_quietly() {
    // The message rate is low, but presence does not count against it.
    let (node, f) = node_with_file(&[("ATRIUM_WS_PER_SECOND", "5")]).await;
    let [(mut a, wa), (mut b, _)] =
        Client::join_each(&node, &f.id, [f.by_owner(), f.by_view_key()]).await;
    b.send_presence(json!({"page": "p1"})).await;
    let before = counter(
        &metrics_text(&node).await,
        "atrium_presence_dropped_total",
        &[],
    );
    for i in 0..400u64 {
        a.send_presence(json!({"page": "p1", "cursor": [i, 0]}))
            .await;
    }
    // Edits still go through at once, unthrottled.
    a.send_patch(1, vec![put("n", json!({}))]).await;
    let mut acked = false;
    for m in a.collect_for(Duration::from_secs(2)).await {
        match s(&m["type"]) {
            "ack" => {
                assert_eq!(m["id"], 1, "{m}");
                acked = true;
            }
            "presences" | "join" | "leave" => {}
            _ => panic!("a presence flood is dropped silently, yet the sender got {m}"),
        }
    }
    assert!(acked, "the patch after a presence flood was not acked");
    // The others still see the sender move.
    let ya = you(&wa);
    let seen = b
        .collect_for(Duration::from_millis(500))
        .await
        .into_iter()
        .filter(|m| m["type"] == "presences")
        .any(|m| {
            m["people"]
                .as_array()
                .is_some_and(|p| p.iter().any(|e| e["id"] == ya))
        });
    assert!(seen, "the receiver never saw the flooding sender move");
    let after = counter(
        &metrics_text(&node).await,
        "atrium_presence_dropped_total",
        &[],
    );
    assert!(
        after > before,
        "400 presences in a moment must drop some (counter {before} -> {after})"
    );
}
