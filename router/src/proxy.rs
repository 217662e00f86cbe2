//! The pingora proxy: picks each request's node, forwards it (sockets included), and learns
//! from what comes back.

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use atrium_coordinator::NodeId;
use bytes::{Bytes, BytesMut};
use nix::sys::socket::{getpeername, getsockname, SockaddrStorage};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use pingora::protocols::Digest;
use pingora::proxy::{FailToProxy, ProxyHttp, Session};
use pingora::{Error, ErrorSource, ErrorType};

use crate::fleet::{Choice, Fleet};
use crate::metrics::Metrics;
use crate::route::{classify, Route};
use crate::sockets::{to_std, RequestGuard, SocketGuard, Tracker};
use crate::watcher::SharedCoordinator;

/// The most of a `409 moved` body the router reads to learn the holder.
const MOVED_BODY_MAX: usize = 4096;
/// How long a retry after `409 moved` may wait for the coordinator's answer.
const HOLDER_LOOKUP: Duration = Duration::from_millis(500);
/// How often a request held for a node's lapse looks at the fleet again.
const LAPSE_POLL: Duration = Duration::from_millis(25);

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

/// The router's [`ProxyHttp`].
pub struct Router {
    pub fleet: Arc<Fleet>,
    pub metrics: Arc<Metrics>,
    pub tracker: Arc<Tracker>,
    pub coordinator: SharedCoordinator,
    pub timeouts: Timeouts,
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
    /// The upstream connection of an upgrade: (fd, local, peer).
    upstream: Option<(RawFd, SocketAddr, SocketAddr)>,
    /// Collecting a `409 moved` body to learn the holder from it.
    moved_body: Option<BytesMut>,
    timed: bool,
    request: Option<RequestGuard>,
    socket: Option<SocketGuard>,
}

impl Router {
    async fn respond_json(session: &mut Session, status: u16, code: &str, message: &str) {
        let body = serde_json::json!({"error": {"code": code, "message": message}}).to_string();
        let Ok(mut header) = ResponseHeader::build(status, Some(2)) else {
            return;
        };
        let _ = header.insert_header("content-type", "application/json");
        let _ = header.insert_header("content-length", body.len().to_string());
        if session
            .write_response_header(Box::new(header), false)
            .await
            .is_ok()
        {
            let _ = session
                .write_response_body(Some(Bytes::from(body)), true)
                .await;
        }
    }

    /// After a `409 moved` on a request we may send again: ask the coordinator once.
    async fn learn_holder(&self, file: &str) {
        let Some(coordinator) = self.coordinator.get() else {
            return;
        };
        if let Ok(Ok(holder)) = tokio::time::timeout(HOLDER_LOOKUP, coordinator.holder(file)).await
        {
            self.fleet.set_holder(file, holder);
        }
    }

    fn peer(&self, choice: &Choice, upgrade: bool) -> Box<HttpPeer> {
        let mut peer = HttpPeer::new(choice.addr, false, String::new());
        let o = &mut peer.options;
        o.connection_timeout = Some(self.timeouts.connect);
        o.total_connection_timeout = Some(self.timeouts.connect);
        if upgrade {
            // The nodes ping their sockets; an idle socket is not a dead one.
            o.read_timeout = None;
            o.idle_timeout = None;
            o.write_timeout = Some(self.timeouts.socket_write);
        } else {
            o.read_timeout = Some(self.timeouts.read);
            o.write_timeout = Some(self.timeouts.read);
            o.idle_timeout = Some(Duration::from_secs(60));
        }
        Box::new(peer)
    }

    /// Counts and logs a socket upgrade that will not become a socket: the client sees a
    /// status or a reset, so the router's operator must see why.
    fn upgrade_failed(&self, ctx: &Ctx, reason: &str) {
        self.metrics
            .upgrade_failures
            .with_label_values(&[reason])
            .inc();
        tracing::info!(reason, node = %Self::node_label(ctx), "socket upgrade failed");
    }

    fn node_label(ctx: &Ctx) -> String {
        ctx.chosen
            .as_ref()
            .map(|c| c.node.to_string())
            .unwrap_or_else(|| "none".into())
    }
}

