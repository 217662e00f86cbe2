use std::sync::Arc;
use std::time::Duration;

use crate::store::conformance::{new_file, patch, record};
use crate::store::sqlite::{writer::lock, SqliteStore};
use crate::store::{FileAppend, Store};

/// A room's opening holds the writer only to raise the file's epoch; it reads the file
/// (a snapshot and a log of up to megabytes each) on a reader, so every other room's
/// commit goes on meanwhile: here, with the readers held, the opening waits after its
/// epoch while a commit lands. (Read inside the epoch's transaction, opening an 8 MiB file
/// held the journal for the whole read.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rooms_opening_reads_its_file_while_other_rooms_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let (owner, opened) = new_file(store.as_ref()).await;
    let other = record(&owner.id, 1);
    store.create_file(&other, None).await.unwrap();
    let epoch = store.take_file(&other.id, 0).await.unwrap().epoch;
    // The file to open: a snapshot at version 2 and patch 3 after it.
    let before = store.take_file(&opened, 0).await.unwrap().epoch;
    let patches = (1..=3).map(|v| patch(v, 2, v)).collect();
    let append = FileAppend {
        file: opened.clone(),
        epoch: before,
        patches,
    };
    assert!(store.append(vec![append].into()).await.unwrap()[0].is_ok());
    let doc = r#"{"a":{"x":1}}"#;
    store
        .write_snapshot(&opened, before, 2, doc, 10)
        .await
        .unwrap();

    // Every reader held here: an opening that reads on one waits for it, after its epoch.
    let held: Vec<_> = store.readers.iter().map(|r| lock(r)).collect();
    let taking = {
        let (store, opened) = (store.clone(), opened.clone());
        tokio::spawn(async move { store.take_file(&opened, 10).await })
    };
    let side = rusqlite::Connection::open(dir.path().join("atrium.sqlite3")).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while side
        .query_row(
            "SELECT epoch FROM files WHERE id = ?1",
            [opened.as_str()],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        == before as i64
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the epoch was never raised"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // The opening is reading: another room's commit gets the writer now.
    let append = FileAppend {
        file: other.id.clone(),
        epoch,
        patches: vec![patch(1, 1, 1)],
    };
    let committed =
        tokio::time::timeout(Duration::from_secs(10), store.append(vec![append].into()))
            .await
            .expect("a commit waited for a room's opening to read its file");
    assert!(committed.unwrap()[0].is_ok());
    assert!(
        !taking.is_finished(),
        "the opening was over once its epoch was raised: it read its file holding the writer"
    );
    drop(held);
    let taken = taking.await.unwrap().unwrap();
    assert_eq!(taken.record.id, opened);
    assert_eq!(taken.epoch, before + 1);
    assert_eq!(taken.snapshot, Some((2, doc.to_owned())));
    let versions: Vec<u64> = taken.log.iter().map(|p| p.version).collect();
    assert_eq!(
        versions,
        [1, 2, 3],
        "the log behind the snapshot (kept) and after it"
    );
    assert_eq!(store.epoch(&opened).await.unwrap(), taken.epoch);
}
