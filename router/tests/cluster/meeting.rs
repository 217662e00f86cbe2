//! Sockets and REST for one file meet on one node, whichever router they come through.

use serde_json::json;

use super::common::client::Client;
use super::common::http::{account, create_file, get_doc, http_at};
use super::common::*;
use super::drain::sigterm_drains_then_closes_with_1012;

/// Sockets for one file through different routers meet on one node; REST follows them;
/// bad ids and node internals stop at the router; SIGTERM closes sockets with 1012.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_and_rest_for_a_file_meet_on_one_node_nats() {
    meet_on_one_node("ATRIUM_TEST_NATS_URL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_and_rest_for_a_file_meet_on_one_node_redis() {
    meet_on_one_node("ATRIUM_TEST_REDIS_URL").await;
}

async fn meet_on_one_node(server_env: &str) {
    let _serial = serial().await;
    let mut fleet = fleet_on(server_env, 3, 2).await;
    let (r0, r1) = (fleet.routers[0].port, fleet.routers[1].port);
    let token = account(r0).await;

    // Bad ids and node internals are answered by the router itself.
    for path in [
        "/files/bad.id/ws",
        "/api/files/a%20b/doc",
        &format!("/api/files/{}", "x".repeat(65)),
    ] {
        let r = http_at(r0, "GET", path, &[], None).await;
        r.assert_status(400);
        assert_eq!(
            r.body()["error"]["code"],
            "bad-request",
            "{path}: {}",
            r.text
        );
        assert!(r.body()["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    for path in ["/metrics", "/ready"] {
        let r = http_at(r0, "GET", path, &[], None).await;
        r.assert_status(404);
        assert!(
            !r.text.contains("atrium_node"),
            "{path} leaked node data: {}",
            r.text
        );
    }
    // Other routes reach some node.
    http_at(r1, "GET", "/health", &[], None)
        .await
        .assert_status(200);

    for _ in 0..3 {
        let file = create_file(r1, &token).await;
        let mut a = Client::join(r0, &file, &token).await;
        let mut b = Client::join(r1, &file, &token).await;
        a.send_patch(1, "ra", json!(1)).await;
        a.expect("ack", Some(1), WAIT).await;
        let seen = b.expect("patch", None, WAIT).await;
        assert_eq!(seen["ops"][0]["id"], "ra", "b saw {seen}");
        b.send_patch(1, "rb", json!(2)).await;
        b.expect("ack", Some(1), WAIT).await;
        let seen = a.expect("patch", None, WAIT).await;
        assert_eq!(seen["ops"][0]["id"], "rb", "a saw {seen}");

        // REST for the file reaches the node serving it, through either router.
        let (v0, doc0) = get_doc(r0, &token, &file).await;
        let (v1, doc1) = get_doc(r1, &token, &file).await;
        assert_eq!((v0, &doc0), (v1, &doc1));
        assert_eq!(v0, 2, "both patches in the document: {doc0}");
        let holder = fleet
            .serving(&token, &file)
            .await
            .expect("someone serves the file");
        // The node serving it answers for it itself (`get_doc` asserts the 200).
        get_doc(fleet.node(&holder).port, &token, &file).await;
    }
    // An upgrade the node answers without switching (no Sec-WebSocket-Key) is counted
    // with its reason, so a failed handshake never goes unseen.
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let file = create_file(r0, &token).await;
        let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", r0))
            .await
            .unwrap();
        let req = format!(
            "GET /files/{file}/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        raw.write_all(req.as_bytes()).await.unwrap();
        let mut head = vec![0u8; 1024];
        let n = tokio::time::timeout(WAIT, raw.read(&mut head))
            .await
            .unwrap()
            .unwrap();
        let head = String::from_utf8_lossy(&head[..n]).into_owned();
        assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    }
    // The routers routed by lease or ring, and export their metrics.
    let m = http_at(fleet.routers[0].admin, "GET", "/metrics", &[], None).await;
    for name in [
        "atrium_router_requests_total",
        "atrium_router_sockets_opened_total",
        "atrium_router_routing_decisions_total",
        "atrium_router_proxy_latency_seconds_bucket",
        "atrium_router_ring_members 3",
        "atrium_router_membership_changes_total",
        "atrium_router_refused_total{reason=\"bad-id\"} 3",
        "atrium_router_refused_total{reason=\"blocked\"} 2",
        "atrium_router_upgrade_failures_total{reason=\"node-400\"} 1",
    ] {
        assert!(m.text.contains(name), "{name} missing:\n{}", m.text);
    }

    sigterm_drains_then_closes_with_1012(&mut fleet, r0, r1, &token).await;
}
