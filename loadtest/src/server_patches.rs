//! `--server-patches-per-s`: patches from the app's server (`POST /api/files/{id}/patches`,
//! docs/server-api.md) during the measured window, files in turn, at a steady rate; their
//! latency is from the request to the answer, which comes once the patch is durable and
//! relayed. Each moves a rectangle of the file's first page (`set`), so documents keep their
//! size, and reaches every client as a `patch` like any other (version gaps and relay
//! latency above include them).
//!
//! The API key: `--api-key` for a running node; with `--spawn` or `--spawn-cluster`, the
//! spawned nodes name a server admin (`LOADTEST_ADMIN`) who makes one at the start.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::json;

use crate::http::{request, request_until_served, Endpoint};
use crate::measure::{round3, Summary};
use crate::setup::{random_id, rect_id, FileKeys, RECTS_PER_PAGE};

/// The server admin spawned nodes are told of (`ATRIUM_ADMINS`).
pub const LOADTEST_ADMIN: &str = "loadtest-admin@example.com";

/// How long one patch may take before it counts as failed.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// Requests in flight at most; beyond it a tick is skipped (and counted).
const MAX_IN_FLIGHT: usize = 256;

/// What the server patches did (`server_patches` in the JSON report).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerPatches {
    /// Patches a second, as asked.
    pub per_s: f64,
    pub applied: u64,
    pub failed: u64,
    /// Ticks skipped because `MAX_IN_FLIGHT` requests were waiting.
    pub skipped: u64,
    /// From the request to the answer (durable, relayed).
    pub latency_ms: Summary,
    /// The first few failures' reasons.
    pub errors: Vec<String>,
}

/// The API key to use: the one given, else one a fresh server admin makes on a spawned node.
pub async fn api_key(endpoint: &Endpoint, given: Option<&str>) -> Result<String> {
    if let Some(k) = given {
        return Ok(k.to_string());
    }
    let timeout = Duration::from_secs(30);
    let body = json!({"email": LOADTEST_ADMIN, "password": random_id(24), "name": "Load admin"});
    let admin = request_until_served(endpoint, "POST", "/api/signup", None, &body)
        .await?
        .ok("sign up the load tool's server admin")?;
    let token = admin["token"]
        .as_str()
        .ok_or_else(|| anyhow!("sign-up without a token"))?;
    let body = json!({"name": "load tool", "scopes": ["server"]});
    let key = request(
        endpoint,
        "POST",
        "/api/admin/api-keys",
        Some(token),
        Some(&body),
        timeout,
    )
    .await?
    .ok("make an API key")?;
    key["key"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("an API key answer without a key"))
}

#[derive(Default)]
struct Tally {
    applied: u64,
    failed: u64,
    errors: Vec<String>,
    latency: Option<Histogram<u64>>,
}

/// Sends server patches at `per_s` until `stop`; answers what they did.
pub async fn run(
    endpoint: Endpoint,
    key: String,
    files: Vec<FileKeys>,
    per_s: f64,
    stop: Arc<AtomicBool>,
) -> ServerPatches {
    let tally = Arc::new(Mutex::new(Tally {
        latency: Histogram::new_with_bounds(1, 60_000_000, 3).ok(),
        ..Tally::default()
    }));
    let run = random_id(8);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / per_s.max(0.001)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut tasks = tokio::task::JoinSet::new();
    let mut skipped = 0;
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) && !files.is_empty() {
        tick.tick().await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(permit) = in_flight.clone().try_acquire_owned() else {
            skipped += 1;
            continue;
        };
        let f = &files[n as usize % files.len()];
        let rect = rect_id(0, (n as usize / files.len()) % RECTS_PER_PAGE);
        let body = json!({
            "op_id": format!("lt-{run}-{n}"),
            "ops": [{"op": "set", "id": rect, "props": {"x": n % 800, "by": "server"}}],
        });
        let path = format!("/api/files/{}/patches", f.id);
        n += 1;
        let (endpoint, key, tally) = (endpoint.clone(), key.clone(), tally.clone());
        tasks.spawn(async move {
            let t = Instant::now();
            let answer = request(
                &endpoint,
                "POST",
                &path,
                Some(&key),
                Some(&body),
                ANSWER_WITHIN,
            )
            .await
            .and_then(|a| a.ok("server patch"));
            let us = (t.elapsed().as_micros() as u64).max(1);
            let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
            match answer {
                Ok(_) => {
                    t.applied += 1;
                    if let Some(h) = t.latency.as_mut() {
                        let _ = h.record(us);
                    }
                }
                Err(e) => {
                    t.failed += 1;
                    if t.errors.len() < 5 {
                        t.errors.push(e.to_string());
                    }
                }
            }
            drop(permit);
        });
        // Finished ones are reaped as we go, so the set stays small.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let t = tally.lock().unwrap_or_else(|p| p.into_inner());
    ServerPatches {
        per_s: round3(per_s),
        applied: t.applied,
        failed: t.failed,
        skipped,
        latency_ms: t.latency.as_ref().map(Summary::of).unwrap_or_default(),
        errors: t.errors.clone(),
    }
}
