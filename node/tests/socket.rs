//! The socket of `PROTOCOL.md` against the real binary: ordering, acks and
//! relays, viewers, dedupe, `set` after `delete`, resume, stable person ids,
//! and the closes a `hello` can earn.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use common::*;
use serde_json::{json, Map, Value};

fn base_doc() -> Value {
    json!({
        "page1": {"type": "page", "name": "Page 1"},
        "shared": {"page": "page1", "last": "init", "x": 0}
    })
}

/// One side of the two-person test: sends its patches without waiting, then
/// reads until it has seen every version up to `total`. Returns, per version,
/// (who made it: "self" or a person id, the ops, the echoed `t`).
async fn run_side(
    mut c: Client,
    tag: &'static str,
    count: u64,
    total: u64,
) -> (Client, BTreeMap<u64, (String, Value, Value)>) {
    let mut sent: HashMap<u64, (Value, Value)> = HashMap::new();
    for i in 1..=count {
        let ops = vec![
            put(
                &format!("{tag}{i}"),
                json!({"page": "page1", "n": i, "by": tag}),
            ),
            set("shared", json!({"last": format!("{tag}{i}"), "x": i})),
        ];
        let t = match i % 3 {
            0 => json!(1234567),
            1 => json!(12.5),
            _ => Value::Null,
        };
        let mut msg = patch_msg(i, ops.clone());
        if !t.is_null() {
            msg["t"] = t.clone();
        }
        c.send_json(&msg).await;
        sent.insert(i, (json!(ops), t));
    }

    let mut seen: BTreeMap<u64, (String, Value, Value)> = BTreeMap::new();
    let mut last_v = 0;
    let mut last_ack_id = 0;
    while last_v < total {
        let m = c.recv_json().await;
        let v = m["v"]
            .as_u64()
            .unwrap_or_else(|| panic!("{tag}: message without a numeric v: {m}"));
        assert_eq!(
            v,
            last_v + 1,
            "{tag}: versions must arrive gapless and in order (got {m})"
        );
        last_v = v;
        match s(&m["type"]) {
            "ack" => {
                let id = m["id"].as_u64().expect("ack id");
                assert!(
                    id > last_ack_id,
                    "{tag}: acks must come once each, in op id order: {m}"
                );
                last_ack_id = id;
                let (ops, t) = sent.get(&id).expect("ack for an op we sent").clone();
                if t.is_null() {
                    assert!(
                        m.get("t").is_none_or(Value::is_null),
                        "{tag}: ack carries a t the patch lacked: {m}"
                    );
                } else {
                    assert_eq!(m["t"], t, "{tag}: ack must echo t: {m}");
                }
                seen.insert(v, ("self".to_string(), ops, t));
            }
            "patch" => {
                let by = s(&m["by"]).to_string();
                let t = m.get("t").cloned().unwrap_or(Value::Null);
                seen.insert(v, (by, m["ops"].clone(), t));
            }
            other => panic!("{tag}: unexpected message type {other}: {m}"),
        }
    }
    assert_eq!(last_ack_id, count, "{tag}: every patch must be acked");
    (c, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_see_the_same_gapless_order() {
    let node = Node::start(&[]).await;
    let owner = new_account(&node, "owner").await;
    let file = create_file(&node, &owner, "Board", Some(base_doc())).await;
    let id = s(&file["id"]).to_string();
    set_link(&node, &owner, &id, "edit").await;

    let (a, wa) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (b, wb) = Client::join(&node, &id, &Hello::key(s(&file["edit_key"]))).await;
    assert_eq!(wa["role"], "editor", "owner welcome: {wa}");
    assert_eq!(wb["role"], "editor", "edit key with link edit: {wb}");
    assert_eq!(wa["version"], 0);
    assert_eq!(wb["version"], 0);
    assert_eq!(wa["doc"], base_doc(), "welcome doc: {wa}");
    assert!(
        wa.get("resume").is_none(),
        "doc and resume both present: {wa}"
    );
    let (you_a, you_b) = (you(&wa), you(&wb));
    assert_id(&wa["you"]);
    assert_id(&wb["you"]);
    assert_ne!(you_a, you_b);
    // The people list includes the joiner itself.
    let people_b: Vec<&str> = wb["people"]
        .as_array()
        .expect("people")
        .iter()
        .map(|p| s(&p["id"]))
        .collect();
    assert!(people_b.contains(&you_b.as_str()), "{wb}");
    assert!(people_b.contains(&you_a.as_str()), "{wb}");

    const EACH: u64 = 15;
    const TOTAL: u64 = 2 * EACH;
    let ha = tokio::spawn(run_side(a, "a", EACH, TOTAL));
    let hb = tokio::spawn(run_side(b, "b", EACH, TOTAL));
    let (_a, seen_a) = ha.await.expect("side a");
    let (_b, seen_b) = hb.await.expect("side b");

    // Same ops in the same order on both sides, authorship consistent.
    let mut model: Map<String, Value> = base_doc().as_object().unwrap().clone();
    for v in 1..=TOTAL {
        let (by_a, ops_a, t_a) = &seen_a[&v];
        let (by_b, ops_b, t_b) = &seen_b[&v];
        assert_eq!(ops_a, ops_b, "version {v} has different ops on each side");
        assert_eq!(t_a, t_b, "version {v}: relayed t differs from the sent one");
        match (by_a.as_str(), by_b.as_str()) {
            ("self", by) => assert_eq!(by, you_a, "version {v} relayed with wrong by"),
            (by, "self") => assert_eq!(by, you_b, "version {v} relayed with wrong by"),
            other => panic!("version {v}: neither side made it: {other:?}"),
        }
        apply_ops(&mut model, ops_a.as_array().unwrap());
    }

    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, TOTAL);
    assert_eq!(doc, Value::Object(model));
}

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
async fn resent_op_ids_are_acked_not_applied() {
    let node = Node::start(&[]).await;
    let (owner, id) = owned_file(&node).await;

    let hello_a = Hello::token(&owner);
    let (mut a, _) = Client::join(&node, &id, &hello_a).await;
    let (mut b, _) = Client::join(&node, &id, &Hello::token(&owner)).await;

    let v = a.patch_acked(5, vec![put("n", json!({"k": 1}))]).await;
    assert_eq!(v, 1);
    assert_eq!(b.recv_json().await["v"], 1);

    // The same id again, with other ops: acked with the original version.
    a.send_patch(5, vec![put("n", json!({"k": 2}))]).await;
    let m = a.recv_json().await;
    assert_eq!(m["type"], "ack", "{m}");
    assert_eq!(m["id"], 5);
    assert_eq!(m["v"], 1, "resent op must carry its original version: {m}");
    // A lower id: not applied either (version is still 1 here).
    a.send_patch(3, vec![put("m", json!({"k": 3}))]).await;
    let m = a.recv_json().await;
    assert_eq!(m["type"], "ack", "{m}");
    assert_eq!(m["id"], 3);
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
    a.send_patch(5, vec![delete("n")]).await;
    let m = a.recv_json().await;
    assert_eq!(
        (m["type"].clone(), m["id"].clone(), m["v"].clone()),
        (json!("ack"), json!(5), json!(1)),
        "{m}"
    );

    // Across a reconnect with the same client id too.
    a.close().await;
    let (mut a, w) = Client::join(&node, &id, &hello_a).await;
    assert_eq!(w["version"], 2);
    a.send_patch(5, vec![delete("n")]).await;
    let m = a.recv_json().await;
    assert_eq!(
        (m["type"].clone(), m["id"].clone(), m["v"].clone()),
        (json!("ack"), json!(5), json!(1)),
        "{m}"
    );
    b.expect_quiet(Duration::from_millis(300)).await;
    // A higher id is applied normally.
    assert_eq!(a.patch_acked(6, vec![set("n", json!({"k": 6}))]).await, 3);
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 3);
    assert_eq!(doc, json!({"n": {"k": 6, "b": true}}));
}

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

