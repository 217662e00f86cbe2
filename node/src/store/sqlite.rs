//! The embedded store: SQLite in WAL mode with `synchronous=FULL`, so a commit
//! returns only once it is synced to disk. One connection, used from blocking
//! threads; the journal batches appends so a busy node pays one sync per turn.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use async_trait::async_trait;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior};

use super::*;
use crate::ids::{AccountId, ClientKey, FileId};

const SCHEMA: &str = include_str!("schema.sql");

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
}

/// How often the WAL is copied into the database.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Copies the WAL into the database every [`CHECKPOINT_EVERY`] on a thread and a
/// connection of its own, while the store lives. A passive checkpoint takes no lock
/// that a commit needs; the writer starts the WAL over once one has copied it all.
fn checkpoints(conn: Connection, store: std::sync::Weak<()>) {
    let spawned = std::thread::Builder::new()
        .name("atrium-sqlite-checkpoint".into())
        .spawn(move || {
            while store.upgrade().is_some() {
                std::thread::sleep(CHECKPOINT_EVERY);
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::warn!(error = %e, "the WAL checkpoint failed; it is tried again");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "no checkpoint thread: the WAL grows until restart");
    }
}

/// The writing connection, shared by the journal and every other write. SQLite has
/// one writer at a time, so a burst of large writes (new files with big documents)
/// would hold every room's commit behind all of them; the journal's commits go
/// first instead, and wait for at most the one write under way.
struct Writer {
    conn: Mutex<Connection>,
    gate: Mutex<Gate>,
    turn: Condvar,
}

/// Who holds the connection, and how many journal commits wait for it.
#[derive(Default)]
struct Gate {
    busy: bool,
    urgent: usize,
}

/// The connection while one write holds it; the next waiting write goes on drop.
struct Writing<'a> {
    conn: Option<MutexGuard<'a, Connection>>,
    writer: &'a Writer,
}

impl std::ops::Deref for Writing<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for Writing<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("held until drop")
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.conn = None;
        lock(&self.writer.gate).busy = false;
        self.writer.turn.notify_all();
    }
}

impl Writer {
    fn new(conn: Connection) -> Self {
        Self {
            conn: Mutex::new(conn),
            gate: Mutex::new(Gate::default()),
            turn: Condvar::new(),
        }
    }

    /// The connection for a journal commit, ahead of other writes that wait.
    fn urgent(&self) -> Writing<'_> {
        let mut gate = lock(&self.gate);
        gate.urgent += 1;
        let mut gate = self.wait(gate, |g| g.busy);
        gate.urgent -= 1;
        self.take(gate)
    }

    /// The connection for any other write, once no journal commit waits for it.
    fn ordinary(&self) -> Writing<'_> {
        let gate = self.wait(lock(&self.gate), |g| g.busy || g.urgent > 0);
        self.take(gate)
    }

    fn wait<'a>(
        &self,
        gate: MutexGuard<'a, Gate>,
        blocked: impl FnMut(&mut Gate) -> bool,
    ) -> MutexGuard<'a, Gate> {
        self.turn
            .wait_while(gate, blocked)
            .unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, mut gate: MutexGuard<'_, Gate>) -> Writing<'_> {
        gate.busy = true;
        drop(gate);
        Writing {
            conn: Some(lock(&self.conn)),
            writer: self,
        }
    }
}

/// A panic while holding a lock cannot leave SQLite half-written (the transaction
/// rolls back), so a poisoned lock is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_ms() -> i64 {
    crate::clock::unix_ms()
}

