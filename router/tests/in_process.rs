//! A router run inside the test's process with `atrium_router::run(config, shutdown)`:
//! it routes to a spawned node, and returns once told to stop.

mod common;

use std::time::{Duration, Instant};

use clap::Parser;
use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_starts_and_stops_inside_a_process() {
    let _serial = serial().await;
    let fleet = Fleet::start(1, 0).await;
    let (port, admin) = (free_port(), free_port());
    let config = atrium_router::RouterConfig::parse_from([
        "atrium-router".to_string(),
        format!("--bind=127.0.0.1:{port}"),
        format!("--admin-bind=127.0.0.1:{admin}"),
        format!("--coordinator={}", fleet.coordinator),
        format!("--lease-ms={LEASE_MS}"),
        "--drain-ms=100".into(),
        "--shutdown-ms=2000".into(),
    ]);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ended_tx, ended) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let when = atrium_router::When::new(async move {
            let _ = stopped.await;
        });
        let _ = ended_tx.send(atrium_router::run(config, when).map_err(|e| e.to_string()));
    });

    // It learns the fleet from the coordinator, then proxies to the node.
    let deadline = Instant::now() + Duration::from_millis(LEASE_MS * 4);
    loop {
        let health = try_http(admin, "GET", "/health", &[], None).await;
        if health.is_some_and(|h| h.status == 200 && h.body()["ring"] == json!(1)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the router never saw the node\n{}",
            fleet.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let token = account(port).await;
    let file = create_file(port, &token).await;
    let (version, _) = get_doc(port, &token, &file).await;
    assert_eq!(version, 0);

    let asked = Instant::now();
    let _ = stop.send(());
    let ended = tokio::time::timeout(Duration::from_secs(10), ended)
        .await
        .expect("run returns within 10 s of the stop")
        .expect("the router's thread answers");
    assert_eq!(ended, Ok(()));
    eprintln!("in-process router stopped in {:?}", asked.elapsed());
    assert!(
        try_http(port, "GET", "/api/health", &[], None)
            .await
            .is_none(),
        "the router stopped listening"
    );
}
