//! Ordering, acks after durability, dedupe, and refused writes.

use super::*;

#[test]
fn patches_take_versions_in_arrival_order() {
    let (mut h, a, b) = owner_and(As::Editor);
    h.patch(&a, 1, put("x", json!({"n": 1})));
    h.patch(&b, 1, put("y", json!({"n": 2})));
    h.patch(&a, 2, put("z", json!({"n": 3})));
    let append = h.end_turn().expect("one append");
    let order: Vec<(u64, u64)> = append
        .patches
        .iter()
        .map(|p| (p.version, p.op_id))
        .collect();
    assert_eq!(order, vec![(1, 1), (2, 1), (3, 2)]);
    assert_eq!(h.version(), 3);
}

#[test]
fn nothing_leaves_the_room_before_the_journal_says_durable() {
    let (mut h, mut a, mut b) = owner_and(As::Editor);
    a.frames();
    h.patch(&a, 1, put("x", json!({})));
    h.end_turn();
    assert!(a.frames().is_empty(), "no ack before durable");
    assert!(b.of_type("patch").is_empty(), "no relay before durable");
    h.durable(1);
    assert_eq!(a.of_type("ack").len(), 1);
    assert_eq!(b.of_type("patch").len(), 1);
}

#[test]
fn the_sender_gets_the_ack_and_everyone_else_the_relay() {
    let (mut h, mut a, mut b) = owner_and(As::Editor);
    let mut c = h.join(As::Viewer);
    a.frames();
    b.frames();
    h.patch(&a, 5, put("x", json!({"n": 1})));
    h.commit();
    let got = a.frames();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0], json!({"type": "ack", "id": 5, "v": 1}));
    for other in [&mut b, &mut c] {
        let relays = other.of_type("patch");
        assert_eq!(relays.len(), 1);
        assert_eq!(relays[0]["v"], 1);
        assert_eq!(relays[0]["by"], a.joined.person.as_str());
        assert_eq!(relays[0]["ops"], put("x", json!({"n": 1})));
    }
}

#[test]
fn a_partial_report_releases_only_what_it_covers_in_version_order() {
    let (mut h, a, mut b) = owner_and(As::Editor);
    h.patch(&a, 1, put("x", json!({})));
    h.end_turn();
    h.patch(&a, 2, put("y", json!({})));
    h.patch(&a, 3, put("z", json!({})));
    h.end_turn();
    h.durable(1);
    assert_eq!(versions(&b.of_type("patch")), vec![1]);
    h.durable(3);
    assert_eq!(versions(&b.of_type("patch")), vec![2, 3]);
}

#[test]
fn a_turn_is_one_append_and_an_empty_turn_none() {
    let mut h = Harness::new();
    let a = h.join(As::Owner);
    assert!(h.end_turn().is_none());
    for id in 1..=4 {
        h.patch(&a, id, put(&format!("s{id}"), json!({})));
    }
    let append = h.end_turn().expect("an append");
    assert_eq!(append.patches.len(), 4);
    assert!(h.end_turn().is_none(), "nothing is appended twice");
}

#[test]
fn appends_carry_the_rooms_epoch_and_file() {
    let mut h = Harness::new();
    let a = h.join(As::Owner);
    h.patch(&a, 1, put("x", json!({})));
    let append = h.end_turn().expect("an append");
    assert_eq!(append.epoch, 7);
    assert_eq!(&append.file, h.core.file());
    assert_eq!(append.patches[0].by, a.joined.person.as_str());
}

#[test]
fn a_resent_patch_is_acked_with_its_version_and_not_applied_again() {
    let (mut h, mut a, mut b) = owner_and(As::Editor);
    h.patch(&a, 1, put("x", json!({})));
    h.commit();
    a.frames();
    b.frames();
    h.patch(&a, 1, put("x", json!({})));
    assert!(h.end_turn().is_none(), "a resend is not logged");
    assert_eq!(h.version(), 1);
    assert_eq!(
        a.of_type("ack"),
        vec![json!({"type": "ack", "id": 1, "v": 1})]
    );
    assert!(b.frames().is_empty(), "nobody else hears a resend");
}

#[test]
fn a_resend_of_a_patch_not_yet_durable_waits_for_it() {
    let (mut h, mut a) = owner_wrote(put("x", json!({})));
    h.patch(&a, 1, put("x", json!({})));
    assert!(a.frames().is_empty());
    h.durable(1);
    let acks = a.of_type("ack");
    assert_eq!(acks.len(), 2, "the patch and its resend are both answered");
    assert!(acks.iter().all(|m| m["v"] == 1));
}

#[test]
fn an_older_op_id_than_the_highest_is_a_resend() {
    let mut h = Harness::new();
    let mut a = h.join(As::Owner);
    h.patch(&a, 10, put("x", json!({})));
    h.commit();
    a.frames();
    h.patch(&a, 3, put("y", json!({})));
    assert!(h.end_turn().is_none());
    assert!(!h.core.doc.to_json().contains("\"y\""));
    assert_eq!(a.of_type("ack").len(), 1);
}

