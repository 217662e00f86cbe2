//! What a client can send that it should not: each answered as the contract
//! says, never affecting anyone else in the room.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;

/// A node, an owner, a file, and the owner joined to it.
async fn room() -> (Node, String, String, Client) {
    let node = Node::start(&[]).await;
    let (owner, id) = owned_file(&node).await;
    let (c, w) = Client::join(&node, &id, &Hello::token(&owner)).await;
    assert_eq!(w["role"], "editor");
    (node, owner, id, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_frame_closes_1003() {
    let (_node, _owner, _id, mut c) = room().await;
    c.send_msg(Message::binary(b"{\"type\":\"patch\"}".to_vec()))
        .await;
    c.expect_close(1003).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_closes_1007() {
    let (_node, _owner, _id, mut c) = room().await;
    let frame = Frame::message(vec![0xffu8, 0xfe], OpCode::Data(Data::Text), true);
    c.send_msg(Message::Frame(frame)).await;
    c.expect_close(1007).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_over_1_mib_closes_1009() {
    let (node, owner, id, mut c) = room().await;
    // A well-formed patch whose only fault is its size.
    let big = "x".repeat(1024 * 1024 + 100);
    let msg = patch_msg(1, vec![put("big", json!({ "text": big }))]).to_string();
    assert!(msg.len() > 1024 * 1024);
    // The server may stop reading before the whole message is written.
    let _ = tokio::time::timeout(
        WAIT,
        futures_util::SinkExt::send(&mut c.ws, Message::text(msg)),
    )
    .await;
    c.expect_close(1009).await;
    let (version, _) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_just_under_1_mib_is_fine() {
    let (node, owner, id, mut c) = room().await;
    let big = "y".repeat(1000 * 1000);
    assert_eq!(
        c.patch_acked(1, vec![put("big", json!({ "text": big }))])
            .await,
        1
    );
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 1);
    assert_eq!(doc["big"]["text"].as_str().map(str::len), Some(1000 * 1000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_hello_in_time_closes_4000() {
    let node = Node::start(&[("ATRIUM_HELLO_TIMEOUT_MS", "300")]).await;
    let (owner, id) = owned_file(&node).await;
    let start = std::time::Instant::now();
    let mut c = Client::connect(&node, &id).await;
    c.expect_close_within(4000, Duration::from_secs(5)).await;
    assert!(
        start.elapsed() >= Duration::from_millis(250),
        "closed before the hello deadline: {:?}",
        start.elapsed()
    );
    // A prompt hello on the same node is fine.
    let (_c, w) = Client::join(&node, &id, &Hello::token(&owner)).await;
    assert_eq!(w["type"], "welcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_token_closes_4001() {
    let (node, _owner, id, _c) = room().await;
    Client::join_expect_close(&node, &id, &Hello::token(&secret()), 4001).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_is_rejected_and_the_socket_stays_usable() {
    let (node, owner, id, mut c) = room().await;

    // Not JSON at all, JSON that is not an object, an unknown type.
    for text in [
        "{not json",
        "",
        "[1,2,3]",
        "42",
        r#"{"type":"dance"}"#,
        r#"{"no_type":true}"#,
    ] {
        c.send_text(text.to_string()).await;
        let r = c.await_reject(Value::Null).await;
        assert_eq!(r["code"], "invalid", "for {text:?}: {r}");
    }

    // A well-formed patch works afterwards.
    assert_eq!(c.patch_acked(1, vec![put("ok", json!({"a": 1}))]).await, 1);

    // Patches whose fault is known by id: rejected with that id.
    let long_prop = "p".repeat(65);
    let deep = (0..40).fold(json!(1), |inner, _| json!([inner]));
    let cases: Vec<(u64, Value, &str)> = vec![
        (
            2,
            json!([put("a", json!({ long_prop.clone(): 1 }))]),
            "invalid",
        ),
        (3, json!([put("../etc", json!({}))]), "invalid"),
        (4, json!([put("a.b", json!({}))]), "invalid"),
        (5, json!([put(&"n".repeat(65), json!({}))]), "invalid"),
        (6, json!([put("a", json!({ "deep": deep }))]), "invalid"),
        (7, json!([{"op": "explode", "id": "a"}]), "invalid"),
        (8, json!([{"op": "put", "id": "a", "props": 5}]), "invalid"),
        (9, json!([{"op": "set", "id": "ok"}]), "invalid"),
        (10, json!({"op": "put"}), "invalid"),
        // Applied whole or not at all: a good op next to a bad one.
        (
            11,
            json!([
                put("good", json!({})),
                put("bad", json!({ long_prop.clone(): 1 }))
            ]),
            "invalid",
        ),
    ];
    for (op_id, ops, code) in &cases {
        c.send_json(&json!({"type": "patch", "id": op_id, "ops": ops}))
            .await;
        let r = c.await_reject(json!(op_id)).await;
        assert_eq!(r["code"], json!(code), "ops {ops}: {r}");
    }
    // 1001 ops: too large, with its id.
    let many: Vec<Value> = (0..1001)
        .map(|i| put(&format!("m{i}"), json!({})))
        .collect();
    c.send_patch(12, many).await;
    let r = c.await_reject(json!(12)).await;
    assert_eq!(r["code"], "too-large", "{r}");

    // Bad op ids: refused as invalid.
    for bad in [json!(0), json!(-3), json!(1.5), json!("13"), Value::Null] {
        c.send_json(&json!({"type": "patch", "id": bad, "ops": [put("z", json!({}))]}))
            .await;
        let r = c.recv_json().await;
        assert_eq!(r["type"], "reject", "op id {bad}: {r}");
        assert_eq!(r["code"], "invalid", "op id {bad}: {r}");
    }

    // None of it changed anything; the limits themselves are allowed.
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 1);
    assert_eq!(doc, json!({"ok": {"a": 1}}));
    let exactly: Vec<Value> = (0..1000)
        .map(|i| put(&format!("m{i}"), json!({})))
        .collect();
    assert_eq!(c.patch_acked(20, exactly).await, 2);
    let prop64 = "q".repeat(64);
    assert_eq!(
        c.patch_acked(
            21,
            vec![put(&"i".repeat(64), json!({ prop64: {"nested": [[1]]} }))]
        )
        .await,
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_from_one_person_does_not_slow_the_others() {
    let (node, owner, id, mut good) = room().await;
    let (mut bad, _) = Client::join(&node, &id, &Hello::token(&owner)).await;

    let spammer = tokio::spawn(async move {
        for i in 0..40u64 {
            match i % 4 {
                0 => bad.send_text("}{".to_string()).await,
                1 => bad.send_json(&json!({"type": "nonsense"})).await,
                2 => bad.send_patch(1000 + i, vec![put("../x", json!({}))]).await,
                _ => {
                    bad.send_patch(1000 + i, vec![json!({"op": "put", "id": 7})])
                        .await
                }
            }
        }
        // Every one of them answered with a reject; relays of the good
        // person's patches may be interleaved.
        let mut rejects = 0;
        while rejects < 40 {
            let m = bad.recv_json().await;
            match s(&m["type"]) {
                "reject" => {
                    assert_eq!(m["code"], "invalid", "{m}");
                    rejects += 1;
                }
                "patch" => {}
                other => panic!("unexpected {other}: {m}"),
            }
        }
        bad
    });

    for i in 1..=20u64 {
        good.send_patch(i, vec![put(&format!("g{i}"), json!({"i": i}))])
            .await;
    }
    for i in 1..=20u64 {
        assert_eq!(good.await_ack(i).await, i, "good person's patch {i}");
    }
    let _bad = tokio::time::timeout(Duration::from_secs(20), spammer)
        .await
        .expect("spammer finished")
        .expect("spammer task");
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 20);
    assert_eq!(doc.as_object().unwrap().len(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn document_size_limit() {
    // A small document limit (the setting behind the contract's 64 MiB).
    let node = Node::start(&[("ATRIUM_MAX_DOC_BYTES", "4096")]).await;
    let owner = new_account(&node, "owner").await;

    // Creation: a doc under the limit is fine, one over it is 413.
    let small = json!({"a": {"text": "s".repeat(1000)}});
    let file = create_file(&node, &owner, "Small", Some(small.clone())).await;
    let id = s(&file["id"]).to_string();
    let big = json!({"a": {"text": "b".repeat(8000)}});
    create_file_answer(&node, &owner, "Big", Some(big))
        .await
        .assert_error(413, "too-large");
    // A body far over any limit: 413 too.
    let junk = format!(
        "{{\"name\":\"x\",\"doc\":{{\"a\":{{\"t\":\"{}\"}}}}}}",
        "j".repeat(2 << 20)
    );
    http(
        &node,
        "POST",
        "/api/files",
        &[("authorization", &bearer(&owner))],
        Some(junk.into_bytes()),
    )
    .await
    .assert_error(413, "too-large");

    // Socket: a patch that would take the doc past the limit is too-large,
    // changes nothing, and the next one is fine.
    let (mut c, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    c.send_patch(1, vec![put("b", json!({"text": "p".repeat(3500)}))])
        .await;
    let r = c.await_reject(json!(1)).await;
    assert_eq!(r["code"], "too-large", "{r}");
    assert_eq!(c.patch_acked(2, vec![put("c", json!({"n": 1}))]).await, 1);
    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, 1);
    assert_eq!(doc, json!({"a": {"text": "s".repeat(1000)}, "c": {"n": 1}}));
    let r = get(&node, "/api/files", Some(&owner)).await;
    assert_eq!(r.body()["files"].as_array().map(Vec::len), Some(1));
}
