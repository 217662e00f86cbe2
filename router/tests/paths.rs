//! Node internals stay behind the router whatever the spelling of the path: the router
//! refuses paths that are not in canonical form (repeated slashes, `.` and `..` segments,
//! percent-encoded letters, digits and `-._~`) before it routes at all, so it reads every
//! path the way the node will. One node, one router; needs
//! `scripts/services.sh start && source .services/env`.

mod common;

use std::time::Duration;

use common::http::{account, create_file, http_at};
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One raw HTTP/1.1 request, the target written exactly as given (no client normalises it),
/// with a bearer token when one is given: the status and the body.
async fn raw_get(port: u16, target: &str, token: Option<&str>) -> (u16, String) {
    let fut = async {
        let mut s = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let req = format!(
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.expect("write");
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.expect("read");
        let text = String::from_utf8_lossy(&buf).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("GET {target}: no status line in {text:?}"));
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    };
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .unwrap_or_else(|_| panic!("GET {target} on port {port}: no answer"))
}

/// Prometheus text exposition, as a node's `/metrics` serves it.
fn is_metrics(body: &str) -> bool {
    body.contains("# TYPE") || body.contains("atrium_node")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_internals_are_blocked_whatever_the_spelling() {
    let _serial = serial().await;
    // A server admin, for whom a node serves `/metrics` on its main address. The nodes are
    // child processes and inherit this; this file holds this one test, so nothing else in
    // the process reads the environment meanwhile.
    let admin_email = format!("admin-{}@example.test", &secret()[..12]);
    std::env::set_var("ATRIUM_ADMINS", &admin_email);
    let fleet = fleet(1, 1).await;
    let (node, router) = (fleet.nodes[0].port, fleet.routers[0].port);
    let signup = http_at(
        router,
        "POST",
        "/api/signup",
        &[],
        Some(serde_json::json!({"email": admin_email, "password": PASSWORD, "name": "Admin"})),
    )
    .await;
    signup.assert_status(201);
    let admin = signup.body()["token"].as_str().expect("token").to_string();
    let admin = Some(admin.as_str());

    // The node itself serves its metrics (to an admin) and readiness under these spellings
    // (it skips every leading slash), so a router that let them through would leak them.
    for target in ["/metrics", "//metrics", "///metrics", "/ready", "///ready"] {
        let (status, body) = raw_get(node, target, admin).await;
        assert!(
            status == 200 || (target.ends_with("ready") && status == 503),
            "the node answers {target} itself: {status} {body}"
        );
        if target.ends_with("metrics") {
            assert!(is_metrics(&body), "node {target}: {body}");
        }
    }

    // Through the router: refused (400) when not canonical, 404 when canonical but blocked.
    let cases: &[(&str, u16)] = &[
        ("/metrics", 404),
        ("/metrics/", 404),
        ("/metrics/x", 404),
        ("/ready", 404),
        ("/ready/", 404),
        ("/METRICS", 404),
        ("/Ready", 404),
        ("/metrics?x=1", 404),
        ("//metrics", 400),
        ("///metrics", 400),
        ("///ready", 400),
        ("//ready", 400),
        ("/./metrics", 400),
        ("/.//metrics", 400),
        ("/x/../metrics", 400),
        ("/../metrics", 400),
        ("/metrics/.", 400),
        ("/%6Detrics", 400),
        ("/%6detrics", 400),
        ("/%6D%65trics", 400),
        ("/%72eady", 400),
        ("/%2E/metrics", 400),
        ("/%2e%2e/metrics", 400),
        ("/metrics%", 400),
        ("/metrics%zz", 400),
        // pingora refuses absolute-form targets itself (400, no body).
        ("http://127.0.0.1//metrics", 400),
        ("http://127.0.0.1/metrics", 400),
    ];
    for &(target, want) in cases {
        let (status, body) = raw_get(router, target, admin).await;
        assert!(
            !is_metrics(&body),
            "router leaked {target}: {status} {body}"
        );
        assert!(
            !body.contains("\"ready\"") && !body.contains("\"checks\""),
            "router leaked {target}: {status} {body}"
        );
        assert_eq!(status, want, "router {target}: {body}");
        if target.starts_with("http:") && body.is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("router {target}: not JSON ({e}): {body}"));
        let code = if want == 400 {
            "bad-request"
        } else {
            "not-found"
        };
        assert_eq!(v["error"]["code"], code, "router {target}: {body}");
    }

    // File routes are read from the canonical path only: a spelling the node would read as
    // another file's route never gets routed by a different reading.
    for target in [
        "//files/abc/ws",
        "/files//abc/ws",
        "/./files/abc/ws",
        "//api/files/abc",
        "/api/files/%61bc",
        "/api/files/x/../abc",
    ] {
        let (status, body) = raw_get(router, target, admin).await;
        assert_eq!(status, 400, "router {target}: {body}");
    }

    // Canonical paths still go through.
    let (status, body) = raw_get(router, "/health", None).await;
    assert_eq!(status, 200, "router /health: {body}");
    let token = account(router).await;
    let file = create_file(router, &token).await;
    let auth = format!("Bearer {token}");
    http_at(
        router,
        "GET",
        &format!("/api/files/{file}"),
        &[("authorization", &auth)],
        None,
    )
    .await
    .assert_status(200);

    let m = http_at(fleet.routers[0].admin, "GET", "/metrics", &[], None).await;
    assert!(
        m.text
            .contains("atrium_router_refused_total{reason=\"bad-path\"}"),
        "the router counts refused paths: {}",
        m.text
    );
}
