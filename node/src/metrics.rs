//! Prometheus metrics. Names follow one rule: an `atrium_` prefix, base units in
//! the name (`_seconds`, `_bytes`), counters end in `_total`, and labels come only
//! from small fixed sets (never a file or account id).

use std::sync::Arc;

use prometheus::core::Collector;
use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

mod catalogue;
mod labels;
mod webhooks;

pub use webhooks::WebhookMetrics;

pub use labels::{COORDINATOR_OPERATIONS, ROOM_EXIT_REASONS};

pub struct Metrics {
    registry: Registry,
    pub connections: IntGauge,
    pub rooms: IntGauge,
    pub ring_members: IntGauge,
    pub people: IntGauge,
    pub editors: IntGauge,
    pub messages_received: IntCounterVec,
    pub messages_sent: IntCounterVec,
    pub bytes_received: IntCounter,
    pub bytes_sent: IntCounter,
    pub patches_acked: IntCounter,
    pub rejects: IntCounterVec,
    pub closes: IntCounterVec,
    pub room_exits: IntCounterVec,
    pub patch_durable_seconds: Histogram,
    pub journal_batches: IntCounter,
    pub journal_commit_seconds: Histogram,
    pub snapshots: IntCounter,
    pub rate_limited: IntCounter,
    pub documents_paced: IntCounterVec,
    pub requests_paced: IntCounter,
    pub presence_dropped: IntCounter,
    pub welcomes_waited: IntCounter,
    pub joins: IntCounterVec,
    pub queue_overflows: IntCounter,
    pub presence_tick_seconds: Histogram,
    pub snapshot_seconds: Histogram,
    pub http_requests: IntCounterVec,
    pub tcp_connections: IntGauge,
    pub connections_refused: IntCounter,
    pub body_timeouts: IntCounter,
    pub coordinator_operations: IntCounterVec,
    pub memory_rss: IntGauge,
    pub memory_budget: IntGauge,
    pub memory_promised: IntGauge,
    pub memory_refusals: IntCounter,
    /// Refusals at an owner's storage limit (`storage::REFUSED_WHAT`).
    pub storage_refusals: IntCounterVec,
    pub upgrades_paced: IntCounter,
    pub lane_runs: IntCounter,
    pub inbound_paused: IntCounter,
    /// Server API patches by outcome (`applied`, `replayed`, `refused`).
    pub server_patches: IntCounterVec,
    pub kicks: IntCounter,
    pub events_dropped: IntCounter,
    pub webhooks: WebhookMetrics,
}

/// Registers `metric` with `registry` and hands it back (names are fixed, so a
/// failure is a bug).
fn registered<M: Collector + Clone + 'static>(registry: &Registry, metric: M) -> M {
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric");
    metric
}

fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    registered(registry, IntCounter::new(name, help).expect("valid metric"))
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registered(registry, c)
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    registered(registry, IntGauge::new(name, help).expect("valid metric"))
}

fn histogram(registry: &Registry, name: &str, help: &str, buckets: &[f64]) -> Histogram {
    let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec()))
        .expect("valid metric");
    registered(registry, h)
}

/// Latency buckets from 0.5 ms to 10 s.
const LATENCY: &[f64] = &[
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];

impl Metrics {
    /// A node's own metrics, every fixed label exported at zero. Each node instance
    /// has its own, so two nodes can live in one process (as tests run them).
    pub fn new() -> Arc<Self> {
        Arc::new(Self::unshared())
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
