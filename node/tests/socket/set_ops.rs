//! `set` after `delete`, and `set` with null props.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_never_resurrects_a_deleted_node() {
    let node = Node::start(&[]).await;
    let (owner, id) = owned_file(&node).await;
    let (mut a, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (mut b, _) = Client::join(&node, &id, &Hello::token(&owner)).await;

    a.patch_acked(1, vec![put("shape", json!({"x": 1, "fill": "#000"}))])
        .await;
    b.patch_acked(1, vec![delete("shape")]).await;
    // A drag that was in flight: must do nothing.
    let v = a.patch_acked(2, vec![set("shape", json!({"x": 50}))]).await;
    assert_eq!(v, 3);
    // In one patch: delete then set.
    a.patch_acked(
        3,
        vec![
            put("other", json!({"y": 1})),
            delete("other"),
            set("other", json!({"y": 2})),
        ],
    )
    .await;
    // Deleting what does not exist is fine too.
    a.patch_acked(4, vec![delete("never-was")]).await;

    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 5);
    assert_eq!(doc, json!({}), "deleted nodes came back");
    let (_c, w) = Client::join(&node, &id, &Hello::token(&owner)).await;
    assert_eq!(w["doc"], json!({}), "welcome doc: {w}");
    assert_eq!(w["version"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_removes_props_with_null_and_keeps_others() {
    let node = Node::start(&[]).await;
    let (owner, id) = owned_file(&node).await;
    let (mut a, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    a.patch_acked(
        1,
        vec![
            put("s", json!({"x": 1, "fill": "#000", "old": [1, 2]})),
            set("s", json!({"x": 10, "fill": "#f00", "old": null})),
        ],
    )
    .await;
    a.patch_acked(2, vec![put("s", json!({"only": true}))])
        .await;
    a.patch_acked(
        3,
        vec![
            put("t", json!({"a": 1})),
            set("t", json!({"b": {"deep": [1]}})),
        ],
    )
    .await;
    let (_, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(
        doc,
        json!({"s": {"only": true}, "t": {"a": 1, "b": {"deep": [1]}}}),
        "put must replace the node whole; set must merge and null must remove"
    );
}
