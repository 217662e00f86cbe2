//! Appends: gapless versions, fenced per file, and the highest op id per client.

use super::support::{
    append_one, assert_err, assert_same_log, batch, file_append, new_file, op, patch, patches,
    take, version,
};
use crate::store::{Store, StoreError};

/// Versions are gapless: an append must start right after the last durable
/// version; anything else (a gap, an overlap) is refused and changes nothing.
pub async fn gapless_appends(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let mut want = patches(1, 3, 1);
    append_one(store, &file, epoch, want.clone())
        .await
        .expect("1..=3");

    let refused = [
        // A gap.
        vec![patch(5, 2, 1)],
        // An overlap with a different patch at a durable version.
        vec![patch(3, 2, 1)],
        vec![patch(2, 2, 1), patch(3, 2, 2), patch(4, 2, 3)],
        // Starting over from 1.
        vec![patch(1, 2, 1)],
    ];
    for patches in refused {
        assert_err!(
            append_one(store, &file, epoch, patches).await,
            StoreError::Fenced
        );
    }
    assert_eq!(version(store, &file).await, 3);
    assert_eq!(op(store, &file, 2).await, None);

    let more = vec![patch(4, 2, 1), patch(5, 2, 2)];
    append_one(store, &file, epoch, more.clone())
        .await
        .expect("4..=5");
    want.extend(more);
    assert_eq!(version(store, &file).await, 5);
    let t = store.take_file(&file, 100).await.expect("take");
    assert_same_log(&t.log, &want);
}

/// A group commit fences each file on its own: a fenced file and a deleted file
/// fail alone, the others land.
pub async fn one_fenced_file_does_not_fail_the_batch(store: &dyn Store) {
    let (_, stale) = new_file(store).await;
    let (_, good) = new_file(store).await;
    let (_, gone) = new_file(store).await;
    let (_, gapped) = new_file(store).await;
    let stale_epoch = take(store, &stale).await;
    take(store, &stale).await; // someone else takes it
    let good_epoch = take(store, &good).await;
    let gone_epoch = take(store, &gone).await;
    store.delete_file(&gone).await.expect("delete");
    let gapped_epoch = take(store, &gapped).await;

    let results = store
        .append(batch(vec![
            file_append(&stale, stale_epoch, patches(1, 2, 1)),
            file_append(&good, good_epoch, patches(1, 3, 2)),
            file_append(&gone, gone_epoch, patches(1, 1, 3)),
            file_append(&gapped, gapped_epoch, patches(2, 3, 4)),
        ]))
        .await
        .expect("the batch commits");
    assert_eq!(results.len(), 4);
    assert_err!(&results[0], StoreError::Fenced);
    assert!(results[1].is_ok(), "the good file lands: {:?}", results[1]);
    assert_err!(&results[2], StoreError::NotFound);
    assert_err!(&results[3], StoreError::Fenced);

    assert_eq!(version(store, &stale).await, 0);
    assert_eq!(op(store, &stale, 1).await, None);
    assert_eq!(version(store, &gapped).await, 0);
    assert_eq!(version(store, &good).await, 3);
    assert_eq!(op(store, &good, 2).await, Some((3, 3)));
    let t = store.take_file(&good, 10).await.expect("take good");
    assert_same_log(&t.log, &patches(1, 3, 2));
    let t = store.take_file(&stale, 10).await.expect("take stale");
    assert!(t.log.is_empty());
}

/// One room's consecutive turns can share a batch; the second builds on the first.
pub async fn one_file_twice_in_a_batch(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let results = store
        .append(batch(vec![
            file_append(&file, epoch, patches(1, 2, 1)),
            file_append(&file, epoch, patches(3, 5, 1)),
        ]))
        .await
        .expect("commit");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(version(store, &file).await, 5);
    assert_eq!(op(store, &file, 1).await, Some((5, 5)));
}

/// Empty appends (and an empty batch) are fine and change nothing.
pub async fn empty_appends(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    assert!(store
        .append(batch(Vec::new()))
        .await
        .expect("empty batch")
        .is_empty());
    append_one(store, &file, epoch, Vec::new())
        .await
        .expect("no patches");
    assert_eq!(version(store, &file).await, 0);
}
