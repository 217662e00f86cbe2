//! The node as a whole: starting it, its listeners, and an orderly shutdown.

mod listeners;
mod membership;
mod refusal;
mod send_buffer;
mod shutdown;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tokio::sync::watch;

use atrium_coordinator::{CoordinatorError, Member, NodeId};

use self::listeners::{accept_loop, admin_loop, Listeners};
use self::membership::heartbeat_loop;
use self::shutdown::{stop, Stopping};

use crate::auth::Hasher;
use crate::config::NodeConfig;
use crate::journal::Journal;
use crate::limits::{AddressCounts, KeyedLimiter};
use crate::outbox::Budget;
use crate::room::core::Rules;
use crate::room::registry::Rooms;
use crate::room::RoomContext;
use crate::sessions::SessionSockets;
use crate::state::AppState;
use crate::store::postgres::PgStore;
use crate::store::sqlite::SqliteStore;
use crate::store::Store;

/// Addresses and emails the sign-in limiters remember at most.
const AUTH_KEYS: usize = 100_000;

/// A started node: where it listens, and how to wait for it.
pub struct Running {
    pub addr: SocketAddr,
    pub admin_addr: Option<SocketAddr>,
    done: tokio::task::JoinHandle<()>,
}

impl Running {
    pub async fn wait(self) {
        let _ = self.done.await;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot open the store: {0}")]
    Store(#[from] crate::store::StoreError),
    #[error("bad setting: {0}")]
    Setting(String),
    #[error("cannot join the fleet through the coordinator: {0}")]
    Join(atrium_coordinator::CoordinatorError),
}

/// Starts a node; it runs until `shutdown` completes, then drains and stops.
pub async fn start(
    config: NodeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Running, StartError> {
    let config = Arc::new(config);
    let metrics = crate::metrics::Metrics::new();
    let store: Arc<dyn Store> = match &config.database_url {
        Some(url) => Arc::new(PgStore::connect(url, config.database_pool).await?),
        None => Arc::new(SqliteStore::open(&config.data)?),
    };
    let Listeners {
        main: listener,
        addr,
        admin,
    } = Listeners::bind(&config).await?;
    let admin_addr = admin.as_ref().and_then(|l| l.local_addr().ok());

    let settings = config.coordinator_settings();
    settings
        .validate()
        .map_err(|e| StartError::Setting(e.to_string()))?;
    let node = NodeId::parse(&config.node_id)
        .map_err(|e| StartError::Setting(format!("ATRIUM_NODE_ID: {e}")))?;
    let member = Member {
        id: node.clone(),
        address: config.advertise.clone().unwrap_or_else(|| addr.to_string()),
        draining: false,
    };
    let coordinator = membership::join_fleet(
        &config.coordinator,
        settings,
        &member,
        &metrics,
        membership::JOIN_PATIENCE,
    )
    .await
    .map_err(|e| match e {
        CoordinatorError::Invalid(why) => StartError::Setting(format!("ATRIUM_COORDINATOR: {why}")),
        other => StartError::Join(other),
    })?;
    let (journal, journal_task) = Journal::start(store.clone(), metrics.clone());
    let journal_handle = journal.clone();
    let limits = config.doc_limits();
    let memory = crate::memory::MemoryGuard::new(config.memory_budget());
    memory.spawn_sampler(metrics.clone());
    metrics.memory_budget.set(memory.budget() as i64);
    let webhooks = crate::webhook::Webhooks::new(metrics.clone());
    if let Some(endpoint) = crate::webhook::static_endpoint(&config).map_err(StartError::Setting)? {
        store.put_webhook(&endpoint).await?;
    }
    let documents_sent = Arc::new(KeyedLimiter::bytes(
        config.document_bytes_per_ip_per_second,
        config.document_burst_bytes_per_ip,
        AUTH_KEYS,
    ));
    let storage = Arc::new(crate::storage::Storage::new(
        config.storage_per_account,
        store.clone(),
        &metrics,
    ));
    let ctx = Arc::new(RoomContext {
        rules: Rules {
            documents_sent: documents_sent.clone(),
            storage: storage.clone(),
            rewrites: Arc::new(crate::room::AddressRewrites::new(config.max_doc_bytes)),
            metrics: metrics.clone(),
            memory: memory.clone(),
            config: config.clone(),
            limits: limits.clone(),
            welcome_budget: Budget::new(config.welcome_budget()),
        },
        store: store.clone(),
        journal,
        coordinator: coordinator.clone(),
        node: node.clone(),
        load_costs: Default::default(),
        shares: crate::room::shares::RoomShares::for_rooms(config.room_memory_share()),
        webhooks: webhooks.clone(),
    });
    let hasher = Hasher::new(
        config.argon2_memory_kib,
        config.argon2_iterations,
        config.hash_concurrency(),
    )
    .map_err(|e| StartError::Setting(e.to_string()))?;
    let app_tokens = crate::apptoken::Verifier::new(
        config.app_token_keys().map_err(StartError::Setting)?,
        crate::apptoken::Revocations::new(std::time::Duration::from_millis(
            config.app_token_revocation_ttl_ms,
        )),
    )
    .map_err(StartError::Setting)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    app_tokens.spawn_refresh(stop_rx.clone());
    let state = Arc::new(AppState {
        metrics: metrics.clone(),
        config: config.clone(),
        store,
        rooms: Rooms::new(ctx),
        sockets: Arc::new(SessionSockets::default()),
        hasher,
        app_tokens,
        app_sockets: Arc::default(),
        limits,
        coordinator: coordinator.clone(),
        node,
        trusted: config.trusted_proxies().map_err(StartError::Setting)?,
        sockets_by_address: Arc::new(AddressCounts::new(config.ws_per_ip)),
        upgrades_by_address: KeyedLimiter::with_burst(
            config.ws_upgrades_per_ip_per_second.saturating_mul(60),
            config.ws_upgrade_burst.max(1),
            AUTH_KEYS,
        ),
        requests_by_address: KeyedLimiter::per_second(
            config.requests_per_ip_per_second,
            config.request_burst_per_ip,
            AUTH_KEYS,
        ),
        auth_by_address: KeyedLimiter::per_minute(config.auth_per_ip_per_minute, AUTH_KEYS),
        auth_by_email: KeyedLimiter::per_minute(config.auth_per_email_per_minute, AUTH_KEYS),
        signin_by_address_email: KeyedLimiter::per_minute(
            config.auth_per_email_per_minute,
            AUTH_KEYS,
        ),
        signin_failures_by_email: KeyedLimiter::per_minute(
            config.auth_per_email_per_minute,
            AUTH_KEYS,
        ),
        file_creates: KeyedLimiter::per_minute(config.file_creates_per_minute, AUTH_KEYS),
        versions_named: KeyedLimiter::per_minute(config.versions_named_per_minute, AUTH_KEYS),
        restores: KeyedLimiter::per_minute(config.restores_per_minute, AUTH_KEYS),
        file_changes: KeyedLimiter::per_minute(config.file_changes_per_minute, AUTH_KEYS),
        history_work: crate::history::HistoryWork::default(),
        documents_sent,
        documents_rebuilt: KeyedLimiter::bytes(
            config.document_bytes_per_ip_per_second,
            config.document_burst_bytes_per_ip,
            AUTH_KEYS,
        ),
        socket_bytes_by_address: (config.ws_bytes_per_ip_per_second > 0).then(|| {
            Arc::new(KeyedLimiter::bytes(
                config.ws_bytes_per_ip_per_second,
                config.ws_burst_bytes_per_ip,
                AUTH_KEYS,
            ))
        }),
        incoming_by_address: Arc::default(),
        storage,
        server_api: KeyedLimiter::with_burst(
            config.server_api_per_second.saturating_mul(60),
            config.server_api_per_second,
            AUTH_KEYS,
        ),
        connections: crate::limits::ConnectionCap::new(config.max_connections()),
        connections_by_address: config
            .connections_per_ip()
            .map(|cap| Arc::new(AddressCounts::new(cap))),
        memory,
        answers: crate::memory::SharedAnswers::default(),
        answer_shares: crate::room::shares::RoomShares::new(config.room_memory_share()),
        admission: crate::admission::Admission::new(
            config.joins_in_flight,
            std::time::Duration::from_millis(config.join_wait_ms),
        ),
        delay: crate::stats::DelayProbe::start(),
        webhooks,
        accepting: AtomicBool::new(true),
        stopping: stop_rx.clone(),
    });

    let accept = tokio::spawn(accept_loop(listener, state.clone(), stop_rx.clone()));
    if let Some(admin) = admin {
        let node_id = state.config.node_id.to_string();
        tokio::spawn(admin_loop(admin, metrics.clone(), node_id, stop_rx.clone()));
    }
    tokio::spawn(crate::cluster::run(state.clone()));
    tokio::spawn(crate::cluster::rooms::run(state.clone()));
    crate::webhook::spawn(state.clone());
    // Revocations made before this node started (the coordinator brings later ones).
    match state.store.revocations().await {
        Ok(all) => {
            for (r, until) in &all {
                state.app_tokens.revocations().add_until(r, *until);
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not read the app-token revocations"),
    }
    warn_of_unclaimed_admins(&state).await;
    tokio::spawn(crate::apptoken::run(
        state.app_sockets.clone(),
        std::time::Duration::from_millis(config.app_token_notice_ms),
        stop_rx.clone(),
    ));
    tokio::spawn(crate::room::server_ops::run(
        state.store.clone(),
        config.server_op_ttl_ms,
        stop_rx.clone(),
    ));
    tokio::spawn(crate::sessions::run(
        state.sockets.clone(),
        state.store.clone(),
        stop_rx.clone(),
    ));
    let heartbeats = tokio::spawn(heartbeat_loop(
        coordinator,
        member,
        settings.heartbeat,
        stop_rx,
    ));
    let done = tokio::spawn(async move {
        shutdown.await;
        stop(Stopping {
            state,
            stop_tx,
            accept,
            heartbeats,
            journal: journal_handle,
            journal_task,
        })
        .await;
    });
    Ok(Running {
        addr,
        admin_addr,
        done,
    })
}

/// Says, at start, which emails of `ATRIUM_ADMINS` have no account yet, and how to make
/// them: such an email is signed up only from the node's own machine (docs/operations.md).
async fn warn_of_unclaimed_admins(state: &AppState) {
    for email in &state.config.admins {
        if let Err(crate::store::StoreError::NotFound) = state.store.account_by_email(email).await {
            tracing::warn!(
                email = %email,
                "ATRIUM_ADMINS lists an email with no account yet: sign it up from this \
                 node's own machine (a loopback address), where it alone is taken"
            );
        }
    }
}
