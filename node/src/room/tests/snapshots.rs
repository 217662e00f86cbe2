//! When a snapshot is taken: by size, by time, one at a time, within the budget.

use super::*;

fn editor_room(settings: &[(&str, &str)], memory: u64) -> (Harness, Person) {
    let mut h = Harness::with(settings, memory);
    let a = h.join(As::Owner);
    (h, a)
}

/// A node of about 100 bytes: one is past a `snapshot-bytes` of 10.
fn hundred_bytes(id: &str) -> Value {
    put(id, json!({"t": "y".repeat(100)}))
}

/// A room with `snapshot-bytes` at 10 (and the `more` settings) whose owner
/// just sent a node of 100 bytes (op id 1): past the trigger once durable.
fn past_snapshot_bytes(more: &[(&str, &str)], memory: u64) -> (Harness, Person) {
    let settings: Vec<_> = [("snapshot-bytes", "10")]
        .iter()
        .chain(more)
        .copied()
        .collect();
    let (mut h, a) = editor_room(&settings, memory);
    h.patch(&a, 1, hundred_bytes("x"));
    (h, a)
}

#[test]
fn a_snapshot_starts_once_the_log_passes_snapshot_bytes() {
    let (mut h, a) = editor_room(&[("snapshot-bytes", "1000")], u64::MAX / 4);
    h.patch(&a, 1, put("x", json!({"t": "y".repeat(400)})));
    h.commit();
    assert!(h.snapshots.is_empty(), "under the threshold");
    h.patch(&a, 2, put("y", json!({"t": "y".repeat(700)})));
    h.commit();
    assert_eq!(h.snapshots.len(), 1);
    assert_eq!(h.snapshots[0].epoch, 7);
}

#[test]
fn the_log_kept_behind_a_snapshot_is_what_the_room_holds_within_its_bytes() {
    let settings = [("snapshot-bytes", "1000"), ("room-ops-bytes", "5000")];
    let (mut h, a) = editor_room(&settings, u64::MAX / 4);
    for id in 1..=20 {
        h.patch(&a, id, put("x", json!({"t": "y".repeat(1500)})));
        h.commit();
    }
    // The first snapshot is done; the next starts with the room holding all it may.
    let v = h.version();
    h.send(RoomCmd::SnapshotDone(Ok(v)));
    h.patch(&a, 21, put("x", json!({"t": "y".repeat(1500)})));
    h.commit();
    assert_eq!(h.snapshots.len(), 2);
    let kept = h.snapshots[1].keep;
    // About 1.6 KB a patch as held: three of them fit in 5,000 bytes, not a thousand.
    assert!(
        (2..=3).contains(&kept),
        "{kept} patches kept behind the snapshot"
    );
}

#[test]
fn a_large_document_waits_for_a_quarter_of_its_size_in_log() {
    let (mut h, a) = editor_room(&[("snapshot-bytes", "100")], u64::MAX / 4);
    // A document of about 8 KB: its snapshot is due after about 2 KB of log.
    h.core.doc = Document::from_json(
        json!({"big": {"t": "z".repeat(8000)}})
            .to_string()
            .as_bytes(),
        &DocLimits::default(),
    )
    .expect("document");
    h.patch(&a, 1, put("x", json!({"t": "y".repeat(1000)})));
    h.commit();
    assert!(h.snapshots.is_empty(), "1 KB is under a quarter of 8 KB");
    // With 2 KB more the log (3 KB) passes a quarter of the document (11 KB).
    h.patch(&a, 2, put("y", json!({"t": "y".repeat(2000)})));
    h.commit();
    assert_eq!(h.snapshots.len(), 1);
}

#[test]
fn a_snapshot_is_due_by_time_once_the_log_has_changed_for_snapshot_ms() {
    let (mut h, a) = editor_room(&[("snapshot-ms", "60000")], u64::MAX / 4);
    h.housekeeping();
    assert!(
        h.snapshots.is_empty(),
        "nothing logged, nothing to snapshot"
    );
    h.patch(&a, 1, put("x", json!({})));
    h.commit();
    h.advance(Duration::from_secs(59));
    h.housekeeping();
    assert!(h.snapshots.is_empty());
    h.advance(Duration::from_secs(1));
    h.housekeeping();
    assert_eq!(h.snapshots.len(), 1);
}

#[test]
fn nothing_is_snapshotted_before_it_is_durable() {
    let (mut h, _a) = past_snapshot_bytes(&[], u64::MAX / 4);
    h.end_turn();
    h.advance(Duration::from_secs(120));
    h.housekeeping();
    assert!(h.snapshots.is_empty(), "version 1 is not durable yet");
    h.durable(1);
    assert_eq!(h.snapshots.len(), 1);
}

#[test]
fn one_snapshot_at_a_time() {
    let (mut h, a) = past_snapshot_bytes(&[], u64::MAX / 4);
    h.commit();
    h.patch(&a, 2, hundred_bytes("y"));
    h.commit();
    assert_eq!(h.snapshots.len(), 1, "the second waits for the first");
    h.send(RoomCmd::SnapshotDone(Ok(1)));
    h.patch(&a, 3, hundred_bytes("z"));
    h.commit();
    assert_eq!(h.snapshots.len(), 2);
}

#[test]
fn a_failed_snapshot_is_tried_again_later() {
    let (mut h, _a) = past_snapshot_bytes(&[("snapshot-ms", "1000")], u64::MAX / 4);
    h.commit();
    assert_eq!(h.snapshots.len(), 1);
    h.send(RoomCmd::SnapshotDone(Err(StoreError::Unavailable(
        "disk".into(),
    ))));
    assert_eq!(
        h.exit, None,
        "a failed snapshot loses nothing: the log has it all"
    );
    h.housekeeping();
    assert_eq!(h.snapshots.len(), 1, "not at once");
    h.advance(Duration::from_secs(1));
    h.housekeeping();
    assert_eq!(
        h.snapshots.len(),
        2,
        "again once snapshot-ms has passed, with no new edit"
    );
}

#[test]
fn a_fenced_snapshot_ends_the_room() {
    let (mut h, _a) = past_snapshot_bytes(&[], u64::MAX / 4);
    h.commit();
    h.send(RoomCmd::SnapshotDone(Err(StoreError::Fenced)));
    assert_eq!(h.exit, Some(Exit::Fenced));
}

#[test]
fn a_snapshot_the_memory_budget_cannot_cover_is_put_off() {
    let (mut h, a) = past_snapshot_bytes(&[], 1);
    h.patch(&a, 2, put("y", json!({})));
    h.commit();
    assert!(h.snapshots.is_empty());
}