#[async_trait]
impl ProxyHttp for Router {
    type CTX = Ctx;

    fn new_ctx(&self) -> Ctx {
        Ctx {
            start: Instant::now(),
            route: Route::Any,
            upgrade: false,
            avoid: Vec::new(),
            chosen: None,
            moved_retry: false,
            lapse_wait: None,
            lapse_waited: false,
            upstream: None,
            moved_body: None,
            timed: false,
            request: Some(self.tracker.request()),
            socket: None,
        }
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        ctx.start = Instant::now();
        ctx.route = classify(session.req_header().uri.path());
        match ctx.route {
            Route::Blocked => {
                self.metrics.refused.with_label_values(&["blocked"]).inc();
                Self::respond_json(session, 404, "not-found", "no such route").await;
                return Ok(true);
            }
            Route::BadId => {
                self.metrics.refused.with_label_values(&["bad-id"]).inc();
                Self::respond_json(
                    session,
                    400,
                    "bad-request",
                    "file ids are 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
                )
                .await;
                return Ok(true);
            }
            Route::BadPath => {
                self.metrics.refused.with_label_values(&["bad-path"]).inc();
                Self::respond_json(
                    session,
                    400,
                    "bad-request",
                    "the path is not in canonical form: no empty, `.` or `..` segments, \
                     no percent-encoded letters, digits or -._~",
                )
                .await;
                return Ok(true);
            }
            Route::File(_) | Route::Any => {}
        }
        ctx.upgrade = session.is_upgrade_req();
        if ctx.upgrade {
            // A socket may stay quiet for long: only the node decides it is dead.
            session.set_read_timeout(None);
            session.set_write_timeout(Some(self.timeouts.socket_write));
        }
        Ok(false)
    }

    async fn upstream_peer(&self, _session: &mut Session, ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        if let Some((node, until)) = ctx.lapse_wait.take() {
            ctx.lapse_waited = true;
            while self.fleet.is_live(&node) && Instant::now() < until {
                tokio::time::sleep(LAPSE_POLL).await;
            }
            if self.fleet.is_live(&node) {
                return Err(Error::explain(
                    ErrorType::HTTPStatus(502),
                    "the file's node cannot be reached and is still a member",
                ));
            }
        }
        let choice = match &ctx.route {
            Route::File(file) => {
                if ctx.moved_retry {
                    self.learn_holder(file).await;
                }
                self.fleet.for_file(file, &ctx.avoid)
            }
            _ => self.fleet.any(&ctx.avoid),
        };
        let Some(choice) = choice else {
            self.metrics
                .refused
                .with_label_values(&["unavailable"])
                .inc();
            return Err(Error::explain(
                ErrorType::HTTPStatus(503),
                "no live node to route to",
            ));
        };
        self.metrics
            .decisions
            .with_label_values(&[choice.kind.as_str()])
            .inc();
        self.metrics
            .requests
            .with_label_values(&[choice.node.as_str()])
            .inc();
        let peer = self.peer(&choice, ctx.upgrade);
        ctx.chosen = Some(choice);
        Ok(peer)
    }

    fn fail_to_connect(
        &self,
        _session: &mut Session,
        _peer: &HttpPeer,
        ctx: &mut Ctx,
        mut e: Box<Error>,
    ) -> Box<Error> {
        let Some(chosen) = ctx.chosen.clone() else {
            return e;
        };
        self.metrics
            .upstream_errors
            .with_label_values(&[chosen.node.as_str(), "connect"])
            .inc();
        let retry = match ctx.route {
            // A file's node is only skipped when it is known gone: while it is a member, the
            // file's lease is its and no other node may take the file. A node that cannot be
            // reached is probably dead with its membership not lapsed yet, so the request
            // waits here for the lapse (up to the lease time) and then goes to the successor
            // at once, instead of going back to the client to retry after its backoff.
            Route::File(_) if self.fleet.is_live(&chosen.node) => {
                let wait = !ctx.lapse_waited;
                if wait {
                    ctx.lapse_wait =
                        Some((chosen.node.clone(), Instant::now() + self.timeouts.lapse));
                }
                wait
            }
            _ => true,
        };
        if retry && !ctx.avoid.contains(&chosen.node) {
            ctx.avoid.push(chosen.node);
            e.set_retry(ctx.avoid.len() <= self.fleet.live_count().max(1));
        } else {
            e.set_retry(false);
        }
        e
    }

