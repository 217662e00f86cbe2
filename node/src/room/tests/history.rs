//! Versions from the room's side: checkpoints due by time with who edited, named versions
//! saved once durable, and a restore ordered between patches like any edit.

use super::*;
use crate::history::{new_info, VersionKind};
use crate::room::history::{HistoryJob, NameRequest};
use crate::room::restore::{RestoreRequest, RESTORE_PERSON};

fn saves(h: &mut Harness) -> Vec<crate::room::history::SaveJob> {
    h.history
        .drain(..)
        .filter_map(|j| match j {
            HistoryJob::Save(s) => Some(s),
            HistoryJob::Delete { .. } => None,
        })
        .collect()
}

#[test]
fn a_checkpoint_is_due_once_the_file_has_changed_for_checkpoint_ms() {
    let mut h = Harness::with(&[("checkpoint-ms", "1000")], u64::MAX / 4);
    let a = h.join(As::Owner);
    let b = h.join(As::Editor);
    h.housekeeping();
    assert!(h.history.is_empty(), "nothing changed: no checkpoint");
    h.patch(&a, 1, put("x", json!({"v": 1})));
    h.patch(&b, 1, put("y", json!({"v": 2})));
    h.commit();
    h.advance(Duration::from_millis(999));
    h.housekeeping();
    assert!(h.history.is_empty(), "not yet");
    h.advance(Duration::from_millis(1));
    h.housekeeping();
    let saved = saves(&mut h);
    assert_eq!(saved.len(), 1);
    let job = &saved[0];
    assert_eq!(job.info.kind, VersionKind::Auto);
    assert_eq!(job.info.version, 2);
    assert_eq!(job.epoch, 7);
    assert_eq!(job.info.editors.len(), 2, "{:?}", job.info.editors);
    assert_eq!(job.doc, r#"{"x":{"v":1},"y":{"v":2}}"#);
    // Quiet again until the next edit.
    h.advance(Duration::from_secs(60));
    h.housekeeping();
    assert!(h.history.is_empty());
}

#[test]
fn a_named_version_waits_for_its_version_to_be_durable() {
    let mut h = Harness::new();
    let a = h.join(As::Owner);
    h.patch(&a, 1, put("x", json!({"v": 1})));
    let (reply, _answer) = oneshot::channel();
    h.send(RoomCmd::NameVersion(NameRequest {
        title: "Mine".into(),
        description: None,
        reply,
    }));
    assert!(h.history.is_empty(), "version 1 is not durable yet");
    h.commit();
    let saved = saves(&mut h);
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].info.title.as_deref(), Some("Mine"));
    assert_eq!(saved[0].info.version, 1);
}

#[test]
fn a_restore_is_ordered_between_patches_and_relayed_to_everyone_once_durable() {
    let mut h = Harness::new();
    let mut a = h.join(As::Owner);
    let mut b = h.join(As::Editor);
    h.patch(&a, 1, json!([{"op": "put", "id": "x", "props": {"v": 1}}, {"op": "put", "id": "y", "props": {"v": 1}}]));
    h.commit();
    a.frames();
    b.frames();
    // A patch, then the restore, then a patch, all in one turn.
    h.patch(&b, 1, put("z", json!({"v": 3})));
    let (reply, mut answer) = oneshot::channel();
    let from = new_info(0, 0, VersionKind::Named, vec![]);
    h.send(RoomCmd::Restore(RestoreRequest {
        from,
        doc: r#"{"x":{"v":0}}"#.into(),
        by: "Ada".into(),
        reply,
    }));
    h.patch(&a, 2, put("w", json!({"v": 4})));
    let append = h.end_turn().expect("one append");
    let versions: Vec<u64> = append.patches.iter().map(|p| p.version).collect();
    assert_eq!(versions, [2, 3, 4]);
    assert_eq!(append.patches[1].by, RESTORE_PERSON);
    assert!(
        answer.try_recv().is_err(),
        "nothing is answered before it is durable"
    );
    assert!(b.of_type("patch").is_empty());
    h.durable(4);
    let done = answer.try_recv().expect("answered").expect("restored");
    assert_eq!(done.v, 3);
    // Everyone gets the restore as a patch, then a `restored` message.
    let seen_by_b: Vec<Value> = b.frames();
    let restore = seen_by_b
        .iter()
        .find(|m| m["v"] == 3)
        .expect("the restore's patch");
    assert_eq!(restore["type"], "patch");
    assert_eq!(
        restore["ops"],
        json!([{"op": "put", "id": "x", "props": {"v": 0}}, {"op": "delete", "id": "y"}, {"op": "delete", "id": "z"}])
    );
    assert!(seen_by_b
        .iter()
        .any(|m| m["type"] == "restored" && m["v"] == 3));
    assert!(a
        .frames()
        .iter()
        .any(|m| m["type"] == "patch" && m["v"] == 3));
    // The edit after it lands on top of the restored document.
    assert_eq!(h.core.doc.to_json(), r#"{"w":{"v":4},"x":{"v":0}}"#);
    // The edits before it were saved as a version first, then the restored state.
    let saved = saves(&mut h);
    let kinds: Vec<(VersionKind, u64)> = saved
        .iter()
        .map(|s| (s.info.kind, s.info.version))
        .collect();
    assert_eq!(kinds, [(VersionKind::Auto, 2), (VersionKind::Restore, 3)]);
    assert_eq!(saved[1].doc, r#"{"x":{"v":0}}"#);
}
