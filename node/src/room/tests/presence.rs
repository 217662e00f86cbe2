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
