//! Group commits that are retried, or that fail in one file.

use std::sync::Arc;

use super::{append, commit, new_file, patch, taken_file, TestDb};
use crate::ids::ClientKey;
use crate::store::postgres::PgStore;
use crate::store::{FileAppend, Store, StoreError};

/// A retried group commit whose first attempt landed (its answer lost with the
/// connection) lands again as a success, not as a fence; anything else at those
/// versions stays fenced.
#[tokio::test]
async fn a_retried_commit_that_landed_is_not_fenced() {
    let (_db, store, file, epoch) = taken_file().await;
    let first: Arc<[FileAppend]> = vec![
        append(&file, epoch, vec![patch(1, 1, 1), patch(2, 1, 2)]),
        append(&file, epoch, vec![patch(3, 1, 3)]),
    ]
    .into();
    let results = store.append(first.clone()).await.expect("commit");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let results = store.append(first).await.expect("the retry commits");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(store.file(&file).await.expect("file").version, 3);

    let other = commit(&store, vec![append(&file, epoch, vec![patch(3, 2, 1)])]).await;
    assert!(matches!(other[..], [Err(StoreError::Fenced)]), "{other:?}");
    // After a takeover the same retry is fenced: the epoch is no longer ours.
    store.take_file(&file, 0).await.expect("take over");
    let late = commit(&store, vec![append(&file, epoch, vec![patch(3, 1, 3)])]).await;
    assert!(matches!(late[..], [Err(StoreError::Fenced)]), "{late:?}");
}

/// A statement that fails inside a group commit (here a unique violation on an op
/// row that should not exist) fails its own file only: the savepoint is rolled
/// back, whether the file comes first or last in the batch, and the rest commit.
#[tokio::test]
async fn a_failing_statement_fails_only_its_file() {
    let db = TestDb::create().await;
    let store = PgStore::connect(&db.url, 2).await.expect("connect");
    let bad = new_file(&store).await;
    let first = new_file(&store).await;
    let second = new_file(&store).await;
    let bad_epoch = store.take_file(&bad, 0).await.expect("take").epoch;
    let first_epoch = store.take_file(&first, 0).await.expect("take").epoch;
    let second_epoch = store.take_file(&second, 0).await.expect("take").epoch;
    // A stray row at the version `bad` would append next.
    store
        .client()
        .await
        .expect("client")
        .execute(
            "INSERT INTO ops (file_id, version, client, op_id, person, ops)
             VALUES ($1, 1, '\\x00', 0, 'x', '[]')",
            &[&bad.as_str()],
        )
        .await
        .expect("stray row");

    let results = commit(
        &store,
        vec![
            append(&first, first_epoch, vec![patch(1, 1, 1)]),
            append(&bad, bad_epoch, vec![patch(1, 2, 1)]),
        ],
    )
    .await;
    assert!(
        matches!(results[..], [Ok(()), Err(StoreError::Fenced)]),
        "{results:?}"
    );
    let results = commit(
        &store,
        vec![
            append(&bad, bad_epoch, vec![patch(1, 2, 1)]),
            append(&second, second_epoch, vec![patch(1, 3, 1)]),
            append(&first, first_epoch, vec![patch(2, 1, 2)]),
        ],
    )
    .await;
    assert!(
        matches!(results[..], [Err(StoreError::Fenced), Ok(()), Ok(())]),
        "{results:?}"
    );
    assert_eq!(store.file(&first).await.expect("first").version, 2);
    assert_eq!(store.file(&second).await.expect("second").version, 1);
    assert_eq!(store.file(&bad).await.expect("bad").version, 0);
    assert_eq!(
        store.client_op(&bad, ClientKey([2; 16])).await.expect("op"),
        None
    );
    let (_, tail) = store.snapshot_and_tail(&bad).await.expect("tail");
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].by, "x", "the stray row is untouched");
}
