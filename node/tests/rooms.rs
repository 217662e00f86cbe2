//! Room lifetime against the real binary: snapshots written off the relay path
//! keep the log short and survive restarts, and idle rooms leave memory.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;

/// The value of an unlabelled metric in `/metrics`.
async fn metric(node: &Node, name: &str) -> f64 {
    metrics_text(node)
        .await
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
}

async fn wait_for_metric(node: &Node, name: &str, want: impl Fn(f64) -> bool) -> f64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let v = metric(node, name).await;
        if want(v) {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} stayed at {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_trim_the_log_and_survive_a_restart() {
    let data = tempfile::tempdir().expect("temp dir");
    // Tiny thresholds: every durable turn is due a snapshot; the ring keeps 5.
    let envs = [("ATRIUM_SNAPSHOT_BYTES", "1"), ("ATRIUM_ROOM_OPS", "5")];
    let mut node = Node::start_in(data.path(), &envs).await;
    let owner = new_account(&node, "owner").await;
    let id = s(&create_file(&node, &owner, "Board", None).await["id"]).to_string();
    let hello = Hello::token(&owner);
    let (mut c, _) = Client::join(&node, &id, &hello).await;
    for i in 1..=40u64 {
        let v = c
            .patch_acked(i, vec![put(&format!("n{i}"), json!({"i": i}))])
            .await;
        assert_eq!(v, i);
    }
    wait_for_metric(&node, "atrium_snapshots_total", |v| v >= 1.0).await;

    // Restart: the room rebuilds from the snapshot and the short log after it.
    node.kill9();
    let node = Node::start_in(data.path(), &envs).await;
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 40);
    for i in 1..=40u64 {
        assert_eq!(doc[format!("n{i}")]["i"], json!(i), "node n{i} lost");
    }
    // The log still holds a ring's worth behind the snapshot: resume works.
    let (_c2, w) = Client::join(&node, &id, &hello.since(Some(38))).await;
    let resume = w["resume"].as_array().expect("resume after a restart");
    assert_eq!(resume.len(), 2);
    assert_eq!(resume[0]["type"], "ack");
    assert_eq!(resume[1]["v"], 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rooms_nobody_is_in_leave_memory() {
    let node = Node::start(&[("ATRIUM_ROOM_IDLE_MS", "300")]).await;
    let owner = new_account(&node, "owner").await;
    let id = s(&create_file(&node, &owner, "Board", None).await["id"]).to_string();
    let (mut c, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    c.patch_acked(1, vec![put("a", json!({"x": 1}))]).await;
    assert_eq!(metric(&node, "atrium_rooms").await, 1.0);
    c.close().await;
    wait_for_metric(&node, "atrium_rooms", |v| v == 0.0).await;
    // Opening it again brings back everything.
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!((version, doc["a"]["x"].clone()), (1, json!(1)));
}

/// The sum of a labelled counter over all its labels, by label value.
async fn coordinator_ops(node: &Node) -> std::collections::BTreeMap<String, f64> {
    metrics_text(node)
        .await
        .lines()
        .filter_map(|l| l.strip_prefix("atrium_coordinator_operations_total{operation=\""))
        .filter_map(|rest| {
            let (op, value) = rest.split_once("\"} ")?;
            Some((op.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

fn delta(
    after: &std::collections::BTreeMap<String, f64>,
    before: &std::collections::BTreeMap<String, f64>,
) -> std::collections::BTreeMap<String, f64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, d)| *d > 0.0)
        .collect()
}

/// The coordinator calls made since `before`, leaving out the node's own periodic ones
/// (heartbeats, and its room reports for the server API).
async fn calls_since(
    node: &Node,
    before: &std::collections::BTreeMap<String, f64>,
) -> std::collections::BTreeMap<String, f64> {
    let mut d = delta(&coordinator_ops(node).await, before);
    d.remove("heartbeat");
    d.remove("report_rooms");
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_traffic_per_socket_and_per_patch() {
    // A short lease, so that an open room would have to renew many times in the windows.
    const LEASE_MS: u64 = 600;
    let node = Node::start(&[("ATRIUM_LEASE_MS", &LEASE_MS.to_string())]).await;
    let owner = new_account(&node, "owner").await;
    let id = s(&create_file(&node, &owner, "Board", None).await["id"]).to_string();
    let (mut first, _) = Client::join(&node, &id, &Hello::token(&owner)).await;

    // Open rooms cost nothing while they stay open: their leases hang on the node's
    // membership, whose heartbeat is the only call, whatever the number of rooms.
    let mut open = Vec::new();
    for i in 0..9 {
        let other = file_of(&node, owner.clone(), &format!("Open {i}"), "view").await;
        open.push(
            Client::join(&node, &other.id, &Hello::key(&other.view_key))
                .await
                .0,
        );
    }
    let before = coordinator_ops(&node).await;
    let window = Duration::from_millis(LEASE_MS * 5);
    tokio::time::sleep(window).await;
    let idle = delta(&coordinator_ops(&node).await, &before);
    let heartbeats = idle.get("heartbeat").copied().unwrap_or(0.0);
    let most = (window.as_millis() as f64 / (LEASE_MS as f64 / 3.0)).ceil() + 2.0;
    assert!(
        heartbeats >= 1.0 && heartbeats <= most,
        "{heartbeats} heartbeats in {window:?}: {idle:?}"
    );
    // The node's room report (for the server API) is per node, not per room: at most one
    // per ATRIUM_ROOM_REPORT_MS (2 s) while rooms change, one per 20 s otherwise.
    let reports = idle.get("report_rooms").copied().unwrap_or(0.0);
    assert!(
        reports <= 3.0,
        "{reports} room reports in {window:?}: {idle:?}"
    );
    let others: Vec<_> = idle
        .keys()
        .filter(|k| *k != "heartbeat" && *k != "report_rooms")
        .collect();
    assert!(
        others.is_empty(),
        "ten open rooms, only heartbeats: {idle:?}"
    );

    // Sockets of a signed-in person: a slot of the account's counter each, taken
    // at hello and given back at close; nothing else.
    let before = coordinator_ops(&node).await;
    let mut others = Vec::new();
    for _ in 0..4 {
        others.push(Client::join(&node, &id, &Hello::token(&owner)).await.0);
    }
    for c in others {
        c.close().await;
    }
    // The slots come back as the node sees each close: poll for all four.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let per_sockets = loop {
        let d = calls_since(&node, &before).await;
        if d.get("count_down") >= Some(&4.0) || tokio::time::Instant::now() > deadline {
            break d;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(per_sockets.get("count_up"), Some(&4.0), "{per_sockets:?}");
    assert_eq!(per_sockets.get("count_down"), Some(&4.0), "{per_sockets:?}");
    assert_eq!(
        per_sockets.len(),
        2,
        "only the account counter: {per_sockets:?}"
    );

    // Patches never touch the coordinator.
    let before = coordinator_ops(&node).await;
    for i in 1..=50u64 {
        first
            .patch_acked(i, vec![put(&format!("n{i}"), json!({"i": i}))])
            .await;
    }
    let per_patches = calls_since(&node, &before).await;
    assert!(
        per_patches.is_empty(),
        "patches called the coordinator: {per_patches:?}"
    );
}
