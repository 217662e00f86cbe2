//! Health statistics and metrics.

use super::*;

fn assert_stats(stats: &Value) {
    for k in [
        "cpu_seconds",
        "rss_bytes",
        "connections",
        "rooms",
        "people",
        "editors",
        "scheduling_delay_p99_ms",
        "messages_in",
        "messages_out",
    ] {
        assert!(stats[k].is_number(), "stats.{k} must be a number: {stats}");
    }
    assert!(
        stats["busiest_room"]["people"].is_number(),
        "stats.busiest_room.people must be a number: {stats}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_has_statistics_when_enabled() {
    let (node, f) = node_with_file(&[("ATRIUM_HEALTH_STATS", "1")]).await;
    let [(mut a, _), (_b, _)] =
        Client::join_each(&node, &f.id, [f.by_owner(), f.by_view_key()]).await;
    a.patch_acked(1, vec![put("n", json!({}))]).await;
    let r = get(&node, "/health", None).await;
    r.assert_status(200);
    let h = r.body();
    assert_eq!(h["ok"], true, "{h}");
    assert!(h["node"].is_string(), "{h}");
    let st = &h["stats"];
    assert_stats(st);
    let n = |k: &str| st[k].as_f64().unwrap_or(-1.0);
    assert!(n("connections") >= 2.0, "{st}");
    assert!(n("people") >= 2.0, "{st}");
    assert!(n("rooms") >= 1.0, "{st}");
    assert!(n("editors") >= 1.0, "{st}");
    assert!(n("rss_bytes") > 0.0, "{st}");
    assert!(n("cpu_seconds") >= 0.0, "{st}");
    assert!(n("messages_in") >= 3.0, "two hellos and a patch: {st}");
    assert!(n("messages_out") >= 1.0, "{st}");
    assert!(st["busiest_room"]["people"].as_f64() >= Some(2.0), "{st}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_statistics_are_for_server_admins_only_by_default() {
    let admin_email = unique_email("admin");
    let node = Node::start(&[("ATRIUM_ADMINS", admin_email.as_str())]).await;
    let (admin, account) = signup(&node, &admin_email).await;
    assert_eq!(account["admin"], true, "{account}");
    let someone = new_account(&node, "someone").await;

    let r = get(&node, "/health", None).await;
    r.assert_status(200);
    assert_eq!(r.body()["ok"], true);
    assert!(r.body()["node"].is_string());
    assert!(r.body().get("stats").is_none(), "anonymous: {}", r.text);

    let r = get(&node, "/health", Some(&someone)).await;
    r.assert_status(200);
    assert!(r.body().get("stats").is_none(), "not an admin: {}", r.text);

    let r = get(&node, "/health", Some(&admin)).await;
    r.assert_status(200);
    assert_eq!(r.body()["ok"], true);
    assert_stats(&r.body()["stats"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_cover_the_room_node() {
    let (node, f) = node_with_file(&[
        ("ATRIUM_WS_PER_SECOND", "2"),
        ("ATRIUM_SNAPSHOT_BYTES", "1"),
    ])
    .await;
    let [(mut a, _), (mut b, _)] =
        Client::join_each(&node, &f.id, [f.by_owner(), f.by_view_key()]).await;
    // Some presence (a flood: some is dropped), patches over the rate.
    for i in 0..200u64 {
        a.send_presence(json!({"page": "p1", "cursor": [i, i]}))
            .await;
    }
    for i in 1..=5u64 {
        a.send_patch(i, vec![put(&format!("n{i}"), json!({"i": i}))])
            .await;
    }
    for i in 1..=5u64 {
        a.await_ack(i).await;
    }
    b.collect_patches(5).await;
    // A refused hello: a close by the node.
    Client::join_expect_close(&node, &f.id, &Hello::token(&secret()), 4001).await;
    wait_metric(
        &node,
        "atrium_snapshots_total",
        &[],
        |v| v >= 1.0,
        Duration::from_secs(15),
    )
    .await;

    let text = metrics_text(&node).await;
    for name in [
        "atrium_connections",
        "atrium_rooms",
        "atrium_people",
        "atrium_messages_received_total",
        "atrium_messages_sent_total",
        "atrium_received_bytes_total",
        "atrium_sent_bytes_total",
        "atrium_patch_durable_seconds_bucket",
        "atrium_presence_tick_seconds_bucket",
        "atrium_closes_total",
        "atrium_rate_limited_total",
        "atrium_presence_dropped_total",
        "atrium_queue_overflows_total",
        "atrium_snapshots_total",
    ] {
        assert!(
            has_metric(&text, name),
            "{name} missing from /metrics:\n{text}"
        );
    }
    for ty in ["hello", "patch", "presence"] {
        assert!(
            counter(&text, "atrium_messages_received_total", &[("type", ty)]) >= 1.0,
            "messages received of type {ty}"
        );
    }
    assert!(counter(&text, "atrium_messages_sent_total", &[]) >= 5.0);
    assert!(
        text.contains("atrium_messages_sent_total{type=\""),
        "messages sent are counted by type:\n{text}"
    );
    assert!(counter(&text, "atrium_received_bytes_total", &[]) > 0.0);
    assert!(counter(&text, "atrium_sent_bytes_total", &[]) > 0.0);
    assert!(counter(&text, "atrium_closes_total", &[("code", "4001")]) >= 1.0);
    assert!(counter(&text, "atrium_rate_limited_total", &[]) >= 1.0);
    assert!(counter(&text, "atrium_presence_dropped_total", &[]) >= 1.0);
    // The refused socket is gone by now; the two people remain.
    wait_metric(&node, "atrium_connections", &[], |v| v == 2.0, WAIT).await;
    assert_eq!(counter(&text, "atrium_people", &[]), 2.0);
    assert_eq!(counter(&text, "atrium_rooms", &[]), 1.0);
    // No file or account ids as labels.
    assert!(
        !text.contains(&f.id),
        "a file id appears in /metrics:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_to_the_admin_address_when_one_is_set() {
    let node = Node::start(&[("ATRIUM_ADMIN_BIND", "127.0.0.1:0")]).await;
    let log = node
        .wait_log("metrics on http://", Duration::from_secs(10))
        .await;
    let rest = &log[log.find("metrics on http://").expect("line") + "metrics on http://".len()..];
    let hostport: String = rest
        .chars()
        .take_while(|c| *c != '/' && !c.is_whitespace())
        .collect();
    let port: u16 = hostport
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {hostport:?}"));
    assert_ne!(port, node.port, "the admin address is its own");
    let r = http_at(port, "GET", "/metrics", &[], None).await;
    r.assert_status(200);
    assert!(has_metric(&r.text, "atrium_connections"), "{}", r.text);
    get(&node, "/metrics", None).await.assert_status(404);
    get(&node, "/health", None).await.assert_status(200);
}
