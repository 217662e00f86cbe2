//! A router run inside the test's process with `atrium_router::run(config, shutdown)`:
//! it routes to a spawned node, and returns once told to stop.

mod common;

use std::time::{Duration, Instant};

use common::http::{account, create_file, get_doc, try_http};
use common::inside::InsideRouter;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_starts_and_stops_inside_a_process() {
    let _serial = serial().await;
    let fleet = fleet(1, 0).await;
    // It learns the fleet from the coordinator, then proxies to the node.
    let router = InsideRouter::start(&fleet.coordinator, 1).await;
    let port = router.port;
    let token = account(port).await;
    let file = create_file(port, &token).await;
    let (version, _) = get_doc(port, &token, &file).await;
    assert_eq!(version, 0);

    let asked = Instant::now();
    let ended = router.stop(Duration::from_secs(10)).await;
    assert_eq!(ended, Ok(()));
    eprintln!("in-process router stopped in {:?}", asked.elapsed());
    // The listening socket is dropped as the router's tasks wind down, which can be a
    // moment after `stop` returns (one suite run on 2026-12-05 still got an answer at once).
    let mut answered = true;
    for _ in 0..20 {
        answered = try_http(port, "GET", "/api/health", &[], None)
            .await
            .is_some();
        if !answered {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!answered, "the router still listens 2 s after it stopped");
}
