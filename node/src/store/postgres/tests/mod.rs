//! The Postgres store's own tests; the contract every store keeps runs here as well
//! ([`crate::store::conformance`]).

mod commits;
mod connection;
mod fencing;

use std::sync::Arc;

use super::append::{append_at_once, append_one_by_one, APPEND_SQL};
use super::PgStore;
use crate::ids::{ClientKey, FileId};
use crate::store::{FileAppend, LoggedPatch, Store, StoreResult};

/// A database of its own for one test, dropped when the test ends, however it ends.
pub(crate) use atrium_testkit::postgres::TestDatabase as TestDb;

async fn open() -> (Arc<dyn Store>, TestDb) {
    let db = TestDb::create().await;
    let store = PgStore::connect(&db.url, 4)
        .await
        .unwrap_or_else(|e| panic!("connect to {}: {e}", db.url));
    (Arc::new(store), db)
}

mod conformance {
    use super::open;

    crate::store::conformance::conformance_suite!(open());
}

/// A new file (of a new account).
async fn new_file(store: &PgStore) -> FileId {
    crate::store::conformance::new_file(store).await.1
}

/// A store on a database of its own with a file in it, taken once: the database (dropped
/// with it), the store, the file and its epoch.
async fn taken_file() -> (TestDb, PgStore, FileId, u64) {
    let db = TestDb::create().await;
    let store = PgStore::connect(&db.url, 2).await.expect("connect");
    let file = new_file(&store).await;
    let epoch = store.take_file(&file, 0).await.expect("take").epoch;
    (db, store, file, epoch)
}

/// Appends a batch that must commit; answers each file's result.
async fn commit(store: &PgStore, appends: Vec<FileAppend>) -> Vec<StoreResult<()>> {
    store
        .append(appends.into())
        .await
        .expect("the batch commits")
}

fn patch(version: u64, client: u8, op_id: u64) -> LoggedPatch {
    LoggedPatch {
        version,
        client: ClientKey([client; 16]),
        op_id,
        by: format!("p{client}"),
        ops: format!("[{version}]"),
        t: None,
    }
}

fn append(file: &FileId, epoch: u64, patches: Vec<LoggedPatch>) -> FileAppend {
    FileAppend {
        file: file.clone(),
        epoch,
        patches,
    }
}

/// Not a test but a measure (run with `--ignored --nocapture`): one journal batch
/// over 1,000 files, one statement per file and one for all, on the same database.
#[tokio::test]
#[ignore]
async fn bench_a_batch_over_a_thousand_files() {
    let db = TestDb::create().await;
    let store = PgStore::connect(&db.url, 4).await.expect("store");
    let mut files = Vec::new();
    for _ in 0..1000 {
        let file = new_file(&store).await;
        let epoch = store.take_file(&file, 0).await.expect("take").epoch;
        files.push((file, epoch));
    }
    let batch = |v: u64| -> Vec<FileAppend> {
        files
            .iter()
            .map(|(f, e)| append(f, *e, vec![patch(v, 1, v)]))
            .collect()
    };
    let mut client = store.client().await.expect("client");
    let stmt = client.prepare_cached(APPEND_SQL).await.expect("prepare");
    for round in 1..=3u64 {
        let started = std::time::Instant::now();
        let one = append_one_by_one(&mut client, &stmt, &batch(2 * round - 1)).await;
        let slow = started.elapsed();
        assert!(one.expect("batch").iter().all(|r| r.is_ok()));
        let started = std::time::Instant::now();
        let all = append_at_once(&mut client, &batch(2 * round)).await;
        let fast = started.elapsed();
        assert!(all
            .expect("batch")
            .expect("no error")
            .iter()
            .all(|r| r.is_ok()));
        println!(
            "1,000 files in one batch: one at a time {slow:?}, one statement {fast:?} \
             ({:.1}x)",
            slow.as_secs_f64() / fast.as_secs_f64()
        );
    }
}
