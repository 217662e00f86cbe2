//! The limits of a room node against the real binary: the editor and people
//! caps, message rates (429 then 4013), dropped presence floods, sockets per
//! account and per address (4029, with and without a trusted proxy), sign-in
//! and sign-up rates, backpressure (4008), ping deadlines, `/health` and
//! `/metrics`.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// Cheap password hashing, for tests that sign in many times.
const CHEAP_HASH: [(&str, &str); 2] = [
    ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
    ("ATRIUM_ARGON2_ITERATIONS", "1"),
];

fn counter(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metric(text, name, labels)
}

// ---------------------------------------------------------------------------
// Editor and people caps
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editors_over_the_cap_wait_as_viewers_and_are_promoted_in_order() {
    let node = Node::start(&[("ATRIUM_ROOM_EDITORS", "2")]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (b, wb) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    assert_eq!(wa["role"], "editor", "{wa}");
    assert_eq!(wb["role"], "editor", "{wb}");

    let (mut c, wc) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (mut d, wd) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (mut v, wv) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    for w in [&wc, &wd] {
        assert_eq!(w["role"], "viewer", "third and fourth editor: {w}");
        assert_eq!(w["reason"], "editors-full", "{w}");
    }
    assert_eq!(wv["role"], "viewer", "{wv}");
    assert_ne!(
        wv["reason"], "editors-full",
        "a view key never asked to edit: {wv}"
    );
    let (yc, yd) = (you(&wc), you(&wd));

    // Waiting editors' patches are refused with editors-full (and change nothing).
    c.send_patch(1, vec![put("c", json!({"by": "c"}))]).await;
    let r = c.await_reject(json!(1)).await;
    assert_eq!(r["code"], "editors-full", "{r}");
    d.send_patch(1, vec![put("d", json!({"by": "d"}))]).await;
    let r = d.await_reject(json!(1)).await;
    assert_eq!(r["code"], "editors-full", "{r}");

    // An editor leaves: the first one waiting (C) is promoted, and everyone hears.
    b.close().await;
    for (who, cl) in [("a", &mut a), ("c", &mut c), ("d", &mut d), ("v", &mut v)] {
        let m = cl.recv_json().await;
        assert_eq!(
            m,
            json!({"type": "role", "id": yc, "role": "editor"}),
            "{who} after an editor left"
        );
    }
    let v1 = c.patch_acked(2, vec![put("c", json!({"by": "c"}))]).await;
    assert_eq!(v1, 1, "the refused patches took no version");
    for (who, cl) in [("a", &mut a), ("d", &mut d), ("v", &mut v)] {
        let m = cl.recv_json().await;
        assert!(
            m["type"] == "patch" && m["v"] == 1 && m["by"] == json!(yc),
            "{who} gets the promoted editor's patch: {m}"
        );
    }
    d.send_patch(2, vec![put("d", json!({"by": "d"}))]).await;
    let r = d.await_reject(json!(2)).await;
    assert_eq!(r["code"], "editors-full", "D still waits: {r}");

    // C leaves in turn: D is next.
    c.close().await;
    for (who, cl) in [("a", &mut a), ("d", &mut d), ("v", &mut v)] {
        let m = cl.recv_json().await;
        assert_eq!(
            m,
            json!({"type": "role", "id": yd, "role": "editor"}),
            "{who} after the promoted editor left"
        );
    }
    assert_eq!(
        d.patch_acked(3, vec![put("d", json!({"by": "d"}))]).await,
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_always_gets_an_editor_seat() {
    let node = Node::start(&[("ATRIUM_ROOM_EDITORS", "2")]).await;
    let f = shared_file(&node, "edit").await;
    let (_b, wb) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (_c, wc) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (_d, wd) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    assert_eq!(wb["role"], "editor");
    assert_eq!(wc["role"], "editor");
    assert_eq!(wd["role"], "viewer", "the cap is full: {wd}");
    assert_eq!(wd["reason"], "editors-full", "{wd}");
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    assert_eq!(wa["role"], "editor", "the owner, cap full: {wa}");
    assert!(
        wa.get("reason").is_none_or(Value::is_null),
        "no reason for an editor: {wa}"
    );
    assert_eq!(a.patch_acked(1, vec![put("o", json!({}))]).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_file_refuses_the_next_person_with_4031() {
    let node = Node::start(&[("ATRIUM_ROOM_PEOPLE", "3")]).await;
    let f = shared_file(&node, "edit").await;
    let (_a, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (b, _) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (_c, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    Client::join_refused_with(&node, &f.id, &Hello::key(&f.view_key), &[], 4031).await;
    Client::join_refused_with(&node, &f.id, &Hello::key(&f.edit_key), &[], 4031).await;
    // Someone leaves: there is room again.
    b.close().await;
    let (_d, wd) = Client::join_when_freed(
        &node,
        &f.id,
        &Hello::key(&f.view_key),
        4031,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(wd["type"], "welcome");
}

// ---------------------------------------------------------------------------
// Message rates
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_over_the_rate_wait_in_order_with_a_429_notice() {
    let node = Node::start(&[("ATRIUM_WS_PER_SECOND", "5")]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (mut o, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;

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
    let node = Node::start(&[("ATRIUM_WS_PER_SECOND", "5")]).await;
    let f = shared_file(&node, "edit").await;
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
    let node = Node::start(&[("ATRIUM_WS_PER_SECOND", "5")]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (mut b, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
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

// ---------------------------------------------------------------------------
// Sockets per account and per address
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_holds_a_limited_number_of_sockets() {
    let node = Node::start(&[("ATRIUM_WS_PER_ACCOUNT", "2")]).await;
    let email = unique_email("many");
    let (t1, _) = signup(&node, &email).await;
    let t2 = signin(&node, &email).await;
    let f1 = s(&create_file(&node, &t1, "One", None).await["id"]).to_string();
    let f2 = s(&create_file(&node, &t1, "Two", None).await["id"]).to_string();
    set_link(&node, &t1, &f1, "edit").await;
    let key = s(&get(&node, &format!("/api/files/{f1}"), Some(&t1))
        .await
        .body()["edit_key"])
    .to_string();

    // Two sockets (two sessions, two files) are the account's whole allowance.
    let (s1, _) = Client::join(&node, &f1, &Hello::token(&t1)).await;
    let (_s2, _) = Client::join(&node, &f2, &Hello::token(&t2)).await;
    Client::join_refused_with(&node, &f1, &Hello::token(&t1), &[], 4029).await;
    Client::join_refused_with(&node, &f2, &Hello::token(&t2), &[], 4029).await;
    // Others are not affected.
    let (_g, wg) = Client::join(&node, &f1, &Hello::key(&key)).await;
    assert_eq!(wg["role"], "editor");
    // Closing one frees a slot.
    s1.close().await;
    let (_s3, w) =
        Client::join_when_freed(&node, &f2, &Hello::token(&t1), 4029, Duration::from_secs(5)).await;
    assert_eq!(w["type"], "welcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_holds_a_limited_number_of_sockets_counted_from_the_upgrade() {
    let node = Node::start(&[("ATRIUM_WS_PER_IP", "3")]).await;
    let f = shared_file(&node, "edit").await;
    let (_g1, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    let (_g2, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    // Upgraded, no hello yet: it counts.
    let pending = Client::connect(&node, &f.id).await;
    Client::join_refused_with(&node, &f.id, &Hello::key(&f.edit_key), &[], 4029).await;
    pending.close().await;
    let (_g3, w) = Client::join_when_freed(
        &node,
        &f.id,
        &Hello::key(&f.edit_key),
        4029,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(w["type"], "welcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_sockets_count_against_the_forwarded_address() {
    let node = Node::start(&[
        ("ATRIUM_WS_PER_IP", "3"),
        ("ATRIUM_TRUST_PROXY", "127.0.0.1"),
    ])
    .await;
    let f = shared_file(&node, "edit").await;
    let mut held = Vec::new();
    for addr in ["10.0.0.1", "10.0.0.2"] {
        for _ in 0..3 {
            let (c, _) = viewer_from(&node, &f, addr).await;
            held.push(c);
        }
    }
    viewer_refused_from(&node, &f, "10.0.0.1", 4029).await;
    viewer_refused_from(&node, &f, "10.0.0.2", 4029).await;
    // The proxy's own address has used nothing.
    let (_direct, w) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    assert_eq!(w["type"], "welcome");
    let (_other, w) = viewer_from(&node, &f, "10.0.0.3").await;
    assert_eq!(w["type"], "welcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_addresses_are_ignored_without_a_trusted_proxy() {
    let node = Node::start(&[("ATRIUM_WS_PER_IP", "3")]).await;
    let f = shared_file(&node, "edit").await;
    let mut held = Vec::new();
    for addr in ["10.0.0.1", "10.0.0.2", "10.0.0.3"] {
        let (c, _) = viewer_from(&node, &f, addr).await;
        held.push(c);
    }
    viewer_refused_from(&node, &f, "10.0.0.4", 4029).await;
}

// ---------------------------------------------------------------------------
// Sign-in and sign-up rates
// ---------------------------------------------------------------------------

async fn signin_answer(node: &Node, email: &str, password: &str) -> Resp {
    send_json(
        node,
        "POST",
        "/api/signin",
        None,
        &json!({"email": email, "password": password}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_are_limited_per_email() {
    let node = Node::start(&CHEAP_HASH).await;
    let email = unique_email("target");
    // Sign-ins for one email from one address: 10 a minute (the sign-up is
    // counted per address and per email, not against sign-ins).
    signup(&node, &email).await;
    for _ in 0..10 {
        signin_answer(&node, &email, "wrong password!")
            .await
            .assert_error(401, "bad-credentials");
    }
    signin_answer(&node, &email, PASSWORD)
        .await
        .assert_error(429, "rate-limited");
    signin_answer(&node, &email, "wrong password!")
        .await
        .assert_error(429, "rate-limited");
    // Another email from the same address is still heard.
    signin_answer(&node, &unique_email("other"), PASSWORD)
        .await
        .assert_error(401, "bad-credentials");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_and_sign_ups_are_limited_per_address() {
    let node = Node::start(&CHEAP_HASH).await;
    // 20 a minute from one address, each for a different email.
    for i in 0..20 {
        signin_answer(&node, &unique_email(&format!("nobody{i}")), PASSWORD)
            .await
            .assert_error(401, "bad-credentials");
    }
    signin_answer(&node, &unique_email("late"), PASSWORD)
        .await
        .assert_error(429, "rate-limited");
    send_json(
        &node,
        "POST",
        "/api/signup",
        None,
        &json!({"email": unique_email("new"), "password": PASSWORD, "name": "New"}),
    )
    .await
    .assert_error(429, "rate-limited");
    let text = metrics_text(&node).await;
    assert!(
        counter(&text, "atrium_rate_limited_total", &[]) >= 2.0,
        "refused sign-ins are counted"
    );
}

// ---------------------------------------------------------------------------
// Backpressure
// ---------------------------------------------------------------------------

/// A socket with a small kernel receive buffer, so that a client that stops
/// reading is noticed after little traffic.
async fn connect_small_buffer(node: &Node, file: &str) -> Client {
    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
    sock.set_recv_buffer_size(8192).expect("SO_RCVBUF");
    let stream = tokio::time::timeout(WAIT, sock.connect(([127, 0, 0, 1], node.port).into()))
        .await
        .expect("connect timed out")
        .expect("connect");
    let (ws, _) = tokio::time::timeout(
        WAIT,
        tokio_tungstenite::client_async(
            node.ws_url(file),
            tokio_tungstenite::MaybeTlsStream::Plain(stream),
        ),
    )
    .await
    .expect("upgrade timed out")
    .expect("upgrade");
    Client { ws }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_stops_reading_is_closed_without_slowing_its_room() {
    let node = Node::start(&[
        ("ATRIUM_SEND_QUEUE", "64"),
        ("ATRIUM_SEND_QUEUE_BYTES", "65536"),
    ])
    .await;
    let f = shared_file(&node, "edit").await;
    let (mut w, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;

    // The slow one joins, then is not read again until the end.
    let mut slow = connect_small_buffer(&node, &f.id).await;
    slow.send_json(&Hello::key(&f.view_key).to_json()).await;
    let welcome = slow.recv_json().await;
    assert_eq!(welcome["type"], "welcome");

    // A reader that keeps up, on its own task; it publishes how far it got.
    let (mut fast, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    let progress = Arc::new(AtomicU64::new(0));
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(0u64);
    let reader_progress = progress.clone();
    let reader = tokio::spawn(async move {
        let mut last = 0u64;
        loop {
            let upto = *stop_rx.borrow_and_update();
            if upto > 0 && last >= upto {
                return (fast, last);
            }
            tokio::select! {
                _ = stop_rx.changed() => {}
                m = fast.recv_json_timeout(Duration::from_secs(60)) => {
                    let m = m.expect("the fast reader got nothing for 60 s");
                    assert_eq!(m["type"], "patch", "fast reader: {m}");
                    let v = m["v"].as_u64().expect("v");
                    assert_eq!(v, last + 1, "fast reader: versions gapless");
                    last = v;
                    reader_progress.store(last, Ordering::Relaxed);
                }
            }
        }
    });

    let base = metrics_text(&node).await;
    let overflows0 = counter(&base, "atrium_queue_overflows_total", &[]);
    let closes0 = counter(&base, "atrium_closes_total", &[("code", "4008")]);

    let blob = "x".repeat(20_000);
    let mut op = 0u64;
    let mut seen = (overflows0, closes0);
    let mut closed_at = None;
    let mut batches_after = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while batches_after < 10 {
        assert!(
            Instant::now() < deadline && !reader.is_finished(),
            "after {op} patches of 20 KB, with one socket not reading, \
             (atrium_queue_overflows_total, atrium_closes_total{{code=\"4008\"}}) went from \
             {:?} to {seen:?}; the fast reader is {}",
            (overflows0, closes0),
            if reader.is_finished() {
                "gone"
            } else {
                "alive"
            }
        );
        // Never outrun the reader that keeps up: it must not be the slow one.
        let caught_up = Instant::now() + Duration::from_secs(10);
        while progress.load(Ordering::Relaxed) < op {
            assert!(
                Instant::now() < caught_up && !reader.is_finished(),
                "the reading client is stuck at {} of {op}",
                progress.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let start = Instant::now();
        let first = op + 1;
        // Two at a time: 40 KB, within the reader's 64 KB queue even when
        // both are relayed in the same instant.
        for _ in 0..2 {
            op += 1;
            w.send_patch(op, vec![put("big", json!({"blob": blob, "n": op}))])
                .await;
        }
        for id in first..=op {
            let v = w.await_ack(id).await;
            assert_eq!(v, id, "acks in order");
        }
        let took = start.elapsed();
        // Generous: the point is that the writer is not held up by the slow
        // socket (its queue would have stalled it for good).
        assert!(
            took < Duration::from_secs(5),
            "2 patches took {took:?} to be acked while someone stopped reading"
        );
        if closed_at.is_some() {
            batches_after += 1;
        } else {
            let text = metrics_text(&node).await;
            seen = (
                counter(&text, "atrium_queue_overflows_total", &[]),
                counter(&text, "atrium_closes_total", &[("code", "4008")]),
            );
            if seen.1 > closes0 {
                closed_at = Some(op);
            }
        }
    }
    eprintln!("the slow socket was closed after {closed_at:?} patches of 20 KB");
    let text = metrics_text(&node).await;
    assert!(
        counter(&text, "atrium_queue_overflows_total", &[]) > overflows0,
        "a 4008 close was counted, but no queue overflow"
    );
    stop_tx.send(op).expect("reader alive");
    let (mut fast, last) = tokio::time::timeout(Duration::from_secs(20), reader)
        .await
        .expect("the fast reader fell behind")
        .expect("fast reader task");
    assert_eq!(last, op, "the fast reader got every patch");
    // The reader and the writer are still in; the slow socket is the one gone:
    // reading it now gives what the kernel held, then its end.
    assert_eq!(
        w.patch_acked(op + 1, vec![set("big", json!({"n": 0}))])
            .await,
        op + 1
    );
    let m = fast.recv_json().await;
    assert_eq!(m["v"], op + 1, "{m}");
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match slow.next_event(left).await {
            Event::Json(_) => continue,
            Event::Timeout => panic!("the slow socket is still open 20 s after its 4008"),
            Event::Close(code) => {
                assert_eq!(code, Some(4008), "the slow socket's close code");
                break;
            }
            Event::Ended | Event::Error(_) => break,
        }
    }
}

// ---------------------------------------------------------------------------
// Pings and dead sockets
// ---------------------------------------------------------------------------

const FAST_PINGS: [(&str, &str); 2] = [
    ("ATRIUM_PING_MS", "200"),
    ("ATRIUM_PING_TIMEOUT_MS", "1000"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_never_answers_pings_is_closed_and_frees_its_seat_and_slot() {
    let mut envs = FAST_PINGS.to_vec();
    envs.extend([("ATRIUM_ROOM_EDITORS", "1"), ("ATRIUM_WS_PER_ACCOUNT", "1")]);
    let node = Node::start(&envs).await;
    let f = shared_file(&node, "edit").await;
    let member = new_account(&node, "member").await;

    // A signed-in member with the edit key, on a hand-made socket that says
    // hello and then never answers a ping.
    let mut raw = RawWs::connect(&node, &f.id).await;
    let hello = Hello {
        token: Some(member.clone()),
        key: Some(f.edit_key.clone()),
        client: secret(),
        since: None,
        name: None,
    };
    raw.send_text(&hello.to_json().to_string()).await;
    let w = raw.recv_json(WAIT).await;
    assert_eq!(w["type"], "welcome", "{w}");
    assert_eq!(w["role"], "editor", "the only seat: {w}");
    let since_hello = Instant::now();
    let dead = tokio::spawn(async move {
        let mut pings = 0;
        let mut close = None;
        loop {
            match raw.read_frame(Duration::from_secs(20)).await {
                RawFrame::Frame(0x9, _) => pings += 1,
                RawFrame::Frame(0x8, payload) => {
                    close = payload.get(..2).map(|c| u16::from_be_bytes([c[0], c[1]]))
                }
                RawFrame::Frame(_, _) => {}
                RawFrame::Eof => return Some((pings, close)),
                RawFrame::Timeout => return None,
            }
        }
    });

    // A guest with the edit key waits for the seat (and answers pings, being read).
    let (mut g, wg) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    assert_eq!(wg["role"], "viewer", "{wg}");
    assert_eq!(wg["reason"], "editors-full", "{wg}");
    let yg = you(&wg);
    let m = g
        .recv_type("role", Duration::from_secs(15))
        .await
        .expect("the dead socket's seat was never given to the one waiting");
    assert_eq!(m, json!({"type": "role", "id": yg, "role": "editor"}));

    let (pings, close) = dead
        .await
        .expect("raw reader")
        .expect("the server did not close a socket that never answered pings within 20 s");
    let took = since_hello.elapsed();
    eprintln!("dead socket: {pings} pings, close {close:?}, connection ended after {took:?}");
    assert!(pings >= 1, "the server never pinged");
    assert!(
        took < Duration::from_secs(10),
        "a socket silent past a 1 s ping timeout lived {took:?}"
    );

    // Its account slot is free again.
    let (mut again, w) = Client::join_when_freed(
        &node,
        &f.id,
        &Hello {
            client: secret(),
            ..hello
        },
        4029,
        Duration::from_secs(3),
    )
    .await;
    assert_eq!(w["type"], "welcome");
    // The promoted guest edits.
    assert_eq!(g.patch_acked(1, vec![put("g", json!({}))]).await, 1);
    let m = again.recv_json().await;
    assert_eq!(m["v"], 1, "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_answers_pings_stays_connected() {
    let node = Node::start(&FAST_PINGS).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    // Read for 3 s (three ping timeouts), sending nothing but the pongs the
    // library answers with while it reads.
    let end = tokio::time::Instant::now() + Duration::from_secs(3);
    let mut pings = 0;
    loop {
        match tokio::time::timeout_at(end, a.ws.next()).await {
            Err(_) => break,
            Ok(Some(Ok(Message::Ping(_)))) => pings += 1,
            Ok(Some(Ok(Message::Text(_)))) => {}
            Ok(other) => panic!("a client answering pings lost its socket: {other:?}"),
        }
    }
    assert!(pings >= 3, "only {pings} pings in 3 s at a 200 ms interval");
    assert_eq!(a.patch_acked(1, vec![put("n", json!({}))]).await, 1);
}

// ---------------------------------------------------------------------------
// Health and metrics
// ---------------------------------------------------------------------------

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
    let node = Node::start(&[("ATRIUM_HEALTH_STATS", "1")]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (_b, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
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
    let node = Node::start(&[
        ("ATRIUM_WS_PER_SECOND", "2"),
        ("ATRIUM_SNAPSHOT_BYTES", "1"),
    ])
    .await;
    let f = shared_file(&node, "edit").await;
    let (mut a, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (mut b, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
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

// ---------------------------------------------------------------------------
// Admission control: a storm of joins
// ---------------------------------------------------------------------------

/// What a bare joiner got first: its welcome, or a close (code, reason).
async fn first_answer(url: &str, key: &str) -> Result<(), (u16, String)> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("upgrade");
    let hello = Hello::key(key).to_json();
    ws.send(Message::text(hello.to_string()))
        .await
        .expect("hello");
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                let m: Value = serde_json::from_str(t.as_str()).expect("JSON");
                assert_eq!(
                    m["type"], "welcome",
                    "the first message must be the welcome: {m}"
                );
                return Ok(());
            }
            Ok(Some(Ok(Message::Close(Some(f))))) => {
                return Err((u16::from(f.code), f.reason.to_string()))
            }
            Ok(Some(Ok(_))) => {}
            other => panic!("no welcome and no close: {other:?}"),
        }
    }
}

/// A storm of joins is taken at the pace the node carries: with one join worked on at
/// a time and no time to wait, the joiners of a file whose room must first load a large
/// document are told to come back (1013, with a `retry-ms` hint between 1 and 3 s, drawn
/// apart), the one that had the turn is welcomed, and `atrium_joins_total` counts them
/// admitted and deferred; a bad key is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_joins_waits_its_turn_and_the_rest_are_told_when_to_come_back() {
    let node = Node::start(&[
        ("ATRIUM_JOINS_IN_FLIGHT", "1"),
        ("ATRIUM_JOIN_WAIT_MS", "1"),
        ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
        ("ATRIUM_ARGON2_ITERATIONS", "1"),
    ])
    .await;
    let owner = new_account(&node, "owner").await;
    let doc: serde_json::Map<String, Value> = (0..20_000)
        .map(|k| (format!("d{k}"), json!({"x": k, "name": "a shape to load"})))
        .collect();
    let file = create_file(&node, &owner, "Big", Some(Value::Object(doc))).await;
    let (id, key) = (s(&file["id"]).to_string(), s(&file["edit_key"]).to_string());
    set_link(&node, &owner, &id, "edit").await;

    let url = node.ws_url(&id);
    let storm: Vec<_> = (0..20)
        .map(|_| {
            let (url, key) = (url.clone(), key.clone());
            tokio::spawn(async move { first_answer(&url, &key).await })
        })
        .collect();
    let mut welcomed = 0;
    let mut hints = Vec::new();
    for joiner in storm {
        match joiner.await.expect("joiner") {
            Ok(()) => welcomed += 1,
            Err((1013, reason)) => {
                let hint: u64 = reason
                    .rsplit_once("retry-ms=")
                    .unwrap_or_else(|| panic!("1013 without a retry hint: {reason:?}"))
                    .1
                    .parse()
                    .expect("a number of ms");
                hints.push(hint);
            }
            Err(other) => panic!("a joiner was closed with {other:?}"),
        }
    }
    assert!(welcomed >= 1, "nobody had the turn");
    assert!(hints.len() >= 5, "{} deferred of 20", hints.len());
    assert!(hints.iter().all(|h| (1000..=3000).contains(h)), "{hints:?}");
    let spread = hints.iter().max().unwrap() - hints.iter().min().unwrap();
    assert!(spread > 0, "the hints are not jittered: {hints:?}");

    // A bad key is refused, not deferred.
    assert_eq!(
        first_answer(&url, "not-a-key").await.map_err(|e| e.0),
        Err(4001)
    );
    let text = metrics_text(&node).await;
    let joins = |outcome| metric(&text, "atrium_joins_total", &[("outcome", outcome)]);
    assert_eq!(joins("admitted"), welcomed as f64);
    assert_eq!(joins("deferred"), hints.len() as f64);
    assert_eq!(joins("refused"), 1.0);
}

/// Joins `f` with its view key, as if from `addr` (behind a trusted proxy).
async fn viewer_from(node: &Node, f: &SharedFile, addr: &str) -> (Client, Value) {
    let forwarded = [("x-forwarded-for", addr)];
    Client::join_with(node, &f.id, &Hello::key(&f.view_key), &forwarded).await
}

/// A join of `f` with its view key, as if from `addr`, is closed with `code`.
async fn viewer_refused_from(node: &Node, f: &SharedFile, addr: &str, code: u16) {
    let forwarded = [("x-forwarded-for", addr)];
    Client::join_refused_with(node, &f.id, &Hello::key(&f.view_key), &forwarded, code).await;
}