    fn error_while_proxy(
        &self,
        peer: &HttpPeer,
        session: &mut Session,
        e: Box<Error>,
        ctx: &mut Ctx,
        client_reused: bool,
    ) -> Box<Error> {
        let moved = ctx.moved_retry && matches!(e.etype(), ErrorType::HTTPStatus(409));
        if !moved {
            self.metrics
                .upstream_errors
                .with_label_values(&[&Self::node_label(ctx), "proxy"])
                .inc();
        }
        // pingora's default policy: only idempotent requests whose body is still buffered.
        let mut e = e.more_context(format!("Peer: {peer}"));
        if !session.req_header().method.is_idempotent() || session.as_ref().retry_buffer_truncated()
        {
            e.set_retry(false);
        } else {
            e.retry.decide_reuse(client_reused);
        }
        e
    }

    async fn connected_to_upstream(
        &self,
        _session: &mut Session,
        _reused: bool,
        _peer: &HttpPeer,
        fd: RawFd,
        _digest: Option<&Digest>,
        ctx: &mut Ctx,
    ) -> Result<()> {
        if ctx.upgrade {
            let local = getsockname::<SockaddrStorage>(fd)
                .ok()
                .and_then(|a| to_std(&a));
            let peer = getpeername::<SockaddrStorage>(fd)
                .ok()
                .and_then(|a| to_std(&a));
            ctx.upstream = local.zip(peer).map(|(l, p)| (fd, l, p));
        }
        Ok(())
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut RequestHeader,
        _ctx: &mut Ctx,
    ) -> Result<()> {
        if let Some(ip) = session
            .client_addr()
            .and_then(|a| a.as_inet())
            .map(|a| a.ip().to_string())
        {
            let prior = upstream_request
                .headers
                .get("x-forwarded-for")
                .and_then(|v| v.to_str().ok());
            let value = forwarded_for(prior, &ip);
            upstream_request.insert_header("x-forwarded-for", value)?;
        }
        Ok(())
    }

    async fn upstream_response_filter(
        &self,
        session: &mut Session,
        response: &mut ResponseHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        let status = response.status.as_u16();
        if status == 409 {
            if let Route::File(_) = ctx.route {
                self.metrics.moved.inc();
                let method = &session.req_header().method;
                let bodiless =
                    (method == http::Method::GET || method == http::Method::HEAD) && !ctx.upgrade;
                if bodiless && !ctx.moved_retry {
                    // Send it once more, to the holder the coordinator names.
                    ctx.moved_retry = true;
                    let mut e = Error::explain(ErrorType::HTTPStatus(409), "moved: retrying");
                    e.set_retry(true);
                    return Err(e);
                }
                ctx.moved_body = Some(BytesMut::new());
            }
        }
        if !ctx.timed {
            ctx.timed = true;
            self.metrics
                .latency
                .observe(ctx.start.elapsed().as_secs_f64());
        }
        if ctx.upgrade && status != 101 {
            self.upgrade_failed(ctx, &format!("node-{status}"));
        }
        if status == 101 && ctx.upgrade {
            if let (Some((fd, local, peer)), Some(chosen)) = (ctx.upstream, &ctx.chosen) {
                ctx.socket = Some(self.tracker.socket(&chosen.node, fd, local, peer));
            }
            // A socket is no longer an HTTP request in flight.
            ctx.request = None;
        }
        Ok(())
    }

