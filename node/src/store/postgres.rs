//! The Postgres store, for cluster mode (`ATRIUM_DATABASE_URL=postgres://...`).
//!
//! Same contract as the embedded store ([`super::sqlite::SqliteStore`]), shared by
//! every node of a fleet. What it relies on:
//!
//! - Migrations (`node/migrations/postgres/NNNN_*.sql`) are applied by [`PgStore::connect`],
//!   each in its own transaction under `pg_advisory_xact_lock`, and recorded in
//!   `schema_migrations`, so nodes that start together apply each exactly once.
//! - Transactions run at READ COMMITTED (Postgres's default). That matters for the
//!   fence: `take_file` raises the epoch with an `UPDATE` that waits for any append
//!   holding the file's row, and its later reads take fresh snapshots, so they see
//!   everything that append committed. An append that waited behind a takeover
//!   re-checks `epoch = mine` on the new row and lands nothing.
//! - Every session runs with `synchronous_commit=on` (a commit returns once its WAL
//!   is flushed), unless the URL's `options` says otherwise on purpose.
//! - A session left idle inside a transaction (a paused or partitioned node) is ended
//!   by the server after [`IDLE_IN_TRANSACTION`], so its row locks never hold a
//!   successor's takeover back for long.
//! - Statements are prepared once per connection (deadpool's statement cache), and a
//!   group commit sends each file's savepoint and its fenced append together, so a
//!   batch costs about one round trip per file plus the commit.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime, Timeouts,
};
use futures_util::future::join;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{IsolationLevel, Row};

use super::*;
use crate::ids::{AccountId, ClientKey, FileId};

/// The migrations, in order: (version, SQL). Never edit one that has shipped.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../migrations/postgres/0001_init.sql")),
    (
        2,
        include_str!("../../migrations/postgres/0002_session_expiry.sql"),
    ),
];

/// Advisory lock key that serialises migrations between nodes starting together
/// (the bytes of "atrium", then 1). Advisory locks are per database.
const MIGRATION_LOCK: i64 = 0x6174_7269_756d_0001;

/// How long opening a connection (TCP and startup) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a caller waits for a free pooled connection before `Unavailable`.
const POOL_WAIT: Duration = Duration::from_secs(5);
/// How long a server session may sit idle inside a transaction before the server
/// ends it (and rolls it back). Our transactions never wait on anything but the
/// server, so only a stopped or cut-off node ever reaches this.
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(5);
/// Upper bound on any one statement (lock waits included).
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `ping` waits for an answer.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// The savepoint each file's append runs under inside a group commit.
const SAVEPOINT: &str = "SAVEPOINT file_append";
const RELEASE: &str = "RELEASE SAVEPOINT file_append";
const ROLLBACK: &str = "ROLLBACK TO SAVEPOINT file_append";

const FILE_COLUMNS: &str =
    "id, owner, name, link, view_key, edit_key, key_generation, version, updated_at";

/// One file's append as one statement: the fence and the gapless check (moving
/// `version` from `first - 1` to `last` under `epoch = mine`), then, only when that
/// row moved, the op rows and the per-client op ids. Returns how many rows the fence
/// moved (0 or 1).
const APPEND_SQL: &str = "
WITH fence AS (
    UPDATE files SET version = $3, updated_at = $4
    WHERE id = $1 AND epoch = $2 AND version = $5
    RETURNING id
), logged AS (
    INSERT INTO ops (file_id, version, client, op_id, person, ops, t)
    SELECT fence.id, p.version, p.client, p.op_id, p.person, p.ops, p.t
    FROM fence,
         UNNEST($6::bigint[], $7::bytea[], $8::bigint[], $9::text[], $10::text[], $11::text[])
             AS p (version, client, op_id, person, ops, t)
    RETURNING 1
), seen AS (
    INSERT INTO client_ops (file_id, client, op_id, version)
    SELECT fence.id, c.client, c.op_id, c.version
    FROM fence, UNNEST($12::bytea[], $13::bigint[], $14::bigint[]) AS c (client, op_id, version)
    ON CONFLICT (file_id, client) DO UPDATE
        SET op_id = excluded.op_id, version = excluded.version
        WHERE excluded.op_id > client_ops.op_id
    RETURNING 1
)
SELECT count(*) FROM fence";

/// Every file's append of a batch in one statement (files distinct): the fences move
/// together, and the ops and client op ids of the files whose fence moved are written;
/// answers the ids of those files.
const APPEND_ALL_SQL: &str = "
WITH input AS (
    SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::bigint[])
        AS i (id, epoch, last, before)
), fence AS (
    UPDATE files f SET version = i.last, updated_at = $5
    FROM input i
    WHERE f.id = i.id AND f.epoch = i.epoch AND f.version = i.before
    RETURNING f.id
), logged AS (
    INSERT INTO ops (file_id, version, client, op_id, person, ops, t)
    SELECT p.file_id, p.version, p.client, p.op_id, p.person, p.ops, p.t
    FROM UNNEST($6::text[], $7::bigint[], $8::bytea[], $9::bigint[], $10::text[], $11::text[],
                $12::text[]) AS p (file_id, version, client, op_id, person, ops, t)
    WHERE p.file_id IN (SELECT id FROM fence)
    RETURNING 1
), seen AS (
    INSERT INTO client_ops (file_id, client, op_id, version)
    SELECT c.file_id, c.client, c.op_id, c.version
    FROM UNNEST($13::text[], $14::bytea[], $15::bigint[], $16::bigint[])
        AS c (file_id, client, op_id, version)
    WHERE c.file_id IN (SELECT id FROM fence)
    ON CONFLICT (file_id, client) DO UPDATE
        SET op_id = excluded.op_id, version = excluded.version
        WHERE excluded.op_id > client_ops.op_id
    RETURNING 1
)
SELECT id FROM fence";

