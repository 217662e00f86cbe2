//! Prometheus metrics. Names follow one rule: an `atrium_` prefix, base units in
//! the name (`_seconds`, `_bytes`), counters end in `_total`, and labels come only
//! from small fixed sets (never a file or account id).

use std::sync::Arc;

use atrium_protocol::{CloseCode, CLIENT_MESSAGES, REJECT_CODES, SERVER_MESSAGES};
use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

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

fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    let c = IntCounter::new(name, help).expect("valid metric");
    registry
        .register(Box::new(c.clone()))
        .expect("unique metric");
    c
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(c.clone()))
        .expect("unique metric");
    c
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    let g = IntGauge::new(name, help).expect("valid metric");
    registry
        .register(Box::new(g.clone()))
        .expect("unique metric");
    g
}

fn histogram(registry: &Registry, name: &str, help: &str, buckets: &[f64]) -> Histogram {
    let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec()))
        .expect("valid metric");
    registry
        .register(Box::new(h.clone()))
        .expect("unique metric");
    h
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

    pub(crate) fn unshared() -> Self {
        let r = Registry::new();
        Metrics {
            connections: gauge(&r, "atrium_connections", "Open sockets."),
            rooms: gauge(&r, "atrium_rooms", "Rooms in memory."),
            ring_members: gauge(
                &r,
                "atrium_ring_members",
                "Nodes this node sees taking new work (live, not draining): its ring of files.",
            ),
            people: gauge(&r, "atrium_people", "People in rooms (sockets past hello)."),
            editors: gauge(
                &r,
                "atrium_editors",
                "People in rooms holding an editor seat.",
            ),
            messages_received: counter_vec(
                &r,
                "atrium_messages_received_total",
                "Socket messages received, by type.",
                &["type"],
            ),
            messages_sent: counter_vec(
                &r,
                "atrium_messages_sent_total",
                "Socket messages sent, by type (a room message counts once per socket).",
                &["type"],
            ),
            bytes_received: counter(
                &r,
                "atrium_received_bytes_total",
                "Socket payload bytes received.",
            ),
            bytes_sent: counter(&r, "atrium_sent_bytes_total", "Socket payload bytes sent."),
            patches_acked: counter(
                &r,
                "atrium_patches_acked_total",
                "Patches made durable and acked.",
            ),
            rejects: counter_vec(
                &r,
                "atrium_rejects_total",
                "Rejected messages, by code.",
                &["code"],
            ),
            closes: counter_vec(
                &r,
                "atrium_closes_total",
                "Sockets closed by the node, by close code.",
                &["code"],
            ),
            room_exits: counter_vec(
                &r,
                "atrium_room_exits_total",
                "Rooms that ended, by reason: idle, shutdown, moved (handed to a new ring owner), \
                 deleted, lease-lost (the coordinator lease lapsed or was taken), fenced (a store \
                 write refused by the epoch fence).",
                &["reason"],
            ),
            patch_durable_seconds: histogram(
                &r,
                "atrium_patch_durable_seconds",
                "From a patch being applied in memory to it being synced to disk.",
                LATENCY,
            ),
            journal_batches: counter(
                &r,
                "atrium_journal_commits_total",
                "Group commits of the op log.",
            ),
            journal_commit_seconds: histogram(
                &r,
                "atrium_journal_commit_seconds",
                "Duration of one group commit (one transaction and one sync).",
                LATENCY,
            ),
            snapshots: counter(&r, "atrium_snapshots_total", "Snapshots written."),
            rate_limited: counter(
                &r,
                "atrium_rate_limited_total",
                "Times a socket went over its message rate (each answered with a 429 notice).",
            ),
            memory_rss: gauge(
                &r,
                "atrium_memory_resident_bytes",
                "Resident memory of the node, as its memory budget last sampled it.",
            ),
            memory_budget: gauge(
                &r,
                "atrium_memory_budget_bytes",
                "The node's memory budget (ATRIUM_MEMORY_BUDGET); new work is refused a tenth (at least 16 MiB) below it.",
            ),
            lane_runs: counter(
                &r,
                "atrium_lane_runs_total",
                "Pieces of work on large documents run on the bulk lane (off the runtime's workers).",
            ),
            upgrades_paced: counter(
                &r,
                "atrium_ws_upgrades_paced_total",
                "Socket upgrades that waited their address's turn (ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND).",
            ),
            memory_refusals: counter(
                &r,
                "atrium_memory_refusals_total",
                "Sockets, rooms and requests refused because the node was at its memory budget.",
            ),
            inbound_paused: counter(
                &r,
                "atrium_inbound_paused_total",
                "Times a socket's reading paused because its waiting messages or bytes were at their bound.",
            ),
            joins: counter_vec(
                &r,
                "atrium_joins_total",
                "Hellos by outcome: admitted (welcomed), deferred (closed with a code that asks \
                 the client to come back, e.g. 1013 with a retry hint), refused (a code that \
                 tells it to stop).",
                &["outcome"],
            ),
            welcomes_waited: counter(
                &r,
                "atrium_welcomes_waited_total",
                "Welcomes held until the patches the room had accepted before the join were durable.",
            ),
            presence_dropped: counter(
                &r,
                "atrium_presence_dropped_total",
                "Presence messages dropped for exceeding the per-socket presence rate.",
            ),
            queue_overflows: counter(
                &r,
                "atrium_queue_overflows_total",
                "Sockets closed with 4008 because their send queue overflowed.",
            ),
            presence_tick_seconds: histogram(
                &r,
                "atrium_presence_tick_seconds",
                "Time from the start of a room's presence tick to its last slice.",
                LATENCY,
            ),
            snapshot_seconds: histogram(
                &r,
                "atrium_snapshot_seconds",
                "Duration of a snapshot write.",
                LATENCY,
            ),
            coordinator_operations: counter_vec(
                &r,
                "atrium_coordinator_operations_total",
                "Calls to the coordinator, by operation.",
                &["operation"],
            ),
            http_requests: counter_vec(
                &r,
                "atrium_http_requests_total",
                "HTTP requests answered, by status class.",
                &["status"],
            ),
            tcp_connections: gauge(
                &r,
                "atrium_tcp_connections",
                "Open TCP connections on the main address (HTTP and sockets).",
            ),
            connections_refused: counter(
                &r,
                "atrium_connections_refused_total",
                "Connections refused at ATRIUM_MAX_CONNECTIONS (answered 503 or closed).",
            ),
            body_timeouts: counter(
                &r,
                "atrium_body_timeouts_total",
                "Requests whose body did not arrive within ATRIUM_BODY_TIMEOUT_MS (408).",
            ),
            registry: r,
        }
        .with_every_label_at_zero()
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
