//! Presence: sent on the tick, filtered by page, paid for by credit, leaves batched.

use super::super::presence::{MAX_PEOPLE, RELAY_BURST};
use super::*;

/// People in the `presences` messages `p` got since the last look, by id.
fn seen(p: &mut Person) -> Vec<Value> {
    p.of_type("presences")
        .into_iter()
        .flat_map(|m| m["people"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn presence_goes_out_on_the_tick_and_never_to_its_sender() {
    let (mut h, mut a, mut b) = owner_and(As::Viewer);
    h.tick();
    a.frames();
    b.frames();
    h.presence(&a, json!({"cursor": [1.0, 2.0]}));
    assert!(b.of_type("presences").is_empty(), "not before the tick");
    h.tick();
    let got = seen(&mut b);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["id"], a.joined.person.as_str());
    assert_eq!(got[0]["cursor"], json!([1.0, 2.0]));
    assert!(seen(&mut a).is_empty(), "nobody hears their own presence");
}

#[test]
fn only_the_latest_state_of_a_tick_is_sent() {
    let (mut h, a, mut b) = owner_and(As::Viewer);
    h.tick();
    b.frames();
    for x in 0..10 {
        h.presence(&a, json!({"cursor": [f64::from(x), 0.0]}));
    }
    h.tick();
    let got = seen(&mut b);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["cursor"], json!([9.0, 0.0]));
}

/// A receiver whose writer waits for its peer (it is not reading) gets no `presences`
/// while it waits, so none pile up in its queue; once it takes bytes again, one message
/// brings the latest state.
#[test]
fn a_receiver_that_is_not_reading_gets_the_latest_presence_once_it_reads_again() {
    let (mut h, a, mut b) = owner_and(As::Viewer);
    h.tick();
    b.frames();
    b.outbox.write_waits();
    for x in 0..5 {
        h.presence(&a, json!({"cursor": [f64::from(x), 0.0]}));
        h.tick();
    }
    assert!(
        seen(&mut b).is_empty(),
        "presence queued for a socket not reading"
    );
    b.outbox.write_progressed();
    h.tick();
    let got = seen(&mut b);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["cursor"], json!([4.0, 0.0]));
}

#[test]
fn people_on_another_page_hear_only_the_page_change() {
    let (mut h, a, mut b) = owner_and(As::Viewer);
    h.presence(&b, json!({"page": "p2"}));
    h.tick();
    b.frames();
    h.presence(&a, json!({"page": "p1", "cursor": [5.0, 5.0]}));
    h.tick();
    let got = seen(&mut b);
    assert_eq!(
        got,
        vec![json!({"id": a.joined.person.as_str(), "page": "p1"})]
    );
    // A cursor move on p1 is nothing to someone on p2.
    h.presence(&a, json!({"cursor": [6.0, 6.0]}));
    h.tick();
    assert!(seen(&mut b).is_empty());
}

#[test]
fn someone_arriving_on_a_page_is_caught_up_on_everyone_there() {
    let (mut h, a, mut b) = owner_and(As::Viewer);
    h.presence(&a, json!({"page": "p1", "cursor": [1.0, 1.0]}));
    h.presence(&b, json!({"page": "p2"}));
    h.tick();
    b.frames();
    h.presence(&b, json!({"page": "p1"}));
    h.tick();
    let got = seen(&mut b);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["cursor"], json!([1.0, 1.0]), "{got:?}");
}

#[test]
fn a_large_state_waits_for_its_credit_and_then_goes_out() {
    let (mut h, a, mut b) = owner_and(As::Viewer);
    h.tick();
    b.frames();
    // A long selection, then cursor moves of a few bytes: each move would send
    // the whole entry again.
    let sel: Vec<String> = (0..100)
        .map(|i| format!("{}{i:02}", "q".repeat(62)))
        .collect();
    assert!(serde_json::to_string(&sel).unwrap().len() as f64 > RELAY_BURST / 3.0);
    h.presence(&a, json!({"sel": sel}));
    h.tick();
    assert_eq!(seen(&mut b).len(), 1, "the selection pays for itself");
    h.presence(&a, json!({"cursor": [0.0, 0.0]}));
    h.tick();
    assert_eq!(
        seen(&mut b).len(),
        1,
        "the first move is paid from what is left"
    );
    h.presence(&a, json!({"cursor": [1.0, 1.0]}));
    h.tick();
    assert!(seen(&mut b).is_empty(), "the next waits for credit");
    h.advance(Duration::from_secs(10));
    h.tick();
    let got = seen(&mut b);
    assert_eq!(got.len(), 1, "credit earned by time pays for it");
    assert_eq!(got[0]["cursor"], json!([1.0, 1.0]));
}

#[test]
fn one_message_carries_at_most_max_people() {
    let mut h = Harness::new();
    let mut watcher = h.join(As::Owner);
    let others: Vec<Person> = (0..MAX_PEOPLE + 5).map(|_| h.join(As::Viewer)).collect();
    h.tick();
    watcher.frames();
    for p in &others {
        h.presence(p, json!({"cursor": [0.0, 0.0]}));
    }
    h.tick();
    let first = watcher.of_type("presences");
    assert_eq!(first.len(), 1);
    assert_eq!(
        first[0]["people"].as_array().map(Vec::len),
        Some(MAX_PEOPLE)
    );
    h.tick();
    assert_eq!(
        seen(&mut watcher).len(),
        5,
        "the rest come on the next tick"
    );
}

