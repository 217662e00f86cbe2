//! Full state on one's page, page changes only elsewhere; `t` echoed as written.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_state_on_ones_page_and_only_page_changes_elsewhere() {
    let (node, f) = node_with_file(&[]).await;
    let [(mut a, wa), (mut b, wb), (mut c, wc)] =
        Client::join_each(&node, &f.id, f.everyone()).await;
    assert_eq!(wa["presence_hz"], 20, "default rate: {wa}");
    let (ya, yb, yc) = (you(&wa), you(&wb), you(&wc));

    a.send_presence(
        json!({"page": "p1", "cursor": [1, 2], "sel": ["s1"], "camera": [0, 0, 1], "t": 5}),
    )
    .await;
    b.send_presence(json!({"page": "p1", "cursor": [3, 4]}))
        .await;
    c.send_presence(json!({"page": "p2", "cursor": [5, 6]}))
        .await;

    // B (same page) gets A's full state.
    let e = wait_entry(&mut b, &yb, &ya, WAIT, |e| {
        same(&e["cursor"], &json!([1, 2]))
    })
    .await;
    assert_full(&e);
    assert_same(
        &e,
        json!({"id": ya, "page": "p1", "cursor": [1, 2], "sel": ["s1"], "camera": [0, 0, 1], "t": 5}),
    );
    // C (another page) learns where A went, and nothing more.
    let e = wait_entry(&mut c, &yc, &ya, WAIT, |e| e["page"] == "p1").await;
    assert_short(&e);
    for cl in [&mut a, &mut b, &mut c] {
        cl.drain_until_quiet(Duration::from_millis(400), Duration::from_secs(5))
            .await;
    }

    // A cursor move on another page is news to nobody elsewhere.
    for i in 0..5 {
        c.send_presence(json!({"cursor": [7 + i, 8]})).await;
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    let got_a = a.collect_for(Duration::from_millis(600)).await;
    let got_b = b.collect_for(Duration::from_millis(100)).await;
    assert!(
        about(&got_a, &yc).is_empty() && about(&got_b, &yc).is_empty(),
        "a cursor move on p2 reached people on p1: {got_a:?} {got_b:?}"
    );

    // Fields left out keep their value.
    a.send_presence(json!({"cursor": [11, 12]})).await;
    let e = wait_entry(&mut b, &yb, &ya, WAIT, |e| {
        same(&e["cursor"], &json!([11, 12]))
    })
    .await;
    assert_same(
        &e,
        json!({"id": ya, "page": "p1", "cursor": [11, 12], "sel": ["s1"], "camera": [0, 0, 1], "t": 5}),
    );
    let got_c = c.collect_for(Duration::from_millis(500)).await;
    assert!(
        about(&got_c, &ya).is_empty(),
        "a cursor move on p1 reached someone on p2: {got_c:?}"
    );

    // A moves to p2: B (left behind) gets {id, page} only, C gets A in full,
    // and A is caught up on C, who is already on p2.
    a.send_presence(json!({"page": "p2"})).await;
    let e = wait_entry(&mut b, &yb, &ya, WAIT, |e| e["page"] == "p2").await;
    assert_same(&e, json!({"id": ya, "page": "p2"}));
    let e = wait_entry(&mut c, &yc, &ya, WAIT, |e| e["page"] == "p2").await;
    assert_same(
        &e,
        json!({"id": ya, "page": "p2", "cursor": [11, 12], "sel": ["s1"], "camera": [0, 0, 1], "t": 5}),
    );
    let e = wait_entry(&mut a, &ya, &yc, Duration::from_secs(2), |e| {
        e["page"] == "p2"
    })
    .await;
    assert_full(&e);
    assert_same(&e["cursor"], json!([11, 8]));

    // Explicit nulls clear a field.
    a.send_presence(json!({"cursor": null, "sel": null})).await;
    let e = wait_entry(&mut c, &yc, &ya, WAIT, |e| e["cursor"].is_null()).await;
    assert_full(&e);
    assert!(e["sel"].is_null(), "sel cleared: {e}");
    assert_same(&e["camera"], json!([0, 0, 1]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presence_t_is_echoed_as_the_sender_wrote_it() {
    let (_node, _, [(mut a, ya), (mut b, yb)]) = owner_and_editor().await;
    b.send_presence(json!({"page": "p1"})).await;
    a.send_text(r#"{"type":"presence","page":"p1","cursor":[1.5,2],"t":12.50}"#.to_string())
        .await;
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let text = b
            .next_text(left)
            .await
            .expect("no presences with A's state within the deadline");
        let m: Value = serde_json::from_str(&text).expect("JSON");
        if m["type"] != "presences" {
            continue;
        }
        assert_never_self(std::slice::from_ref(&m), &yb);
        let Some(e) = people(&m)
            .into_iter()
            .find(|e| e["id"] == ya && e["page"] == "p1")
        else {
            continue;
        };
        assert_full(&e);
        assert!(e["t"].is_number(), "t must stay a number: {e}");
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(
            compact.contains(r#""t":12.50"#),
            "t must be echoed byte for byte (12.50): {text}"
        );
        break;
    }
}

/// A page change still waiting for the room's tick when its socket is replaced by a newer
/// socket of the same client is the person's: the others see the person on the new page.
/// (The room took waiting presence only at its tick, by socket, and dropped what the old
/// socket had left.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_change_waiting_when_its_socket_is_replaced_is_kept() {
    // One tick a second: the page change waits while the socket is replaced.
    let (node, f) = node_with_file(&[("ATRIUM_PRESENCE_HZ", "1")]).await;
    let first = f.by_owner();
    let (mut a, wa) = Client::join(&node, &f.id, &first).await;
    let (mut b, wb) = Client::join(&node, &f.id, &f.by_edit_key()).await;
    let (ya, yb) = (you(&wa), you(&wb));
    a.send_presence(json!({"page": "p1"})).await;
    b.send_presence(json!({"page": "p1"})).await;
    wait_entry(&mut b, &yb, &ya, WAIT, |e| e["page"] == "p1").await;

    // To p2, and at once the same client's new socket.
    a.send_presence(json!({"page": "p2"})).await;
    let mut again = f.by_owner();
    again.client = first.client.clone();
    let (_a2, wa2) = Client::join(&node, &f.id, &again).await;
    assert_eq!(you(&wa2), ya, "the same person");
    let e = wait_entry(&mut b, &yb, &ya, WAIT, |e| e["page"] == "p2").await;
    assert_eq!(e["page"], "p2");
    drop(a);
}
