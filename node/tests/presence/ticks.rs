//! One `presences` per receiver per tick, never one's own state, and the busy-room rate.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_presences_per_tick_and_never_ones_own_state() {
    let (node, f) = node_with_file(&[("ATRIUM_PRESENCE_HZ", "10")]).await;
    let [(mut a, wa), (mut b, wb), (mut v, wv)] =
        Client::join_each(&node, &f.id, f.everyone()).await;
    assert_eq!(wv["role"], "viewer", "view key: {wv}");
    for w in [&wa, &wb, &wv] {
        assert_eq!(
            w["presence_hz"], 10,
            "welcome must carry the room's rate: {w}"
        );
    }
    let (ya, yb, yv) = (you(&wa), you(&wb), you(&wv));
    // Start from empty queues (the joins made some presence traffic).
    for cl in [&mut a, &mut b, &mut v] {
        cl.drain_until_quiet(Duration::from_millis(300), Duration::from_secs(5))
            .await;
    }

    // Everyone (the viewer too) moves every 20 ms, 5 times a tick, for 2 s.
    let dur = Duration::from_secs(2);
    let every = Duration::from_millis(20);
    let ta = tokio::spawn(move_and_listen(a, "p1", every, dur));
    let tb = tokio::spawn(move_and_listen(b, "p1", every, dur));
    let tv = tokio::spawn(move_and_listen(v, "p1", every, dur));
    let (_a, ga) = ta.await.expect("mover a");
    let (_b, gb) = tb.await.expect("mover b");
    let (_v, gv) = tv.await.expect("mover v");

    for (me, got, others) in [
        (&ya, &ga, [&yb, &yv]),
        (&yb, &gb, [&ya, &yv]),
        (&yv, &gv, [&ya, &yb]),
    ] {
        // 10 ticks a second for 2 s: at most 20 messages, plus slack for
        // where the window falls against the ticks.
        assert!(
            got.len() <= 22,
            "{me} got {} presences in 2 s at 10 Hz",
            got.len()
        );
        assert!(
            got.len() >= 5,
            "{me} got only {} presences in 2 s while two others moved constantly",
            got.len()
        );
        assert_never_self(got, me);
        for other in others {
            let seen = about(got, other);
            // Everyone ends on p1, so the last word about each is in full.
            let last = seen
                .last()
                .unwrap_or_else(|| panic!("{me} never heard of {other}"));
            assert_full(last);
            assert_eq!(last["page"], "p1", "{last}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_rooms_tick_slower_and_tell_their_clients() {
    let (node, f) = node_with_file(&[("ATRIUM_BUSY_ROOM", "3")]).await;
    let [(mut a, wa), (mut b, wb), (mut c, wc)] =
        Client::join_each(&node, &f.id, f.everyone()).await;
    for w in [&wa, &wb, &wc] {
        assert_eq!(w["presence_hz"], 20, "3 people are not busy: {w}");
    }

    // The 4th makes the room busy (more than 3).
    let (mut d, wd) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    told_rate(
        [("a", &mut a), ("b", &mut b), ("c", &mut c)],
        5,
        Duration::from_secs(3),
    )
    .await;
    if wd["presence_hz"] != 5 {
        assert_eq!(wd["presence_hz"], 20, "welcome rate: {wd}");
        let m = d
            .recv_type("presence-rate", Duration::from_secs(3))
            .await
            .expect("a joiner welcomed at 20 Hz into a busy room must be told the new rate");
        assert_eq!(m["hz"], 5, "{m}");
    }
    // A 5th joiner's welcome carries the busy rate.
    let (e, we) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    assert_eq!(we["presence_hz"], 5, "welcome into a busy room: {we}");
    drop(e);

    // At 5 Hz a receiver gets at most 5 presences a second.
    let mover = tokio::spawn(move_and_listen(
        d,
        "p1",
        Duration::from_millis(20),
        Duration::from_millis(2500),
    ));
    a.send_presence(json!({"page": "p1"})).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    let got = a.collect_for(Duration::from_secs(2)).await;
    let (d, _) = mover.await.expect("mover");
    let n = got.iter().filter(|m| m["type"] == "presences").count();
    assert!(n <= 12, "{n} presences in 2 s in a busy room (5 Hz)");
    assert!(n >= 3, "only {n} presences in 2 s while someone moved");

    // Back to 4 (the 5th left above), then to 3: no longer busy.
    d.close().await;
    told_rate(
        [("a", &mut a), ("b", &mut b), ("c", &mut c)],
        20,
        Duration::from_secs(5),
    )
    .await;
}

/// Each of `clients` is told the room's new presence rate `hz` within `dur`.
async fn told_rate(clients: [(&str, &mut Client); 3], hz: u64, dur: Duration) {
    for (who, cl) in clients {
        let m = cl
            .recv_type("presence-rate", dur)
            .await
            .unwrap_or_else(|| panic!("{who} was not told the rate {hz} Hz"));
        assert_eq!(m, json!({"type": "presence-rate", "hz": hz}), "{who}");
    }
}
