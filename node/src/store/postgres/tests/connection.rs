//! Connections: migrations, session settings, and a server that is gone.

use std::time::Duration;

use super::{append, patch, taken_file, TestDb};
use crate::store::postgres::connect::CONNECT_TIMEOUT;
use crate::store::postgres::migrate::MIGRATIONS;
use crate::store::postgres::PgStore;
use crate::store::{Store, StoreError};

/// Nodes starting together apply each migration once.
#[tokio::test]
async fn concurrent_starts_migrate_once() {
    let db = TestDb::create().await;
    let starts = futures_util::future::join_all((0..4).map(|_| PgStore::connect(&db.url, 1)));
    for store in starts.await {
        store.expect("every node starts");
    }
    let again = PgStore::connect(&db.url, 1).await.expect("restart");
    let client = again.client().await.expect("client");
    let rows = client
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .await
        .expect("migrations");
    let applied: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let known: Vec<i64> = MIGRATIONS.iter().map(|m| m.0).collect();
    assert_eq!(applied, known);
}

/// Commits wait for the WAL flush, on every pooled session.
#[tokio::test]
async fn sessions_commit_synchronously() {
    let db = TestDb::create().await;
    let store = PgStore::connect(&db.url, 2).await.expect("connect");
    let client = store.client().await.expect("client");
    let row = client
        .query_one(
            "SELECT current_setting('synchronous_commit'),
                    current_setting('idle_in_transaction_session_timeout')",
            &[],
        )
        .await
        .expect("settings");
    assert_eq!(row.get::<_, String>(0), "on");
    assert_eq!(row.get::<_, String>(1), "5s");
}

/// A server nobody answers on is `Unavailable`, quickly, never a panic.
#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    let started = std::time::Instant::now();
    let result = PgStore::connect("postgres://atrium@127.0.0.1:1/atrium", 1).await;
    assert!(
        matches!(result, Err(StoreError::Unavailable(_))),
        "{:?}",
        result.err()
    );
    assert!(started.elapsed() < CONNECT_TIMEOUT + Duration::from_secs(2));
    assert!(matches!(
        PgStore::connect("not a url", 1).await,
        Err(StoreError::Unavailable(_))
    ));
}

/// When the database goes away under a running store, calls fail with
/// `Unavailable` (retryable) and `ping` says no.
#[tokio::test]
async fn a_lost_database_is_unavailable() {
    let (db, store, file, epoch) = taken_file().await;
    assert!(store.ping().await);
    db.admin(&format!("DROP DATABASE {} WITH (FORCE)", db.name))
        .await;
    assert!(!store.ping().await);
    assert!(matches!(
        store
            .append(vec![append(&file, epoch, vec![patch(1, 1, 1)])].into())
            .await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.file(&file).await,
        Err(StoreError::Unavailable(_))
    ));
}

/// Reads of version rows run on the bulk thread (at the bulk lane's priority), with
/// connections of their own that live there.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn version_rows_are_read_on_the_bulk_thread() {
    let db = TestDb::create().await;
    let store = PgStore::connect(&db.url, 1).await.expect("connect");
    let (name, nice, answered) = store
        .bulk
        .query("SELECT 1::int8".into(), vec![], |rows| {
            #[allow(unsafe_code)]
            // SAFETY: getpriority takes integers and reads this thread's nice value.
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            let name = std::thread::current().name().map(str::to_owned);
            Ok((name, nice, rows.len()))
        })
        .await
        .expect("a bulk read");
    assert_eq!(name.as_deref(), Some("atrium-pg-bulk"));
    assert_eq!(nice, crate::priority::LANE_NICENESS);
    assert_eq!(answered, 1);
    // The main pool's one connection is not the bulk reads': both answer at once.
    let main = store.client().await.expect("the main pool's connection");
    assert_eq!(
        one_row(&store, "SELECT 2::int8").await,
        1,
        "beside the main pool's"
    );
    drop(main);
}

/// A bulk read whose caller left is stopped in the server (its statement cancelled, its
/// connection closed), not run to its end for nobody.
#[tokio::test]
async fn a_bulk_read_whose_caller_left_is_stopped_in_the_server() {
    let db = TestDb::create().await;
    let store = PgStore::connect(&db.url, 1).await.expect("connect");
    // A statement that would run for the statement timeout; its caller leaves at once.
    let sql = "SELECT pg_sleep(25)::text, 'abandoned-read'";
    let read = store.bulk.query(sql.into(), vec![], |rows| Ok(rows.len()));
    let left = tokio::time::timeout(Duration::from_millis(300), read).await;
    assert!(
        left.is_err(),
        "the read was still running when its caller left"
    );
    let client = store.client().await.expect("the main pool's connection");
    let running = || async {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE query LIKE '%abandoned-read%' AND pid <> pg_backend_pid()",
                &[],
            )
            .await
            .expect("pg_stat_activity")
            .get::<_, i64>(0)
    };
    // Well before the statement's own 25 s are up.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while running().await > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the abandoned statement still runs in the server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The bulk reads go on, on a new connection.
    assert_eq!(
        one_row(&store, "SELECT 3::int8").await,
        1,
        "after one was abandoned"
    );
}

/// The rows a bulk read of `sql` answers.
async fn one_row(store: &PgStore, sql: &str) -> usize {
    store
        .bulk
        .query(sql.into(), vec![], |rows| Ok(rows.len()))
        .await
        .expect("a bulk read")
}
