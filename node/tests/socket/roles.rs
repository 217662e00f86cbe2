//! Who may edit: roles from the hello's credentials and the file's link, live.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewer_receives_but_cannot_edit() {
    let node = Node::start(&[]).await;
    let f = shared_file(&node, "view").await;
    let (owner, id) = (f.owner.clone(), f.id.clone());

    let (mut a, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (mut viewer, wv) = Client::join(&node, &id, &Hello::key(&f.view_key)).await;
    assert_eq!(wv["role"], "viewer", "view key: {wv}");
    // An edit key while link is `view` only gives view access.
    let (mut viewer2, wv2) = Client::join(&node, &id, &Hello::key(&f.edit_key)).await;
    assert_eq!(wv2["role"], "viewer", "edit key with link view: {wv2}");

    let v1 = a.patch_acked(1, vec![put("r1", json!({"w": 10}))]).await;
    assert_eq!(v1, 1);
    for c in [&mut viewer, &mut viewer2] {
        let m = c.recv_json().await;
        assert_eq!(m["type"], "patch", "viewer gets relays: {m}");
        assert_eq!(m["v"], 1);
        assert_eq!(m["ops"], json!([put("r1", json!({"w": 10}))]));
    }

    viewer
        .send_patch(1, vec![put("evil", json!({"w": 1}))])
        .await;
    let r = viewer.await_reject(json!(1)).await;
    assert_eq!(r["code"], "viewer", "{r}");
    viewer2.send_patch(7, vec![delete("r1")]).await;
    let r = viewer2.await_reject(json!(7)).await;
    assert_eq!(r["code"], "viewer", "{r}");

    // Nothing relayed to the owner, nothing changed.
    a.expect_quiet(Duration::from_millis(500)).await;
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 1);
    assert_eq!(doc, json!({"r1": {"w": 10}}));
    // The owner's next patch still takes version 2.
    assert_eq!(a.patch_acked(2, vec![set("r1", json!({"w": 11}))]).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_credentials_decide_the_close_code() {
    let node = Node::start(&[]).await;
    let stranger = new_account(&node, "stranger").await;
    let f = shared_file(&node, "none").await;
    let (owner, id, view_key) = (f.owner, f.id, f.view_key);

    // Bad token, key of no file, nothing at all: 4001.
    Client::join_expect_close(&node, &id, &Hello::token("not-a-real-token"), 4001).await;
    Client::join_expect_close(&node, &id, &Hello::key(&secret()), 4001).await;
    Client::join_expect_close(&node, &id, &Hello::anonymous(), 4001).await;
    // Valid credentials without access: 4003.
    Client::join_expect_close(&node, &id, &Hello::key(&view_key), 4003).await;
    Client::join_expect_close(&node, &id, &Hello::token(&stranger), 4003).await;
    // Unknown file: 4004.
    Client::join_expect_close(&node, "no-such-file", &Hello::token(&owner), 4004).await;

    // Messages before hello are refused but the hello still works.
    let mut c = Client::connect(&node, &id).await;
    c.send_patch(1, vec![put("x", json!({}))]).await;
    let r = c.await_reject(Value::Null).await;
    assert_eq!(r["code"], "invalid", "{r}");
    c.send_json(&Hello::token(&owner).to_json()).await;
    let w = c.recv_json().await;
    assert_eq!(w["type"], "welcome", "{w}");
    assert_eq!(w["role"], "editor");
    assert_eq!(
        w["version"], 0,
        "the early patch must not have been applied"
    );

    // The stranger gets in with a key once the link allows it.
    set_link(&node, &owner, &id, "view").await;
    let mut h = Hello::token(&stranger);
    h.key = Some(view_key.clone());
    let (_s, w) = Client::join(&node, &id, &h).await;
    assert_eq!(w["role"], "viewer", "{w}");
    let p = own_entry(&w);
    assert!(
        p["account"].is_string(),
        "signed-in person has an account: {p}"
    );
    let (_g, w) = Client::join(&node, &id, &Hello::key(&view_key)).await;
    let p = own_entry(&w);
    assert!(p["account"].is_null(), "guest account is null: {p}");
    assert_eq!(p["name"], "Guest", "{p}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_changes_reach_live_sockets() {
    let (node, f) = node_with_file(&[]).await;
    let (owner, id) = (f.owner.clone(), f.id.clone());

    let (mut guest, w) = Client::join(&node, &id, &Hello::key(&f.edit_key)).await;
    assert_eq!(w["role"], "editor");
    let guest_you = you(&w);
    assert_eq!(guest.patch_acked(1, vec![put("g", json!({}))]).await, 1);

    // Down to view: the guest is told and can no longer edit.
    set_link(&node, &owner, &id, "view").await;
    let m = guest.recv_json().await;
    assert_eq!(m["type"], "role", "{m}");
    assert_eq!(m["id"], json!(guest_you), "{m}");
    assert_eq!(m["role"], "viewer", "{m}");
    guest.send_patch(2, vec![delete("g")]).await;
    let r = guest.await_reject(json!(2)).await;
    assert_eq!(r["code"], "viewer");

    // Down to none: the socket closes with 4003.
    set_link(&node, &owner, &id, "none").await;
    guest.expect_close(4003).await;
    let (version, _) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 1);
}