/// Why an append's fence did not move: the file's epoch and version, and whether
/// the ops at the append's first and last versions are the append's own (the case
/// of a retry whose earlier commit landed but whose answer was lost).
const APPEND_CHECK_SQL: &str = "
SELECT f.epoch, f.version,
       EXISTS (SELECT 1 FROM ops o WHERE o.file_id = f.id AND o.version = $2
                                     AND o.client = $3 AND o.op_id = $4),
       EXISTS (SELECT 1 FROM ops o WHERE o.file_id = f.id AND o.version = $5
                                     AND o.client = $6 AND o.op_id = $7)
FROM files f WHERE f.id = $1";

const LOG_COLUMNS: &str = "version, client, op_id, person, ops, t";

/// A shared Postgres document store: a pool of connections, over TLS as the URL's `sslmode`
/// asks ([`super::pg_tls`]).
pub struct PgStore {
    pool: Pool,
}

fn now_ms() -> i64 {
    crate::clock::unix_ms()
}

/// A version, epoch or count as Postgres's BIGINT (they never reach 2^63; clamp
/// rather than wrap, so a huge `behind` means "everything").
fn big(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A client's op id as BIGINT: the same 64 bits, so every u64 a client may send
/// reads back exactly (as in the embedded store; ids past 2^63 compare as negative,
/// which no real client reaches: JSON numbers lose precision past 2^53).
fn op_bits(op_id: u64) -> i64 {
    op_id as i64
}

fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("postgres {}: {}", db.code().code(), db.message());
    }
    match e.source() {
        Some(source) => format!("postgres: {e}: {source}"),
        None => format!("postgres: {e}"),
    }
}

fn unavailable(e: tokio_postgres::Error) -> StoreError {
    StoreError::Unavailable(describe(&e))
}

fn pool_error(e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => unavailable(e),
        other => StoreError::Unavailable(format!("postgres pool: {other}")),
    }
}

fn is(e: &tokio_postgres::Error, state: &SqlState) -> bool {
    e.code() == Some(state)
}

/// Unique violations are `Conflict`; a missing row another references is `NotFound`.
fn insert_error(e: tokio_postgres::Error) -> StoreError {
    if is(&e, &SqlState::UNIQUE_VIOLATION) {
        StoreError::Conflict
    } else if is(&e, &SqlState::FOREIGN_KEY_VIOLATION) {
        StoreError::NotFound
    } else {
        unavailable(e)
    }
}

fn get<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a Row, i: usize) -> StoreResult<T> {
    row.try_get(i).map_err(unavailable)
}

/// A file record from `FILE_COLUMNS`, starting at column `at`.
fn file_from_row(row: &Row, at: usize) -> StoreResult<FileRecord> {
    let id: &str = get(row, at)?;
    let owner: &str = get(row, at + 1)?;
    let link: &str = get(row, at + 3)?;
    Ok(FileRecord {
        id: FileId::parse(id).unwrap_or_else(FileId::generate),
        owner: AccountId::parse(owner).unwrap_or_else(AccountId::generate),
        name: get(row, at + 2)?,
        link: LinkAccess::parse(link).unwrap_or(LinkAccess::None),
        view_key: get(row, at + 4)?,
        edit_key: get(row, at + 5)?,
        key_generation: get::<i64>(row, at + 6)? as u64,
        version: get::<i64>(row, at + 7)? as u64,
        updated_at: get(row, at + 8)?,
    })
}

fn account_from_row(row: &Row) -> StoreResult<Account> {
    let id: &str = get(row, 0)?;
    Ok(Account {
        id: AccountId::parse(id).unwrap_or_else(AccountId::generate),
        email: get(row, 1)?,
        name: get(row, 2)?,
        password_hash: get(row, 3)?,
    })
}

fn patch_from_row(row: &Row) -> StoreResult<LoggedPatch> {
    let client: &[u8] = get(row, 1)?;
    let mut key = [0u8; 16];
    if client.len() == 16 {
        key.copy_from_slice(client);
    }
    Ok(LoggedPatch {
        version: get::<i64>(row, 0)? as u64,
        client: ClientKey(key),
        op_id: get::<i64>(row, 2)? as u64,
        by: get(row, 3)?,
        ops: get(row, 4)?,
        t: get(row, 5)?,
    })
}

fn snapshot_from_rows(rows: &[Row]) -> StoreResult<Option<(u64, String)>> {
    rows.first()
        .map(|r| Ok((get::<i64>(r, 0)? as u64, get(r, 1)?)))
        .transpose()
}

/// Patches laid out as the column arrays a statement unnests.
#[derive(Default)]
struct PatchColumns<'a> {
    versions: Vec<i64>,
    clients: Vec<&'a [u8]>,
    op_ids: Vec<i64>,
    people: Vec<&'a str>,
    ops: Vec<&'a str>,
    ts: Vec<Option<&'a str>>,
}

/// The highest op id per client (one row per client of a file, since an upsert may not
/// touch a row twice in one statement), as column arrays.
#[derive(Default)]
struct SeenColumns<'a> {
    clients: Vec<&'a [u8]>,
    op_ids: Vec<i64>,
    versions: Vec<i64>,
}

/// One file's append, laid out as the column arrays `APPEND_SQL` unnests.
struct AppendArgs<'a> {
    id: &'a str,
    epoch: i64,
    last: i64,
    now: i64,
    before: i64,
    patches: PatchColumns<'a>,
    seen: SeenColumns<'a>,
}

