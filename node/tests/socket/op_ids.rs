//! Op ids: a resent or lower id is acked with its version, never applied again.

use super::*;

/// Sends patch `id` again with `ops`; the ack it gets (checked to be for `id`).
async fn resend(c: &mut Client, id: u64, ops: Vec<Value>) -> Value {
    c.send_patch(id, ops).await;
    let m = c.recv_json().await;
    assert_eq!(
        (m["type"].clone(), m["id"].clone()),
        (json!("ack"), json!(id)),
        "{m}"
    );
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resent_op_ids_are_acked_not_applied() {
    let node = Node::start(&[]).await;
    let (owner, id, hello_a, (mut a, _), (mut b, _)) = owner_on_two_sockets(&node).await;

    let v = a.patch_acked(5, vec![put("n", json!({"k": 1}))]).await;
    assert_eq!(v, 1);
    assert_eq!(b.recv_json().await["v"], 1);

    // The same id again, with other ops: acked with the original version.
    let m = resend(&mut a, 5, vec![put("n", json!({"k": 2}))]).await;
    assert_eq!(m["v"], 1, "resent op must carry its original version: {m}");
    // A lower id: not applied either (version is still 1 here).
    let m = resend(&mut a, 3, vec![put("m", json!({"k": 3}))]).await;
    assert_eq!(m["v"], 1, "{m}");
    b.expect_quiet(Duration::from_millis(500)).await;
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 1);
    assert_eq!(doc, json!({"n": {"k": 1}}));

    // After someone else's patch, a resend still carries the original version.
    assert_eq!(
        b.patch_acked(1, vec![set("n", json!({"b": true}))]).await,
        2
    );
    assert_eq!(a.recv_json().await["v"], 2);
    let m = resend(&mut a, 5, vec![delete("n")]).await;
    assert_eq!(m["v"], 1, "{m}");

    // Across a reconnect with the same client id too.
    a.close().await;
    let (mut a, w) = Client::join(&node, &id, &hello_a).await;
    assert_eq!(w["version"], 2);
    let m = resend(&mut a, 5, vec![delete("n")]).await;
    assert_eq!(m["v"], 1, "{m}");
    b.expect_quiet(Duration::from_millis(300)).await;
    // A higher id is applied normally.
    assert_eq!(a.patch_acked(6, vec![set("n", json!({"k": 6}))]).await, 3);
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 3);
    assert_eq!(doc, json!({"n": {"k": 6, "b": true}}));
}
