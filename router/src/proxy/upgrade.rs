//! Sockets through the proxy: the socket registered once the node switches protocols, the
//! tunnel that carries it from there, and the count of upgrades that did not become sockets.

use pingora::proxy::UpgradedTunnel;
use pingora::{Error, ErrorSource, ErrorType};

use super::{Ctx, Router};
use crate::tunnel::{self, Sockets};

/// Why a socket upgrade failed, for the `upgrade_failures` metric.
pub(super) fn upgrade_failure(e: &Error, chosen: bool) -> &'static str {
    match e.esource() {
        // The router's own answer (no node can take it now).
        _ if matches!(e.etype(), ErrorType::HTTPStatus(_)) => "router",
        ErrorSource::Upstream if !chosen => "connect",
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
    }
}

impl Router {
    /// On the node's response header to an upgrade: a socket from `101`, a failure otherwise.
    pub(super) fn upgrade_answered(&self, ctx: &mut Ctx, status: u16) {
        if !ctx.upgrade {
            return;
        }
        if status != 101 {
            self.upgrade_failed(ctx, &format!("node-{status}"));
            return;
        }
        if let Some(chosen) = &ctx.chosen {
            ctx.socket = Some(self.tracker.socket(&chosen.node));
        }
        // A socket is no longer an HTTP request in flight.
        ctx.request = None;
    }

    /// Carries an upgraded socket until it ends (`crate::tunnel`).
    pub(super) async fn carry(&self, t: UpgradedTunnel, ctx: &Ctx) {
        let sockets = Sockets {
            client: t.downstream,
            node: t.upstream,
            preread: t.upstream_preread,
            node_ended: t.upstream_ended,
        };
        let closing = ctx.socket.as_ref().map(|s| s.closing());
        // A task of its own: a wake then polls the tunnel only, not pingora's request future
        // around it. The request (and the socket's count) waits for it.
        let carried = tokio::spawn(tunnel::carry(sockets, closing, self.timeouts.socket_write));
        let _abort = AbortOnDrop(carried.abort_handle());
        match carried.await {
            Ok(Ok(end)) => tracing::debug!(?end, node = %ctx.node_label(), "socket ended"),
            Ok(Err(e)) => tracing::debug!(error = %e, node = %ctx.node_label(), "socket failed"),
            Err(e) => {
                tracing::warn!(error = %e, node = %ctx.node_label(), "socket's tunnel failed")
            }
        }
    }

    /// Counts and logs a socket upgrade that will not become a socket: the client sees a
    /// status or a reset, so the router's operator must see why.
    pub(super) fn upgrade_failed(&self, ctx: &Ctx, reason: &str) {
        self.metrics
            .upgrade_failures
            .with_label_values(&[reason])
            .inc();
        tracing::info!(reason, node = %ctx.node_label(), "socket upgrade failed");
    }
}

/// Ends a socket's tunnel if its request ends first (pingora dropped it): a tunnel never
/// outlives the count of its socket.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
