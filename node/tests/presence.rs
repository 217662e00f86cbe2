//! Presence on the room tick, against the real binary: at most one `presences`
//! per receiver per tick, never the receiver's own state, at most 60 people a
//! message, full state only for the receiver's page, catch-up for joiners and
//! page switchers, leavers batched, viewers included, and the busy-room rate.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// The entries of a `presences` message, checked against the message rules.
fn people(msg: &Value) -> Vec<Value> {
    assert_eq!(msg["type"], "presences", "not a presences message: {msg}");
    let list = msg["people"]
        .as_array()
        .unwrap_or_else(|| panic!("presences without a people array: {msg}"));
    assert!(
        list.len() <= 60,
        "a presences message carries at most 60 people, this one has {}",
        list.len()
    );
    for e in list {
        assert_id(&e["id"]);
    }
    list.clone()
}

/// JSON equality with numbers compared by value (a cursor sent as `1` may
/// come back as `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn assert_same(got: &Value, want: Value) {
    assert!(same(got, &want), "got  {got}\nwant {want}");
}

fn keys(entry: &Value) -> Vec<String> {
    let mut k: Vec<String> = entry
        .as_object()
        .unwrap_or_else(|| panic!("entry is not an object: {entry}"))
        .keys()
        .cloned()
        .collect();
    k.sort();
    k
}

fn assert_full(entry: &Value) {
    assert_eq!(
        keys(entry),
        ["camera", "cursor", "id", "page", "sel", "t"],
        "a full entry has exactly id, page, cursor, sel, camera and t: {entry}"
    );
}

fn assert_short(entry: &Value) {
    assert_eq!(
        keys(entry),
        ["id", "page"],
        "an entry for someone on another page is {{id, page}} only: {entry}"
    );
}

/// Every entry about `who` in a list of messages (presences only).
fn about(msgs: &[Value], who: &str) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["type"] == "presences")
        .flat_map(people)
        .filter(|e| e["id"] == who)
        .collect()
}

fn assert_never_self(msgs: &[Value], me: &str) {
    for m in msgs.iter().filter(|m| m["type"] == "presences") {
        for e in people(m) {
            assert_ne!(e["id"], me, "a receiver got its own state: {m}");
        }
    }
}

/// Reads until an entry about `who` satisfying `want` arrives, within `dur`.
/// Every presences message read is checked for the receiver's own id.
async fn wait_entry(
    c: &mut Client,
    me: &str,
    who: &str,
    dur: Duration,
    want: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + dur;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(m) = c.recv_type("presences", left).await else {
            panic!("no fitting entry about {who} within {dur:?}; entries about them: {seen:?}");
        };
        assert_never_self(std::slice::from_ref(&m), me);
        for e in people(&m) {
            if e["id"] == who {
                if want(&e) {
                    return e;
                }
                seen.push(e);
            }
        }
    }
}

