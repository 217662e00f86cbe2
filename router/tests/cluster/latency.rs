//! The router's added latency for a relayed edit: a benchmark run by hand.

use std::time::{Duration, Instant};

use serde_json::json;

use super::common::client::Client;
use super::common::http::{account, create_file};
use super::common::*;

/// The router's added latency for a relayed edit (printed, never asserted). A
/// benchmark, run by hand (`--ignored`), not part of the suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by hand with --ignored --nocapture (docs/router.md)"]
async fn relayed_edit_latency_direct_and_through_the_router() {
    let _serial = serial().await;
    let fleet = fleet(3, 1).await;
    let router = fleet.routers[0].port;
    let token = account(router).await;
    let file = create_file(router, &token).await;
    // Open the room through the router, then find its node.
    let warm = Client::join(router, &file, &token).await;
    let owner = fleet.serving(&token, &file).await.expect("an owner");
    let direct = fleet.node(&owner).port;
    let count: usize = std::env::var("ATRIUM_ROUTER_BENCH_PATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);

    let rounds: usize = std::env::var("ATRIUM_ROUTER_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);

    // Alternate the two paths so drifts of a shared machine hit both alike.
    let (mut direct_samples, mut routed_samples) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (port, out) in [(direct, &mut direct_samples), (router, &mut routed_samples)] {
            let mut s = Client::join(port, &file, &token).await;
            let mut r = Client::join(port, &file, &token).await;
            for i in 1..=count as u64 {
                let t = Instant::now();
                s.send_patch(i, "bench", json!(i)).await;
                r.expect("patch", None, WAIT).await;
                out.push(t.elapsed());
                s.expect("ack", Some(i), WAIT).await;
            }
        }
    }
    drop(warm);
    let quantile = |v: &mut Vec<Duration>, q: f64| {
        v.sort();
        v[((v.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3
    };
    let (d50, d99) = (
        quantile(&mut direct_samples, 0.5),
        quantile(&mut direct_samples, 0.99),
    );
    let (r50, r99) = (
        quantile(&mut routed_samples, 0.5),
        quantile(&mut routed_samples, 0.99),
    );
    println!(
        "relayed edit, {count} patches x {rounds} rounds per path: direct p50 {d50:.3} ms \
         p99 {d99:.3} ms; through the router p50 {r50:.3} ms p99 {r99:.3} ms; \
         added p50 {:.3} ms, p99 {:.3} ms",
        r50 - d50,
        r99 - d99
    );
}
