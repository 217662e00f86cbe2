//! Request bodies in shapes that cost the node more than their size.

use super::*;
use atrium_testkit::tcp::connect_from;

/// 200 connections from 4 addresses send sign-in bodies as one-byte chunks (6 bytes on the
/// wire for each byte of body) and never send the last one. Each chunk was kept as it came,
/// holding a piece of the connection's read buffer: the review's node grew by 2.3 MiB a
/// connection (7.5 MiB through a router), past a 256 MiB budget, for the body's whole
/// deadline. Now a body's frames are copied as they come, and one that comes in far more
/// pieces than its size needs is refused (400) after a few dozen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_in_one_byte_chunks_are_refused_early() {
    let _serial = SERIAL.lock().await;
    let node = Node::start(&[]).await;
    let rss0 = rss_kib(node.pid());
    let chunks = Arc::new(b"1\r\n \r\n".repeat(65_000));
    let mut attackers = Vec::new();
    for n in 0..200u8 {
        let (chunks, port) = (chunks.clone(), node.port);
        attackers.push(tokio::spawn(async move {
            let mut c = connect_from([127, 0, 0, 10 + n % 4], port).await;
            let head = "POST /api/signin HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
                        transfer-encoding: chunked\r\n\r\n";
            let sent = async {
                c.write_all(head.as_bytes()).await?;
                c.write_all(&chunks).await
            };
            // Refused part way: the rest cannot be sent.
            let _ = tokio::time::timeout(Duration::from_secs(5), sent).await;
            let mut answer = [0u8; 512];
            let read = tokio::time::timeout(Duration::from_secs(15), c.read(&mut answer)).await;
            match read {
                Ok(Ok(n)) => String::from_utf8_lossy(&answer[..n]).to_string(),
                _ => String::new(),
            }
        }));
    }
    let mut peak = rss0;
    while attackers.iter().any(|a| !a.is_finished()) {
        peak = peak.max(rss_kib(node.pid()));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut answers = HashMap::<String, u64>::new();
    let mut pieces = 0;
    for a in attackers {
        let said = a.await.expect("attacker");
        pieces += u64::from(said.contains("too many small pieces"));
        *answers
            .entry(said.get(..12).unwrap_or("nothing").to_string())
            .or_insert(0) += 1;
    }
    let growth_mib = peak.saturating_sub(rss0) as f64 / 1024.0;
    figure(
        json!({"case": "200 sign-in bodies in one-byte chunks from 4 addresses",
                  "rss_growth_mib": (growth_mib * 10.0).round() / 10.0, "answers": answers,
                  "too_many_pieces": pieces}),
    );
    assert!(
        growth_mib < 16.0,
        "bodies of one-byte chunks grew the node by {growth_mib:.1} MiB ({answers:?})"
    );
    assert!(
        pieces > 0,
        "no body was refused for its pieces: {answers:?}"
    );
}

/// Uploads the node answers before it has read them (a body declared over
/// `ATRIUM_MAX_DOC_BYTES`: 413; a document that does not fit the memory budget, refused
/// halfway: 503) still get their answer. Closing a connection with the rest of the upload
/// unread made the kernel reset it, and a client still sending saw "connection reset"
/// instead of the answer (a CI run: a 16 MB creation at the budget got no answer). Now a
/// closed connection reads and drops what is still coming for a while before it closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_refused_before_they_are_read_are_still_answered() {
    let _serial = SERIAL.lock().await;
    let node = Node::start(&[
        ("ATRIUM_MEMORY_BUDGET", "128M"),
        ("ATRIUM_MAX_DOC_BYTES", "25165824"),
    ])
    .await;
    let token = new_account(&node, "uploader").await;
    let auth = format!("Bearer {token}");
    let doc = |bytes: usize| json!({"name": "Upload", "doc": large_doc(bytes)}).to_string();
    let cases = [
        ("over the limit", doc(30 << 20), 413),
        ("past the budget", doc(20 << 20), 503),
    ];
    let mut told = HashMap::<String, u64>::new();
    for (case, body, status) in &cases {
        for _ in 0..4 {
            let tries = (0..3).map(|_| {
                let (body, auth) = (body.as_bytes().to_vec(), auth.clone());
                let port = node.port;
                tokio::spawn(async move {
                    let headers = [("authorization", auth.as_str())];
                    atrium_testkit::http::try_request(
                        port,
                        "POST",
                        "/api/files",
                        &headers,
                        Some(body),
                    )
                    .await
                })
            });
            for answer in futures_util::future::join_all(tries).await {
                let answer = answer.expect("uploader");
                let said = match answer {
                    Some(r) if r.status == *status => "answered".to_string(),
                    Some(r) => format!("{} {}", r.status, r.text),
                    None => "no answer".to_string(),
                };
                *told.entry(format!("{case}: {said}")).or_insert(0) += 1;
            }
        }
    }
    figure(json!({"case": "uploads refused before they are read (12 each)", "told": told}));
    for (case, _, _) in &cases {
        assert_eq!(
            told.get(&format!("{case}: answered")),
            Some(&12),
            "uploads {case}: {told:?}"
        );
    }
}
