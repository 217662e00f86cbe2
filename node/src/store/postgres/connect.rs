//! Opening the pool: the session settings every connection runs with, and the checks
//! that the server answers.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};

use super::bulk::BulkReads;
use super::rows::{get, unavailable};
use super::PgStore;
use crate::store::pg_tls::{self, PgConnect};
use crate::store::{StoreError, StoreResult};

/// How long opening a connection (TCP and startup) may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections for reads of version rows, besides `ATRIUM_DATABASE_POOL`'s.
const BULK_CONNECTIONS: usize = 4;
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

impl PgStore {
    /// Connects a pool of up to `pool_size` connections to `url` and applies the
    /// migrations this build knows and the database lacks.
    pub async fn connect(url: &str, pool_size: usize) -> StoreResult<Self> {
        // `sslmode` and `sslrootcert` of the URL decide TLS and the certificate check.
        let PgConnect {
            mut config,
            tls,
            mode,
        } = pg_tls::parse(url).map_err(StoreError::Unavailable)?;
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
        let pool = |config, size: usize, wait| {
            let manager = Manager::from_config(
                config,
                tls.clone(),
                ManagerConfig {
                    recycling_method: RecyclingMethod::Fast,
                },
            );
            Pool::builder(manager)
                .max_size(size.max(1))
                .runtime(Runtime::Tokio1)
                .timeouts(Timeouts {
                    wait,
                    create: Some(CONNECT_TIMEOUT),
                    recycle: Some(CONNECT_TIMEOUT),
                })
                .build()
                .map_err(|e| StoreError::Unavailable(format!("postgres pool: {e}")))
        };
        // Reads of version rows have connections of their own (opened when first needed).
        // A room's own version saves read through them too, so they wait their turn
        // behind reads (as on the embedded store's bulk threads) rather than fail.
        let bulk = BulkReads::new(pool(config.clone(), BULK_CONNECTIONS, None)?, tls.clone());
        let store = Self {
            pool: pool(config, pool_size, Some(POOL_WAIT))?,
            bulk,
        };
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

    /// Whether the server answers within [`PING_TIMEOUT`].
    pub(super) async fn answers(&self) -> bool {
        let probe = async {
            let client = self.client().await?;
            client.simple_query("SELECT 1").await.map_err(unavailable)?;
            StoreResult::Ok(())
        };
        matches!(tokio::time::timeout(PING_TIMEOUT, probe).await, Ok(Ok(())))
    }
}
