//! The pingora proxy: picks each request's node, forwards it (sockets included), and learns
//! from what comes back.
//!
//! - `hooks`: the [`ProxyHttp`](pingora::proxy::ProxyHttp) calls, in the order pingora makes
//!   them;
//! - `choose`: which node a request goes to, and what happens when it cannot be reached;
//! - `evict`: ending the membership of a node whose address refuses connections;
//! - `moved`: learning a file's holder from a node's `409 moved`;
//! - `answer`: the router's own answers (refusals, failures);
//! - `upgrade`: sockets through the proxy (carried by `crate::tunnel`), and upgrades that
//!   failed;
//! - `forwarded`: the `X-Forwarded-For` header.

mod answer;
mod choose;
mod evict;
mod forwarded;
mod hooks;
mod moved;
mod upgrade;

use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_coordinator::NodeId;
use bytes::BytesMut;

pub use evict::Evictions;

use crate::fleet::{Choice, Fleet};
use crate::metrics::Metrics;
use crate::route::Route;
use crate::sockets::{RequestGuard, SocketGuard, Tracker};
use crate::watcher::SharedCoordinator;

/// Timeouts of the proxy.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub read: Duration,
    pub socket_write: Duration,
    /// The longest a file's request waits for a node that cannot be reached to leave the
    /// membership (the fleet's lease time and a second).
    pub lapse: Duration,
}

/// The router's [`ProxyHttp`](pingora::proxy::ProxyHttp).
#[derive(Clone)]
pub struct Router {
    pub fleet: Arc<Fleet>,
    pub metrics: Arc<Metrics>,
    pub tracker: Arc<Tracker>,
    pub coordinator: SharedCoordinator,
    pub timeouts: Timeouts,
    pub evictions: Arc<Evictions>,
}

/// Per-request state.
pub struct Ctx {
    start: Instant,
    route: Route,
    upgrade: bool,
    /// Nodes known gone (or unreachable, for non-file routes) that a retry must skip.
    avoid: Vec<NodeId>,
    chosen: Option<Choice>,
    /// A `409 moved` answer caused one retry already.
    moved_retry: bool,
    /// A file's node could not be reached while still a member: wait, until the deadline,
    /// for its membership to lapse before choosing again (once per request).
    lapse_wait: Option<(NodeId, Instant)>,
    lapse_waited: bool,
    /// Collecting a `409 moved` body to learn the holder from it.
    moved_body: Option<BytesMut>,
    timed: bool,
    request: Option<RequestGuard>,
    socket: Option<SocketGuard>,
}

impl Ctx {
    fn new(request: RequestGuard) -> Self {
        Ctx {
            start: Instant::now(),
            route: Route::Any,
            upgrade: false,
            avoid: Vec::new(),
            chosen: None,
            moved_retry: false,
            lapse_wait: None,
            lapse_waited: false,
            moved_body: None,
            timed: false,
            request: Some(request),
            socket: None,
        }
    }

    /// The chosen node as a log field.
    fn node_label(&self) -> String {
        self.chosen
            .as_ref()
            .map(|c| c.node.to_string())
            .unwrap_or_else(|| "none".into())
    }
}
