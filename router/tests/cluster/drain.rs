//! A router told to stop (SIGTERM) drains: its sockets keep working, then close with 1012.

use std::time::{Duration, Instant};

use serde_json::json;

use super::common::client::{Client, Event};
use super::common::http::{create_file, try_http};
use super::common::*;

/// SIGTERM to a third router of `fleet` while a socket to a file is open through it (and
/// one through `r1`): it stops accepting at once, the socket keeps working through the
/// drain, then gets 1012, and the router exits with 0.
pub async fn sigterm_drains_then_closes_with_1012(
    fleet: &mut Fleet,
    r0: u16,
    r1: u16,
    token: &str,
) {
    // SIGTERM: the socket keeps working through the drain, then gets 1012; the router exits.
    let file = create_file(r0, token).await;
    let mut c = Client::join(r1, &file, token).await;
    let drain_ms = 1_000;
    let i = fleet
        .add_router(&[
            ("ATRIUM_ROUTER_DRAIN_MS", &drain_ms.to_string()),
            ("ATRIUM_ROUTER_SHUTDOWN_MS", "5000"),
        ])
        .await;
    fleet.wait_members(i, 3).await;
    let port = fleet.routers[i].port;
    let mut d = Client::join(port, &file, token).await;
    let t0 = Instant::now();
    fleet.routers[i].proc.sigterm();
    // New connections stop being accepted as soon as the router has the signal; poll
    // for it within the first half of the drain.
    let stop_by = t0 + Duration::from_millis(drain_ms / 2);
    while try_http(port, "GET", "/health", &[], None).await.is_some() {
        assert!(Instant::now() < stop_by, "still accepting after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    d.send_patch(1, "during-drain", json!(3)).await;
    d.expect("ack", Some(1), WAIT).await;
    c.expect("patch", None, WAIT).await;
    loop {
        match d.next(WAIT).await {
            Event::Json(_) => continue,
            Event::Close(code) => {
                assert_eq!(code, Some(1012));
                break;
            }
            other => panic!(
                "expected a 1012 close, got {other:?}\n{}",
                fleet.routers[i].proc.log()
            ),
        }
    }
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(drain_ms),
        "closed after {waited:?}, before the drain period"
    );
    let code = fleet.routers[i]
        .proc
        .wait_exit(Duration::from_secs(10))
        .await
        .and_then(|status| status.code());
    assert_eq!(
        code,
        Some(0),
        "router exit\n{}",
        fleet.routers[i].proc.log()
    );
}
