//! Two nodes on one database: whoever took a file last writes it.

use std::sync::Arc;

use super::{append, commit, new_file, patch, TestDb};
use crate::ids::ClientKey;
use crate::store::postgres::PgStore;
use crate::store::{Store, StoreError};

/// Two nodes on one database: the second taker fences the first, and a batch
/// with one fenced file lands the others.
#[tokio::test]
async fn two_nodes_fence_each_other() {
    let db = TestDb::create().await;
    let (a, b) = tokio::join!(PgStore::connect(&db.url, 4), PgStore::connect(&db.url, 4));
    let (a, b) = (a.expect("node A"), b.expect("node B"));
    let shared = new_file(&a).await;
    let own = new_file(&a).await;

    let a_shared = a.take_file(&shared, 0).await.expect("A takes").epoch;
    let a_own = a
        .take_file(&own, 0)
        .await
        .expect("A takes its other file")
        .epoch;
    let b_shared = b.take_file(&shared, 0).await.expect("B takes over").epoch;
    assert!(b_shared > a_shared);

    let results = commit(&a, vec![append(&shared, a_shared, vec![patch(1, 1, 1)])]).await;
    assert!(
        matches!(results[..], [Err(StoreError::Fenced)]),
        "{results:?}"
    );
    let results = commit(&b, vec![append(&shared, b_shared, vec![patch(1, 2, 1)])]).await;
    assert!(matches!(results[..], [Ok(())]), "{results:?}");

    // A's next group commit: the file it lost is fenced, the one it owns lands.
    let results = commit(
        &a,
        vec![
            append(&shared, a_shared, vec![patch(2, 1, 2)]),
            append(&own, a_own, vec![patch(1, 1, 1), patch(2, 1, 2)]),
        ],
    )
    .await;
    assert!(
        matches!(results[..], [Err(StoreError::Fenced), Ok(())]),
        "{results:?}"
    );
    assert!(matches!(
        a.write_snapshot(&shared, a_shared, 1, "stale", 0).await,
        Err(StoreError::Fenced)
    ));

    // What each node sees is what B and A were entitled to write.
    let seen = b.take_file(&shared, 10).await.expect("B reads back");
    assert_eq!(seen.record.version, 1);
    assert_eq!(seen.log.len(), 1);
    assert_eq!(seen.log[0].client, ClientKey([2; 16]));
    let seen = b.take_file(&own, 10).await.expect("B takes A's other file");
    assert_eq!(seen.record.version, 2);
    assert_eq!(seen.log.len(), 2);
    // ... and now A is fenced out of that one too.
    let results = commit(&a, vec![append(&own, a_own, vec![patch(3, 1, 3)])]).await;
    assert!(
        matches!(results[..], [Err(StoreError::Fenced)]),
        "{results:?}"
    );
}

/// Takeovers racing from two nodes each get an epoch of their own.
#[tokio::test]
async fn racing_takeovers_get_distinct_epochs() {
    let db = TestDb::create().await;
    let a = Arc::new(PgStore::connect(&db.url, 4).await.expect("A"));
    let b = Arc::new(PgStore::connect(&db.url, 4).await.expect("B"));
    let file = new_file(&a).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let file = file.clone();
        tasks.push(tokio::spawn(async move {
            store.take_file(&file, 0).await.expect("take").epoch
        }));
    }
    let mut epochs = Vec::new();
    for t in tasks {
        epochs.push(t.await.expect("task"));
    }
    epochs.sort_unstable();
    // One after another from the file's first (a new file starts above the epoch floor).
    let first = epochs[0];
    assert_eq!(epochs, (first..first + 16).collect::<Vec<_>>());
}

/// A file made again under an id whose delete is still committing (on another node) starts
/// above the deleted file's epoch: the creation waits for the delete, then reads the floor
/// the delete raised.
#[tokio::test]
async fn an_id_made_again_during_its_delete_starts_above_the_deleted_epoch() {
    let db = TestDb::create().await;
    let store = Arc::new(PgStore::connect(&db.url, 4).await.expect("store"));
    let owner = crate::store::conformance::new_file(store.as_ref()).await.0;
    let r = crate::store::conformance::record(&owner.id, 1);
    store.create_file(&r, None).await.expect("create");
    let mut deleted = 0;
    for _ in 0..3 {
        deleted = store.take_file(&r.id, 0).await.expect("take").epoch;
    }
    // The delete as another node runs it, held open.
    let (mut raw, connection) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .expect("a connection of the test's own");
    tokio::spawn(connection);
    let tx = raw.transaction().await.expect("begin");
    tx.execute(
        "WITH gone AS (DELETE FROM files WHERE id = $1 RETURNING epoch)
         UPDATE epoch_floor SET epoch = GREATEST(epoch, (SELECT epoch FROM gone))",
        &[&r.id.as_str()],
    )
    .await
    .expect("delete");
    let made = {
        let (store, r) = (store.clone(), r.clone());
        tokio::spawn(async move { store.create_file(&r, None).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !made.is_finished(),
        "the creation did not wait for the delete"
    );
    tx.commit().await.expect("the delete commits");
    made.await.expect("task").expect("made again");
    let epoch = store.take_file(&r.id, 0).await.expect("take").epoch;
    assert!(
        epoch > deleted + 1,
        "epoch {epoch} after the deleted file's {deleted}"
    );
}
