//! Versions from the room's side: checkpoints due by time with who edited, named versions
//! saved once durable, and a restore ordered between patches like any edit.

use super::*;
use crate::history::turns::WorkRefused;
use crate::history::{new_info, VersionKind};
use crate::room::history::{HistoryJob, NameRequest};
use crate::room::restore::{RestoreRequest, RESTORE_PERSON};
use crate::store::Holder;

fn saves(h: &mut Harness) -> Vec<crate::room::history::SaveJob> {
    h.history
        .drain(..)
        .filter_map(|j| match j {
            HistoryJob::Save(s) => Some(*s),
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
        within: crate::storage::Share::Whole,
        reply,
    }));
    assert!(h.history.is_empty(), "version 1 is not durable yet");
    h.commit();
    let saved = saves(&mut h);
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].info.title.as_deref(), Some("Mine"));
    assert_eq!(saved[0].info.version, 1);
}

/// Asks the room to restore `doc` (as version 1, "named").
fn ask_restore(
    h: &mut Harness,
    doc: &str,
) -> oneshot::Receiver<Result<crate::room::restore::Restored, crate::room::restore::RestoreError>> {
    let (reply, answer) = oneshot::channel();
    h.send(RoomCmd::Restore(RestoreRequest {
        from: new_info(0, 0, VersionKind::Named, vec![]),
        doc: doc.into(),
        limit: usize::MAX,
        by: "Ada".into(),
        within: crate::storage::Share::Whole,
        reply,
    }));
    answer
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
    // A patch, then the restore (prepared off the room), then a patch while it is prepared.
    h.patch(&b, 1, put("z", json!({"v": 3})));
    let mut answer = ask_restore(&mut h, r#"{"x":{"v":0}}"#);
    assert_eq!(h.restores.len(), 1, "the patch is computed on the lane");
    h.patch(&a, 2, put("w", json!({"v": 4})));
    h.prepare_restores();
    let append = h.end_turn().expect("one append");
    let versions: Vec<u64> = append.patches.iter().map(|p| p.version).collect();
    assert_eq!(
        versions,
        [2, 3, 4],
        "the restore takes its place when its patch is ready"
    );
    assert_eq!(append.patches[2].by, RESTORE_PERSON);
    assert!(
        answer.try_recv().is_err(),
        "nothing is answered before it is durable"
    );
    assert!(b.of_type("patch").is_empty());
    h.durable(4);
    let done = answer.try_recv().expect("answered").expect("restored");
    assert_eq!(done.v, 4);
    // Everyone gets the restore as a patch, then a `restored` message; the patch also
    // removes `w`, added while it was prepared.
    let seen_by_b: Vec<Value> = b.frames();
    let restore = seen_by_b
        .iter()
        .find(|m| m["v"] == 4)
        .expect("the restore's patch");
    assert_eq!(restore["type"], "patch");
    assert_eq!(
        restore["ops"],
        json!([{"op": "put", "id": "x", "props": {"v": 0}}, {"op": "delete", "id": "y"}, {"op": "delete", "id": "z"}, {"op": "delete", "id": "w"}])
    );
    assert!(seen_by_b
        .iter()
        .any(|m| m["type"] == "restored" && m["v"] == 4));
    assert!(a
        .frames()
        .iter()
        .any(|m| m["type"] == "patch" && m["v"] == 4));
    assert_eq!(h.core.doc.to_json(), r#"{"x":{"v":0}}"#);
    // An edit after it lands on top of the restored document.
    h.patch(&a, 3, put("q", json!({"v": 5})));
    h.commit();
    assert_eq!(h.core.doc.to_json(), r#"{"q":{"v":5},"x":{"v":0}}"#);
    // The edits before it were saved as a version first, then the restored state.
    let saved = saves(&mut h);
    let kinds: Vec<(VersionKind, u64)> = saved
        .iter()
        .map(|s| (s.info.kind, s.info.version))
        .collect();
    assert_eq!(kinds, [(VersionKind::Auto, 3), (VersionKind::Restore, 4)]);
    assert_eq!(saved[1].doc, r#"{"x":{"v":0}}"#);
}

/// Applies a relayed patch's ops to a plain model of the document, as a client does.
fn apply_relay(doc: &mut serde_json::Map<String, Value>, ops: &Value) {
    for op in ops.as_array().expect("ops") {
        let id = op["id"].as_str().expect("id").to_owned();
        match op["op"].as_str() {
            Some("put") => {
                doc.insert(id, op["props"].clone());
            }
            Some("set") => {
                if let Some(Value::Object(node)) = doc.get_mut(&id) {
                    for (k, v) in op["props"].as_object().expect("props") {
                        if v.is_null() {
                            node.remove(k);
                        } else {
                            node.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            Some("delete") => {
                doc.remove(&id);
            }
            other => panic!("not an op: {other:?}"),
        }
    }
}

#[test]
fn edits_while_a_restore_is_prepared_are_corrected_in_its_patch_and_clients_converge() {
    // Small batches note each node; one past TOUCHED_MAX makes the room redo the whole patch.
    for batches in [1usize, 6] {
        let mut h = Harness::new();
        let a = h.join(As::Owner);
        let mut b = h.join(As::Editor);
        h.patch(
            &a,
            1,
            json!([
                {"op": "put", "id": "k", "props": {"v": 7}},
                {"op": "put", "id": "m", "props": {"v": 1}},
                {"op": "put", "id": "gone", "props": {"v": 1}},
            ]),
        );
        h.commit();
        let mut model = serde_json::Map::new();
        apply_relay(
            &mut model,
            &json!([
                {"op": "put", "id": "k", "props": {"v": 7}},
                {"op": "put", "id": "m", "props": {"v": 1}},
                {"op": "put", "id": "gone", "props": {"v": 1}},
            ]),
        );
        b.frames();
        let target = r#"{"k":{"v":7},"m":{"v":2},"n":{"v":3}}"#;
        let _answer = ask_restore(&mut h, target);
        // Meanwhile: `k` (the same in the copy and the version) changes, `m` (changed by
        // the restore too) changes, `gone` is deleted, `fresh` is added; and filler nodes.
        h.patch(
            &a,
            2,
            json!([
                {"op": "set", "id": "k", "props": {"v": 8}},
                {"op": "set", "id": "m", "props": {"v": 9}},
                {"op": "delete", "id": "gone"},
                {"op": "put", "id": "fresh", "props": {"v": 1}},
            ]),
        );
        for i in 0..batches.saturating_sub(1) {
            let ops: Vec<Value> = (0..1000)
                .map(|j| json!({"op": "put", "id": format!("f{i}-{j}"), "props": {"v": j}}))
                .collect();
            h.patch(&a, 3 + i as u64, Value::Array(ops));
        }
        h.prepare_restores();
        h.commit();
        for m in b.frames() {
            if m["type"] == "patch" {
                apply_relay(&mut model, &m["ops"]);
            }
        }
        let expected: Value = serde_json::from_str(target).unwrap();
        assert_eq!(
            Value::Object(model),
            expected,
            "{batches} batches: a client following the patches holds the version"
        );
        assert_eq!(h.core.doc.to_json(), target);
    }
}

#[test]
fn restores_are_prepared_one_at_a_time_and_a_few_wait_beyond_which_they_are_refused() {
    use crate::room::restore::RestoreError;
    const RESTORES_WAITING: usize = 2;
    let mut h = Harness::with(&[("restores-waiting", "2")], u64::MAX / 4);
    let _a = h.join(As::Owner);
    let mut answers: Vec<_> = (0..RESTORES_WAITING + 2)
        .map(|i| ask_restore(&mut h, &format!(r#"{{"r":{{"v":{i}}}}}"#)))
        .collect();
    assert_eq!(h.restores.len(), 1, "one prepared at a time");
    let refused = answers.pop().unwrap().try_recv().expect("answered at once");
    assert!(matches!(refused, Err(RestoreError::Busy)), "{refused:?}");
    for _ in 0..=RESTORES_WAITING {
        h.prepare_restores();
    }
    assert!(h.restores.is_empty());
    h.commit();
    for (i, mut answer) in answers.into_iter().enumerate() {
        let done = answer.try_recv().expect("answered").expect("restored");
        assert_eq!(done.v, i as u64 + 1, "in the order asked");
    }
    assert_eq!(
        h.core.doc.to_json(),
        format!(r#"{{"r":{{"v":{RESTORES_WAITING}}}}}"#)
    );
}

#[test]
fn a_version_names_at_most_its_first_editors() {
    let mut h = Harness::with(&[("checkpoint-ms", "1000")], u64::MAX / 4);
    let editors: Vec<_> = (0..30).map(|_| h.join(As::Editor)).collect();
    for (k, e) in editors.iter().enumerate() {
        h.patch(e, 1, put(&format!("n{k}"), json!({})));
    }
    h.commit();
    h.advance(Duration::from_secs(1));
    h.housekeeping();
    let saved = saves(&mut h);
    let names = &saved[0].info.editors;
    assert_eq!(
        names.len(),
        crate::room::history::EDITORS_NAMED,
        "{names:?}"
    );
    let distinct: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(distinct.len(), names.len(), "{names:?}");
}

/// Saving a version of a large document takes several times the document (its text, the
/// version before it rebuilt, the delta): promised from the memory budget first. Without
/// room, a naming is refused (503 at the HTTP API) and nothing is queued, and a checkpoint
/// waits an interval with its editors kept (the ninth review: ten namings of a 36 MB file
/// in a row took a node with a 256 MiB budget to 416 MiB).
#[test]
fn versions_of_a_large_document_are_saved_within_the_memory_budget() {
    let mut h = Harness::with(&[("checkpoint-ms", "1000")], 1 << 30);
    let a = h.join(As::Owner);
    h.patch(&a, 1, put("big", json!({"t": "x".repeat(1_000_000)})));
    h.commit();
    assert!(saves(&mut h).is_empty());
    // 3 MiB left under the mark: the save of a 1 MB document (4 MB) does not fit; that of
    // a 100 KB one does.
    let memory = h.core.rules.memory.clone();
    let left = memory.room_left();
    let _elsewhere = memory.reserve(left - (3 << 20)).expect("under the mark");
    let (reply, mut answer) = oneshot::channel();
    h.send(RoomCmd::NameVersion(NameRequest {
        title: "Large".into(),
        description: None,
        within: crate::storage::Share::Whole,
        reply,
    }));
    assert!(
        matches!(answer.try_recv(), Ok(Err(WorkRefused::NoRoom))),
        "a naming without room is refused at once"
    );
    h.commit();
    assert!(saves(&mut h).is_empty(), "nothing queued for it");
    h.advance(Duration::from_millis(1000));
    h.housekeeping();
    assert!(saves(&mut h).is_empty(), "no checkpoint without room");
    // Smaller now: the next checkpoint fits, with the editors of both patches.
    h.patch(
        &a,
        2,
        json!([{"op": "delete", "id": "big"}, {"op": "put", "id": "mid", "props": {"t": "y".repeat(100_000)}}]),
    );
    h.commit();
    h.advance(Duration::from_millis(1000));
    h.housekeeping();
    let saved = saves(&mut h);
    assert_eq!(saved.len(), 1, "the checkpoint waited, then was saved");
    assert!(saved[0].memory.is_some(), "its save's memory is promised");
    assert_eq!(saved[0].info.version, 2);
    assert!(
        !saved[0].info.editors.is_empty(),
        "{:?}",
        saved[0].info.editors
    );
}

/// A version's size is known only once it is encoded: the worker checks it against the
/// share of the owner's storage it must fit then. Checked before with nothing to add, each
/// naming by the link's guests could take the owner one version past their share.
#[tokio::test]
async fn a_version_that_would_pass_its_share_of_storage_is_not_kept() {
    use crate::room::history::{SaveJob, WorkerParts};
    use crate::storage::{Share, Storage, StorageError};
    use crate::store::Store;
    use std::sync::Arc;

    let dir = tempfile::tempdir().expect("temporary folder");
    let store: Arc<dyn Store> =
        Arc::new(crate::store::sqlite::SqliteStore::open(dir.path()).expect("open"));
    let email = format!("{}@example.com", crate::ids::random_string(10));
    let owner = store
        .create_account(&email, "Ada", "hash")
        .await
        .unwrap()
        .id;
    let record = crate::store::conformance::record(&owner, 1);
    store.create_file(&record, Some("{}".into())).await.unwrap();
    let epoch = store.take_file(&record.id, 0).await.unwrap().epoch;
    let metrics = crate::metrics::Metrics::new();
    // 12,000 bytes in all: the link's guests may fill 6,000 of them.
    let storage = Arc::new(Storage::new(12_000, store.clone(), &metrics));
    storage
        .check(&owner, 0, "version")
        .await
        .expect("nearly empty");
    let parts = WorkerParts {
        store: store.clone(),
        storage: storage.clone(),
        rules: crate::history::HistoryRules::default(),
        metrics: metrics.clone(),
    };
    // Random text hardly compresses: each of these versions keeps about 7 KB.
    let doc = || format!(r#"{{"n":{{"t":"{}"}}}}"#, crate::ids::random_string(9_000));
    let job = |within| SaveJob {
        file: record.id.clone(),
        epoch,
        doc: String::new(),
        info: new_info(1, 1, VersionKind::Named, vec![]),
        reply: None,
        memory: None,
        holder: Holder::Account(owner.clone()),
        within: Some(within),
        queued: 1,
        had_edits: true,
        by_link: false,
    };
    let info = || new_info(1, 1, VersionKind::Named, vec![]);

    let guests = parts.save(&job(Share::Link), doc(), info()).await;
    assert!(
        matches!(
            guests,
            Err(WorkRefused::Storage(StorageError::LinkShareFull))
        ),
        "{guests:?}"
    );
    let owners = parts.save(&job(Share::Whole), doc(), info()).await;
    let kept = owners.expect("within the whole limit");
    assert!(kept.bytes > 6_000, "{}", kept.bytes);
    let again = parts.save(&job(Share::Whole), doc(), info()).await;
    assert!(
        matches!(again, Err(WorkRefused::Storage(StorageError::Full))),
        "{again:?}"
    );
    // Only the version that fit was kept, and the store holds less than the limit.
    assert_eq!(store.versions(&record.id, None, 10).await.unwrap().len(), 1);
    assert!(
        store
            .stored_bytes(&Holder::Account(owner.clone()))
            .await
            .unwrap()
            <= 12_000
    );
    let refused = metrics
        .storage_refusals
        .with_label_values(&["version"])
        .get();
    assert_eq!(refused, 2);
}

/// What the worker answers for a version handed to it, as the room would get it.
fn outcome(job: &crate::room::history::SaveJob, saved: bool) -> RoomCmd {
    RoomCmd::VersionDone(crate::room::history::SaveOutcome {
        queued: job.queued,
        checked: job.within.is_some(),
        had_edits: job.had_edits,
        by_link: job.by_link,
        editors: job.info.editors.clone(),
        saved: saved.then(|| job.info.clone()),
    })
}

/// A version whose storage is checked by the worker may still not be kept: until the
/// worker says, a restore keeps a version of the edits before it (so it stays undoable),
/// and a version not kept puts its edits back for the next, unless a later version holds
/// them already.
#[test]
fn edits_of_a_version_not_kept_go_to_the_next() {
    let mut h = Harness::with(&[("checkpoint-ms", "1000")], u64::MAX / 4);
    let a = h.join(As::Owner);
    let name = |h: &mut Harness, title: &str| {
        let (reply, _answer) = oneshot::channel();
        h.send(RoomCmd::NameVersion(NameRequest {
            title: title.into(),
            description: None,
            within: crate::storage::Share::Link,
            reply,
        }));
    };
    h.patch(&a, 1, put("x", json!({"v": 1})));
    h.commit();
    name(&mut h, "One");
    let one = saves(&mut h).remove(0);
    assert!(one.had_edits && one.within.is_some());
    // Not kept: the edits are back, and a checkpoint keeps them an interval later.
    h.send(outcome(&one, false));
    h.advance(Duration::from_millis(1_000));
    h.housekeeping();
    let checkpoint = saves(&mut h).remove(0);
    assert_eq!(checkpoint.info.kind, VersionKind::Auto);
    assert_eq!(checkpoint.info.editors, one.info.editors);
    h.send(outcome(&checkpoint, true));

    // A naming not answered yet: a restore keeps a version of the document before it.
    h.patch(&a, 2, put("y", json!({"v": 2})));
    h.commit();
    name(&mut h, "Two");
    let two = saves(&mut h).remove(0);
    let _answer = ask_restore(&mut h, r#"{"x":{"v":0}}"#);
    h.prepare_restores();
    h.end_turn().expect("the restore's append");
    h.durable(3);
    let kinds: Vec<_> = saves(&mut h).iter().map(|j| j.info.kind).collect();
    assert_eq!(
        kinds,
        [VersionKind::Auto, VersionKind::Restore],
        "{kinds:?}"
    );
    // "Two" not kept after those: a later version holds its edits, nothing is put back.
    h.send(outcome(&two, false));
    h.advance(Duration::from_secs(60));
    h.housekeeping();
    assert!(saves(&mut h).is_empty(), "no version of edits kept already");
}
