//! Connections held open by one address: idle ones, and answers never read.

use super::*;
use atrium_testkit::tcp::{connect_from, first_words};

/// One address opens every connection the node may hold and sends nothing. Past its own
/// cap each gets 429 `rate-limited`, and someone at another address is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_connection() {
    let _serial = SERIAL.lock().await;
    const NODE_CAP: usize = 64;
    const ADDRESS_CAP: usize = 16;
    let node = Node::start(&[
        ("ATRIUM_MAX_CONNECTIONS", "64"),
        ("ATRIUM_CONNECTIONS_PER_IP", "16"),
    ])
    .await;
    let mut held = Vec::new();
    for _ in 0..NODE_CAP {
        held.push(connect_from([127, 0, 0, 1], node.port).await);
    }
    // Someone else, at another address, while the first one holds all it may.
    let mut other = connect_from([127, 0, 0, 2], node.port).await;
    other
        .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let served = first_words(&mut other).await;
    let mut answers = HashMap::<String, u64>::new();
    // Which ones are refused depends on the order they are taken in, not the order opened;
    // the held ones say nothing, so all are read at once.
    let said = futures_util::future::join_all(held.iter_mut().map(first_words)).await;
    for words in said {
        let status = words.get(..12).unwrap_or("nothing").to_string();
        if status == "HTTP/1.1 429" {
            assert!(words.contains(r#""code":"rate-limited""#), "{words}");
            assert!(
                words.to_ascii_lowercase().contains("retry-after: 2"),
                "{words}"
            );
        }
        *answers.entry(status).or_insert(0) += 1;
    }
    figure(
        json!({"case": "one address opens 64 idle connections (node cap 64, address cap 16)",
                  "answers": answers,
                  "another address": served.get(..12).unwrap_or("nothing")}),
    );
    assert_eq!(
        answers.get("HTTP/1.1 429").copied(),
        Some((NODE_CAP - ADDRESS_CAP) as u64),
        "{answers:?}"
    );
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    // Its places come back when it closes them.
    drop(held);
    let mut again = None;
    for _ in 0..50 {
        let mut stream = connect_from([127, 0, 0, 1], node.port).await;
        stream
            .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let words = first_words(&mut stream).await;
        if words.starts_with("HTTP/1.1 200") {
            again = Some(words);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(again.is_some(), "the first address was never served again");
}

/// A client asks for an 8 MB document and never reads the answer. Once the socket has
/// taken none of it for `ATRIUM_WRITE_TIMEOUT_MS`, the node closes the connection, so
/// the answer's memory and the connection's place come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_nobody_reads_is_given_up() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_WRITE_TIMEOUT_MS", "1000")]).await;
    let file = create_file(&r.node, &r.owner, "Large", Some(huge::large_document())).await;
    let id = s(&file["id"]).to_string();
    let full = get(&r.node, &format!("/api/files/{id}/doc"), Some(&r.owner)).await;
    full.assert_status(200);
    let length = serde_json::to_vec(full.body()).unwrap().len();
    assert!(length > 7_000_000, "a document of {length} bytes");

    let request = format!(
        "GET /api/files/{id}/doc HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\r\n",
        r.owner
    );
    let mut stream = huge::unread_request(r.node.port, &request).await;
    // Well past the deadline: the node has given up by now.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let ended = loop {
        match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
            Ok(Ok(0)) => break "closed",
            Ok(Ok(n)) => got += n,
            Ok(Err(_)) => break "reset",
            Err(_) => break "still open",
        }
    };
    figure(
        json!({"case": "an 8 MB answer never read (write timeout 1 s)",
                  "document_bytes": length, "bytes_the_client_got_after_4_s": got,
                  "connection": ended}),
    );
    assert_ne!(
        ended, "still open",
        "the node kept the connection ({got} bytes read)"
    );
    assert!(
        got < length,
        "the whole answer arrived ({got} of {length} bytes)"
    );
    // The node goes on serving.
    get(&r.node, &format!("/api/files/{id}/doc"), Some(&r.owner))
        .await
        .assert_status(200);
}

/// Connections from many addresses each send a request head they never finish: 400 KB of
/// one header. Hyper kept up to about 400 KB of each, and the review took a node told 64 MiB
/// to 1.26 GiB with 3,000 of them. Now a head may take 32 KiB (longer: 431), and each new
/// connection counts against the memory budget as it opens (at the budget: 503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_request_heads_stay_within_the_memory_budget() {
    let _serial = SERIAL.lock().await;
    const BUDGET_MIB: u64 = 64;
    const ADDRESSES: u8 = 10;
    // A hundred from each address where the open-file limit allows (the node's default
    // connection cap is that limit less 256; both ends are in this machine's limit).
    let fds = raise_fd_limit() as usize;
    let per_address = 100.min(fds.saturating_sub(512) / 2 / usize::from(ADDRESSES));
    let budget = format!("{BUDGET_MIB}M");
    let node = Node::start(&[("ATRIUM_MEMORY_BUDGET", budget.as_str())]).await;
    let rss0 = rss_kib(node.pid());
    let pad = Arc::new(vec![b'a'; 400_000]);
    let mut attackers = Vec::new();
    for a in 0..ADDRESSES {
        for _ in 0..per_address {
            let (pad, port) = (pad.clone(), node.port);
            attackers.push(tokio::spawn(async move {
                let mut c = connect_from([127, 0, 0, 10 + a], port).await;
                let head = b"GET /health HTTP/1.1\r\nhost: a\r\nx-pad: ";
                let sent = async {
                    c.write_all(head).await?;
                    c.write_all(&pad).await
                };
                // Refused or cut off (431) part way: the rest cannot be sent.
                let _ = tokio::time::timeout(Duration::from_secs(5), sent).await;
                let said = first_words(&mut c).await;
                // Held open, saying nothing more, as the attack does.
                tokio::time::sleep(Duration::from_secs(2)).await;
                said.get(..12).unwrap_or("nothing").to_string()
            }));
        }
    }
    let mut peak = rss0;
    let started = Instant::now();
    while attackers.iter().any(|a| !a.is_finished()) {
        peak = peak.max(rss_kib(node.pid()));
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the attackers never ended"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut answers = HashMap::<String, u64>::new();
    for a in attackers {
        *answers.entry(a.await.expect("attacker")).or_insert(0) += 1;
    }
    let peak_mib = peak as f64 / 1024.0;
    figure(
        json!({"case": "connections from 10 addresses send 400 KB heads and wait",
                  "connections": per_address * usize::from(ADDRESSES),
                  "rss_start_mib": rss0 / 1024, "peak_rss_mib": (peak_mib * 10.0).round() / 10.0,
                  "budget_mib": BUDGET_MIB, "answers": answers}),
    );
    assert!(
        peak_mib < BUDGET_MIB as f64,
        "resident memory reached {peak_mib:.1} MiB with a budget of {BUDGET_MIB} MiB ({answers:?})"
    );
    // Liveness is answered on the admin address whatever the main one refuses.
    let admin = node
        .admin_port()
        .expect("the test's nodes have an admin address");
    let alive = http_at(admin, "GET", "/health", &[], None).await;
    alive.assert_status(200);
    assert_eq!(
        alive.json.as_ref().map(|j| j["ok"].clone()),
        Some(json!(true))
    );
    // Once they are gone, someone else is served.
    let mut served = String::new();
    for _ in 0..50 {
        let mut c = connect_from([127, 0, 0, 2], node.port).await;
        c.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        served = first_words(&mut c).await;
        if served.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
}
