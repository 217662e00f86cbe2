//! Asking a node how it is: `/health`, its statistics, and one sample of the server.

use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde::Deserialize;

use super::{cpu_seconds_from_stat, process_cpu_seconds, rss_from_status};
use crate::http::{request, Endpoint};

/// `/health`'s statistics (present with ATRIUM_HEALTH_STATS=1).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Stats {
    pub cpu_seconds: f64,
    pub rss_bytes: u64,
    pub connections: u64,
    pub rooms: u64,
    pub people: u64,
    pub editors: u64,
    #[serde(default)]
    pub scheduling_delay_p99_ms: f64,
    pub messages_in: u64,
    pub messages_out: u64,
}

/// One look at the server.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Whether /health answered 200 in time.
    pub up: bool,
    pub stats: Option<Stats>,
    pub cpu_seconds: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
}

/// Asks `/health`, within `timeout`.
pub async fn health(endpoint: &Endpoint, timeout: Duration) -> Result<Option<Stats>> {
    let answer = request(endpoint, "GET", "/health", None, None, timeout).await?;
    let body = answer.ok("GET /health")?;
    if body["ok"] != serde_json::Value::Bool(true) {
        return Err(anyhow!("GET /health: not ok: {body}"));
    }
    Ok(body
        .get("stats")
        .and_then(|s| serde_json::from_value(s.clone()).ok()))
}

/// Samples the server: /health, plus /proc when we know its pid.
pub async fn sample(endpoint: &Endpoint, pid: Option<u32>) -> Sample {
    let health = health(endpoint, Duration::from_millis(900)).await;
    let mut s = Sample {
        up: health.is_ok(),
        stats: health.ok().flatten(),
        ..Sample::default()
    };
    if let Some(pid) = pid {
        s.cpu_seconds = process_cpu_seconds(pid).or_else(|| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|t| cpu_seconds_from_stat(&t))
        });
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            (s.rss_bytes, s.peak_rss_bytes) = rss_from_status(&status);
        }
    }
    if let Some(stats) = &s.stats {
        s.cpu_seconds = s.cpu_seconds.or(Some(stats.cpu_seconds));
        s.rss_bytes = s.rss_bytes.or(Some(stats.rss_bytes));
    }
    s
}

/// Whether a URL's host is on this machine (loopback).
pub async fn is_loopback(authority: &str) -> Result<bool> {
    let addrs: Vec<_> = tokio::net::lookup_host(authority)
        .await
        .with_context(|| format!("cannot resolve {authority}"))?
        .collect();
    Ok(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()))
}
