//! The report's rows over time: memory and counters second by second.

use serde::Serialize;

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
