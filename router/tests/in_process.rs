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
    // It returns once nothing listens on its ports any more.
    let answered = try_http(port, "GET", "/api/health", &[], None).await;
    assert!(
        answered.is_none(),
        "the router still answered after it stopped"
    );
}