/// Sends `n` patches as `c` (op ids from `first_id`), waiting for each ack.
async fn make_patches(c: &mut Client, first_id: u64, n: u64, tag: &str) -> Vec<(u64, Value)> {
    let mut out = Vec::new();
    for i in 0..n {
        let ops = vec![put(&format!("{tag}{i}"), json!({"i": i}))];
        let v = c.patch_acked(first_id + i, ops.clone()).await;
        out.push((v, json!(ops)));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_gets_exactly_the_missed_patches() {
    let node = Node::start(&[]).await;
    let f = shared_file(&node, "edit").await;
    let (owner, id) = (f.owner.clone(), f.id.clone());

    let hello_a = Hello::token(&owner);
    let (mut a, wa) = Client::join(&node, &id, &hello_a).await;
    let (mut b, _) = Client::join(&node, &id, &Hello::key(&f.edit_key)).await;
    let you_b = {
        // B's person id, as A sees it in relays.
        let mine = make_patches(&mut a, 1, 2, "a").await;
        assert_eq!(mine.iter().map(|p| p.0).collect::<Vec<_>>(), vec![1, 2]);
        b.collect_patches(2).await;
        b.patch_acked(100, vec![put("probe", json!({}))]).await;
        let m = a.recv_json().await;
        assert_eq!(m["v"], 3);
        s(&m["by"]).to_string()
    };
    a.close().await;

    let missed = make_patches(&mut b, 101, 3, "b").await;
    assert_eq!(
        missed.iter().map(|p| p.0).collect::<Vec<_>>(),
        vec![4, 5, 6]
    );

    // since 3: exactly 4, 5, 6, as patches by B, in order.
    let (mut a, w) = Client::join(&node, &id, &hello_a.clone().since(Some(3))).await;
    assert_eq!(w["you"], wa["you"], "you must be stable across a reconnect");
    assert_eq!(w["version"], 6, "{w}");
    assert!(
        w.get("doc").is_none(),
        "resume must come instead of doc: {w}"
    );
    let resume = w["resume"].as_array().expect("resume list");
    assert_eq!(resume.len(), 3, "{w}");
    for (m, (v, ops)) in resume.iter().zip(&missed) {
        assert_eq!(m["type"], "patch", "{m}");
        assert_eq!(m["v"], json!(v), "{m}");
        assert_eq!(&m["ops"], ops, "{m}");
        assert_eq!(m["by"], json!(you_b), "{m}");
    }
    // After the resume, live traffic continues at version 7.
    b.patch_acked(104, vec![delete("b0")]).await;
    let m = a.recv_json().await;
    assert_eq!(
        (m["type"].clone(), m["v"].clone()),
        (json!("patch"), json!(7))
    );
    a.close().await;

    // since 1: its own version 2 comes back as an ack, the rest as patches.
    let (a, w) = Client::join(&node, &id, &hello_a.clone().since(Some(1))).await;
    assert!(w.get("doc").is_none(), "{w}");
    let resume = w["resume"].as_array().expect("resume list");
    let shape: Vec<(String, u64)> = resume
        .iter()
        .map(|m| (s(&m["type"]).to_string(), m["v"].as_u64().expect("v")))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("ack".into(), 2),
            ("patch".into(), 3),
            ("patch".into(), 4),
            ("patch".into(), 5),
            ("patch".into(), 6),
            ("patch".into(), 7)
        ],
        "{w}"
    );
    assert_eq!(resume[0]["id"], 2, "own patch is acked with its op id: {w}");
    a.close().await;

    // since equal to the version: an empty resume.
    let (a, w) = Client::join(&node, &id, &hello_a.clone().since(Some(7))).await;
    assert_eq!(w["version"], 7);
    assert_eq!(w["resume"], json!([]), "{w}");
    assert!(w.get("doc").is_none(), "{w}");
    a.close().await;

    // since above the version, or null: the whole doc.
    for since in [Some(99), None] {
        let (a, w) = Client::join(&node, &id, &hello_a.clone().since(since)).await;
        assert!(w.get("resume").is_none(), "since {since:?}: {w}");
        assert_eq!(w["version"], 7);
        let (_, doc) = get_doc(&node, &owner, &id).await;
        assert_eq!(w["doc"], doc, "since {since:?}");
        a.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_since_beyond_the_ring_gets_the_doc() {
    let node = Node::start(&[("ATRIUM_ROOM_OPS", "5")]).await;
    let (owner, id) = owned_file(&node).await;
    let (mut a, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let mut model = Map::new();
    for i in 1..=20u64 {
        // One op per patch, so the ring holds 5 patches whether it counts
        // patches or ops.
        let ops = if i % 2 == 0 {
            vec![set("n1", json!({"last": i}))]
        } else {
            vec![put(&format!("n{i}"), json!({"i": i}))]
        };
        apply_ops(&mut model, &ops);
        assert_eq!(a.patch_acked(i, ops).await, i);
    }

    let (b, w) = Client::join(&node, &id, &Hello::token(&owner).since(Some(2))).await;
    assert!(
        w.get("resume").is_none(),
        "ring holds 5, since 2 is too old: {w}"
    );
    assert_eq!(w["version"], 20);
    assert_eq!(w["doc"], Value::Object(model.clone()));
    b.close().await;

    let (b, w) = Client::join(&node, &id, &Hello::token(&owner).since(Some(21))).await;
    assert!(w.get("resume").is_none(), "since above the version: {w}");
    assert_eq!(w["doc"], Value::Object(model.clone()));
    b.close().await;

    // Within the ring, resume still works.
    let (_b, w) = Client::join(&node, &id, &Hello::token(&owner).since(Some(17))).await;
    assert!(w.get("doc").is_none(), "{w}");
    let vs: Vec<u64> = w["resume"]
        .as_array()
        .expect("resume")
        .iter()
        .map(|m| m["v"].as_u64().unwrap())
        .collect();
    assert_eq!(vs, vec![18, 19, 20], "{w}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn person_id_is_stable_and_newer_socket_replaces_older() {
    let node = Node::start(&[]).await;
    let (owner, id) = owned_file(&node).await;

    let hello = Hello::token(&owner);
    let (mut first, w1) = Client::join(&node, &id, &hello).await;
    let (other, w_other) = Client::join(&node, &id, &Hello::token(&owner)).await;
    assert_ne!(
        w1["you"], w_other["you"],
        "different client ids, different people"
    );

    // A newer hello with the same client closes the older socket with 4010.
    let (second, w2) = Client::join(&node, &id, &hello).await;
    assert_eq!(w1["you"], w2["you"]);
    first.expect_close(4010).await;

    second.close().await;
    let (mut third, w3) = Client::join(&node, &id, &hello).await;
    assert_eq!(w1["you"], w3["you"], "you must survive a reconnect");
    // The people list holds it once.
    let n = w3["people"]
        .as_array()
        .expect("people")
        .iter()
        .filter(|p| p["id"] == w3["you"])
        .count();
    assert_eq!(n, 1, "{w3}");
    assert_eq!(third.patch_acked(1, vec![put("a", json!({}))]).await, 1);
    other.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_credentials_decide_the_close_code() {
    let node = Node::start(&[]).await;
    let owner = new_account(&node, "owner").await;
    let stranger = new_account(&node, "stranger").await;
    let file = create_file(&node, &owner, "Board", None).await;
    let id = s(&file["id"]).to_string();
    let view_key = s(&file["view_key"]).to_string();

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
    let p = w["people"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == w["you"])
        .expect("joiner listed")
        .clone();
    assert!(
        p["account"].is_string(),
        "signed-in person has an account: {p}"
    );
    let (_g, w) = Client::join(&node, &id, &Hello::key(&view_key)).await;
    let p = w["people"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == w["you"])
        .expect("joiner listed")
        .clone();
    assert!(p["account"].is_null(), "guest account is null: {p}");
    assert_eq!(p["name"], "Guest", "{p}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_changes_reach_live_sockets() {
    let node = Node::start(&[]).await;
    let f = shared_file(&node, "edit").await;
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
