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
//!   by the server after `IDLE_IN_TRANSACTION` ([`connect`]), so its row locks never hold a
//!   successor's takeover back for long.
//! - Statements are prepared once per connection (deadpool's statement cache), and a
//!   group commit sends each file's savepoint and its fenced append together, so a
//!   batch costs about one round trip per file plus the commit.

mod app_keys;
mod append;
mod bulk;
mod connect;
mod files;
mod log;
mod migrate;
mod rows;
mod server;
mod store;
#[cfg(test)]
pub(crate) mod tests;
mod versions;
mod webhooks;

use deadpool_postgres::{Object, Pool, Transaction};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use rows::{pool_error, unavailable};

use super::{StoreError, StoreResult};

/// A shared Postgres document store: a pool of connections, over TLS as the URL's `sslmode`
/// asks ([`super::pg_tls`]).
pub struct PgStore {
    pool: Pool,
    /// For reads of version rows, at the bulk lane's priority.
    bulk: bulk::BulkReads,
}

/// One parameter of a statement.
type Param<'a> = dyn ToSql + Sync + 'a;
/// The parameters of one statement.
type Params<'a> = [&'a Param<'a>];

fn now_ms() -> i64 {
    crate::clock::unix_ms()
}

/// [`PgStore::query`] on a connection of `pool`.
async fn query_on(pool: &Pool, sql: &str, params: &Params<'_>) -> StoreResult<Vec<Row>> {
    let client = pool.get().await.map_err(pool_error)?;
    let stmt = client.prepare_cached(sql).await.map_err(unavailable)?;
    client.query(&stmt, params).await.map_err(unavailable)
}

/// A statement inside a transaction, prepared once per connection.
async fn prepare(tx: &Transaction<'_>, sql: &str) -> StoreResult<Statement> {
    tx.prepare_cached(sql).await.map_err(unavailable)
}

impl PgStore {
    async fn client(&self) -> StoreResult<Object> {
        self.pool.get().await.map_err(pool_error)
    }

    /// Runs one statement on a pooled connection (prepared once per connection) and
    /// answers its rows.
    async fn query(&self, sql: &str, params: &Params<'_>) -> StoreResult<Vec<Row>> {
        query_on(&self.pool, sql, params).await
    }

    /// As [`PgStore::query`], for a statement that answers at most one row.
    async fn query_opt(&self, sql: &str, params: &Params<'_>) -> StoreResult<Option<Row>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(unavailable)?;
        client.query_opt(&stmt, params).await.map_err(unavailable)
    }

    /// The one row a statement answers; `NotFound` when it answers none.
    async fn query_found(&self, sql: &str, params: &Params<'_>) -> StoreResult<Row> {
        self.query_opt(sql, params)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// Runs one statement that answers no rows; a failure of the statement itself is
    /// told by `on_error`. Answers how many rows it touched.
    async fn execute(
        &self,
        sql: &str,
        params: &Params<'_>,
        on_error: fn(tokio_postgres::Error) -> StoreError,
    ) -> StoreResult<u64> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(unavailable)?;
        client.execute(&stmt, params).await.map_err(on_error)
    }
}