fn unavailable(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// `on_unique` for a uniqueness violation, `Unavailable` for anything else.
fn unique_or_unavailable(e: rusqlite::Error, on_unique: StoreError) -> StoreError {
    let unique = matches!(&e, rusqlite::Error::SqliteFailure(f, _)
        if f.code == rusqlite::ErrorCode::ConstraintViolation);
    if unique {
        on_unique
    } else {
        unavailable(e)
    }
}

const FILE_COLUMNS: &str =
    "id, owner, name, link, view_key, edit_key, key_generation, version, updated_at";

fn file_from_row(row: &Row<'_>) -> rusqlite::Result<FileRecord> {
    let id: String = row.get(0)?;
    let owner: String = row.get(1)?;
    let link: String = row.get(3)?;
    Ok(FileRecord {
        id: FileId::parse(&id).unwrap_or_else(FileId::generate),
        owner: AccountId::parse(&owner).unwrap_or_else(AccountId::generate),
        name: row.get(2)?,
        link: LinkAccess::parse(&link).unwrap_or(LinkAccess::None),
        view_key: row.get(4)?,
        edit_key: row.get(5)?,
        key_generation: row.get::<_, i64>(6)? as u64,
        version: row.get::<_, i64>(7)? as u64,
        updated_at: row.get(8)?,
    })
}

fn account_from_row(row: &Row<'_>) -> rusqlite::Result<Account> {
    let id: String = row.get(0)?;
    Ok(Account {
        id: AccountId::parse(&id).unwrap_or_else(AccountId::generate),
        email: row.get(1)?,
        name: row.get(2)?,
        password_hash: row.get(3)?,
    })
}

fn patch_from_row(row: &Row<'_>) -> rusqlite::Result<LoggedPatch> {
    let client: Vec<u8> = row.get(1)?;
    let mut key = [0u8; 16];
    if client.len() == 16 {
        key.copy_from_slice(&client);
    }
    Ok(LoggedPatch {
        version: row.get::<_, i64>(0)? as u64,
        client: ClientKey(key),
        op_id: row.get::<_, i64>(2)? as u64,
        by: row.get(3)?,
        ops: row.get(4)?,
        t: row.get(5)?,
    })
}

fn read_file(conn: &Connection, id: &FileId) -> StoreResult<FileRecord> {
    conn.query_row(
        &format!("SELECT {FILE_COLUMNS} FROM files WHERE id = ?1"),
        [id.as_str()],
        file_from_row,
    )
    .optional()
    .map_err(unavailable)?
    .ok_or(StoreError::NotFound)
}

fn read_snapshot(conn: &Connection, id: &FileId) -> StoreResult<Option<(u64, String)>> {
    conn.query_row(
        "SELECT version, doc FROM snapshots WHERE file_id = ?1",
        [id.as_str()],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
    )
    .optional()
    .map_err(unavailable)
}

fn read_log_from(conn: &Connection, id: &FileId, from: u64) -> StoreResult<Vec<LoggedPatch>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT version, client, op_id, by, ops, t FROM ops
             WHERE file_id = ?1 AND version >= ?2 ORDER BY version",
        )
        .map_err(unavailable)?;
    let rows = stmt
        .query_map(params![id.as_str(), from as i64], patch_from_row)
        .map_err(unavailable)?;
    rows.collect::<Result<_, _>>().map_err(unavailable)
}

/// Appends one file's patches inside the open transaction: the fence and the
/// gapless check first (one statement), then the rows.
fn append_one(conn: &Connection, append: &FileAppend, now: i64) -> StoreResult<()> {
    let (Some(first), Some(last)) = (append.patches.first(), append.patches.last()) else {
        return Ok(());
    };
    let moved = conn
        .prepare_cached(
            "UPDATE files SET version = ?1, updated_at = ?2
             WHERE id = ?3 AND epoch = ?4 AND version = ?5",
        )
        .and_then(|mut s| {
            s.execute(params![
                last.version as i64,
                now,
                append.file.as_str(),
                append.epoch as i64,
                first.version as i64 - 1
            ])
        })
        .map_err(unavailable)?;
    if moved == 0 {
        // Either the epoch moved on, or the file is gone: both end this writer.
        return match read_file(conn, &append.file) {
            Err(StoreError::NotFound) => Err(StoreError::NotFound),
            _ => Err(StoreError::Fenced),
        };
    }
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO ops (file_id, version, client, op_id, by, ops, t)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(unavailable)?;
    let mut client_op = conn
        .prepare_cached(
            "INSERT INTO client_ops (file_id, client, op_id, version) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (file_id, client) DO UPDATE
             SET op_id = excluded.op_id, version = excluded.version
             WHERE excluded.op_id > client_ops.op_id",
        )
        .map_err(unavailable)?;
    for p in &append.patches {
        insert
            .execute(params![
                append.file.as_str(),
                p.version as i64,
                &p.client.0[..],
                p.op_id as i64,
                p.by,
                p.ops,
                p.t
            ])
            .map_err(|e| unique_or_unavailable(e, StoreError::Fenced))?;
        client_op
            .execute(params![
                append.file.as_str(),
                &p.client.0[..],
                p.op_id as i64,
                p.version as i64
            ])
            .map_err(unavailable)?;
    }
    Ok(())
}

