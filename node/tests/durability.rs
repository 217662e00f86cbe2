//! Invariant 2 (docs/architecture.md) against the real binary: what was acked survives
//! `kill -9`, and SIGTERM drains cleanly.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use serde_json::{json, Map, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acked_patch_survives_kill_9() {
    let (data, mut node, owner, id) = node_with_file().await;
    let (mut c, w) = Client::join(&node, &id, &Hello::token(&owner)).await;
    assert_eq!(w["version"], 0);

    // A burst, pipelined: everything is sent before any ack is read.
    const N: u64 = 200;
    let mut sent: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for i in 1..=N {
        let ops = vec![
            put(
                &format!("n{i}"),
                json!({"i": i, "label": format!("shape {i}")}),
            ),
            put("counter", json!({"value": i})),
        ];
        c.send_patch(i, ops.clone()).await;
        sent.insert(i, ops);
    }
    // Collect the acks; they come in version order, one per op id.
    let mut acked: Vec<(u64, u64)> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while acked.len() < N as usize {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let m = c
            .recv_json_timeout(left)
            .await
            .unwrap_or_else(|| panic!("only {} of {N} acks within 60 s", acked.len()));
        assert_eq!(m["type"], "ack", "{m}");
        let (op, v) = (m["id"].as_u64().unwrap(), m["v"].as_u64().unwrap());
        if let Some(&(_, last_v)) = acked.last() {
            assert_eq!(v, last_v + 1, "acks must be gapless and in order: {m}");
        }
        acked.push((op, v));
    }
    let last_v = acked.last().unwrap().1;
    assert_eq!(last_v, N);

    // Kill at once, without giving the node any chance to flush more.
    node.kill9();
    drop(c);

    let node = Node::start_in(data.path(), &[]).await;
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(
        version, last_v,
        "version after restart must be the last acked"
    );
    let mut model = Map::new();
    for (op, _) in &acked {
        apply_ops(&mut model, &sent[op]);
    }
    assert_eq!(doc, Value::Object(model), "an acked patch was lost");

    // The room carries on from there.
    let (mut c, w) = Client::join(&node, &id, &Hello::token(&owner)).await;
    assert_eq!(w["version"], json!(last_v));
    assert_eq!(
        c.patch_acked(N + 1, vec![delete("counter")]).await,
        last_v + 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedupe_state_survives_kill_9() {
    let (data, mut node, owner, id) = node_with_file().await;
    let hello = Hello::token(&owner);
    let (mut c, _) = Client::join(&node, &id, &hello).await;
    for i in 1..=3 {
        assert_eq!(
            c.patch_acked(i, vec![put(&format!("n{i}"), json!({}))])
                .await,
            i
        );
    }
    node.kill9();
    drop(c);

    let node = Node::start_in(data.path(), &[]).await;
    let (mut c, w) = Client::join(&node, &id, &hello).await;
    assert_eq!(w["version"], 3);
    // The client resends op 3 (it never saw the ack, say): not applied again.
    c.send_patch(3, vec![put("n3", json!({"again": true}))])
        .await;
    let m = c.recv_json().await;
    assert_eq!(m["type"], "ack", "{m}");
    assert_eq!(m["id"], 3);
    let v = m["v"].as_u64().expect("v");
    assert_eq!(v, 3, "a resent op is acked with its original version: {m}");
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 3);
    assert_eq!(doc, json!({"n1": {}, "n2": {}, "n3": {}}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_closes_with_1012_exits_0_and_keeps_data() {
    let (data, mut node, owner, id) = node_with_file().await;
    let (mut a, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (mut b, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let mut model = Map::new();
    for i in 1..=10u64 {
        let ops = vec![put(&format!("n{i}"), json!({"i": i}))];
        apply_ops(&mut model, &ops);
        assert_eq!(a.patch_acked(i, ops).await, i);
    }
    b.collect_patches(10).await;

    node.sigterm();
    a.expect_close(1012).await;
    b.expect_close(1012).await;
    let status = node
        .wait_exit(Duration::from_secs(10))
        .await
        .expect("node still running 10 s after SIGTERM");
    assert!(status.success(), "exit status after SIGTERM: {status}");

    let node = Node::start_in(data.path(), &[]).await;
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 10);
    assert_eq!(doc, Value::Object(model));
    // The listing survived too.
    let r = get(&node, "/api/files", Some(&owner)).await;
    r.assert_status(200);
    assert_eq!(r.body()["files"][0]["id"], json!(id), "{}", r.text);
    assert_eq!(r.body()["files"][0]["version"], 10, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_burst_keeps_a_consistent_prefix() {
    let (data, mut node, owner, id) = node_with_file().await;
    let hello = Hello::token(&owner);
    let (mut c, _) = Client::join(&node, &id, &hello).await;

    // One client, in order: op i takes version i if all goes well.
    const N: u64 = 300;
    let ops_of = |i: u64| {
        vec![
            put(&format!("n{i}"), json!({"i": i})),
            set("n1", json!({"last": i})),
        ]
    };
    for i in 1..=N {
        c.send_patch(i, ops_of(i)).await;
    }
    // Kill as soon as a third of it is acked, with the rest in flight.
    let mut last_acked = 0;
    while last_acked < N / 3 {
        let m = c.recv_json().await;
        assert_eq!(m["type"], "ack", "{m}");
        assert_eq!(m["id"], json!(last_acked + 1), "{m}");
        assert_eq!(m["v"], json!(last_acked + 1), "{m}");
        last_acked += 1;
    }
    node.kill9();
    drop(c);

    let node = Node::start_in(data.path(), &[]).await;
    let (version, doc) = get_doc(&node, &owner, &id).await;
    eprintln!("{last_acked} acked when killed; {version} of {N} survived");
    assert!(
        (last_acked..=N).contains(&version),
        "version {version} after restart, but {last_acked} were acked"
    );
    // Exactly the first `version` patches, each whole: no hole, no half patch.
    let mut model = Map::new();
    for i in 1..=version {
        apply_ops(&mut model, &ops_of(i));
    }
    assert_eq!(doc, Value::Object(model.clone()));

    // The client resends everything it has no ack for: what the server kept
    // is acked with its original version, the rest is applied after it.
    let (mut c, w) = Client::join(&node, &id, &hello.clone().since(Some(last_acked))).await;
    assert_eq!(w["version"], json!(version));
    for i in last_acked + 1..=N {
        c.send_patch(i, ops_of(i)).await;
    }
    for i in last_acked + 1..=N {
        let m = c.recv_json().await;
        assert_eq!(m["type"], "ack", "{m}");
        assert_eq!(m["id"], json!(i), "{m}");
        assert_eq!(
            m["v"],
            json!(i),
            "op {i} must keep or take version {i}: {m}"
        );
    }
    for i in version + 1..=N {
        apply_ops(&mut model, &ops_of(i));
    }
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, N);
    assert_eq!(doc, Value::Object(model));
}

/// A node on a data folder of its own (kept for a restart), a new account and its
/// file: (folder, node, owner's token, file id).
async fn node_with_file() -> (tempfile::TempDir, Node, String, String) {
    let data = tempfile::tempdir().expect("temp dir");
    let node = Node::start_in(data.path(), &[]).await;
    let (owner, id) = owned_file(&node).await;
    (data, node, owner, id)
}
