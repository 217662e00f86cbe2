//! Which node a request goes to: the file's node (its lease holder, else its ring owner) or
//! any node; and, when that node cannot be reached, whether and when to choose again.

use std::time::{Duration, Instant};

use atrium_coordinator::NodeId;
use pingora::prelude::*;
use pingora::{Error, ErrorType};

use super::{Ctx, Router};
use crate::fleet::Choice;
use crate::route::Route;

/// How long a retry after `409 moved` may wait for the coordinator's answer.
const HOLDER_LOOKUP: Duration = Duration::from_millis(500);
/// How often a request held for a node's lapse looks at the fleet again.
const LAPSE_POLL: Duration = Duration::from_millis(25);

impl Router {
    /// The node for this request (after any wait for a lapse), counted in the metrics.
    pub(super) async fn choose(&self, ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        if let Some((node, until)) = ctx.lapse_wait.take() {
            ctx.lapse_waited = true;
            self.wait_for_lapse(&node, until).await?;
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

    /// Waits until `node` leaves the membership or `until` passes; a 502 if it is still a
    /// member then.
    async fn wait_for_lapse(&self, node: &NodeId, until: Instant) -> Result<()> {
        while self.fleet.is_live(node) && Instant::now() < until {
            tokio::time::sleep(LAPSE_POLL).await;
        }
        if self.fleet.is_live(node) {
            return Err(Error::explain(
                ErrorType::HTTPStatus(502),
                "the file's node cannot be reached and is still a member",
            ));
        }
        Ok(())
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

    /// The chosen node could not be reached: decides whether the request tries again, and
    /// where not to go then.
    pub(super) fn connect_failed(&self, ctx: &mut Ctx, mut e: Box<Error>) -> Box<Error> {
        let Some(chosen) = ctx.chosen.clone() else {
            return e;
        };
        self.metrics
            .upstream_errors
            .with_label_values(&[chosen.node.as_str(), "connect"])
            .inc();
        if e.etype() == &ErrorType::ConnectRefused {
            self.refused(&chosen.node);
        }
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
}
