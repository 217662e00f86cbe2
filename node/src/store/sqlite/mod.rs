//! The embedded store: SQLite in WAL mode with `synchronous=FULL`, so a commit
//! returns only once it is synced to disk. One connection, used from blocking
//! threads; the journal batches appends so a busy node pays one sync per turn.

mod accounts;
mod app_keys;
mod append;
mod checkpoints;
mod files;
mod log;
mod rows;
mod schema;
mod server;
mod store;
mod versions;
mod webhooks;
mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};

use super::{StoreError, StoreResult};
use checkpoints::checkpoints;
use rows::unavailable;
use schema::{migrate, SCHEMA};
use writer::{lock, Writer};

/// Connections that only read: WAL lets them read while the writer commits, so
/// a hello or a sign-in never waits behind a group commit's sync.
const READERS: usize = 2;

pub struct SqliteStore {
    /// The one connection that writes.
    writer: Arc<Writer>,
    readers: Vec<Arc<Mutex<Connection>>>,
    next_reader: AtomicUsize,
    /// The checkpoint thread stops once this is dropped with the store.
    _checkpoints: Arc<()>,
    /// Whether an enabled webhook endpoint exists: without one, the journal's commit skips
    /// recording `file.updated` (only this process writes this store, so it is exact).
    webhooks_on: Arc<std::sync::atomic::AtomicBool>,
}

fn now_ms() -> i64 {
    crate::clock::unix_ms()
}

impl SqliteStore {
    /// Opens (or creates) the store under `folder`, applying the schema.
    pub fn open(folder: &Path) -> StoreResult<Self> {
        std::fs::create_dir_all(folder)
            .map_err(|e| StoreError::Unavailable(format!("{}: {e}", folder.display())))?;
        let path = folder.join("atrium.sqlite3");
        let conn = Connection::open(&path).map_err(unavailable)?;
        // Checkpoints run on a connection of their own (see `checkpoints`), never inside
        // a commit: a commit that crossed the WAL's threshold would otherwise copy
        // megabytes into the database and sync it while every room waits for its ack.
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             PRAGMA foreign_keys = ON;
             PRAGMA busy_timeout = 5000;
             PRAGMA wal_autocheckpoint = 0;
             PRAGMA journal_size_limit = 67108864;",
        )
        .map_err(unavailable)?;
        conn.execute_batch(SCHEMA).map_err(unavailable)?;
        migrate(&conn).map_err(unavailable)?;
        let readers = (0..READERS)
            .map(|_| {
                let reader = Connection::open_with_flags(
                    &path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(unavailable)?;
                reader
                    .execute_batch("PRAGMA busy_timeout = 5000;")
                    .map_err(unavailable)?;
                Ok(Arc::new(Mutex::new(reader)))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let checkpointer = Connection::open(&path).map_err(unavailable)?;
        checkpointer
            .execute_batch("PRAGMA busy_timeout = 5000;")
            .map_err(unavailable)?;
        let stop = Arc::new(());
        checkpoints(checkpointer, Arc::downgrade(&stop));
        let webhooks_on = Arc::new(std::sync::atomic::AtomicBool::new(webhooks::any_enabled(
            &conn,
        )?));
        Ok(Self {
            writer: Arc::new(Writer::new(conn)),
            readers,
            next_reader: AtomicUsize::new(0),
            _checkpoints: stop,
            webhooks_on,
        })
    }

    /// Runs `f` with the writing connection on a blocking thread, after any journal
    /// commit that waits for it.
    async fn run<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let writer = self.writer.clone();
        Self::blocking(move || f(&mut writer.ordinary())).await
    }

    /// Runs a read-only `f` with one of the reading connections.
    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let i = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        let reader = self.readers[i].clone();
        Self::blocking(move || f(&mut lock(&reader))).await
    }

    async fn blocking<T, F>(f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce() -> StoreResult<T> + Send + 'static,
    {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| StoreError::Unavailable(e.to_string()))?
    }
}
