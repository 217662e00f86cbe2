//! The embedded store: SQLite in WAL mode with `synchronous=FULL`, so a commit
//! returns only once it is synced to disk. One connection, used from blocking
//! threads; the journal batches appends so a busy node pays one sync per turn.

mod accounts;
mod app_keys;
mod append;
mod checkpoints;
mod files;
mod log;
mod parts;
mod rows;
mod schema;
mod server;
mod store;
mod versions;
mod webhooks;
mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

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
    readers: Arc<[Mutex<Connection>]>,
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
                Ok(Mutex::new(reader))
            })
            .collect::<StoreResult<Arc<[_]>>>()?;
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
        let (readers, first) = (self.readers.clone(), self.next_reader());
        Self::blocking(move || f(&mut idle_reader(&readers, first))).await
    }

    /// Runs a read-only `f` that reads whole stored documents (version rows) on threads of
    /// their own at the bulk lane's priority: a loop of comparisons from a free account read
    /// megabytes a request, and on the runtime's blocking threads (which relay at full
    /// priority) those reads took most of a core from relaying (honest relay p99 1.2 ->
    /// 11 ms).
    async fn read_bulk<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        static BULK: std::sync::OnceLock<std::sync::mpsc::Sender<crate::lane::Job>> =
            std::sync::OnceLock::new();
        let threads = BULK
            .get_or_init(|| crate::lane::niced_threads("atrium-sqlite-bulk", crate::lane::width()));
        let (readers, first) = (self.readers.clone(), self.next_reader());
        let (done, answer) = tokio::sync::oneshot::channel();
        threads
            .send(Box::new(move || {
                // A panic is this read's failure, not the end of the thread.
                let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    f(&mut idle_reader(&readers, first))
                }));
                let _ = done.send(read.unwrap_or_else(|_| {
                    Err(StoreError::Unavailable("a bulk read panicked".into()))
                }));
            }))
            .map_err(|_| StoreError::Unavailable("the store's bulk threads stopped".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("a bulk read was lost".into()))?
    }

    /// The reader to try first, in turn.
    fn next_reader(&self) -> usize {
        self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len()
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

/// A reader nobody is using, trying `first` first; when all are busy, `first` once it is
/// free. A room's opening or a version's read can hold a reader for a large file's
/// megabytes, and a hello's lookup should not wait behind it while another reader idles.
fn idle_reader(readers: &[Mutex<Connection>], first: usize) -> MutexGuard<'_, Connection> {
    let n = readers.len();
    (0..n)
        .find_map(|k| match readers[(first + k) % n].try_lock() {
            Ok(conn) => Some(conn),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        })
        .unwrap_or_else(|| lock(&readers[first]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads of whole stored documents run on niced threads of their own, and a panic in one
    /// is its failure, not the end of the thread.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn bulk_reads_run_on_niced_threads_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let (name, nice) = store
            .read_bulk(|_| {
                #[allow(unsafe_code)]
                // SAFETY: getpriority takes integers and reads this thread's nice value.
                let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
                Ok((std::thread::current().name().map(str::to_owned), nice))
            })
            .await
            .unwrap();
        assert!(name.unwrap_or_default().starts_with("atrium-sqlite-bulk-"));
        assert_eq!(nice, crate::priority::LANE_NICENESS);
        let panicked = store.read_bulk(|_| -> StoreResult<u8> { panic!("a bad read") });
        assert!(panicked.await.is_err());
        assert_eq!(
            store.read_bulk(|_| Ok(7)).await.unwrap(),
            7,
            "the threads go on"
        );
    }

    /// A read takes a reader nobody is using: one reader held for a long read (a large
    /// file's opening, a version) does not make every other read that is handed it wait.
    #[tokio::test]
    #[allow(clippy::await_holding_lock)] // the held reader is the point: reads go elsewhere
    async fn a_read_takes_a_reader_nobody_is_using() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let busy = lock(&store.readers[0]);
        for n in 0..4 {
            let one = store.read(|c| {
                c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
                    .map_err(unavailable)
            });
            let read = tokio::time::timeout(std::time::Duration::from_secs(5), one).await;
            assert_eq!(
                read.expect("a read waited for a busy reader").unwrap(),
                1,
                "read {n}"
            );
        }
        drop(busy);
        let bulk = store.read_bulk(|_| Ok(2));
        assert_eq!(bulk.await.unwrap(), 2);
    }
}
