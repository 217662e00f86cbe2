//! The report: what a run measured, as JSON (names other tools rely on) and as text.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::measure::{round3, Summary};
use crate::profile::ProfileReport;

mod fleet;
mod parts;
mod text;
mod text_fleet;
mod text_machine;

#[cfg(test)]
mod tests;

pub use fleet::{ClusterInfo, Failover, RouterServed, StaleRouter};
pub use parts::{
    DropResult, Expected, Generator, Machine, MemoryPoint, Problems, Rates, Second, Server,
};

/// Generator scheduling delay (p99, ms) above which its latencies are suspect.
pub const BUSY_DELAY_P99_MS: f64 = 20.0;
/// Share of scheduled sends skipped above which the offered load was not delivered.
pub const BUSY_SKIPPED_SHARE: f64 = 0.01;
/// Share of its usable cores above which the generator, not the server, set the pace.
pub const LIMITED_CPU_SHARE: f64 = 0.9;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub label: String,
    pub date_unix_s: u64,
    pub target: String,
    pub users: usize,
    pub files: usize,
    pub pages: usize,
    /// Clients that asked to edit.
    pub editors: usize,
    pub edit_rate: f64,
    pub presence_rate: f64,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub connected: u64,
    pub connect_s: f64,
    /// Every socket connected at once (`--storm`).
    pub storm: bool,
    pub patch_relay_ms: Summary,
    pub patch_ack_ms: Summary,
    pub presence_ms: Summary,
    pub rates: Rates,
    pub expected: Expected,
    pub problems: Problems,
    pub server: Server,
    pub generator: Generator,
    pub drop: Option<DropResult>,
    /// `--spawn-cluster`: the fleet that ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    /// `--kill-node`: what the kill cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<Failover>,
    /// `--restore-every`: the restores made during the measured window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restores: Option<crate::restores::Restores>,
    /// `--server-patches-per-s`: the server API's patches during the measured window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_patches: Option<crate::server_patches::ServerPatches>,
    pub machine: Machine,
    /// `--profile`: where the node's CPU profile went.
    pub profile: Option<ProfileReport>,
    /// Server memory every second, the whole run.
    pub memory: Vec<MemoryPoint>,
    /// One row a second, the whole run.
    pub seconds: Vec<Second>,
}

/// CPU µs per message (or per delivered update): CPU seconds over the window ÷ how many were
/// handled in it.
pub fn cpu_us_per(cpu_seconds: f64, handled: u64) -> Option<f64> {
    (handled > 0).then(|| round3(cpu_seconds * 1e6 / handled as f64))
}

/// Memory per connection in KB: the rise of resident memory ÷ connections.
pub fn kb_per_connection(before: u64, after: u64, connections: u64) -> Option<f64> {
    (connections > 0)
        .then(|| round3(after.saturating_sub(before) as f64 / 1024.0 / connections as f64))
}

pub fn mb(bytes: u64) -> f64 {
    round3(bytes as f64 / (1024.0 * 1024.0))
}

/// Whether the generator was too busy for its numbers to be the server's alone, and why.
pub fn busy(delay_p99_ms: f64, skipped: u64, sent: u64) -> Option<String> {
    if delay_p99_ms > BUSY_DELAY_P99_MS {
        return Some(format!(
            "the generator's scheduling delay p99 was {delay_p99_ms:.1} ms (over \
             {BUSY_DELAY_P99_MS} ms): latencies include the generator's own delay"
        ));
    }
    let scheduled = sent + skipped;
    if scheduled > 0 && skipped as f64 / scheduled as f64 > BUSY_SKIPPED_SHARE {
        return Some(format!(
            "the generator skipped {skipped} of {scheduled} scheduled sends: it could not offer \
             the whole load"
        ));
    }
    None
}

/// Whether the generator, not the server, was the limit, and why: it used nearly all the
/// cores it may use (so the load it could offer and read was capped by its own CPU), or it woke
/// so late that the schedules and readings were its own.
pub fn limited(cpu_cores: Option<f64>, usable_cores: f64, delay_p99_ms: f64) -> Option<String> {
    if let Some(cores) = cpu_cores.filter(|c| *c > LIMITED_CPU_SHARE * usable_cores) {
        return Some(format!(
            "it used {cores:.2} of the {usable_cores} cores it may use (over {:.0}%)",
            LIMITED_CPU_SHARE * 100.0
        ));
    }
    if delay_p99_ms > BUSY_DELAY_P99_MS {
        return Some(format!(
            "its scheduling delay p99 was {delay_p99_ms:.1} ms (over {BUSY_DELAY_P99_MS} ms)"
        ));
    }
    None
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.1}{unit}"))
}

fn line(s: &Summary) -> String {
    format!(
        "p50 {:>8.2}  p90 {:>8.2}  p99 {:>8.2}  max {:>9.2} ms  ({} samples)",
        s.p50, s.p90, s.p99, s.max, s.count
    )
}

fn codes(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    parts.join(", ")
}
