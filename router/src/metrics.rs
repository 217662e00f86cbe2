//! The router's Prometheus metrics (`atrium_router_*`), served on the admin port.
//!
//! Labels come from small sets only: a node id (the fleet's size), a routing kind, an error
//! kind. Never a file id.

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

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
    /// Requests answered by the router itself, by reason (bad-path, bad-id, blocked, unavailable).
    pub refused: IntCounterVec,
    /// Socket upgrades that did not become sockets, by reason.
    pub upgrade_failures: IntCounterVec,
    /// `409 moved` answers from nodes (the router then learns the holder).
    pub moved: IntCounter,
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
        let registry = Registry::new();
        let counter_vec = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let counter = |name: &str, help: &str| {
            let c = IntCounter::new(name, help).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::new(name, help).expect("valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let requests = counter_vec(
            "atrium_router_requests_total",
            "Requests forwarded to a node, socket upgrades included",
            &["node"],
        );
        let sockets_opened = counter_vec(
            "atrium_router_sockets_opened_total",
            "WebSocket upgrades proxied, by node",
            &["node"],
        );
        let sockets_open = IntGaugeVec::new(
            Opts::new("atrium_router_sockets", "Proxied sockets open now, by node"),
            &["node"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(sockets_open.clone()))
            .expect("unique metric");
        let decisions = counter_vec(
            "atrium_router_routing_decisions_total",
            "Routing decisions by kind: lease holder, ring owner, any node, fallback",
            &["kind"],
        );
        let upstream_errors = counter_vec(
            "atrium_router_upstream_errors_total",
            "Failures reaching or talking to a node, by node and kind (connect, proxy)",
            &["node", "kind"],
        );
        let refused = counter_vec(
            "atrium_router_refused_total",
            "Requests answered by the router itself, by reason",
            &["reason"],
        );
        let upgrade_failures = counter_vec(
            "atrium_router_upgrade_failures_total",
            "Socket upgrades that did not end in a proxied socket, by reason: node-<status> \
             (the node answered without switching), router (the router answered: no node \
             can take it now), connect (no node reached), \
             upstream (the node's side failed), downstream (the client's side failed), \
             internal",
            &["reason"],
        );
        let moved = counter(
            "atrium_router_moved_total",
            "409 moved answers from nodes (the router learns the holder from them)",
        );
        let latency = Histogram::with_opts(
            HistogramOpts::new(
                "atrium_router_proxy_latency_seconds",
                "From a request's arrival at the router to the node's response header",
            )
            .buckets(vec![
                0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                5.0,
            ]),
        )
        .expect("valid metric");
        registry
            .register(Box::new(latency.clone()))
            .expect("unique metric");
        let ring_members = gauge(
            "atrium_router_ring_members",
            "Members on the ring (live and not draining)",
        );
        let live_members = gauge(
            "atrium_router_live_members",
            "Live members, draining ones included",
        );
        let membership_changes = counter(
            "atrium_router_membership_changes_total",
            "Changes of the live membership seen by this router",
        );
        let holders = gauge(
            "atrium_router_lease_holders",
            "File lease holders this router remembers",
        );
        let lease_events = counter(
            "atrium_router_lease_events_total",
            "Lease hand-overs heard from the coordinator",
        );
        Self {
            registry,
            requests,
            sockets_opened,
            sockets_open,
            decisions,
            upstream_errors,
            refused,
            upgrade_failures,
            moved,
            latency,
            ring_members,
            live_members,
            membership_changes,
            holders,
            lease_events,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_exported_once_touched() {
        let m = Metrics::new();
        m.requests.with_label_values(&["n0"]).inc();
        m.sockets_opened.with_label_values(&["n0"]).inc();
        m.sockets_open.with_label_values(&["n0"]).set(1);
        m.decisions.with_label_values(&["ring"]).inc();
        m.upstream_errors
            .with_label_values(&["n0", "connect"])
            .inc();
        m.refused.with_label_values(&["bad-id"]).inc();
        m.upgrade_failures.with_label_values(&["connect"]).inc();
        m.latency.observe(0.001);
        let text = String::from_utf8(m.render()).unwrap();
        // Each family by its exact name, as its `# TYPE` line gives it: a name that is a
        // prefix of another (`atrium_router_sockets`) is not found inside the longer one.
        let families: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        for name in [
            "atrium_router_requests_total",
            "atrium_router_sockets_opened_total",
            "atrium_router_sockets",
            "atrium_router_routing_decisions_total",
            "atrium_router_upstream_errors_total",
            "atrium_router_refused_total",
            "atrium_router_moved_total",
            "atrium_router_proxy_latency_seconds",
            "atrium_router_upgrade_failures_total",
            "atrium_router_ring_members",
            "atrium_router_live_members",
            "atrium_router_membership_changes_total",
            "atrium_router_lease_holders",
            "atrium_router_lease_events_total",
        ] {
            assert!(families.contains(&name), "{name} missing from {families:?}");
        }
    }
}
