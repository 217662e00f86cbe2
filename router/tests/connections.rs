//! One address cannot take every connection the router holds: past
//! `ATRIUM_ROUTER_CONNECTIONS_PER_IP` its connections are answered 429 and closed, and
//! other addresses are still served. A router run inside the test's process, no fleet.

mod common;

use std::time::Duration;

use atrium_testkit::tcp::{connect_from, first_words};
use common::inside::InsideRouter;
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_connection() {
    let _serial = serial().await;
    const PER_ADDRESS: usize = 8;
    const OPENED: usize = 32;
    let router = InsideRouter::start_with(
        "memory://",
        0,
        &["--connections-per-ip=8", "--max-connections=64"],
    )
    .await;
    let port = router.port;
    let mut held = Vec::new();
    for _ in 0..OPENED {
        held.push(connect_from([127, 0, 0, 1], port).await);
    }
    // Another address is served while the first holds all it may.
    let mut other = connect_from([127, 0, 0, 2], port).await;
    other
        .write_all(b"GET /api/health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let served = first_words(&mut other).await;
    let mut refused = 0;
    // Which ones are refused depends on the order they are taken in, not the order opened;
    // the held ones say nothing, so all are read at once.
    let said = futures_util::future::join_all(held.iter_mut().map(first_words)).await;
    for words in said {
        if words.starts_with("HTTP/1.1 429") {
            assert!(words.contains(r#""code":"rate-limited""#), "{words}");
            assert!(
                words.to_ascii_lowercase().contains("retry-after: 2"),
                "{words}"
            );
            refused += 1;
        }
    }
    eprintln!(
        "past the cap: {refused} of {} answered 429; another address: {served:.40}",
        OPENED - PER_ADDRESS
    );
    assert_eq!(refused, OPENED - PER_ADDRESS);
    assert!(
        served.starts_with("HTTP/1.1 ") && !served.starts_with("HTTP/1.1 429"),
        "another address was not served: {served:?}"
    );
    // The first address's places come back as it closes its connections.
    drop(held);
    let mut again = String::new();
    // Tries made before the closed ones' places came back are refused (and counted) too.
    let mut refused_again = 0;
    for _ in 0..50 {
        let mut stream = connect_from([127, 0, 0, 1], port).await;
        stream
            .write_all(b"GET /api/health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        again = first_words(&mut stream).await;
        if again.starts_with("HTTP/1.1 ") && !again.starts_with("HTTP/1.1 429") {
            break;
        }
        if again.starts_with("HTTP/1.1 429") {
            refused_again += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !again.starts_with("HTTP/1.1 429") && !again.is_empty(),
        "{again:?}"
    );
    let metrics = common::http::try_http(router.admin, "GET", "/metrics", &[], None)
        .await
        .expect("metrics");
    let text = metrics.text;
    let counted = format!(
        r#"atrium_router_refused_total{{reason="address-connections"}} {}"#,
        OPENED - PER_ADDRESS + refused_again
    );
    assert!(
        text.contains(&counted),
        "{}",
        text.lines()
            .filter(|l| l.contains("refused"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    router.stop(Duration::from_secs(10)).await.unwrap();
}

/// Connections from four addresses each send a request head of one 1 MB header and never
/// end it, half of them after empty lines (skipped before a request line, not its end). The HTTP library read up to 1 MiB of each and waited a minute a read: the review's
/// thousand such connections held 1.1 GiB of the router, and kept it. A head may now take
/// 32 KiB and 10 s; past either, the connection is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_heads_hold_at_most_32_kib_each() {
    let _serial = serial().await;
    const CONNECTIONS: usize = 400;
    let router = InsideRouter::start_with("memory://", 0, &["--connections-per-ip=200"]).await;
    let port = router.port;
    let pad = std::sync::Arc::new(vec![b'a'; 1_040_000]);
    let before = rss_kib();
    let mut attackers = Vec::new();
    for n in 0..CONNECTIONS {
        let pad = pad.clone();
        attackers.push(tokio::spawn(async move {
            let mut c = connect_from([127, 0, 0, 10 + (n % 4) as u8], port).await;
            // Half of them open with empty lines, which the HTTP library skips.
            let opening: &[u8] = if n % 2 == 0 { b"" } else { b"\r\n\r\n" };
            let sent = async {
                c.write_all(opening).await?;
                c.write_all(b"GET /api/health HTTP/1.1\r\nhost: x\r\nx-pad: ")
                    .await?;
                c.write_all(&pad).await
            };
            // Cut off part way: the rest cannot be sent.
            let _ = tokio::time::timeout(Duration::from_secs(5), sent).await;
            let mut buf = [0u8; 512];
            let closed = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    match c.read(&mut buf).await {
                        Ok(0) | Err(_) => return true,
                        Ok(_) => {}
                    }
                }
            })
            .await;
            closed.unwrap_or(false)
        }));
    }
    let mut peak = before;
    while attackers.iter().any(|a| !a.is_finished()) {
        peak = peak.max(rss_kib());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut closed = 0;
    for a in attackers {
        closed += usize::from(a.await.expect("attacker"));
    }
    let grown_mib = peak.saturating_sub(before) as f64 / 1024.0;
    println!(
        "FIGURE unfinished heads: {CONNECTIONS} connections of 1 MB heads, router grew {grown_mib:.1} MiB, {closed} closed"
    );
    assert_eq!(closed, CONNECTIONS, "connections left open");
    // 32 KiB of head each, room for the buffer's doubling, the allocator and the test itself.
    assert!(
        grown_mib < 64.0,
        "{CONNECTIONS} unfinished heads grew the router by {grown_mib:.1} MiB"
    );
    router.stop(Duration::from_secs(10)).await.unwrap();
}
