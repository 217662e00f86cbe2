//! The report's sections of a cluster run: the fleet, and what a fault cost.

use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize)]
pub struct ClusterInfo {
    /// Node ids and their addresses.
    pub nodes: BTreeMap<String, String>,
    /// The first router's address (the run's own way in).
    pub router: String,
    /// `--routers N` above 1: every router's address, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<String>,
    pub router_pid: Option<u32>,
    /// Where Postgres and the coordinator came from.
    pub services: String,
    pub coordinator: String,
    /// Each node's rooms (`/health` `stats.rooms`) at the end of the window.
    pub rooms_at_end: BTreeMap<String, u64>,
}

/// `--fault` (or `--kill-node`): what the fault cost. The `killed_*` names are kept from
/// `--kill-node` for every kind of fault.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Failover {
    /// `kill`, `pause`, `rolling`, `coordinator`, `store` or `router`.
    pub fault: String,
    /// Seconds into the measured window when the fault struck.
    pub killed_at_s: f64,
    /// What was broken: a node id, the nodes in turn, `nats-server`, `postgres` or `router`
    /// (`killed_node` is the same, by its `--kill-node` name).
    pub target: String,
    pub killed_node: String,
    /// Rooms the target node held (its `/health` `stats.rooms`) when it was chosen.
    pub killed_node_rooms: u64,
    /// Every node's rooms when the fault struck.
    pub rooms_by_node: BTreeMap<String, u64>,
    /// From the fault striking until it was undone (0 for a kill).
    pub fault_lasted_ms: f64,
    /// What was done, step by step.
    pub steps: Vec<String>,
    /// `pause`: the woken node's rooms that ended after it woke, by reason.
    pub woken_room_exits: BTreeMap<String, u64>,
    /// `store-failover*`: the standby's lag just before the kill, in ms.
    pub standby_lag_ms: Option<f64>,
    /// From the fault striking until `GET /api/files/{id}/doc` through the router had answered
    /// 200 for every file after the fault was undone; None if some file never did.
    pub recover_ms: Option<f64>,
    /// The longest time one file went without a 200 from the probe (every file every 100 ms).
    pub longest_outage_ms: f64,
    /// Files with at least one failed probe answer.
    pub files_interrupted: u64,
    /// From the fault striking until the last socket that reconnected had its welcome.
    pub clients_back_ms: Option<f64>,
    /// Acked patches whose mark is missing from the final document.
    pub acked_lost: u64,
    /// Of those, how long before the fault struck the earliest was acked, in ms (negative:
    /// after it). A store that loses only what it had not replicated loses recent acks only.
    pub lost_acked_before_fault_ms: Option<f64>,
    /// Clients whose document differs from `GET /api/files/{id}/doc` at the end.
    pub not_converged: u64,
    /// Acked patches checked, and clients compared.
    pub acked_checked: u64,
    pub clients_checked: u64,
    /// Every client's versions checked against one history per file (`crate::history`).
    pub history: crate::history::HistoryCheck,
    /// Files whose final document could not be fetched (their clients and patches count as
    /// not converged and lost).
    pub files_unreadable: u64,
    /// Clients whose socket was not open when the run ended.
    pub clients_disconnected_at_end: u64,
    /// Clients that had not finished 10 s after the run told them to close.
    pub clients_unfinished: u64,
    pub reconnects: u64,
    pub reconnect_failures: u64,
    /// First joins refused with a close asking to come back (4009 while rooms settle), retried.
    pub join_retries: u64,
    pub resent_patches: u64,
    /// `--routers N` above 1: joins sent to the next router because one could not be reached.
    #[serde(skip_serializing_if = "is_zero")]
    pub router_switches: u64,
    /// `--routers N` above 1: what the availability probe saw through each router alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<RouterServed>,
    /// `stale-router`: how long each router kept failing the dead node's files.
    #[serde(flatten)]
    pub stale: Option<StaleRouter>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the availability probe saw through one router.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RouterServed {
    pub router: String,
    /// As `recover_ms`, through this router alone (a router down serves nothing).
    pub recover_ms: Option<f64>,
    pub longest_outage_ms: f64,
    pub files_interrupted: u64,
}

/// `stale-router`: one router cut from the coordinator, then the busiest node killed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StaleRouter {
    /// The router cut from the coordinator.
    pub stale_router: String,
    /// The killed node's files.
    pub dead_node_files: u64,
    /// From the kill until the cut router served every one of the dead node's files again
    /// (200s lasting to the end of probing); None if some never were.
    pub stale_router_ms: Option<f64>,
    /// The same through the routers that still heard the coordinator (the slowest of them).
    pub healthy_router_ms: Option<f64>,
}
