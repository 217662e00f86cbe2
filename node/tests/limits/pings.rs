//! Pings and dead sockets.

use super::*;

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

/// Silence counts only while the node reads: a client over its byte rate, whose socket the
/// node stops reading for longer than the ping timeout, answers pings all the while (its
/// pongs wait behind its own patches), and keeps its socket. The first hostile runs closed
/// a hundred such editors 1001 "no answer to pings" after 45 s of their address's pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_the_node_stops_reading_is_not_closed_as_silent() {
    let mut envs = FAST_PINGS.to_vec();
    // A whole bucket holds one 1 MiB message: after two 500 KB patches the third puts the
    // socket 2.3 s in debt, and the fourth waits unread past two ping timeouts.
    envs.push(("ATRIUM_WS_BYTES_PER_SECOND", "200000"));
    let node = Node::start(&envs).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let text = "x".repeat(500_000);
    let started = Instant::now();
    for id in 1..=4 {
        a.send_patch(id, vec![put(&format!("n{id}"), json!({ "text": text }))])
            .await;
    }
    let mut acked = Vec::new();
    while acked.len() < 4 {
        match a.next_event(Duration::from_secs(30)).await {
            Event::Json(m) if m["type"] == "ack" => acked.push(m["id"].as_u64().unwrap()),
            Event::Json(m) if m["type"] == "reject" => panic!("a patch was refused: {m}"),
            Event::Json(_) => {}
            other => panic!("the socket ended while the node was not reading it: {other:?}"),
        }
    }
    let took = started.elapsed();
    eprintln!("four 500 KB patches acked over {took:?}");
    assert_eq!(acked, [1, 2, 3, 4]);
    assert!(
        took > Duration::from_secs(2),
        "the socket was never paused past the 1 s ping timeout ({took:?}): the test proves nothing"
    );
    assert_eq!(a.patch_acked(5, vec![put("after", json!({}))]).await, 5);
}
