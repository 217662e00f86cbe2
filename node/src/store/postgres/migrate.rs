//! The schema: numbered migrations, applied once each however many nodes start together.

use super::rows::{describe, unavailable};
use super::PgStore;
use crate::store::{StoreError, StoreResult};

/// The migrations, in order: (version, SQL). Never edit one that has shipped.
pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        include_str!("../../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        include_str!("../../../migrations/postgres/0002_session_expiry.sql"),
    ),
    (
        3,
        include_str!("../../../migrations/postgres/0003_versions.sql"),
    ),
    (
        4,
        include_str!("../../../migrations/postgres/0004_app_tokens.sql"),
    ),
    (
        5,
        include_str!("../../../migrations/postgres/0005_server_api.sql"),
    ),
    (
        6,
        include_str!("../../../migrations/postgres/0006_webhooks.sql"),
    ),
    (
        7,
        include_str!("../../../migrations/postgres/0007_version_doc_bytes.sql"),
    ),
    (
        8,
        include_str!("../../../migrations/postgres/0008_epoch_floor.sql"),
    ),
];

/// Advisory lock key that serialises migrations between nodes starting together
/// (the bytes of "atrium", then 1). Advisory locks are per database.
const MIGRATION_LOCK: i64 = 0x6174_7269_756d_0001;

impl PgStore {
    /// Applies each missing migration in its own transaction, under an advisory lock
    /// that makes nodes starting together take turns.
    pub(super) async fn migrate(&self) -> StoreResult<()> {
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
}