impl<'a> AppendArgs<'a> {
    fn new(append: &'a FileAppend, first: &LoggedPatch, last: &LoggedPatch, now: i64) -> Self {
        let mut args = AppendArgs {
            id: append.file.as_str(),
            epoch: big(append.epoch),
            last: big(last.version),
            now,
            before: big(first.version) - 1,
            patches: PatchColumns::default(),
            seen: SeenColumns::default(),
        };
        // Per client, the first patch with its highest op id: what applying the
        // patches one by one with `excluded.op_id > client_ops.op_id` would keep.
        let mut best: Vec<(&'a [u8; 16], u64, u64)> = Vec::new();
        let rows = &mut args.patches;
        for p in &append.patches {
            rows.versions.push(big(p.version));
            rows.clients.push(&p.client.0[..]);
            rows.op_ids.push(op_bits(p.op_id));
            rows.people.push(&p.by);
            rows.ops.push(&p.ops);
            rows.ts.push(p.t.as_deref());
            match best.iter_mut().find(|(c, _, _)| **c == p.client.0) {
                Some(entry) if p.op_id > entry.1 => *entry = (entry.0, p.op_id, p.version),
                Some(_) => {}
                None => best.push((&p.client.0, p.op_id, p.version)),
            }
        }
        // A fixed order, so concurrent upserts (there are none today) lock alike.
        best.sort_by(|a, b| a.0.cmp(b.0));
        for (client, op_id, version) in best {
            args.seen.clients.push(&client[..]);
            args.seen.op_ids.push(op_bits(op_id));
            args.seen.versions.push(big(version));
        }
        args
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 14] {
        [
            &self.id,
            &self.epoch,
            &self.last,
            &self.now,
            &self.before,
            &self.patches.versions,
            &self.patches.clients,
            &self.patches.op_ids,
            &self.patches.people,
            &self.patches.ops,
            &self.patches.ts,
            &self.seen.clients,
            &self.seen.op_ids,
            &self.seen.versions,
        ]
    }
}

/// Appends a batch with each file behind a savepoint of its own, so a file whose
/// append fails with an error fails alone; one round trip per file.
async fn append_one_by_one(
    client: &mut deadpool_postgres::Client,
    stmt: &tokio_postgres::Statement,
    batch: &[FileAppend],
) -> StoreResult<Vec<StoreResult<()>>> {
    let tx = client.transaction().await.map_err(unavailable)?;
    let now = now_ms();
    let mut results = Vec::with_capacity(batch.len());
    // What the previous file's savepoint still needs (release, or roll back after
    // an error), sent together with the next savepoint in one message.
    let mut pending: Option<&str> = None;
    for append in batch.iter() {
        let (Some(first), Some(last)) = (append.patches.first(), append.patches.last()) else {
            results.push(Ok(()));
            continue;
        };
        let args = AppendArgs::new(append, first, last, now);
        let params = args.params();
        let opening = match pending {
            Some(before) => format!("{before}; {SAVEPOINT}"),
            None => SAVEPOINT.to_owned(),
        };
        // Pipelined: the savepoint and the fenced append go out back to back.
        let (opened, moved) =
            join(tx.batch_execute(&opening), tx.query_one(stmt, &params[..])).await;
        opened.map_err(unavailable)?;
        let result = match moved {
            Ok(row) => match get::<i64>(&row, 0)? {
                0 => explain_unmoved(&tx, append, first, last).await,
                _ => Ok(()),
            },
            // Two writers can never both land a version.
            Err(e) if is(&e, &SqlState::UNIQUE_VIOLATION) => Err(StoreError::Fenced),
            Err(e) if is(&e, &SqlState::FOREIGN_KEY_VIOLATION) => Err(StoreError::NotFound),
            Err(e) if e.as_db_error().is_some() => Err(unavailable(e)),
            // The connection itself failed: the whole batch fails (and is retried).
            Err(e) => return Err(unavailable(e)),
        };
        pending = Some(if result.is_ok() {
            RELEASE
        } else {
            // Undo whatever this file did; the savepoint name is reused.
            "ROLLBACK TO SAVEPOINT file_append; RELEASE SAVEPOINT file_append"
        });
        results.push(result);
    }
    // A transaction that saw an error must be rolled back to its savepoint before
    // COMMIT: Postgres answers COMMIT of an aborted transaction with a rollback.
    if pending.is_some_and(|p| p != RELEASE) {
        tx.batch_execute(ROLLBACK).await.map_err(unavailable)?;
    }
    tx.commit().await.map_err(unavailable)?;
    Ok(results)
}

/// Every file's append as columns of one statement ([`APPEND_ALL_SQL`]).
#[derive(Default)]
struct AppendAll<'a> {
    ids: Vec<&'a str>,
    epochs: Vec<i64>,
    lasts: Vec<i64>,
    befores: Vec<i64>,
    /// The file of each patch row, and of each seen row.
    patch_files: Vec<&'a str>,
    patches: PatchColumns<'a>,
    seen_files: Vec<&'a str>,
    seen: SeenColumns<'a>,
}

impl<'a> AppendAll<'a> {
    fn push(&mut self, a: &AppendArgs<'a>) {
        self.ids.push(a.id);
        self.epochs.push(a.epoch);
        self.lasts.push(a.last);
        self.befores.push(a.before);
        let (rows, seen) = (&a.patches, &a.seen);
        self.patch_files
            .extend(std::iter::repeat_n(a.id, rows.versions.len()));
        self.patches.versions.extend(&rows.versions);
        self.patches.clients.extend(&rows.clients);
        self.patches.op_ids.extend(&rows.op_ids);
        self.patches.people.extend(&rows.people);
        self.patches.ops.extend(&rows.ops);
        self.patches.ts.extend(&rows.ts);
        self.seen_files
            .extend(std::iter::repeat_n(a.id, seen.clients.len()));
        self.seen.clients.extend(&seen.clients);
        self.seen.op_ids.extend(&seen.op_ids);
        self.seen.versions.extend(&seen.versions);
    }
}