    fn response_body_filter(
        &self,
        _session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Ctx,
    ) -> Result<Option<Duration>> {
        if let Some(buf) = ctx.moved_body.as_mut() {
            if let Some(chunk) = body.as_ref() {
                if buf.len() + chunk.len() <= MOVED_BODY_MAX {
                    buf.extend_from_slice(chunk);
                }
            }
            if end_of_stream {
                if let (Some(node), Route::File(file)) = (moved_to(buf), &ctx.route) {
                    self.fleet.set_holder(file, Some(node));
                }
                ctx.moved_body = None;
            }
        }
        if end_of_stream {
            if let Some(frame) = ctx.socket.as_mut().and_then(|s| s.close_frame_at_end()) {
                let mut out = BytesMut::new();
                if let Some(data) = body.take() {
                    out.extend_from_slice(&data);
                }
                out.extend_from_slice(&frame);
                *body = Some(out.freeze());
            }
        }
        Ok(None)
    }

    async fn fail_to_proxy(&self, session: &mut Session, e: &Error, ctx: &mut Ctx) -> FailToProxy {
        let code = match e.etype() {
            ErrorType::HTTPStatus(code) => *code,
            _ => match e.esource() {
                ErrorSource::Upstream => 502,
                ErrorSource::Downstream => match e.etype() {
                    ErrorType::WriteError | ErrorType::ReadError | ErrorType::ConnectionClosed => 0,
                    _ => 400,
                },
                ErrorSource::Internal | ErrorSource::Unset => 500,
            },
        };
        if ctx.upgrade && session.response_written().is_none() {
            let reason = match e.esource() {
                // The router's own answer (no node can take it now).
                _ if matches!(e.etype(), ErrorType::HTTPStatus(_)) => "router",
                ErrorSource::Upstream if ctx.chosen.is_none() => "connect",
                ErrorSource::Upstream => match e.etype() {
                    ErrorType::ConnectTimedout
                    | ErrorType::ConnectRefused
                    | ErrorType::ConnectNoRoute
                    | ErrorType::ConnectError
                    | ErrorType::SocketError => "connect",
                    _ => "upstream",
                },
                ErrorSource::Downstream => "downstream",
                ErrorSource::Internal | ErrorSource::Unset => "internal",
            };
            self.upgrade_failed(ctx, reason);
        }
        if code > 0 && session.response_written().is_none() {
            let (name, message) = match code {
                503 => ("unavailable", "no node can take this request now; retry"),
                504 => ("timeout", "the node did not answer in time"),
                400 => ("bad-request", "the request could not be read"),
                500 => ("internal", "the router failed"),
                _ => ("bad-gateway", "the node could not be reached; retry"),
            };
            tracing::debug!(error = %e, node = %Self::node_label(ctx), code, "proxy failed");
            Self::respond_json(session, code, name, message).await;
        }
        FailToProxy {
            error_code: code,
            can_reuse_downstream: false,
        }
    }
}

/// `X-Forwarded-For` with the address the router was connected from appended.
fn forwarded_for(prior: Option<&str>, peer: &str) -> String {
    match prior.map(str::trim) {
        Some(prior) if !prior.is_empty() => format!("{prior}, {peer}"),
        _ => peer.to_string(),
    }
}

/// The node a `409 moved` body names.
fn moved_to(body: &[u8]) -> Option<NodeId> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    if v["error"]["code"] != "moved" {
        return None;
    }
    NodeId::parse(v["error"]["node"].as_str()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_is_appended_to_x_forwarded_for() {
        assert_eq!(forwarded_for(None, "10.0.0.9"), "10.0.0.9");
        assert_eq!(forwarded_for(Some(" "), "10.0.0.9"), "10.0.0.9");
        assert_eq!(
            forwarded_for(Some("203.0.113.7"), "10.0.0.9"),
            "203.0.113.7, 10.0.0.9"
        );
    }

    #[test]
    fn the_moved_body_names_the_holder() {
        let body = br#"{"error":{"code":"moved","message":"elsewhere","node":"n2"}}"#;
        assert_eq!(moved_to(body), NodeId::parse("n2").ok());
        assert_eq!(moved_to(br#"{"error":{"code":"conflict"}}"#), None);
        assert_eq!(moved_to(b"not json"), None);
        assert_eq!(
            moved_to(br#"{"error":{"code":"moved","node":"a b"}}"#),
            None
        );
    }
}
