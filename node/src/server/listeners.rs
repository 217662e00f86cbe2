//! The node's listeners: the main address (HTTP and sockets, within
//! `ATRIUM_MAX_CONNECTIONS`, request heads within 32 KiB, new connections within the memory
//! budget) and the admin address (/metrics and /health).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::refusal::{refuse, Refusal};
use super::StartError;
use crate::config::NodeConfig;
use crate::linger::Lingering;
use crate::state::AppState;
use crate::write_deadline::WriteDeadline;

/// The bound listeners and the main address as bound (port 0 made real).
pub(super) struct Listeners {
    pub(super) main: TcpListener,
    pub(super) addr: SocketAddr,
    pub(super) admin: Option<TcpListener>,
}

impl Listeners {
    pub(super) async fn bind(config: &NodeConfig) -> Result<Self, StartError> {
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
        Ok(Self {
            main: listener,
            addr,
            admin,
        })
    }
}

/// The most a request's head (its line and headers) may take; a longer one is answered
/// 431. Hyper's default, about 400 KB a connection, let connections that never finished
/// their heads hold gigabytes.
pub(crate) const HEAD_BYTES: usize = 32 << 10;

const _: () = assert!(HEAD_BYTES as u64 <= crate::memory::CONNECTION_BYTES);

/// HTTP/1 connections, with ten seconds for a request's head to arrive, and at most
/// [`HEAD_BYTES`] of it.
fn http1_builder() -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(std::time::Duration::from_secs(10))
        .max_buf_size(HEAD_BYTES);
    builder
}

pub(super) async fn accept_loop(
    listener: TcpListener,
    state: Arc<AppState>,
    mut stop: watch::Receiver<bool>,
) {
    let refusing = Arc::new(tokio::sync::Semaphore::new(
        super::refusal::REFUSALS_IN_FLIGHT,
    ));
    let heads = Arc::new(AtomicUsize::new(0));
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
        let slot = match place(&state, peer.ip(), &heads) {
            Ok(slot) => Arc::new(slot),
            Err(why) => {
                state.metrics.connections_refused.inc();
                match why {
                    Refusal::AddressFull => state.metrics.rate_limited.inc(),
                    Refusal::MemoryBudget => state.metrics.memory_refusals.inc(),
                    Refusal::NodeFull => {}
                }
                refuse(stream, why, &refusing);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        super::send_buffer::cap(&stream, state.config.send_buffer_bytes);
        super::send_buffer::unsent_at_most(&stream, state.config.kernel_unsent_bytes);
        let state = state.clone();
        let state_write_timeout = state.config.write_timeout();
        let first_head = Arc::new(FirstHead::new(heads.clone()));
        tokio::spawn(async move {
            let metrics = state.metrics.clone();
            metrics.tcp_connections.inc();
            let conn_slot = slot.clone();
            let head = first_head.clone();
            let service = service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                head.arrived();
                let state = state.clone();
                req.extensions_mut()
                    .insert(crate::http::ConnSlot(conn_slot.clone()));
                async move {
                    Ok::<_, std::convert::Infallible>(crate::http::handle(state, req, peer).await)
                }
            });
            let conn = http1_builder()
                .serve_connection(
                    TokioIo::new(Lingering::new(
                        WriteDeadline::new(stream, state_write_timeout),
                        slot.clone(),
                    )),
                    service,
                )
                .with_upgrades();
            let _ = conn.await;
            // An upgraded socket keeps its own clone of the slot; a closed connection
            // lingering keeps another (see `linger`).
            drop(slot);
            metrics.tcp_connections.dec();
        });
    }
}

/// A new connection's place: one of the node's `ATRIUM_MAX_CONNECTIONS`, one of its
/// address's `ATRIUM_CONNECTIONS_PER_IP` unless it comes from a trusted proxy (a router
/// carries many clients on its connections; they are counted by the router), and room in
/// the memory budget for its head.
fn place(
    state: &AppState,
    peer: std::net::IpAddr,
    heads: &AtomicUsize,
) -> Result<crate::limits::ConnectionSlot, Refusal> {
    let slot = state.connections.take().ok_or(Refusal::NodeFull)?;
    // Its place decided first, so a refused connection is not counted as memory.
    let slot = match &state.connections_by_address {
        Some(by_address) if !state.trusted.iter().any(|n| n.contains(&peer)) => {
            let address = by_address.take(peer).ok_or(Refusal::AddressFull)?;
            slot.with_address(address)
        }
        _ => slot,
    };
    // At the budget, only while many connections have yet to send a first head: those are
    // what holds memory here; a node that stays near its mark still takes everyday requests.
    if !state.memory.admits_connection() && heads.load(Ordering::Acquire) >= HEADS_AT_THE_MARK {
        return Err(Refusal::MemoryBudget);
    }
    Ok(slot)
}

/// Connections still waiting for their first request head past which, at the memory
/// budget's mark, new connections are refused.
const HEADS_AT_THE_MARK: usize = 64;

/// One connection's place among those that have not sent their first request head yet.
struct FirstHead {
    waiting: Arc<AtomicUsize>,
    arrived: AtomicBool,
}

impl FirstHead {
    fn new(waiting: Arc<AtomicUsize>) -> Self {
        waiting.fetch_add(1, Ordering::AcqRel);
        Self {
            waiting,
            arrived: AtomicBool::new(false),
        }
    }

    fn arrived(&self) {
        if !self.arrived.swap(true, Ordering::AcqRel) {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for FirstHead {
    fn drop(&mut self) {
        self.arrived();
    }
}

/// Serves /metrics and /health on the admin address: probes of liveness there are not
/// refused with the main address's connections at the memory budget or its limits.
pub(super) async fn admin_loop(
    listener: TcpListener,
    metrics: Arc<crate::metrics::Metrics>,
    node_id: String,
    mut stop: watch::Receiver<bool>,
) {
    let alive = Arc::new(serde_json::json!({"ok": true, "node": node_id}));
    loop {
        let stream = tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((s, _)) => s,
                Err(_) => continue,
            },
        };
        let (metrics, alive) = (metrics.clone(), alive.clone());
        tokio::spawn(async move {
            let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| {
                let (metrics, alive) = (metrics.clone(), alive.clone());
                async move {
                    let resp = match req.uri().path() {
                        "/metrics" => crate::http::metrics_response(&metrics),
                        "/health" => crate::http::json_response(hyper::StatusCode::OK, &alive),
                        _ => crate::http::empty(hyper::StatusCode::NOT_FOUND),
                    };
                    Ok::<_, std::convert::Infallible>(resp)
                }
            });
            let _ = http1_builder()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