/// Appends a batch whose files are all different in one statement and one round trip:
/// a thousand rooms writing together cost one statement, not a thousand. A fence that
/// did not move is explained as usual. `None` when the batch names a file twice or the
/// statement failed with an error (rolled back): the caller takes another path.
async fn append_at_once(
    client: &mut deadpool_postgres::Client,
    batch: &[FileAppend],
) -> StoreResult<Option<Vec<StoreResult<()>>>> {
    let mut files = std::collections::HashSet::with_capacity(batch.len());
    if !batch.iter().all(|a| files.insert(&a.file)) {
        return Ok(None);
    }
    let now = now_ms();
    let args: Vec<AppendArgs<'_>> = batch
        .iter()
        .filter_map(|a| match (a.patches.first(), a.patches.last()) {
            (Some(first), Some(last)) => Some(AppendArgs::new(a, first, last, now)),
            _ => None,
        })
        .collect();
    let mut all = AppendAll::default();
    for a in &args {
        all.push(a);
    }
    let stmt = client
        .prepare_cached(APPEND_ALL_SQL)
        .await
        .map_err(unavailable)?;
    let tx = client.transaction().await.map_err(unavailable)?;
    let params: [&(dyn ToSql + Sync); 16] = [
        &all.ids,
        &all.epochs,
        &all.lasts,
        &all.befores,
        &now,
        &all.patch_files,
        &all.patches.versions,
        &all.patches.clients,
        &all.patches.op_ids,
        &all.patches.people,
        &all.patches.ops,
        &all.patches.ts,
        &all.seen_files,
        &all.seen.clients,
        &all.seen.op_ids,
        &all.seen.versions,
    ];
    let rows = match tx.query(&stmt, &params).await {
        Ok(rows) => rows,
        Err(e) if e.as_db_error().is_none() => return Err(unavailable(e)),
        Err(_) => {
            tx.rollback().await.map_err(unavailable)?;
            return Ok(None);
        }
    };
    let mut moved = std::collections::HashSet::with_capacity(rows.len());
    for row in &rows {
        moved.insert(get::<String>(row, 0)?);
    }
    let mut results = Vec::with_capacity(batch.len());
    for append in batch {
        let (Some(first), Some(last)) = (append.patches.first(), append.patches.last()) else {
            results.push(Ok(()));
            continue;
        };
        results.push(if moved.contains(append.file.as_str()) {
            Ok(())
        } else {
            explain_unmoved(&tx, append, first, last).await
        });
    }
    tx.commit().await.map_err(unavailable)?;
    Ok(Some(results))
}

/// What an append's fence found when it did not move: `Ok` when the file already
/// holds exactly this append under this epoch (a retried commit that had landed),
/// `NotFound` when the file is gone, else `Fenced`.
async fn explain_unmoved(
    tx: &deadpool_postgres::Transaction<'_>,
    append: &FileAppend,
    first: &LoggedPatch,
    last: &LoggedPatch,
) -> StoreResult<()> {
    let check = tx
        .prepare_cached(APPEND_CHECK_SQL)
        .await
        .map_err(unavailable)?;
    let row = tx
        .query_opt(
            &check,
            &[
                &append.file.as_str(),
                &big(first.version),
                &&first.client.0[..],
                &op_bits(first.op_id),
                &big(last.version),
                &&last.client.0[..],
                &op_bits(last.op_id),
            ],
        )
        .await
        .map_err(unavailable)?;
    let Some(row) = row else {
        return Err(StoreError::NotFound);
    };
    let epoch: i64 = get(&row, 0)?;
    let version: i64 = get(&row, 1)?;
    let first_is_ours: bool = get(&row, 2)?;
    let last_is_ours: bool = get(&row, 3)?;
    if epoch == big(append.epoch) && version >= big(last.version) && first_is_ours && last_is_ours {
        Ok(())
    } else {
        Err(StoreError::Fenced)
    }
}

impl PgStore {
    /// Connects a pool of up to `pool_size` connections to `url` and applies the
    /// migrations this build knows and the database lacks.
    pub async fn connect(url: &str, pool_size: usize) -> StoreResult<Self> {
        // `sslmode` and `sslrootcert` of the URL decide TLS and the certificate check.
        let super::pg_tls::PgConnect {
            mut config,
            tls,
            mode,
        } = super::pg_tls::parse(url).map_err(StoreError::Unavailable)?;
        // Ours first, so `options` given in the URL win where they overlap.
        let mut options = format!(
            "-c synchronous_commit=on -c idle_in_transaction_session_timeout={} \
             -c statement_timeout={}",
            IDLE_IN_TRANSACTION.as_millis(),
            STATEMENT_TIMEOUT.as_millis()
        );
        if let Some(extra) = config.get_options() {
            options.push(' ');
            options.push_str(extra);
        }
        config
            .options(options)
            .connect_timeout(CONNECT_TIMEOUT)
            .keepalives_idle(Duration::from_secs(30));
        if config.get_application_name().is_none() {
            config.application_name("atrium-node");
        }
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .timeouts(Timeouts {
                wait: Some(POOL_WAIT),
                create: Some(CONNECT_TIMEOUT),
                recycle: Some(CONNECT_TIMEOUT),
            })
            .build()
            .map_err(|e| StoreError::Unavailable(format!("postgres pool: {e}")))?;
        let store = Self { pool };
        store.migrate().await?;
        // Informational only: a server without `pg_stat_ssl` (or a pooler in between) must
        // not stop the node.
        tracing::info!(
            sslmode = mode.as_str(),
            tls = ?store.encrypted().await.ok(),
            "connected to Postgres"
        );
        Ok(store)
    }

