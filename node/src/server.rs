//! The node as a whole: starting it, its listeners, and an orderly shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

use atrium_coordinator::{Coordinator, CoordinatorError, Member, NodeId};

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
    let listener = TcpListener::bind(config.bind)
        .await
        .map_err(|source| StartError::Bind {
            addr: config.bind,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: config.bind,
        source,
    })?;
    let admin = match config.admin_bind {
        Some(a) => Some(
            TcpListener::bind(a)
                .await
                .map_err(|source| StartError::Bind { addr: a, source })?,
        ),
        None => None,
    };
    let admin_addr = admin.as_ref().and_then(|l| l.local_addr().ok());

    let settings = config.coordinator_settings();
    settings
        .validate()
        .map_err(|e| StartError::Setting(e.to_string()))?;
    let node = NodeId::parse(&config.node_id)
        .map_err(|e| StartError::Setting(format!("ATRIUM_NODE_ID: {e}")))?;
    let coordinator = atrium_coordinator::connect(&config.coordinator, settings)
        .await
        .map_err(|e| StartError::Setting(format!("ATRIUM_COORDINATOR: {e}")))?;
    let coordinator: Arc<dyn Coordinator> =
        Arc::new(crate::counted::Counted::new(coordinator, metrics.clone()));
    let member = Member {
        id: node.clone(),
        address: config.advertise.clone().unwrap_or_else(|| addr.to_string()),
        draining: false,
    };
    coordinator
        .join(member.clone())
        .await
        .map_err(|e| StartError::Setting(format!("joining the coordinator: {e}")))?;
    let (journal, journal_task) = Journal::start(store.clone(), metrics.clone());
    let journal_handle = journal.clone();
    let limits = config.doc_limits();
    let memory = crate::memory::MemoryGuard::new(config.memory_budget());
    memory.spawn_sampler(metrics.clone());
    metrics.memory_budget.set(memory.budget() as i64);
    let ctx = Arc::new(RoomContext {
        rules: Rules {
            metrics: metrics.clone(),
            memory: memory.clone(),
            config: config.clone(),
            limits: limits.clone(),
            welcome_budget: Budget::new(config.welcome_budget_bytes),
        },
        store: store.clone(),
        journal,
        coordinator: coordinator.clone(),
        node: node.clone(),
        load_costs: Default::default(),
    });
    let hasher = Hasher::new(
        config.argon2_memory_kib,
        config.argon2_iterations,
        config.hash_concurrency,
    )
    .map_err(|e| StartError::Setting(e.to_string()))?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let state = Arc::new(AppState {
        metrics: metrics.clone(),
        config: config.clone(),
        store,
        rooms: Rooms::new(ctx),
        sockets: Arc::new(SessionSockets::default()),
        hasher,
        limits,
        coordinator: coordinator.clone(),
        node: node.clone(),
        trusted: config.trusted_proxies().map_err(StartError::Setting)?,
        sockets_by_address: Arc::new(AddressCounts::new(config.ws_per_ip)),
        upgrades_by_address: KeyedLimiter::with_burst(
            config.ws_upgrades_per_ip_per_second.saturating_mul(60),
            config.ws_upgrade_burst.max(1),
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
        connections: crate::limits::ConnectionCap::new(config.max_connections()),
        memory,
        admission: crate::admission::Admission::new(
            config.joins_in_flight,
            std::time::Duration::from_millis(config.join_wait_ms),
        ),
        delay: crate::stats::DelayProbe::start(),
        accepting: AtomicBool::new(true),
        stopping: stop_rx.clone(),
    });

    let accept = tokio::spawn(accept_loop(listener, state.clone(), stop_rx.clone()));
    if let Some(admin) = admin {
        tokio::spawn(admin_loop(admin, metrics.clone(), stop_rx.clone()));
    }
    tokio::spawn(crate::cluster::run(state.clone()));
    tokio::spawn(crate::sessions::run(
        state.sockets.clone(),
        state.store.clone(),
        stop_rx.clone(),
    ));
    let heartbeats = tokio::spawn(heartbeat_loop(
        coordinator.clone(),
        member,
        settings.heartbeat,
        stop_rx,
    ));
    let done = tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down: no new work, finishing what was accepted");
        state.accepting.store(false, Ordering::Release);
        let _ = stop_tx.send(true);
        let _ = accept.await;
        let _ = heartbeats.await;
        let drained = tokio::time::timeout(state.config.shutdown_timeout(), async {
            state.rooms.shutdown().await;
            // Sockets get their 1012 from their rooms; wait for them to go.
            while state.metrics.connections.get() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("shutdown deadline passed with work left; exiting anyway");
        }
        let _ = coordinator.leave(&node).await;
        // Every room is gone; the journal writes what they handed it, then ends.
        journal_handle.finish();
        drop(state);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), journal_task).await;
        tracing::info!("stopped");
    });
    Ok(Running {
        addr,
        admin_addr,
        done,
    })
}