#[test]
fn a_viewers_patch_is_rejected_as_viewer() {
    let mut h = Harness::new();
    let mut v = h.join(As::Viewer);
    h.patch(&v, 1, put("x", json!({})));
    let rejects = v.of_type("reject");
    assert_eq!(rejects.len(), 1);
    assert_eq!(rejects[0]["code"], "viewer");
    assert_eq!(rejects[0]["id"], 1);
    assert_eq!(h.version(), 0);
    assert!(h.end_turn().is_none());
}

#[test]
fn a_patch_past_the_document_limits_is_rejected_and_changes_nothing() {
    let mut h = Harness::new();
    h.core.rules.limits.max_doc_bytes = 200;
    let mut a = h.join(As::Owner);
    h.patch(&a, 1, put("x", json!({"t": "y".repeat(500)})));
    let rejects = a.of_type("reject");
    assert_eq!(rejects[0]["code"], "too-large");
    assert_eq!(h.version(), 0);
    assert!(h.end_turn().is_none());
    // The op id was not used up: the next patch with it is applied.
    h.patch(&a, 1, put("x", json!({"t": "ok"})));
    assert_eq!(h.version(), 1);
}

#[test]
fn at_the_memory_budget_only_small_patches_are_taken() {
    let mut h = Harness::with(&[], 1);
    let mut a = h.join(As::Owner);
    h.patch(&a, 1, put("big", json!({"t": "y".repeat(5000)})));
    assert_eq!(a.of_type("reject")[0]["code"], "too-large");
    h.patch(&a, 2, put("small", json!({"x": 1})));
    assert_eq!(h.version(), 1);
}

#[test]
fn a_fenced_append_ends_the_room_and_releases_nothing() {
    let (mut h, mut a, mut b) = owner_and(As::Editor);
    h.patch(&a, 1, put("x", json!({})));
    h.end_turn();
    h.refused(StoreError::Fenced);
    assert_eq!(h.exit, Some(Exit::Fenced));
    assert!(a.of_type("ack").is_empty());
    assert!(b.of_type("patch").is_empty());
}

#[test]
fn an_append_to_a_deleted_file_ends_the_room_as_deleted() {
    let (mut h, _a) = owner_wrote(put("x", json!({})));
    h.refused(StoreError::NotFound);
    assert_eq!(h.exit, Some(Exit::Deleted));
}

#[test]
fn the_document_is_handed_out_only_once_durable() {
    let (mut h, _a) = owner_wrote(put("x", json!({"n": 1})));
    let (tx, mut rx) = oneshot::channel();
    h.send(RoomCmd::GetDoc(tx));
    assert!(rx.try_recv().is_err(), "not before durable");
    h.durable(1);
    let (v, doc) = rx.try_recv().expect("the document");
    assert_eq!(v, 1);
    assert!(doc.contains("\"x\""), "{doc}");
}

#[test]
fn a_joiner_gets_relays_only_past_its_welcome() {
    let (mut h, _a) = owner_wrote(put("x", json!({})));
    // Joins while version 1 waits for the disk: its welcome already holds it.
    let mut b = h.try_join(As::Editor, None).expect("join");
    h.durable(1);
    let got = b.frames();
    assert_eq!(got[0]["type"], "welcome");
    assert_eq!(got[0]["version"], 1);
    assert!(got.iter().all(|m| m["type"] != "patch"), "{got:?}");
}

#[test]
fn sets_on_large_nodes_draw_on_the_rooms_rewrite_allowance() {
    use crate::room::core::{REWRITE_BURST, REWRITE_PER_SECOND};
    let mut h = Harness::new();
    let mut a = h.join(As::Owner);
    // Four nodes of about 1 MB; a patch of one set on each rewrites 4 MB.
    let big = "y".repeat(1_000_000);
    let mut id = 1;
    for k in 0..4 {
        h.patch(&a, id, put(&format!("b{k}"), json!({"t": big})));
        id += 1;
    }
    let sets = |x: u64| {
        let ops: Vec<Value> = (0..4)
            .map(|k| json!({"op": "set", "id": format!("b{k}"), "props": {"x": x}}))
            .collect();
        Value::Array(ops)
    };
    let per_patch = 4.0 * 1_000_000.0;
    let fits = (REWRITE_BURST / per_patch) as u64;
    let before = h.version();
    for _ in 0..fits + 5 {
        h.patch(&a, id, sets(id));
        id += 1;
    }
    assert_eq!(h.version() - before, fits, "the burst's worth, no more");
    let rejects = a.of_type("reject");
    assert_eq!(rejects.len(), 5, "{rejects:?}");
    assert!(rejects.iter().all(|r| r["code"] == "too-large"));
    // A second later, a second's worth more; a small edit elsewhere was never in question.
    h.advance(Duration::from_secs(1));
    let again = (REWRITE_PER_SECOND / per_patch) as u64;
    for _ in 0..again {
        h.patch(&a, id, sets(id));
        id += 1;
    }
    assert_eq!(h.version() - before, fits + again);
    h.patch(&a, id, put("small", json!({"x": 1})));
    assert_eq!(h.version() - before, fits + again + 1);
}
