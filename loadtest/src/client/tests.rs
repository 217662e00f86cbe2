use super::join::retry_hint;
use super::*;
use std::time::Duration;

#[test]
fn the_nodes_hint_of_when_to_come_back_is_read_from_the_close_reason() {
    let hint = retry_hint("the node is busy with other joins; retry-ms=1840");
    assert_eq!(hint, Some(Duration::from_millis(1840)));
    assert_eq!(retry_hint("the store is unavailable"), None);
    assert_eq!(retry_hint("retry-ms=soon"), None);
    assert_eq!(retry_hint("retry-ms=999999"), Some(Duration::from_secs(30)));
}

#[test]
fn a_version_gap_is_a_dropped_patch() {
    let mut v = Versions { last: 4 };
    assert_eq!(v.see(5), (0, false));
    assert_eq!(v.see(8), (2, false));
    assert_eq!(v.see(7), (0, true));
    assert_eq!(v.last, 8);
}

#[test]
fn leading_types_are_read_without_parsing() {
    assert_eq!(
        leading_type(r#"{"type":"presences","people":[]}"#),
        Some("presences")
    );
    assert_eq!(leading_type(r#"{"type":"ack","id":1,"v":2}"#), Some("ack"));
    assert_eq!(leading_type(r#"{"code":429,"type":"notice"}"#), None);
}

#[test]
fn cursors_stay_on_the_canvas() {
    for step in 0..500 {
        let (x, y) = cursor_at(3, step);
        assert!((100.0..=700.0).contains(&x) && (100.0..=500.0).contains(&y));
    }
    assert_ne!(cursor_at(3, 1), cursor_at(3, 2));
}

#[test]
fn every_person_in_a_presences_message_is_a_delivered_update_but_the_receiver() {
    use super::delivered::presences_delivered;
    // As the node writes them: full entries with sorted keys (`id` in the middle), a short one.
    let full = |id: &str| {
        format!(
            r#"{{"camera":null,"cursor":[1.5,2],"id":"{id}","page":"p1","sel":["id","x\"id\":"],"t":12.5}}"#
        )
    };
    let people: Vec<String> = (0..9).map(|i| full(&format!("P{i}"))).collect();
    let nine = format!(r#"{{"type":"presences","people":[{}]}}"#, people.join(","));
    assert_eq!(presences_delivered(&nine, "me"), 9);
    let short =
        r#"{"type":"presences","people":[{"id":"P1","page":"p2"},{"page":null,"id":"me"}]}"#;
    // The receiver's own entry is not delivered to anyone else; an id that merely starts
    // like the receiver's is someone else.
    assert_eq!(presences_delivered(short, "me"), 1);
    assert_eq!(presences_delivered(short, "m"), 2);
    assert_eq!(presences_delivered(short, "P1"), 1);
    assert_eq!(
        presences_delivered(r#"{"type":"presences","people":[]}"#, "me"),
        0
    );
}
