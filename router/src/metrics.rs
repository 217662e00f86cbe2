//! The router's Prometheus metrics (`atrium_router_*`), served on the admin port.
//!
//! Labels come from small sets only: a node id (the fleet's size), a routing kind, an error
//! kind. Never a file id.

mod register;
#[cfg(test)]
mod tests;

use prometheus::{
    Encoder, Histogram, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Registry, TextEncoder,
};

use register::Families;

/// Every metric the router exports.
pub struct Metrics {
    registry: Registry,
    /// Requests forwarded, by upstream node (socket upgrades included).
    pub requests: IntCounterVec,
    /// Sockets opened through the router, by upstream node.
    pub sockets_opened: IntCounterVec,
    /// Sockets open now, by upstream node.
    pub sockets_open: IntGaugeVec,
    /// Routing decisions by kind (lease, ring, any, fallback).
    pub decisions: IntCounterVec,
    /// Failures talking to a node, by node and kind (connect, proxy).
    pub upstream_errors: IntCounterVec,
    /// Requests answered by the router itself, by reason (bad-path, bad-id, blocked,
    /// unavailable), and connections refused at its caps (connections, address-connections).
    pub refused: IntCounterVec,
    /// Socket upgrades that did not become sockets, by reason.
    pub upgrade_failures: IntCounterVec,
    /// `409 moved` answers from nodes (the router then learns the holder).
    pub moved: IntCounter,
    /// Nodes found refusing connections, by what became of them (see `proxy/evict.rs`).
    pub evictions: IntCounterVec,
    /// From a request's arrival to the node's response header.
    pub latency: Histogram,
    /// Members on the ring (live, not draining).
    pub ring_members: IntGauge,
    /// Live members (draining included).
    pub live_members: IntGauge,
    /// Membership changes seen.
    pub membership_changes: IntCounter,
    /// Lease holders remembered.
    pub holders: IntGauge,
    /// Lease changes heard from the coordinator.
    pub lease_events: IntCounter,
}

impl Metrics {
    pub fn new() -> Self {
        let f = Families(Registry::new());
        Self {
            requests: f.counter_vec(
                "atrium_router_requests_total",
                "Requests forwarded to a node, socket upgrades included",
                &["node"],
            ),
            sockets_opened: f.counter_vec(
                "atrium_router_sockets_opened_total",
                "WebSocket upgrades proxied, by node",
                &["node"],
            ),
            sockets_open: f.gauge_vec(
                "atrium_router_sockets",
                "Proxied sockets open now, by node",
                &["node"],
            ),
            decisions: f.counter_vec(
                "atrium_router_routing_decisions_total",
                "Routing decisions by kind: lease holder, ring owner, any node, fallback",
                &["kind"],
            ),
            upstream_errors: f.counter_vec(
                "atrium_router_upstream_errors_total",
                "Failures reaching or talking to a node, by node and kind (connect, proxy)",
                &["node", "kind"],
            ),
            evictions: f.counter_vec(
                "atrium_router_evictions_total",
                "Nodes whose address refused connections, by outcome: evicted (membership ended), \
                 answered (the second try connected), unreachable (it failed otherwise), kept \
                 (the coordinator left it: draining, moved or gone), failed (no answer)",
                &["outcome"],
            ),
            refused: f.counter_vec(
                "atrium_router_refused_total",
                "Requests answered by the router itself, by reason",
                &["reason"],
            ),
            upgrade_failures: f.counter_vec(
                "atrium_router_upgrade_failures_total",
                "Socket upgrades that did not end in a proxied socket, by reason: node-<status> \
                 (the node answered without switching), router (the router answered: no node \
                 can take it now), connect (no node reached), \
                 upstream (the node's side failed), downstream (the client's side failed), \
                 internal",
                &["reason"],
            ),
            moved: f.counter(
                "atrium_router_moved_total",
                "409 moved answers from nodes (the router learns the holder from them)",
            ),
            latency: f.latency(
                "atrium_router_proxy_latency_seconds",
                "From a request's arrival at the router to the node's response header",
            ),
            ring_members: f.gauge(
                "atrium_router_ring_members",
                "Members on the ring (live and not draining)",
            ),
            live_members: f.gauge(
                "atrium_router_live_members",
                "Live members, draining ones included",
            ),
            membership_changes: f.counter(
                "atrium_router_membership_changes_total",
                "Changes of the live membership seen by this router",
            ),
            holders: f.gauge(
                "atrium_router_lease_holders",
                "File lease holders this router remembers",
            ),
            lease_events: f.counter(
                "atrium_router_lease_events_total",
                "Lease hand-overs heard from the coordinator",
            ),
            registry: f.0,
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("text encoding never fails");
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
