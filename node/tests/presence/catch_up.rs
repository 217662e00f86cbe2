//! Joiners and page switchers are caught up; seventy movers reach a receiver in two ticks.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joiners_and_page_switchers_are_caught_up() {
    let (node, f, [(mut a, ya), (mut b, yb)]) = owner_and_editor().await;
    a.send_presence(json!({"page": "p1", "cursor": [1, 1], "camera": [1, 2, 3], "t": 1}))
        .await;
    b.send_presence(json!({"page": "p1", "cursor": [2, 2], "sel": ["n1", "n2"], "t": 2}))
        .await;
    wait_entry(&mut a, &ya, &yb, WAIT, |e| {
        same(&e["cursor"], &json!([2, 2]))
    })
    .await;
    wait_entry(&mut b, &yb, &ya, WAIT, |e| {
        same(&e["cursor"], &json!([1, 1]))
    })
    .await;
    // Nobody moves any more.
    for cl in [&mut a, &mut b] {
        cl.drain_until_quiet(Duration::from_millis(300), Duration::from_secs(5))
            .await;
    }

    // A viewer joins and goes to p1: within a few ticks it has both in full.
    let (mut c, wc) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    let yc = you(&wc);
    c.send_presence(json!({"page": "p1"})).await;
    let state = caught_up_on(&mut c, &yc, "p1", &[&ya, &yb], |_| {}).await;
    assert_same(
        &state[&ya],
        json!({"id": ya, "page": "p1", "cursor": [1, 1], "sel": null, "camera": [1, 2, 3], "t": 1}),
    );
    assert_same(
        &state[&yb],
        json!({"id": yb, "page": "p1", "cursor": [2, 2], "sel": ["n1", "n2"], "camera": null, "t": 2}),
    );
    // The viewer's arrival on p1 is news to both (viewers send presence too).
    let e = wait_entry(&mut a, &ya, &yc, WAIT, |e| e["page"] == "p1").await;
    assert_full(&e);
    wait_entry(&mut b, &yb, &yc, WAIT, |e| e["page"] == "p1").await;

    // B goes to p2 and comes back: it is caught up on p1 again (A and C),
    // although neither moved meanwhile.
    b.send_presence(json!({"page": "p2"})).await;
    wait_entry(&mut a, &ya, &yb, WAIT, |e| e["page"] == "p2").await;
    b.drain_until_quiet(Duration::from_millis(300), Duration::from_secs(5))
        .await;
    b.send_presence(json!({"page": "p1"})).await;
    caught_up_on(&mut b, &yb, "p1", &[&ya, &yc], assert_full).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seventy_movers_reach_a_receiver_within_two_ticks() {
    // Slow ticks (500 ms) so that 70 sends land within one tick, and no busy
    // rate to get in the way.
    let (node, f) =
        node_with_file(&[("ATRIUM_PRESENCE_HZ", "2"), ("ATRIUM_BUSY_ROOM", "1000")]).await;
    let (mut r, wr) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let yr = you(&wr);
    r.send_presence(json!({"page": "p1"})).await;
    let mut movers = Vec::new();
    for i in 0..70u64 {
        let key = if i % 2 == 0 { &f.edit_key } else { &f.view_key };
        let (mut m, w) = Client::join(&node, &f.id, &Hello::key(key)).await;
        m.send_presence(json!({"page": "p1", "cursor": [0, 0]}))
            .await;
        movers.push((m, you(&w)));
    }
    // Let every join and first move be delivered.
    r.drain_until_quiet(Duration::from_millis(1500), Duration::from_secs(20))
        .await;

    let start = Instant::now();
    for (i, (m, _)) in movers.iter_mut().enumerate() {
        m.send_presence(json!({"cursor": [i, i]})).await;
    }
    let sent_in = start.elapsed();

    let want: BTreeMap<&str, usize> = movers
        .iter()
        .enumerate()
        .map(|(i, (_, id))| (id.as_str(), i))
        .collect();
    let mut msgs = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    while seen.len() < want.len() && msgs.len() < 4 {
        let Some(m) = r.recv_type("presences", Duration::from_secs(5)).await else {
            break;
        };
        let list = people(&m);
        assert_never_self(std::slice::from_ref(&m), &yr);
        for e in &list {
            let id = s(&e["id"]);
            let Some(&i) = want.get(id) else {
                panic!("an entry about someone who did not move: {e}");
            };
            assert_full(e);
            assert!(
                same(&e["cursor"], &json!([i, i])),
                "latest cursor of mover {i}: {e}"
            );
            *seen.entry(id.to_string()).or_default() += 1;
        }
        msgs.push(list.len());
    }
    assert_eq!(
        seen.len(),
        70,
        "the receiver heard of {} of 70 movers in messages of sizes {msgs:?}",
        seen.len()
    );
    assert!(
        seen.values().all(|&n| n == 1),
        "someone who moved once was sent twice: {seen:?} (sizes {msgs:?})"
    );
    // Two ticks once everyone has moved; a third message is allowed only when
    // the first came from a tick that fell within the burst of sends (then it
    // is not full).
    assert!(
        msgs.len() <= 2 || (msgs.len() == 3 && msgs[0] < 60),
        "70 movers took {} presences messages (sizes {msgs:?}); the sends took {sent_in:?}",
        msgs.len()
    );
}
