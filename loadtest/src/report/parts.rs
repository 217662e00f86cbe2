//! The report's sections as JSON: rates, problems, the server, the generator, the machine,
//! and the rows second by second.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::measure::Summary;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Rates {
    pub patches_sent_per_s: f64,
    pub acks_received_per_s: f64,
    pub patches_received_per_s: f64,
    pub presence_sent_per_s: f64,
    pub presence_received_per_s: f64,
    pub messages_sent_per_s: f64,
    pub messages_received_per_s: f64,
    pub mb_received_per_s: f64,
}

/// What the schedules asked for, to compare with what was sent.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Expected {
    pub patches_sent_per_s: f64,
    pub presence_sent_per_s: f64,
    /// Every patch reaches everyone else in its file.
    pub patches_received_per_s: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Problems {
    pub dropped_patches: u64,
    pub out_of_order: u64,
    pub unacked_patches: u64,
    pub unexpected_closes: BTreeMap<String, u64>,
    pub connection_errors: u64,
    /// Joins reset, or ended with no close frame, between the TCP connect and the welcome.
    pub handshake_resets: u64,
    pub rate_limited: u64,
    pub rejected: u64,
    pub rejects: BTreeMap<String, u64>,
    pub notices: BTreeMap<String, u64>,
    pub joined_as_viewer: u64,
    pub sends_skipped: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Server {
    pub pid: Option<u32>,
    pub cpu_cores: Option<f64>,
    pub cpu_percent: Option<f64>,
    pub cpu_us_per_message: Option<f64>,
    /// CPU seconds over the window ÷ updates delivered in it (patches and presence entries
    /// that reached a client other than their sender).
    pub cpu_us_per_delivered_update: Option<f64>,
    pub delivered_updates_per_second: Option<f64>,
    pub messages_in_per_s: Option<f64>,
    pub messages_out_per_s: Option<f64>,
    /// `health` (the node's counters) or `generator` (our own counts).
    pub messages_counted_by: String,
    pub max_rss_mb: Option<f64>,
    pub rss_before_mb: Option<f64>,
    pub rss_end_mb: Option<f64>,
    pub kb_per_connection: Option<f64>,
    pub sched_delay_p99_ms: Option<f64>,
    pub connections: Option<u64>,
    pub rooms: Option<u64>,
    pub people: Option<u64>,
    pub editors: Option<u64>,
    /// `--pin-server`, as given.
    pub pinned_to: Option<String>,
    /// The CPUs the measured process may run on, read back from its `/proc/<pid>/status`.
    pub cpus_allowed: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Generator {
    pub workers: usize,
    pub sched_delay_ms: Summary,
    pub sched_delay_p99_ms: f64,
    pub sched_delay_max_ms: f64,
    pub cpu_cores: Option<f64>,
    pub cpu_us_per_message: Option<f64>,
    /// The generator's CPU over the window ÷ the same delivered updates as the server's.
    pub cpu_us_per_delivered_update: Option<f64>,
    pub delivered_updates_per_second: f64,
    pub busy_warning: bool,
    pub busy_reason: Option<String>,
    /// Cores the generator may use: its threads, at most the CPUs it may run on.
    pub usable_cores: f64,
    /// The generator, not the server, was the limit of the run.
    pub generator_limited: bool,
    pub generator_limited_reason: Option<String>,
    /// `--pin-generator`, as given.
    pub pinned_to: Option<String>,
    /// The CPUs this tool may run on, read back from its `/proc/self/status`.
    pub cpus_allowed: Option<String>,
}

/// The whole machine over the window: what the server and generator used, and everything else.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub busy_cores: Option<f64>,
    /// Busy CPU that was neither the server's nor the generator's (other processes, the kernel's
    /// softirq work on behalf of loopback traffic is partly here).
    pub other_cores: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct DropResult {
    pub server_up: bool,
    pub health_after_ms: Option<f64>,
    pub connections_zero_after_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct MemoryPoint {
    pub t_s: f64,
    pub rss_mb: Option<f64>,
    pub connections: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Second {
    pub t_s: f64,
    pub phase: String,
    pub open: u64,
    pub patches_sent: f64,
    pub patches_received: f64,
    pub presence_sent: f64,
    pub presence_received: f64,
    pub mb_received: f64,
    pub relay_p50_ms: f64,
    pub relay_p99_ms: f64,
    pub ack_p50_ms: f64,
    pub ack_p99_ms: f64,
    pub presence_p50_ms: f64,
    pub presence_p99_ms: f64,
    pub generator_delay_p99_ms: f64,
    pub server_cpu_percent: Option<f64>,
    /// This tool's own CPU in the second, % of a core.
    pub generator_cpu_percent: Option<f64>,
    pub server_rss_mb: Option<f64>,
    pub server_up: bool,
}