#[test]
fn leaves_are_announced_together_after_a_tick() {
    let (mut h, mut a, b) = owner_and(As::Viewer);
    let c = h.join(As::Viewer);
    h.tick();
    a.frames();
    h.leave(&b);
    h.leave(&c);
    h.tick();
    assert!(
        a.of_type("leave").is_empty(),
        "a leave waits one tick period"
    );
    h.advance(h.core.tick_period());
    h.tick();
    let leaves = a.of_type("leave");
    assert_eq!(leaves.len(), 1);
    assert_eq!(leaves[0]["ids"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_quick_reconnect_is_never_seen_as_a_leave() {
    let (mut h, mut a, b) = owner_and(As::Viewer);
    h.tick();
    a.frames();
    h.leave(&b);
    let back = h.try_join_as(As::Viewer, b.client, None).expect("back");
    h.commit();
    assert_eq!(back.joined.person, b.joined.person);
    h.advance(Duration::from_secs(1));
    h.tick();
    let got = a.frames();
    assert!(
        got.iter()
            .all(|m| m["type"] != "leave" && m["type"] != "join"),
        "{got:?}"
    );
}

/// Moving to a page sends the mover everyone on it in full; moving back and forth as fast
/// as the ticks go draws no more than the catch-up credit of the mover's address, shared by
/// all its sockets in the room (the fifth review: ten guests flipping pages beside forty
/// large states were sent 408 MB in 15 s).
#[test]
fn flipping_pages_draws_the_page_no_faster_than_the_catch_up_credit() {
    use super::super::presence::{CATCH_UP_BURST, CATCH_UP_PER_SECOND};
    let mut h = Harness::new();
    let sel: Vec<String> = (0..100)
        .map(|i| format!("{}{i:02}", "q".repeat(62)))
        .collect();
    let mut sitters = Vec::new();
    for n in 0..20u8 {
        let p = h.join_from(As::Viewer, [198, 51, 100, n]);
        h.presence(&p, json!({"page": "p", "sel": sel}));
        sitters.push(p);
    }
    // Five sockets of one address flip together: they share one credit.
    let mut flippers: Vec<Person> = (0..5)
        .map(|_| h.join_from(As::Viewer, [203, 0, 113, 9]))
        .collect();
    h.tick();
    for f in &mut flippers {
        f.frames();
    }
    let entry = seen(&mut sitters[0]).first().map(|e| e.to_string().len());
    assert!(
        entry.is_some_and(|n| n > 6_000),
        "the sitters' states are large"
    );
    let (ticks, every) = (100u32, Duration::from_millis(50));
    let mut got = 0usize;
    for n in 0..ticks {
        let page = if n % 2 == 0 { "p" } else { "q" };
        for f in &flippers {
            h.presence(f, json!({"page": page}));
        }
        h.advance(every);
        h.tick();
        for f in &mut flippers {
            got += f
                .of_type("presences")
                .iter()
                .map(|m| m.to_string().len())
                .sum::<usize>();
        }
    }
    let secs = (every * ticks).as_secs_f64();
    let allowed = CATCH_UP_BURST + CATCH_UP_PER_SECOND * secs;
    // Each entry costs its text and a comma; each message its framing.
    let slack = f64::from(ticks) * 5.0 * 400.0;
    assert!(
        got as f64 <= allowed + slack,
        "the flippers were sent {got} bytes in {secs} s (credit {allowed})"
    );
    assert!(
        got as f64 > CATCH_UP_BURST / 2.0,
        "the flips drew little: {got}"
    );
}

/// What a person's entries may cost the others is paid from the credit of their address,
/// shared by its sockets in the room: ten sockets of one address, each with a large
/// selection and a cursor moving every tick, get no more out than one would (the twelfth
/// review: each socket started with a full credit of its own, so a hundred sockets of one
/// address sent a hundred bursts to everyone).
#[test]
fn sockets_of_one_address_share_one_relay_credit() {
    use super::super::presence::{RELAY_PER_BYTE, RELAY_PER_SECOND};
    let mut h = Harness::new();
    let mut watcher = h.join_from(As::Viewer, [198, 51, 100, 1]);
    let sel: Vec<String> = (0..100)
        .map(|i| format!("{}{i:02}", "q".repeat(62)))
        .collect();
    let movers: Vec<Person> = (0..10)
        .map(|_| h.join_from(As::Viewer, [203, 0, 113, 7]))
        .collect();
    h.tick();
    watcher.frames();
    let mut sent = 0usize;
    let mut send = |h: &mut Harness, p: &Person, update: Value| {
        let mut msg = update.clone();
        msg["type"] = json!("presence");
        sent += msg.to_string().len();
        h.presence(p, update);
    };
    for p in &movers {
        send(&mut h, p, json!({"sel": sel}));
    }
    let (ticks, every) = (20u32, Duration::from_millis(50));
    let mut got = 0usize;
    for n in 0..ticks {
        for p in &movers {
            send(&mut h, p, json!({"cursor": [n, n]}));
        }
        h.advance(every);
        h.tick();
        got += seen(&mut watcher)
            .iter()
            .map(|e| e.to_string().len())
            .sum::<usize>();
    }
    let secs = (every * ticks).as_secs_f64();
    let allowed = RELAY_BURST + RELAY_PER_SECOND * secs + RELAY_PER_BYTE * sent as f64;
    assert!(
        (got as f64) < allowed,
        "the watcher was sent {got} bytes of entries for {sent} bytes sent (one credit: {allowed})"
    );
    // Ten credits of their own would have sent each socket's selection twice at once.
    assert!(
        (got as f64) < 3.0 * RELAY_BURST,
        "the watcher was sent {got} bytes of entries: more than one address's credit"
    );
    assert!(got > 6_000, "a large entry went out: {got}");
}