/// Brings a store made by an older node up to date (each step idempotent).
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    // Sessions gained an expiry: older ones get the default lifetime (30 days)
    // from their creation.
    let has_expiry = conn
        .prepare("SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'expires_at'")?
        .exists([])?;
    if !has_expiry {
        conn.execute_batch(
            "ALTER TABLE sessions ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    conn.execute_batch(
        "UPDATE sessions SET expires_at = created_at + 2592000000 WHERE expires_at = 0;
         CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions(expires_at);
         CREATE INDEX IF NOT EXISTS sessions_by_account ON sessions(account_id);",
    )
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
        Ok(Self {
            writer: Arc::new(Writer::new(conn)),
            readers,
            next_reader: AtomicUsize::new(0),
            _checkpoints: stop,
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

#[async_trait]
impl Store for SqliteStore {
    async fn create_account(
        &self,
        email: &str,
        name: &str,
        password_hash: &str,
    ) -> StoreResult<Account> {
        let account = Account {
            id: AccountId::generate(),
            email: email.to_owned(),
            name: name.to_owned(),
            password_hash: password_hash.to_owned(),
        };
        let a = account.clone();
        self.run(move |c| {
            c.execute(
                "INSERT INTO accounts (id, email, email_key, name, password_hash, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    a.id.as_str(),
                    a.email,
                    a.email.to_lowercase(),
                    a.name,
                    a.password_hash,
                    now_ms()
                ],
            )
            .map_err(|e| unique_or_unavailable(e, StoreError::Conflict))?;
            Ok(())
        })
        .await?;
        Ok(account)
    }

    async fn account_by_email(&self, email: &str) -> StoreResult<Account> {
        let email = email.to_lowercase();
        self.read(move |c| {
            c.query_row(
                "SELECT id, email, name, password_hash FROM accounts WHERE email_key = ?1",
                [email],
                account_from_row,
            )
            .optional()
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)
        })
        .await
    }

    async fn account_by_id(&self, id: &AccountId) -> StoreResult<Account> {
        let id = id.clone();
        self.read(move |c| {
            c.query_row(
                "SELECT id, email, name, password_hash FROM accounts WHERE id = ?1",
                [id.as_str()],
                account_from_row,
            )
            .optional()
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)
        })
        .await
    }

    async fn create_session(
        &self,
        token_digest: [u8; 32],
        account: &AccountId,
        expires_at: i64,
    ) -> StoreResult<()> {
        let account = account.clone();
        self.run(move |c| {
            c.execute(
                "INSERT INTO sessions (token_digest, account_id, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![&token_digest[..], account.as_str(), now_ms(), expires_at],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    async fn session_account(&self, token_digest: [u8; 32]) -> StoreResult<Account> {
        self.read(move |c| {
            c.query_row(
                "SELECT a.id, a.email, a.name, a.password_hash
                 FROM sessions s JOIN accounts a ON a.id = s.account_id
                 WHERE s.token_digest = ?1 AND s.expires_at > ?2",
                params![&token_digest[..], now_ms()],
                account_from_row,
            )
            .optional()
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)
        })
        .await
    }

    async fn session_expiry(&self, token_digest: [u8; 32]) -> StoreResult<i64> {
        self.read(move |c| {
            c.query_row(
                "SELECT expires_at FROM sessions WHERE token_digest = ?1 AND expires_at > ?2",
                params![&token_digest[..], now_ms()],
                |r| r.get(0),
            )
            .optional()
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)
        })
        .await
    }

    async fn delete_session(&self, token_digest: [u8; 32]) -> StoreResult<()> {
        self.run(move |c| {
            c.execute(
                "DELETE FROM sessions WHERE token_digest = ?1",
                [&token_digest[..]],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    async fn delete_sessions_of(&self, account: &AccountId) -> StoreResult<Vec<[u8; 32]>> {
        let account = account.clone();
        self.run(move |c| {
            let mut stmt = c
                .prepare("DELETE FROM sessions WHERE account_id = ?1 RETURNING token_digest")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([account.as_str()], |r| r.get::<_, Vec<u8>>(0))
                .map_err(unavailable)?;
            let mut out = Vec::new();
            for row in rows {
                if let Ok(d) = <[u8; 32]>::try_from(row.map_err(unavailable)?.as_slice()) {
                    out.push(d);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn delete_expired_sessions(&self) -> StoreResult<u64> {
        self.run(move |c| {
            c.execute("DELETE FROM sessions WHERE expires_at <= ?1", [now_ms()])
                .map(|n| n as u64)
                .map_err(unavailable)
        })
        .await
    }

    async fn create_file_capped(
        &self,
        record: &FileRecord,
        doc: Option<String>,
        max_owned: u64,
    ) -> StoreResult<()> {
        let r = record.clone();
        self.run(move |c| {
            // One writer connection and an immediate transaction: the count and the
            // insert cannot interleave with another creation.
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            if max_owned < u64::MAX {
                let owned: i64 = tx
                    .query_row(
                        "SELECT count(*) FROM files WHERE owner = ?1",
                        [r.owner.as_str()],
                        |row| row.get(0),
                    )
                    .map_err(unavailable)?;
                if owned as u64 >= max_owned {
                    return Err(StoreError::Full);
                }
            }
            tx.execute(
                "INSERT INTO files (id, owner, name, link, view_key, edit_key, key_generation,
                                    epoch, version, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, 0, 0, ?7, ?7)",
                params![
                    r.id.as_str(),
                    r.owner.as_str(),
                    r.name,
                    r.link.as_str(),
                    r.view_key,
                    r.edit_key,
                    r.updated_at
                ],
            )
            .map_err(|e| unique_or_unavailable(e, StoreError::Conflict))?;
            if let Some(doc) = doc {
                tx.execute(
                    "INSERT INTO snapshots (file_id, version, doc) VALUES (?1, 0, ?2)",
                    params![r.id.as_str(), doc],
                )
                .map_err(unavailable)?;
            }
            tx.commit().map_err(unavailable)
        })
        .await
    }

    async fn file(&self, id: &FileId) -> StoreResult<FileRecord> {
        let id = id.clone();
        self.read(move |c| read_file(c, &id)).await
    }

    async fn files_of(&self, owner: &AccountId) -> StoreResult<Vec<FileRecord>> {
        let owner = owner.clone();
        self.read(move |c| {
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {FILE_COLUMNS} FROM files WHERE owner = ?1 ORDER BY updated_at DESC, id"
                ))
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([owner.as_str()], file_from_row)
                .map_err(unavailable)?;
            rows.collect::<Result<_, _>>().map_err(unavailable)
        })
        .await
    }

    async fn update_file(&self, id: &FileId, update: FileUpdate) -> StoreResult<FileRecord> {
        let id = id.clone();
        self.run(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            read_file(&tx, &id)?;
            let now = now_ms();
            if let Some(name) = &update.name {
                tx.execute(
                    "UPDATE files SET name = ?1, updated_at = ?2 WHERE id = ?3",
                    params![name, now, id.as_str()],
                )
                .map_err(unavailable)?;
            }
            if let Some(link) = update.link {
                tx.execute(
                    "UPDATE files SET link = ?1, updated_at = ?2 WHERE id = ?3",
                    params![link.as_str(), now, id.as_str()],
                )
                .map_err(unavailable)?;
            }
            if let Some((view, edit)) = &update.keys {
                tx.execute(
                    "UPDATE files SET view_key = ?1, edit_key = ?2,
                     key_generation = key_generation + 1, updated_at = ?3 WHERE id = ?4",
                    params![view, edit, now, id.as_str()],
                )
                .map_err(unavailable)?;
            }
            let record = read_file(&tx, &id)?;
            tx.commit().map_err(unavailable)?;
            Ok(record)
        })
        .await
    }

    async fn delete_file(&self, id: &FileId) -> StoreResult<()> {
        let id = id.clone();
        self.run(move |c| {
            let n = c
                .execute("DELETE FROM files WHERE id = ?1", [id.as_str()])
                .map_err(unavailable)?;
            if n == 0 {
                return Err(StoreError::NotFound);
            }
            Ok(())
        })
        .await
    }

    async fn take_file(&self, id: &FileId, behind: u64) -> StoreResult<TakenFile> {
        let id = id.clone();
        self.run(move |c| {
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            // The fence first: nothing is read before the epoch is ours.
            let epoch: i64 = tx
                .query_row(
                    "UPDATE files SET epoch = epoch + 1 WHERE id = ?1 RETURNING epoch",
                    [id.as_str()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?
                .ok_or(StoreError::NotFound)?;
            let record = read_file(&tx, &id)?;
            let snapshot = read_snapshot(&tx, &id)?;
            let base = snapshot.as_ref().map_or(0, |s| s.0);
            let log = read_log_from(&tx, &id, base.saturating_sub(behind) + 1)?;
            tx.commit().map_err(unavailable)?;
            Ok(TakenFile {
                record,
                epoch: epoch as u64,
                snapshot,
                log,
            })
        })
        .await
    }

    async fn append(&self, batch: Arc<[FileAppend]>) -> StoreResult<Vec<StoreResult<()>>> {
        // The journal's commit: ahead of other writes that wait for the connection.
        let writer = self.writer.clone();
        Self::blocking(move || {
            let mut conn = writer.urgent();
            let mut tx = conn.transaction().map_err(unavailable)?;
            let now = now_ms();
            let mut results = Vec::with_capacity(batch.len());
            for append in batch.iter() {
                // A savepoint per file: one fenced file does not fail the others.
                let sp = tx.savepoint().map_err(unavailable)?;
                let result = append_one(&sp, append, now);
                if result.is_ok() {
                    sp.commit().map_err(unavailable)?;
                }
                results.push(result);
            }
            tx.commit().map_err(unavailable)?;
            Ok(results)
        })
        .await
    }

    async fn epoch(&self, id: &FileId) -> StoreResult<u64> {
        let id = id.clone();
        self.read(move |c| {
            c.query_row(
                "SELECT epoch FROM files WHERE id = ?1",
                params![id.as_str()],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map_err(unavailable)?
            .map(|e| e as u64)
            .ok_or(StoreError::NotFound)
        })
        .await
    }

    async fn client_op(&self, file: &FileId, client: ClientKey) -> StoreResult<Option<(u64, u64)>> {
        let file = file.clone();
        self.read(move |c| {
            c.query_row(
                "SELECT op_id, version FROM client_ops WHERE file_id = ?1 AND client = ?2",
                params![file.as_str(), &client.0[..]],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .optional()
            .map_err(unavailable)
        })
        .await
    }

    async fn write_snapshot(
        &self,
        file: &FileId,
        epoch: u64,
        version: u64,
        doc: &str,
        keep: u64,
    ) -> StoreResult<()> {
        let file = file.clone();
        let doc = doc.to_owned();
        self.run(move |c| {
            let tx = c
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            let current: Option<i64> = tx
                .query_row(
                    "SELECT epoch FROM files WHERE id = ?1",
                    [file.as_str()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            match current {
                None => return Err(StoreError::NotFound),
                Some(e) if e as u64 != epoch => return Err(StoreError::Fenced),
                Some(_) => {}
            }
            tx.execute(
                "INSERT INTO snapshots (file_id, version, doc) VALUES (?1, ?2, ?3)
                 ON CONFLICT (file_id) DO UPDATE SET version = excluded.version, doc = excluded.doc
                 WHERE excluded.version > snapshots.version",
                params![file.as_str(), version as i64, doc],
            )
            .map_err(unavailable)?;
            tx.execute(
                "DELETE FROM ops WHERE file_id = ?1 AND version <= ?2",
                params![file.as_str(), version.saturating_sub(keep) as i64],
            )
            .map_err(unavailable)?;
            tx.commit().map_err(unavailable)
        })
        .await
    }

    async fn snapshot_and_tail(
        &self,
        file: &FileId,
    ) -> StoreResult<(Option<(u64, String)>, Vec<LoggedPatch>)> {
        let file = file.clone();
        self.read(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            let snapshot = read_snapshot(&tx, &file)?;
            let base = snapshot.as_ref().map_or(0, |s| s.0);
            let log = read_log_from(&tx, &file, base + 1)?;
            Ok((snapshot, log))
        })
        .await
    }

    async fn ping(&self) -> bool {
        self.read(|c| c.query_row("SELECT 1", [], |_| Ok(())).map_err(unavailable))
            .await
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Writes that queue behind a long one let the journal's commit go first.
    #[test]
    fn a_journal_commit_goes_ahead_of_queued_writes() {
        let writer = Arc::new(Writer::new(Connection::open_in_memory().unwrap()));
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = writer.ordinary();
        let spawn = |urgent: bool| {
            let (writer, order) = (writer.clone(), order.clone());
            std::thread::spawn(move || {
                let _conn = if urgent {
                    writer.urgent()
                } else {
                    writer.ordinary()
                };
                lock(&order).push(if urgent { "journal" } else { "other" });
            })
        };
        // Three other writes queue first, then the journal's commit.
        let others: Vec<_> = (0..3).map(|_| spawn(false)).collect();
        std::thread::sleep(Duration::from_millis(50));
        let journal = spawn(true);
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        journal.join().unwrap();
        for o in others {
            o.join().unwrap();
        }
        assert_eq!(*lock(&order), ["journal", "other", "other", "other"]);
    }
}