/// Sends a presence every `every` for `dur` while reading everything that
/// comes; returns the `presences` messages received.
async fn move_and_listen(
    mut c: Client,
    page: &'static str,
    every: Duration,
    dur: Duration,
) -> (Client, Vec<Value>) {
    let start = Instant::now();
    let end = start + dur;
    let mut next_send = start;
    let mut i = 0u64;
    let mut got = Vec::new();
    loop {
        let now = Instant::now();
        if now >= end {
            return (c, got);
        }
        if now >= next_send {
            i += 1;
            c.send_presence(json!({"page": page, "cursor": [i, i]}))
                .await;
            next_send += every;
        }
        let until = next_send.min(end);
        if let Some(m) = c
            .recv_any_timeout(until.saturating_duration_since(Instant::now()))
            .await
        {
            if m["type"] == "presences" {
                got.push(m);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_presences_per_tick_and_never_ones_own_state() {
    let node = Node::start(&[("ATRIUM_PRESENCE_HZ", "10")]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (mut b, wb) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (mut v, wv) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
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
async fn full_state_on_ones_page_and_only_page_changes_elsewhere() {
    let node = Node::start(&[]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (mut b, wb) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (mut c, wc) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
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
    let node = Node::start(&[]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (mut b, wb) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (ya, yb) = (you(&wa), you(&wb));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joiners_and_page_switchers_are_caught_up() {
    let node = Node::start(&[]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (mut b, wb) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (ya, yb) = (you(&wa), you(&wb));
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
    let mut state: HashMap<String, Value> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while !(state.contains_key(&ya) && state.contains_key(&yb)) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(m) = c.recv_type("presences", left).await else {
            panic!("a joiner on p1 was not caught up within 2 s; it has {state:?}");
        };
        assert_never_self(std::slice::from_ref(&m), &yc);
        for e in people(&m) {
            if e["page"] == "p1" {
                state.insert(s(&e["id"]).to_string(), e);
            }
        }
    }
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
    let mut back: HashSet<String> = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while !(back.contains(&ya) && back.contains(&yc)) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(m) = b.recv_type("presences", left).await else {
            panic!("a page switcher was not caught up within 2 s; it has {back:?}");
        };
        assert_never_self(std::slice::from_ref(&m), &yb);
        for e in people(&m) {
            if e["page"] == "p1" {
                assert_full(&e);
                back.insert(s(&e["id"]).to_string());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seventy_movers_reach_a_receiver_within_two_ticks() {
    // Slow ticks (500 ms) so that 70 sends land within one tick, and no busy
    // rate to get in the way.
    let node = Node::start(&[("ATRIUM_PRESENCE_HZ", "2"), ("ATRIUM_BUSY_ROOM", "1000")]).await;
    let f = shared_file(&node, "edit").await;
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

/// Joins R (owner), X, Y and Z; drops X and Y at the same instant without a
/// close handshake, with R moving all along when `active`; asserts that R
/// and Z each get one `leave` naming both.
async fn drop_two_at_once(active: bool) {
    // 500 ms ticks: two sockets dropped at the same instant fall in one tick.
    let node = Node::start(&[("ATRIUM_PRESENCE_HZ", "2")]).await;
    let f = shared_file(&node, "edit").await;
    let (mut r, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (x, wx) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (y, wy) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    let (mut z, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    let (yx, yy) = (you(&wx), you(&wy));
    r.drain_until_quiet(Duration::from_millis(800), Duration::from_secs(10))
        .await;
    z.drain_until_quiet(Duration::from_millis(100), Duration::from_secs(10))
        .await;
    if active {
        // R keeps the room ticking for a while before and after the drop.
        for i in 0..30u64 {
            r.send_presence(json!({"page": "p1", "cursor": [i, 0]}))
                .await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    // Both gone at once, without a close handshake.
    drop(x);
    drop(y);
    if active {
        for i in 0..30u64 {
            r.send_presence(json!({"cursor": [i, 1]})).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    let mut want = vec![yx.as_str(), yy.as_str()];
    want.sort();
    for (who, cl) in [("owner", &mut r), ("z", &mut z)] {
        let m = cl
            .recv_type("leave", WAIT)
            .await
            .unwrap_or_else(|| panic!("{who} got no leave"));
        let mut ids: Vec<&str> = m["ids"]
            .as_array()
            .unwrap_or_else(|| panic!("leave without ids: {m}"))
            .iter()
            .map(s)
            .collect();
        ids.sort();
        assert_eq!(ids, want, "{who}: both leavers in one leave: {m}");
        let later = cl.collect_for(Duration::from_millis(1200)).await;
        assert!(
            later.iter().all(|m| m["type"] != "leave"),
            "{who}: a second leave after the batched one: {later:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_leaving_together_are_announced_in_one_leave() {
    drop_two_at_once(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_dropped_together_from_a_quiet_room_are_announced_in_one_leave() {
    drop_two_at_once(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_rooms_tick_slower_and_tell_their_clients() {
    let node = Node::start(&[("ATRIUM_BUSY_ROOM", "3")]).await;
    let f = shared_file(&node, "edit").await;
    let (mut a, wa) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    let (mut b, wb) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    let (mut c, wc) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    for w in [&wa, &wb, &wc] {
        assert_eq!(w["presence_hz"], 20, "3 people are not busy: {w}");
    }

    // The 4th makes the room busy (more than 3).
    let (mut d, wd) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    for (who, cl) in [("a", &mut a), ("b", &mut b), ("c", &mut c)] {
        let m = cl
            .recv_type("presence-rate", Duration::from_secs(3))
            .await
            .unwrap_or_else(|| panic!("{who} was not told the busy rate"));
        assert_eq!(m, json!({"type": "presence-rate", "hz": 5}), "{who}");
    }
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
    for (who, cl) in [("a", &mut a), ("b", &mut b), ("c", &mut c)] {
        let m = cl
            .recv_type("presence-rate", Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("{who} was not told the room is no longer busy"));
        assert_eq!(m, json!({"type": "presence-rate", "hz": 20}), "{who}");
    }
}
