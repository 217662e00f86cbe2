//! Health, readiness, metrics and routes that do not exist.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_ready_metrics_and_unknown_routes() {
    let node = Node::start(&[]).await;

    let r = get(&node, "/health", None).await;
    r.assert_status(200);
    assert_eq!(r.body()["ok"], json!(true), "{}", r.text);
    assert!(
        r.body()["node"].as_str().is_some_and(|n| !n.is_empty()),
        "health names the node: {}",
        r.text
    );

    get(&node, "/ready", None).await.assert_status(200);

    // On the admin address (the test nodes have one; without one, /metrics on
    // the main address is for server admins: node/tests/security/).
    let text = metrics_text(&node).await;
    assert!(text.contains("atrium_"), "metrics: {text}");
    assert!(
        text.lines().any(|l| l.starts_with("# TYPE atrium_")),
        "Prometheus text format with TYPE lines: {text}"
    );

    for path in ["/nope", "/api/nope", "/api/files/abc/nope"] {
        get(&node, path, None).await.assert_error(404, "not-found");
    }
}

/// A path that is a route for some method answers any other method with 405, the paths
/// with ids and the assets included (a bad id is still a 400 first, as on every route).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_methods_on_a_route_are_405() {
    let node = Node::start(&[]).await;
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        for path in [
            "/files/abc/ws",
            "/assets/app.js",
            "/assets/nope.css",
            "/api/files/abc/doc",
            "/health",
            "/api/me",
        ] {
            send_empty(&node, method, path, None)
                .await
                .assert_error(405, "method-not-allowed");
        }
        send_empty(&node, method, "/files/bad$/ws", None)
            .await
            .assert_error(400, "bad-request");
    }
}
