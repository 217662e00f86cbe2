//! Taking a file: the epoch that fences every earlier taker, and what a taker reads.

use super::support::{
    account, append_one, assert_err, assert_same_log, client, file_with_log, new_file, op, patch,
    patches, record, taken_log, version, versions, write_doc,
};
use crate::ids::FileId;
use crate::store::{Store, StoreError};

/// Taking a file raises its epoch and hands back the record, the initial document
/// as the version-0 snapshot, and the log.
pub async fn take_file_reads_snapshot_and_log(store: &dyn Store) {
    let owner = account(store).await;
    let with_doc = record(&owner.id, 1_000);
    store
        .create_file(&with_doc, Some(r#"{"a":1}"#.into()))
        .await
        .expect("create");
    let taken = store.take_file(&with_doc.id, 100).await.expect("take");
    assert!(taken.epoch >= 1);
    assert_eq!(taken.record.id, with_doc.id);
    assert_eq!(taken.record.version, 0);
    assert_eq!(taken.snapshot, Some((0, r#"{"a":1}"#.to_string())));
    assert!(taken.log.is_empty());

    let want = patches(1, 3, 7);
    append_one(store, &with_doc.id, taken.epoch, want.clone())
        .await
        .expect("append");
    let again = store
        .take_file(&with_doc.id, 100)
        .await
        .expect("take again");
    assert!(again.epoch > taken.epoch);
    assert_eq!(again.record.version, 3);
    assert_eq!(again.snapshot, Some((0, r#"{"a":1}"#.to_string())));
    assert_same_log(&again.log, &want);

    let (_, bare) = new_file(store).await;
    let taken = store.take_file(&bare, 0).await.expect("take bare");
    assert_eq!(taken.snapshot, None);
    assert!(taken.log.is_empty());

    assert_err!(
        store.take_file(&FileId::generate(), 0).await,
        StoreError::NotFound
    );
}

/// `behind` patches before the snapshot come back with the log, for resume.
pub async fn take_file_keeps_behind(store: &dyn Store) {
    let (file, epoch) = file_with_log(store, 10).await;
    // Keep everything so `behind` alone decides what comes back.
    write_doc(store, &file, epoch, 6, 100).await;
    let t = store.take_file(&file, 0).await.expect("take");
    assert_eq!(t.snapshot, Some((6, "doc6".to_string())));
    assert_eq!(versions(&t.log), vec![7, 8, 9, 10]);
    assert_eq!(taken_log(store, &file, 2).await, vec![5, 6, 7, 8, 9, 10]);
    for behind in [1_000, u64::MAX] {
        assert_eq!(
            taken_log(store, &file, behind).await,
            (1..=10).collect::<Vec<_>>()
        );
    }
}

/// The patches before the snapshot are bounded by their ops' bytes too: the newest whose
/// ops come to at most `behind_bytes`, so a load never reads more of them than a room keeps.
pub async fn take_file_keeps_behind_within_bytes(store: &dyn Store) {
    let (file, epoch) = file_with_log(store, 10).await;
    write_doc(store, &file, epoch, 6, 100).await;
    let all = store.take_file(&file, 100).await.expect("take");
    let len = |v: u64| all.log[v as usize - 1].ops.len() as u64;
    let within = |bytes: u64| {
        let file = file.clone();
        async move {
            let t = store
                .take_file_within(&file, 100, bytes)
                .await
                .expect("take");
            versions(&t.log)
        }
    };
    assert_eq!(within(0).await, vec![7, 8, 9, 10]);
    assert_eq!(within(len(6)).await, vec![6, 7, 8, 9, 10]);
    assert_eq!(within(len(6) + len(5) - 1).await, vec![6, 7, 8, 9, 10]);
    assert_eq!(within(len(6) + len(5)).await, vec![5, 6, 7, 8, 9, 10]);
    assert_eq!(within(u64::MAX).await, (1..=10).collect::<Vec<_>>());
    // The count still bounds it as well.
    let t = store
        .take_file_within(&file, 2, u64::MAX)
        .await
        .expect("take");
    assert_eq!(versions(&t.log), vec![5, 6, 7, 8, 9, 10]);
}

/// After a second take, every write under the first epoch is fenced; the second
/// taker's writes land.
pub async fn fencing_after_a_second_take(store: &dyn Store) {
    // The first taker appends while it owns the file.
    let (file, first) = file_with_log(store, 2).await;
    assert_eq!(store.epoch(&file).await.expect("epoch"), first);
    let second = store.take_file(&file, 0).await.expect("second take");
    assert!(second.epoch > first);
    assert_eq!(versions(&second.log), vec![1, 2]);
    // What a first taker whose lease lapsed checks before taking it back: not its epoch now.
    assert_eq!(store.epoch(&file).await.expect("epoch"), second.epoch);

    assert_err!(
        append_one(store, &file, first, vec![patch(3, 9, 100)]).await,
        StoreError::Fenced
    );
    assert_err!(
        store.write_snapshot(&file, first, 2, "stale", 0).await,
        StoreError::Fenced
    );
    assert_eq!(op(store, &file, 9).await, None);
    assert_eq!(version(store, &file).await, 2);

    append_one(store, &file, second.epoch, vec![patch(3, 2, 1)])
        .await
        .expect("the second taker appends");
    write_doc(store, &file, second.epoch, 3, 10).await;
    // A fenced snapshot left nothing behind, and its trim did not run.
    let (snapshot, tail) = store.snapshot_and_tail(&file).await.expect("read");
    assert_eq!(snapshot, Some((3, "doc3".to_string())));
    assert!(tail.is_empty());
    let t = store.take_file(&file, 10).await.expect("take");
    assert_eq!(versions(&t.log), vec![1, 2, 3]);
    assert_eq!(t.log[2].client, client(2));

    // A third take fences the second taker as well.
    let third = store.take_file(&file, 0).await.expect("third take");
    assert_err!(
        append_one(store, &file, second.epoch, vec![patch(4, 2, 2)]).await,
        StoreError::Fenced
    );
    append_one(store, &file, third.epoch, vec![patch(4, 3, 1)])
        .await
        .expect("the third taker appends");
}
