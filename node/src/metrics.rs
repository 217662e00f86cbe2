//! Prometheus metrics. Names follow one rule: an `atrium_` prefix, base units in
//! the name (`_seconds`, `_bytes`), counters end in `_total`, and labels come only
//! from small fixed sets (never a file or account id).

use std::sync::Arc;

use atrium_protocol::{CloseCode, CLIENT_MESSAGES, REJECT_CODES, SERVER_MESSAGES};
use prometheus::core::Collector;
use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

mod catalogue;

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
    pub memory_refusals: IntCounter,
    pub upgrades_paced: IntCounter,
    pub lane_runs: IntCounter,
    pub inbound_paused: IntCounter,
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

/// The `reason` label of `atrium_room_exits_total` (`room::Exit`).
pub const ROOM_EXIT_REASONS: &[&str] = &[
    "idle",
    "shutdown",
    "moved",
    "deleted",
    "lease-lost",
    "fenced",
];

/// The `operation` label of `atrium_coordinator_operations_total` (`counted.rs`).
pub const COORDINATOR_OPERATIONS: &[&str] = &[
    "join",
    "heartbeat",
    "leave",
    "members",
    "acquire",
    "renew",
    "release",
    "holder",
    "count",
    "count_up",
    "count_down",
    "publish",
    "watch",
];

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

    /// Touches every series of the labelled families whose labels come from a fixed set,
    /// so a fresh node exports them at 0 and dashboards and alerts see 0, not "no data".
    fn with_every_label_at_zero(self) -> Self {
        for code in CloseCode::ALL {
            self.closes.with_label_values(&[&code.to_string()]);
        }
        let families: [(&IntCounterVec, &[&str]); 7] = [
            (&self.joins, &["admitted", "deferred", "refused"]),
            (&self.rejects, REJECT_CODES),
            (&self.messages_received, CLIENT_MESSAGES),
            (&self.messages_sent, SERVER_MESSAGES),
            (&self.room_exits, ROOM_EXIT_REASONS),
            (&self.coordinator_operations, COORDINATOR_OPERATIONS),
            (&self.http_requests, &["1xx", "2xx", "3xx", "4xx", "5xx"]),
        ];
        for (family, labels) in families {
            for label in labels {
                family.with_label_values(&[label]);
            }
        }
        self
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