/// Keeps this node's membership alive; on shutdown, marks it draining.
async fn heartbeat_loop(
    coordinator: Arc<dyn Coordinator>,
    member: Member,
    every: std::time::Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => {
                let _ = coordinator.heartbeat(&member.id, true).await;
                return;
            }
            _ = ticks.tick() => {
                match coordinator.heartbeat(&member.id, false).await {
                    Ok(()) => {}
                    Err(CoordinatorError::Lost) => {
                        tracing::warn!("membership lapsed; joining again");
                        let _ = coordinator.join(member.clone()).await;
                    }
                    Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
                }
            }
        }
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<AppState>, mut stop: watch::Receiver<bool>) {
    let refusing = Arc::new(tokio::sync::Semaphore::new(REFUSALS_IN_FLIGHT));
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off briefly.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(slot) = state.connections.take() else {
            state.metrics.connections_refused.inc();
            refuse(stream, &refusing);
            continue;
        };
        let slot = Arc::new(slot);
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let metrics = state.metrics.clone();
            metrics.tcp_connections.inc();
            let conn_slot = slot.clone();
            let service = service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                let state = state.clone();
                req.extensions_mut()
                    .insert(crate::http::ConnSlot(conn_slot.clone()));
                async move {
                    Ok::<_, std::convert::Infallible>(crate::http::handle(state, req, peer).await)
                }
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(std::time::Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let _ = conn.await;
            // An upgraded socket keeps its own clone of the slot.
            drop(slot);
            metrics.tcp_connections.dec();
        });
    }
}

/// Refusals being written at once; past this a refused connection is closed
/// without an answer (an answer costs a task and a descriptor for up to a second).
const REFUSALS_IN_FLIGHT: usize = 64;

/// Answers a connection over `ATRIUM_MAX_CONNECTIONS` with 503 `unavailable`
/// (`Retry-After: 2`, `Connection: close`) and closes it; when too many refusals
/// are already under way, closes it at once.
fn refuse(stream: tokio::net::TcpStream, refusing: &Arc<tokio::sync::Semaphore>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(permit) = refusing.clone().try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut stream = stream;
        let body = r#"{"error":{"code":"unavailable","message":"the node has as many connections as it may take; try again shortly"}}"#;
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
             retry-after: 2\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let second = std::time::Duration::from_secs(1);
        if tokio::time::timeout(second, stream.write_all(answer.as_bytes()))
            .await
            .is_ok_and(|w| w.is_ok())
        {
            let _ = stream.shutdown().await;
            // Read what the client sent, briefly, so closing does not reset the
            // connection before the client has read the answer.
            let mut sink = [0u8; 4096];
            let _ = tokio::time::timeout(second, async {
                let mut left = 64 * 1024;
                while left > 0 {
                    match stream.read(&mut sink).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => left -= n.min(left),
                    }
                }
            })
            .await;
        }
    });
}

/// Serves /metrics (and /health) on the admin address.
async fn admin_loop(
    listener: TcpListener,
    metrics: Arc<crate::metrics::Metrics>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let stream = tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((s, _)) => s,
                Err(_) => continue,
            },
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| {
                let metrics = metrics.clone();
                async move {
                    let resp = match req.uri().path() {
                        "/metrics" => crate::http::metrics_response(&metrics),
                        _ => crate::http::empty(hyper::StatusCode::NOT_FOUND),
                    };
                    Ok::<_, std::convert::Infallible>(resp)
                }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(std::time::Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