    /// Whether a pooled session runs over TLS (as the server sees it, `pg_stat_ssl`).
    pub async fn encrypted(&self) -> StoreResult<bool> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false)",
                &[],
            )
            .await
            .map_err(unavailable)?;
        get(&row, 0)
    }

    async fn client(&self) -> StoreResult<Object> {
        self.pool.get().await.map_err(pool_error)
    }

    /// Applies each missing migration in its own transaction, under an advisory lock
    /// that makes nodes starting together take turns.
    async fn migrate(&self) -> StoreResult<()> {
        let mut client = self.client().await?;
        for &(version, sql) in MIGRATIONS {
            let tx = client.transaction().await.map_err(unavailable)?;
            // A migration may take long on a big database, and so may waiting for
            // another node's: no statement timeout inside this transaction.
            tx.batch_execute("SET LOCAL statement_timeout = 0")
                .await
                .map_err(unavailable)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await
                .map_err(unavailable)?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (
                     version    BIGINT PRIMARY KEY,
                     applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                 )",
            )
            .await
            .map_err(unavailable)?;
            let applied = tx
                .query_opt(
                    "SELECT 1 FROM schema_migrations WHERE version = $1",
                    &[&version],
                )
                .await
                .map_err(unavailable)?
                .is_some();
            if !applied {
                tx.batch_execute(sql).await.map_err(|e| {
                    StoreError::Unavailable(format!("migration {version}: {}", describe(&e)))
                })?;
                tx.execute(
                    "INSERT INTO schema_migrations (version) VALUES ($1)",
                    &[&version],
                )
                .await
                .map_err(unavailable)?;
                tracing::info!(version, "applied Postgres migration");
            }
            tx.commit().await.map_err(unavailable)?;
        }
        let newest: Option<i64> = client
            .query_one("SELECT max(version) FROM schema_migrations", &[])
            .await
            .map_err(unavailable)?
            .try_get(0)
            .map_err(unavailable)?;
        let known = MIGRATIONS.last().map_or(0, |m| m.0);
        if newest.unwrap_or(0) > known {
            tracing::warn!(
                newest,
                known,
                "the database has migrations newer than this node knows"
            );
        }
        Ok(())
    }

    async fn read_file(&self, id: &FileId) -> StoreResult<FileRecord> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!("SELECT {FILE_COLUMNS} FROM files WHERE id = $1"))
            .await
            .map_err(unavailable)?;
        let row = client
            .query_opt(&stmt, &[&id.as_str()])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)?;
        file_from_row(&row, 0)
    }

    async fn account_where(&self, sql: &str, key: &str) -> StoreResult<Account> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(unavailable)?;
        let row = client
            .query_opt(&stmt, &[&key])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)?;
        account_from_row(&row)
    }
}

#[async_trait]
impl Store for PgStore {
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
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO accounts (id, email, email_key, name, password_hash, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .await
            .map_err(unavailable)?;
        client
            .execute(
                &stmt,
                &[
                    &account.id.as_str(),
                    &account.email,
                    &account.email.to_lowercase(),
                    &account.name,
                    &account.password_hash,
                    &now_ms(),
                ],
            )
            .await
            .map_err(|e| {
                if is(&e, &SqlState::UNIQUE_VIOLATION) {
                    StoreError::Conflict
                } else {
                    unavailable(e)
                }
            })?;
        Ok(account)
    }

    async fn account_by_email(&self, email: &str) -> StoreResult<Account> {
        self.account_where(
            "SELECT id, email, name, password_hash FROM accounts WHERE email_key = $1",
            &email.to_lowercase(),
        )
        .await
    }

    async fn account_by_id(&self, id: &AccountId) -> StoreResult<Account> {
        self.account_where(
            "SELECT id, email, name, password_hash FROM accounts WHERE id = $1",
            id.as_str(),
        )
        .await
    }

