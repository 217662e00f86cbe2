//! Sockets through the proxy: the upstream connection an upgrade made, the socket registered
//! once the node switches protocols, the close frame a drain adds at its end, and the count of
//! upgrades that did not become sockets.

use std::os::fd::RawFd;

use bytes::{Bytes, BytesMut};
use pingora::{Error, ErrorSource, ErrorType};

use super::{Ctx, Router};
use crate::sockets::addresses;

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
    /// Remembers an upgrade's upstream connection, to shut it down in a drain.
    pub(super) fn connected(ctx: &mut Ctx, fd: RawFd) {
        if ctx.upgrade {
            ctx.upstream = addresses(fd).map(|(local, peer)| (fd, local, peer));
        }
    }

    /// On the node's response header to an upgrade: a socket from `101`, a failure otherwise.
    pub(super) fn upgrade_answered(&self, ctx: &mut Ctx, status: u16) {
        if !ctx.upgrade {
            return;
        }
        if status != 101 {
            self.upgrade_failed(ctx, &format!("node-{status}"));
            return;
        }
        if let (Some((fd, local, peer)), Some(chosen)) = (ctx.upstream, &ctx.chosen) {
            ctx.socket = Some(self.tracker.socket(&chosen.node, fd, local, peer));
        }
        // A socket is no longer an HTTP request in flight.
        ctx.request = None;
    }

    /// At the end of the node's side of a socket the router ended: the close frame after the
    /// last bytes.
    pub(super) fn end_socket(ctx: &mut Ctx, body: &mut Option<Bytes>) {
        if let Some(frame) = ctx.socket.as_mut().and_then(|s| s.close_frame_at_end()) {
            let mut out = BytesMut::new();
            if let Some(data) = body.take() {
                out.extend_from_slice(&data);
            }
            out.extend_from_slice(&frame);
            *body = Some(out.freeze());
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
