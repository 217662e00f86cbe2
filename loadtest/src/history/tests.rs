use serde_json::json;

use super::*;

fn seen(entries: &[(u64, Value)]) -> Seen {
    let mut s = Seen::default();
    for (v, ops) in entries {
        s.note(*v, ops);
    }
    s
}

fn log(client: usize, file: usize, seen: &Seen) -> ClientLog<'_> {
    ClientLog { client, file, seen }
}

#[test]
fn clients_given_one_history_pass() {
    let a = seen(&[
        (1, json!([{"op":"put","id":"r1"}])),
        (2, json!([{"op":"delete","id":"r1"}])),
    ]);
    // A later joiner given only version 2 (a welcome brought the document up to 1).
    let b = seen(&[(2, json!([{"id":"r1","op":"delete"}]))]);
    let c = check([log(0, 0, &a), log(1, 0, &b)]);
    assert_eq!(c.violations, 0, "{c:?}");
    assert_eq!(c.versions_checked, 3);
    assert_eq!(c.versions_distinct, 2);
    assert_eq!(c.clients, 2);
}

#[test]
fn one_version_given_to_two_patches_is_reported_with_its_evidence() {
    let a = seen(&[(5, json!([{"op":"put","id":"r1"}]))]);
    let b = seen(&[(5, json!([{"op":"put","id":"r2"}]))]);
    let c = check([log(3, 7, &a), log(4, 7, &b)]);
    assert_eq!(c.violations, 1);
    let v = c.first_violation.unwrap();
    assert!(v.contains("file 7 version 5"), "{v}");
    assert!(v.contains("client 3") && v.contains("client 4"), "{v}");
}

#[test]
fn the_same_version_in_two_files_is_no_conflict() {
    let a = seen(&[(5, json!([{"op":"put","id":"r1"}]))]);
    let b = seen(&[(5, json!([{"op":"put","id":"r2"}]))]);
    assert_eq!(check([log(0, 0, &a), log(1, 1, &b)]).violations, 0);
}

#[test]
fn a_version_given_after_a_later_one_is_a_violation() {
    let a = seen(&[(4, json!([1])), (6, json!([2])), (5, json!([3]))]);
    let c = check([log(2, 0, &a)]);
    assert_eq!(c.violations, 1);
    assert!(
        c.first_violation
            .unwrap()
            .contains("version 5 after version 6"),
        "ordered"
    );
}

#[test]
fn a_client_log_is_bounded() {
    let mut s = Seen::default();
    for v in 0..(MAX_SEEN as u64 + 10) {
        s.note(v, &json!([]));
    }
    assert_eq!(s.entries.len(), MAX_SEEN);
    assert!(s.truncated);
    assert_eq!(check([log(0, 0, &s)]).clients_truncated, 1);
}