    async fn create_session(
        &self,
        token_digest: [u8; 32],
        account: &AccountId,
        expires_at: i64,
    ) -> StoreResult<()> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO sessions (token_digest, account_id, created_at, expires_at)
                 VALUES ($1, $2, $3, $4)",
            )
            .await
            .map_err(unavailable)?;
        client
            .execute(
                &stmt,
                &[
                    &&token_digest[..],
                    &account.as_str(),
                    &now_ms(),
                    &expires_at,
                ],
            )
            .await
            .map_err(insert_error)?;
        Ok(())
    }

    async fn session_account(&self, token_digest: [u8; 32]) -> StoreResult<Account> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT a.id, a.email, a.name, a.password_hash
                 FROM sessions s JOIN accounts a ON a.id = s.account_id
                 WHERE s.token_digest = $1 AND s.expires_at > $2",
            )
            .await
            .map_err(unavailable)?;
        let row = client
            .query_opt(&stmt, &[&&token_digest[..], &now_ms()])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)?;
        account_from_row(&row)
    }

    async fn session_expiry(&self, token_digest: [u8; 32]) -> StoreResult<i64> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT expires_at FROM sessions WHERE token_digest = $1 AND expires_at > $2",
            )
            .await
            .map_err(unavailable)?;
        let row = client
            .query_opt(&stmt, &[&&token_digest[..], &now_ms()])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)?;
        get(&row, 0)
    }

    async fn delete_session(&self, token_digest: [u8; 32]) -> StoreResult<()> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("DELETE FROM sessions WHERE token_digest = $1")
            .await
            .map_err(unavailable)?;
        client
            .execute(&stmt, &[&&token_digest[..]])
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn delete_sessions_of(&self, account: &AccountId) -> StoreResult<Vec<[u8; 32]>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("DELETE FROM sessions WHERE account_id = $1 RETURNING token_digest")
            .await
            .map_err(unavailable)?;
        let rows = client
            .query(&stmt, &[&account.as_str()])
            .await
            .map_err(unavailable)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let d: &[u8] = get(row, 0)?;
            if let Ok(d) = <[u8; 32]>::try_from(d) {
                out.push(d);
            }
        }
        Ok(out)
    }

    async fn delete_expired_sessions(&self) -> StoreResult<u64> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("DELETE FROM sessions WHERE expires_at <= $1")
            .await
            .map_err(unavailable)?;
        client
            .execute(&stmt, &[&now_ms()])
            .await
            .map_err(unavailable)
    }

    async fn create_file_capped(
        &self,
        record: &FileRecord,
        doc: Option<String>,
        max_owned: u64,
    ) -> StoreResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        if max_owned < u64::MAX {
            // The owner's row, locked until commit, serialises its creations on
            // every node: the count below cannot be overtaken by a concurrent insert.
            let lock = tx
                .prepare_cached("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE")
                .await
                .map_err(unavailable)?;
            let count = tx
                .prepare_cached("SELECT count(*) FROM files WHERE owner = $1")
                .await
                .map_err(unavailable)?;
            tx.query_opt(&lock, &[&record.owner.as_str()])
                .await
                .map_err(unavailable)?
                .ok_or(StoreError::NotFound)?;
            let owned: i64 = get(
                &tx.query_one(&count, &[&record.owner.as_str()])
                    .await
                    .map_err(unavailable)?,
                0,
            )?;
            if owned as u64 >= max_owned {
                return Err(StoreError::Full);
            }
        }
        let insert = tx
            .prepare_cached(
                "INSERT INTO files (id, owner, name, link, view_key, edit_key, key_generation,
                                    epoch, version, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, 0, 0, 0, $7, $7)",
            )
            .await
            .map_err(unavailable)?;
        tx.execute(
            &insert,
            &[
                &record.id.as_str(),
                &record.owner.as_str(),
                &record.name,
                &record.link.as_str(),
                &record.view_key,
                &record.edit_key,
                &record.updated_at,
            ],
        )
        .await
        .map_err(insert_error)?;
        if let Some(doc) = doc {
            let snapshot = tx
                .prepare_cached("INSERT INTO snapshots (file_id, version, doc) VALUES ($1, 0, $2)")
                .await
                .map_err(unavailable)?;
            tx.execute(&snapshot, &[&record.id.as_str(), &doc])
                .await
                .map_err(unavailable)?;
        }
        tx.commit().await.map_err(unavailable)
    }

    async fn file(&self, id: &FileId) -> StoreResult<FileRecord> {
        self.read_file(id).await
    }

    async fn files_of(&self, owner: &AccountId) -> StoreResult<Vec<FileRecord>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "SELECT {FILE_COLUMNS} FROM files WHERE owner = $1 ORDER BY updated_at DESC, id"
            ))
            .await
            .map_err(unavailable)?;
        let rows = client
            .query(&stmt, &[&owner.as_str()])
            .await
            .map_err(unavailable)?;
        rows.iter().map(|r| file_from_row(r, 0)).collect()
    }

    async fn update_file(&self, id: &FileId, update: FileUpdate) -> StoreResult<FileRecord> {
        // One statement: fields left `None` keep their values, a key rotation bumps
        // the generation, and `updated_at` moves only when something changed.
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!(
                "UPDATE files SET
                     name = COALESCE($2::text, name),
                     link = COALESCE($3::text, link),
                     view_key = COALESCE($4::text, view_key),
                     edit_key = COALESCE($5::text, edit_key),
                     key_generation = key_generation
                         + CASE WHEN $4::text IS NULL THEN 0 ELSE 1 END,
                     updated_at = CASE
                         WHEN $2::text IS NULL AND $3::text IS NULL AND $4::text IS NULL
                         THEN updated_at ELSE $6 END
                 WHERE id = $1
                 RETURNING {FILE_COLUMNS}"
            ))
            .await
            .map_err(unavailable)?;
        let (view, edit) = match &update.keys {
            Some((view, edit)) => (Some(view.as_str()), Some(edit.as_str())),
            None => (None, None),
        };
        let row = client
            .query_opt(
                &stmt,
                &[
                    &id.as_str(),
                    &update.name.as_deref(),
                    &update.link.map(LinkAccess::as_str),
                    &view,
                    &edit,
                    &now_ms(),
                ],
            )
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)?;
        file_from_row(&row, 0)
    }

    async fn delete_file(&self, id: &FileId) -> StoreResult<()> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("DELETE FROM files WHERE id = $1")
            .await
            .map_err(unavailable)?;
        let n = client
            .execute(&stmt, &[&id.as_str()])
            .await
            .map_err(unavailable)?;
        if n == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn take_file(&self, id: &FileId, behind: u64) -> StoreResult<TakenFile> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let raise = tx
            .prepare_cached(&format!(
                "UPDATE files SET epoch = epoch + 1 WHERE id = $1 RETURNING epoch, {FILE_COLUMNS}"
            ))
            .await
            .map_err(unavailable)?;
        let snapshot = tx
            .prepare_cached("SELECT version, doc FROM snapshots WHERE file_id = $1")
            .await
            .map_err(unavailable)?;
        let log = tx
            .prepare_cached(&format!(
                "SELECT {LOG_COLUMNS} FROM ops
                 WHERE file_id = $1 AND version > GREATEST(
                     COALESCE((SELECT version FROM snapshots WHERE file_id = $1), 0) - $2, 0)
                 ORDER BY version"
            ))
            .await
            .map_err(unavailable)?;
        // The fence first: nothing is read before the epoch is ours. The row stays
        // locked until commit, so no append or snapshot slips in between the reads.
        let row = tx
            .query_opt(&raise, &[&id.as_str()])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)?;
        let epoch: i64 = get(&row, 0)?;
        let record = file_from_row(&row, 1)?;
        let (snapshot, log) = join(
            tx.query(&snapshot, &[&id.as_str()]),
            tx.query(&log, &[&id.as_str(), &big(behind)]),
        )
        .await;
        let snapshot = snapshot_from_rows(&snapshot.map_err(unavailable)?)?;
        let log = log
            .map_err(unavailable)?
            .iter()
            .map(patch_from_row)
            .collect::<StoreResult<Vec<_>>>()?;
        tx.commit().await.map_err(unavailable)?;
        Ok(TakenFile {
            record,
            epoch: epoch as u64,
            snapshot,
            log,
        })
    }

    async fn append(&self, batch: Arc<[FileAppend]>) -> StoreResult<Vec<StoreResult<()>>> {
        let mut client = self.client().await?;
        if let Some(results) = append_at_once(&mut client, &batch).await? {
            return Ok(results);
        }
        // The batch names a file twice (a room's turns queued together), or a file's
        // append failed with an error (its file deleted, a version taken): each file
        // behind a savepoint of its own, so it fails alone.
        let stmt = client
            .prepare_cached(APPEND_SQL)
            .await
            .map_err(unavailable)?;
        append_one_by_one(&mut client, &stmt, &batch).await
    }

    async fn epoch(&self, id: &FileId) -> StoreResult<u64> {
        let db = self.client().await?;
        let stmt = db
            .prepare_cached("SELECT epoch FROM files WHERE id = $1")
            .await
            .map_err(unavailable)?;
        let row = db
            .query_opt(&stmt, &[&id.as_str()])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)?;
        Ok(get::<i64>(&row, 0)? as u64)
    }

    async fn client_op(&self, file: &FileId, client: ClientKey) -> StoreResult<Option<(u64, u64)>> {
        let db = self.client().await?;
        let stmt = db
            .prepare_cached(
                "SELECT op_id, version FROM client_ops WHERE file_id = $1 AND client = $2",
            )
            .await
            .map_err(unavailable)?;
        let row = db
            .query_opt(&stmt, &[&file.as_str(), &&client.0[..]])
            .await
            .map_err(unavailable)?;
        row.map(|r| Ok((get::<i64>(&r, 0)? as u64, get::<i64>(&r, 1)? as u64)))
            .transpose()
    }

    async fn write_snapshot(
        &self,
        file: &FileId,
        epoch: u64,
        version: u64,
        doc: &str,
        keep: u64,
    ) -> StoreResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let fence = tx
            .prepare_cached("SELECT epoch FROM files WHERE id = $1 FOR UPDATE")
            .await
            .map_err(unavailable)?;
        let save = tx
            .prepare_cached(
                "INSERT INTO snapshots (file_id, version, doc) VALUES ($1, $2, $3)
                 ON CONFLICT (file_id) DO UPDATE SET version = excluded.version, doc = excluded.doc
                 WHERE excluded.version > snapshots.version",
            )
            .await
            .map_err(unavailable)?;
        let trim = tx
            .prepare_cached("DELETE FROM ops WHERE file_id = $1 AND version <= $2")
            .await
            .map_err(unavailable)?;
        // The fence: the file's row stays locked until commit, so no takeover can
        // raise the epoch between this check and the writes.
        let current: i64 = tx
            .query_opt(&fence, &[&file.as_str()])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)
            .and_then(|r| get(&r, 0))?;
        if current != big(epoch) {
            return Err(StoreError::Fenced);
        }
        let (saved, trimmed) = join(
            tx.execute(&save, &[&file.as_str(), &big(version), &doc]),
            tx.execute(&trim, &[&file.as_str(), &big(version.saturating_sub(keep))]),
        )
        .await;
        saved.map_err(unavailable)?;
        trimmed.map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)
    }

    async fn snapshot_and_tail(
        &self,
        file: &FileId,
    ) -> StoreResult<(Option<(u64, String)>, Vec<LoggedPatch>)> {
        let mut client = self.client().await?;
        // One consistent view: a snapshot written meanwhile cannot trim the tail
        // out from under this read.
        let tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(unavailable)?;
        let snapshot = tx
            .prepare_cached("SELECT version, doc FROM snapshots WHERE file_id = $1")
            .await
            .map_err(unavailable)?;
        let tail = tx
            .prepare_cached(&format!(
                "SELECT {LOG_COLUMNS} FROM ops
                 WHERE file_id = $1
                   AND version > COALESCE((SELECT version FROM snapshots WHERE file_id = $1), 0)
                 ORDER BY version"
            ))
            .await
            .map_err(unavailable)?;
        let (snapshot, tail) = join(
            tx.query(&snapshot, &[&file.as_str()]),
            tx.query(&tail, &[&file.as_str()]),
        )
        .await;
        let snapshot = snapshot_from_rows(&snapshot.map_err(unavailable)?)?;
        let tail = tail
            .map_err(unavailable)?
            .iter()
            .map(patch_from_row)
            .collect::<StoreResult<Vec<_>>>()?;
        tx.commit().await.map_err(unavailable)?;
        Ok((snapshot, tail))
    }

    async fn ping(&self) -> bool {
        let probe = async {
            let client = self.client().await?;
            client.simple_query("SELECT 1").await.map_err(unavailable)?;
            StoreResult::Ok(())
        };
        matches!(tokio::time::timeout(PING_TIMEOUT, probe).await, Ok(Ok(())))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ids::random_string;

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

    async fn account_and_file(store: &PgStore) -> (AccountId, FileId) {
        let owner = store
            .create_account(&format!("{}@example.com", random_string(10)), "N", "h")
            .await
            .expect("account");
        let record = FileRecord {
            id: FileId::generate(),
            owner: owner.id.clone(),
            name: "f".into(),
            link: LinkAccess::None,
            view_key: random_string(32),
            edit_key: random_string(32),
            key_generation: 0,
            version: 0,
            updated_at: 1,
        };
        store.create_file(&record, None).await.expect("file");
        (owner.id, record.id)
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
            let (_, file) = account_and_file(&store).await;
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

    /// Two nodes on one database: the second taker fences the first, and a batch
    /// with one fenced file lands the others.
    #[tokio::test]
    async fn two_nodes_fence_each_other() {
        let db = TestDb::create().await;
        let (a, b) = tokio::join!(PgStore::connect(&db.url, 4), PgStore::connect(&db.url, 4));
        let (a, b) = (a.expect("node A"), b.expect("node B"));
        let (_, shared) = account_and_file(&a).await;
        let (_, own) = account_and_file(&a).await;

        let a_shared = a.take_file(&shared, 0).await.expect("A takes").epoch;
        let a_own = a
            .take_file(&own, 0)
            .await
            .expect("A takes its other file")
            .epoch;
        let b_shared = b.take_file(&shared, 0).await.expect("B takes over").epoch;
        assert!(b_shared > a_shared);

        let results = a
            .append(vec![append(&shared, a_shared, vec![patch(1, 1, 1)])].into())
            .await
            .expect("A's batch commits");
        assert!(
            matches!(results[..], [Err(StoreError::Fenced)]),
            "{results:?}"
        );
        let results = b
            .append(vec![append(&shared, b_shared, vec![patch(1, 2, 1)])].into())
            .await
            .expect("B's batch commits");
        assert!(matches!(results[..], [Ok(())]), "{results:?}");

        // A's next group commit: the file it lost is fenced, the one it owns lands.
        let results = a
            .append(
                vec![
                    append(&shared, a_shared, vec![patch(2, 1, 2)]),
                    append(&own, a_own, vec![patch(1, 1, 1), patch(2, 1, 2)]),
                ]
                .into(),
            )
            .await
            .expect("A's batch commits");
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
        let results = a
            .append(vec![append(&own, a_own, vec![patch(3, 1, 3)])].into())
            .await
            .expect("commit");
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
        let (_, file) = account_and_file(&a).await;
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
        assert_eq!(epochs, (1..=16).collect::<Vec<_>>());
    }

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

    /// A retried group commit whose first attempt landed (its answer lost with the
    /// connection) lands again as a success, not as a fence; anything else at those
    /// versions stays fenced.
    #[tokio::test]
    async fn a_retried_commit_that_landed_is_not_fenced() {
        let db = TestDb::create().await;
        let store = PgStore::connect(&db.url, 2).await.expect("connect");
        let (_, file) = account_and_file(&store).await;
        let epoch = store.take_file(&file, 0).await.expect("take").epoch;
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

        let other = store
            .append(vec![append(&file, epoch, vec![patch(3, 2, 1)])].into())
            .await
            .expect("commit");
        assert!(matches!(other[..], [Err(StoreError::Fenced)]), "{other:?}");
        // After a takeover the same retry is fenced: the epoch is no longer ours.
        store.take_file(&file, 0).await.expect("take over");
        let late = store
            .append(vec![append(&file, epoch, vec![patch(3, 1, 3)])].into())
            .await
            .expect("commit");
        assert!(matches!(late[..], [Err(StoreError::Fenced)]), "{late:?}");
    }

    /// A statement that fails inside a group commit (here a unique violation on an op
    /// row that should not exist) fails its own file only: the savepoint is rolled
    /// back, whether the file comes first or last in the batch, and the rest commit.
    #[tokio::test]
    async fn a_failing_statement_fails_only_its_file() {
        let db = TestDb::create().await;
        let store = PgStore::connect(&db.url, 2).await.expect("connect");
        let (_, bad) = account_and_file(&store).await;
        let (_, first) = account_and_file(&store).await;
        let (_, second) = account_and_file(&store).await;
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

        let results = store
            .append(
                vec![
                    append(&first, first_epoch, vec![patch(1, 1, 1)]),
                    append(&bad, bad_epoch, vec![patch(1, 2, 1)]),
                ]
                .into(),
            )
            .await
            .expect("the batch commits");
        assert!(
            matches!(results[..], [Ok(()), Err(StoreError::Fenced)]),
            "{results:?}"
        );
        let results = store
            .append(
                vec![
                    append(&bad, bad_epoch, vec![patch(1, 2, 1)]),
                    append(&second, second_epoch, vec![patch(1, 3, 1)]),
                    append(&first, first_epoch, vec![patch(2, 1, 2)]),
                ]
                .into(),
            )
            .await
            .expect("the batch commits");
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
        let db = TestDb::create().await;
        let store = PgStore::connect(&db.url, 2).await.expect("connect");
        let (_, file) = account_and_file(&store).await;
        let epoch = store.take_file(&file, 0).await.expect("take").epoch;
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
}
