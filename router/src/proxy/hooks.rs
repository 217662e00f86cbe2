//! pingora's calls into the router, in the order a request meets them; the work is in the
//! sibling modules.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use pingora::protocols::Stream;
use pingora::proxy::{FailToProxy, ProxyHttp, Session, UpgradedTunnel};
use pingora::{Error, ErrorType};

use super::{forwarded, Ctx, Router};
use crate::heads::HeadGuard;
use crate::route::classify;

#[async_trait]
impl ProxyHttp for Router {
    type CTX = Ctx;

    fn new_ctx(&self) -> Ctx {
        Ctx::new(self.tracker.request())
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        ctx.start = Instant::now();
        ctx.route = classify(session.req_header().uri.path());
        if self.refuse(session, &ctx.route).await {
            return Ok(true);
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
        self.choose(ctx).await
    }

    fn fail_to_connect(
        &self,
        _session: &mut Session,
        _peer: &HttpPeer,
        ctx: &mut Ctx,
        e: Box<Error>,
    ) -> Box<Error> {
        self.connect_failed(ctx, e)
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
                .with_label_values(&[&ctx.node_label(), "proxy"])
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

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut RequestHeader,
        _ctx: &mut Ctx,
    ) -> Result<()> {
        forwarded::add_client(session, upstream_request)
    }

    async fn upstream_response_filter(
        &self,
        session: &mut Session,
        response: &mut ResponseHeader,
        ctx: &mut Ctx,
    ) -> Result<()> {
        let status = response.status.as_u16();
        if status == 409 {
            self.moved(session, ctx)?;
        }
        if !ctx.timed {
            ctx.timed = true;
            self.metrics
                .latency
                .observe(ctx.start.elapsed().as_secs_f64());
        }
        self.upgrade_answered(ctx, status);
        Ok(())
    }

    fn response_body_filter(
        &self,
        _session: &mut Session,
        body: &mut Option<Bytes>,
        end_of_stream: bool,
        ctx: &mut Ctx,
    ) -> Result<Option<Duration>> {
        self.read_moved_body(body.as_ref(), end_of_stream, ctx);
        Ok(None)
    }

    fn tunnel_upgrade(&self, _session: &Session, ctx: &Ctx) -> bool {
        ctx.upgrade
    }

    /// Client connections come wrapped in their [`HeadGuard`]; a socket is tunnelled on the
    /// connection under it (past the upgrade's head the guard passes bytes untouched).
    fn downstream_connection<'a>(&self, stream: &'a Stream) -> Option<&'a Stream> {
        stream
            .as_any()
            .downcast_ref::<HeadGuard>()
            .map(HeadGuard::connection)
    }

    async fn upgraded_tunnel(
        &self,
        _session: &mut Session,
        tunnel: UpgradedTunnel,
        ctx: &mut Ctx,
    ) -> Result<()> {
        self.carry(tunnel, ctx).await;
        Ok(())
    }

    async fn fail_to_proxy(&self, session: &mut Session, e: &Error, ctx: &mut Ctx) -> FailToProxy {
        self.fail(session, e, ctx).await
    }
}
