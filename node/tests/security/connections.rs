//! Connections: slow bodies, the node's connection cap, and the metrics on the public address.

use super::*;

/// Reads from a raw connection until EOF or `dur`; (bytes, whether EOF came).
async fn read_until_closed(stream: &mut tokio::net::TcpStream, dur: Duration) -> (String, bool) {
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + dur;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

/// Request bodies that never finish: 200 connections send headers and part of a
/// body, then nothing. Each gets 408 `timeout` at the body deadline and is
/// closed (before: all 200 stayed open for as long as the client liked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_finishes_is_answered_408_and_closed() {
    use tokio::io::AsyncWriteExt;
    // 200 connections of one address: more than its default cap (`one_address_cannot_take_
    // every_connection` in the hostile suite), which is not what this case is about.
    let node = node(&[
        ("ATRIUM_BODY_TIMEOUT_MS", "500"),
        ("ATRIUM_CONNECTIONS_PER_IP", "0"),
    ])
    .await;
    let token = new_account(&node, "slow").await;
    const SLOW: usize = 200;
    let started = Instant::now();
    let mut streams = Vec::new();
    for i in 0..SLOW {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", node.port))
            .await
            .expect("connect");
        let (path, auth) = match i % 3 {
            0 => ("/api/signin", String::new()),
            1 => ("/api/files", format!("Authorization: Bearer {token}\r\n")),
            _ => ("/api/signup", String::new()),
        };
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n\
             Content-Length: 1000\r\n\r\n{{\"email\": \"slow@exa"
        );
        stream.write_all(head.as_bytes()).await.expect("send");
        streams.push(stream);
    }
    let mut slowest = Duration::ZERO;
    for stream in &mut streams {
        let (text, closed) = read_until_closed(stream, Duration::from_secs(5)).await;
        assert!(text.starts_with("HTTP/1.1 408"), "answer: {text:?}");
        assert!(text.contains(r#""code":"timeout""#), "{text}");
        assert!(closed, "the connection stays open after the 408: {text}");
        slowest = slowest.max(started.elapsed());
    }
    // The node still answers everyone else.
    get(&node, "/health", None).await.assert_status(200);
    let timeouts = metric_sum(
        &metrics_text(&node).await,
        "atrium_body_timeouts_total",
        &[],
    );
    assert_eq!(timeouts, Some(SLOW as f64));
    figure(
        json!({"case": "unfinished bodies", "connections": SLOW, "answered_408_and_closed": SLOW,
               "slowest_close_ms": slowest.as_millis()}),
    );
}

/// A node-wide cap on open connections (HTTP and sockets together): at the cap
/// a new connection gets 503 `unavailable` with `Retry-After` and is closed, and
/// is counted; a freed slot is usable again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_node_cap_are_answered_503_and_closed() {
    use tokio::io::AsyncWriteExt;
    let node = node(&[("ATRIUM_MAX_CONNECTIONS", "20")]).await;
    let owner = new_account(&node, "capped").await;
    let file = s(&create_file(&node, &owner, "Capped", None).await["id"]).to_string();
    // 10 sockets (upgraded, never saying hello) and 10 idle connections.
    let mut sockets = Vec::new();
    for _ in 0..10 {
        sockets.push(RawWs::connect(&node, &file).await);
    }
    let mut idle = Vec::new();
    for _ in 0..10 {
        idle.push(
            tokio::net::TcpStream::connect(("127.0.0.1", node.port))
                .await
                .expect("connect"),
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = 0;
    for _ in 0..5 {
        let mut extra = tokio::net::TcpStream::connect(("127.0.0.1", node.port))
            .await
            .expect("the kernel accepts");
        let _ = extra
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            .await;
        let (text, closed) = read_until_closed(&mut extra, Duration::from_secs(5)).await;
        assert!(text.starts_with("HTTP/1.1 503"), "answer: {text:?}");
        assert!(text.to_lowercase().contains("retry-after: 2"), "{text}");
        assert!(text.contains(r#""code":"unavailable""#), "{text}");
        assert!(closed, "closed after the 503");
        refused += 1;
    }
    // Sockets hold their slot: closing idle connections, not sockets, frees room.
    drop(idle.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    get(&node, "/health", None).await.assert_status(200);
    let text = metrics_text(&node).await;
    assert_eq!(
        metric_sum(&text, "atrium_connections_refused_total", &[]),
        Some(refused as f64)
    );
    drop(sockets);
    figure(json!({"case": "connection cap", "cap": 20, "held": 20, "refused_503": refused}));
}

/// Without an admin address, /metrics on the main (public) address is for
/// server admins only (before: anyone could read it); the admin address, when
/// set, serves it to whoever reaches it (Prometheus), and the main one is 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_on_the_public_address_need_a_server_admin() {
    let admin_email = unique_email("ops");
    let node = node(&[("ATRIUM_ADMIN_BIND", ""), ("ATRIUM_ADMINS", &admin_email)]).await;
    assert_eq!(node.admin_port(), None);
    for token in [None, Some("not-a-token")] {
        let r = get(&node, "/metrics", token).await;
        r.assert_error(401, "unauthorized");
    }
    let someone = new_account(&node, "someone").await;
    get(&node, "/metrics", Some(&someone))
        .await
        .assert_error(403, "forbidden");
    let (admin, _) = signup(&node, &admin_email).await;
    let r = get(&node, "/metrics", Some(&admin)).await;
    r.assert_status(200);
    assert!(has_metric(&r.text, "atrium_connections"), "{}", r.text);

    let with_admin = self::node(&[]).await;
    let port = with_admin.admin_port().expect("admin address");
    http_at(port, "GET", "/metrics", &[], None)
        .await
        .assert_status(200);
    get(&with_admin, "/metrics", None).await.assert_status(404);
}
