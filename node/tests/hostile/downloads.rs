//! A guest who has a large file sent to them again and again, by `GET .../doc` or by
//! joining again and again: each asks in a few hundred bytes for megabytes. Each client
//! address is sent at most its share of document bytes (a burst, then a rate), past which
//! downloads are 429 and hellos close 1013 with how long to wait.

use super::*;

/// A share small enough to be spent in a few seconds: 4 MB a second after 16 MB.
const SHARE: [(&str, &str); 2] = [
    ("ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND", "4000000"),
    ("ATRIUM_DOCUMENT_BURST_BYTES_PER_IP", "16000000"),
];
const RATE: f64 = 4e6;
const BURST: f64 = 16e6;

/// A room of a file holding the 7.8 MB document, on a node with the small share, its
/// probe and baseline; and the document's length as the node writes it.
async fn large_room() -> (Case, usize) {
    let serial = SERIAL.lock().await;
    let mut envs: Vec<(&str, &str)> = FAST_HASH.to_vec();
    envs.extend_from_slice(&SHARE);
    let node = Node::start(&envs).await;
    let owner = new_account(&node, "owner").await;
    let doc = huge::large_document();
    let len = doc.to_string().len();
    let r = Room::holding(node, owner, doc).await;
    let mut probe = Probe::join(&r).await;
    let base = probe.sample(100).await;
    ((serial, r, probe, base), len)
}

/// One `GET /api/files/{id}/doc` with a key from `source`, read to its end: the status, a
/// `Retry-After` header if there was one, and the length of the answer.
async fn download(source: [u8; 4], port: u16, id: &str, key: &str) -> (u16, bool, usize) {
    let mut stream = atrium_testkit::tcp::connect_from(source, port).await;
    let request = format!(
        "GET /api/files/{id}/doc HTTP/1.1\r\nhost: x\r\nx-atrium-key: {key}\r\n\
         connection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(WAIT, stream.read_to_end(&mut out)).await;
    let head = String::from_utf8_lossy(&out[..out.len().min(1024)]).to_lowercase();
    let status = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head:?}"));
    (status, head.contains("\r\nretry-after: "), out.len())
}

/// Four connections of one address download a 7.8 MB file in a loop for six seconds with
/// its view key: they are sent the burst and the rate's worth (plus the four answers that
/// were under way when the share ran out), then 429 with `Retry-After`; another address
/// still downloads it at once, and the people editing the file are not slowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloading_a_large_file_in_a_loop_is_paced_per_address() {
    let ((_serial, r, mut probe, base), len) = large_room().await;
    let (port, id, key) = (r.node.port, r.id.clone(), r.view_key.clone());
    let (results, during, secs) = attack(&mut probe, 4, |_, done| {
        let id = id.clone();
        let key = key.clone();
        tokio::spawn(async move {
            let (mut whole, mut refused, mut bytes) = (0usize, 0usize, 0usize);
            while !done.load(Ordering::SeqCst) {
                match download([127, 0, 0, 10], port, &id, &key).await {
                    (200, _, n) => {
                        whole += 1;
                        bytes += n;
                    }
                    (429, true, _) => refused += 1,
                    other => panic!("a download answered {other:?}"),
                }
            }
            (whole, refused, bytes)
        })
    })
    .await;
    let whole: usize = results.iter().map(|r| r.0).sum();
    let refused: usize = results.iter().map(|r| r.1).sum();
    let bytes: usize = results.iter().map(|r| r.2).sum();
    let share = BURST + RATE * secs + 4.0 * len as f64;
    let (other, _, n) = download([127, 0, 0, 20], port, &r.id, &r.view_key).await;
    report(
        "a large file downloaded in a loop by four connections of one address",
        &base,
        &during,
        json!({"document_bytes": len, "downloads": whole, "refused_429": refused,
               "mb_sent": (bytes as f64 / 1e6).round(), "mb_share": (share / 1e6).round(),
               "seconds": secs}),
    );
    assert!(
        (whole * len) as f64 <= share,
        "{whole} downloads of {len} bytes in {secs:.1} s: past the address's share ({share} bytes)"
    );
    assert!(refused > 0, "no download was refused");
    assert_eq!(
        (other, n > len),
        (200, true),
        "another address was refused its download"
    );
    probe.settle().await;
}

/// One address joins a 7.8 MB file again and again with its view key, never resuming:
/// it is welcomed with the document until its share is spent, then each hello closes
/// 1013 with a `retry-ms` of about the wait; another address is welcomed at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_a_large_file_in_a_loop_is_paced_per_address() {
    let ((_serial, r, mut probe, base), len) = large_room().await;
    let (port, id, key) = (r.node.port, r.id.clone(), r.view_key.clone());
    let hello = Hello::key(&key).to_json().to_string();
    let (results, during, secs) = attack(&mut probe, 1, |_, done| {
        let (id, hello) = (id.clone(), hello.clone());
        tokio::spawn(async move {
            let (mut welcomed, mut hints) = (0usize, Vec::new());
            while !done.load(Ordering::SeqCst) {
                let Ok(mut raw) = Raw::try_connect_from([127, 0, 0, 11], port, &id, "", None).await
                else {
                    continue;
                };
                raw.text(&hello).await;
                match raw.next(WAIT).await {
                    Got::Text(w) if w["type"] == "welcome" => {
                        assert!(w["doc"].is_object(), "a welcome without the document");
                        welcomed += 1;
                    }
                    Got::Close(Some(1013)) => hints.push(
                        atrium_protocol::retry_hint_ms(&raw.close_reason)
                            .unwrap_or_else(|| panic!("1013 without a hint: {}", raw.close_reason)),
                    ),
                    other => panic!("a hello got {other:?}"),
                }
            }
            (welcomed, hints)
        })
    })
    .await;
    let (welcomed, hints) = &results[0];
    let share = BURST + RATE * secs + len as f64;
    let (_other, welcome) = Client::join(&r.node, &r.id, &Hello::key(&r.view_key)).await;
    report(
        "a large file joined in a loop by one address",
        &base,
        &during,
        json!({"document_bytes": len, "welcomes": welcomed, "refused_1013": hints.len(),
               "retry_ms": hints.iter().max(), "seconds": secs}),
    );
    assert!(
        (welcomed * len) as f64 <= share,
        "{welcomed} welcomes of {len} bytes in {secs:.1} s: past the address's share ({share})"
    );
    assert!(!hints.is_empty(), "no hello was refused");
    // A wait is what the address owes at the rate, at most one document's worth more.
    let longest = (len as f64 + BURST) / RATE * 1250.0;
    assert!(
        hints.iter().all(|&ms| ms >= 1 && (ms as f64) <= longest),
        "retry hints out of range: {hints:?}"
    );
    assert!(
        welcome["doc"].is_object(),
        "another address was not welcomed"
    );
    probe.settle().await;
}

/// The list of one's files is most of a megabyte at 1,000 files, asked in a hundred bytes:
/// it draws on the address's share too, and an answer the client has already (304) costs
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_of_files_draws_on_the_share() {
    let _serial = SERIAL.lock().await;
    let mut envs: Vec<(&str, &str)> = FAST_HASH.to_vec();
    envs.extend_from_slice(&[
        ("ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND", "1000"),
        ("ATRIUM_DOCUMENT_BURST_BYTES_PER_IP", "20000"),
        ("ATRIUM_FILE_CREATES_PER_MINUTE", "100"),
    ]);
    let node = Node::start(&envs).await;
    let owner = new_account(&node, "lister").await;
    for k in 0..60 {
        create_file(
            &node,
            &owner,
            &format!("A file with a long enough name, number {k}"),
            None,
        )
        .await;
    }
    let auth = format!("Bearer {owner}");
    let list = |etag: Option<String>| {
        let auth = auth.clone();
        let port = node.port;
        async move {
            let mut headers = vec![("authorization", auth.as_str())];
            let etag = etag.unwrap_or_default();
            if !etag.is_empty() {
                headers.push(("if-none-match", etag.as_str()));
            }
            atrium_testkit::http::request(port, "GET", "/api/files", &headers, None).await
        }
    };
    // Lists of about 8 KB: as many as it takes to spend the 20 KB burst (each is charged
    // once sent, and a list goes while the address owes nothing), then 429.
    let first = list(None).await;
    first.assert_status(200);
    assert!(first.text.len() > 5_000, "{}", first.text.len());
    let etag = first.header("etag");
    let mut answers = vec![];
    for _ in 0..5 {
        answers.push(list(None).await.status);
    }
    let served = 20_000usize.div_ceil(first.text.len());
    assert_eq!(
        answers.iter().filter(|s| **s == 429).count(),
        6 - served,
        "{answers:?} ({} bytes a list)",
        first.text.len()
    );
    let refused = list(None).await;
    refused.assert_error(429, "rate-limited");
    assert!(refused.header("retry-after").is_some());
    // What the client has is not sent again, and not charged: but the share is spent, so
    // even a 304 waits until the address is out of debt.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(list(etag.clone()).await.status, 304);
    assert_eq!(list(etag).await.status, 304, "a 304 charged nothing");
    figure(
        json!({"case": "the list of 60 files against a 20 KB share", "list_bytes": first.text.len(), "answers": answers}),
    );
}

/// Four connections of one address ask for the API's description (100 KB for a 40-byte
/// request) in a loop for three seconds: the review had 41 MB a second of it, paced only
/// by the request rate. Static answers are now sent from the address's share of downloads;
/// past it, 429; another address is served at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_description_asked_in_a_loop_is_paced_per_address() {
    let _serial = SERIAL.lock().await;
    let node = Node::start(&SHARE).await;
    let port = node.port;
    let get = |source: [u8; 4]| async move {
        let mut stream = atrium_testkit::tcp::connect_from(source, port).await;
        let request = "GET /api/openapi.yaml HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut out = Vec::new();
        let _ = tokio::time::timeout(WAIT, stream.read_to_end(&mut out)).await;
        let text = String::from_utf8_lossy(&out).to_string();
        let status: u16 = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, text.contains("share of downloads"), out.len())
    };
    let started = Instant::now();
    let loops = (0..4).map(|_| async {
        let (mut bytes, mut whole, mut paced) = (0usize, 0usize, 0usize);
        while started.elapsed() < Duration::from_secs(3) {
            match get([127, 0, 0, 10]).await {
                (200, _, n) => {
                    whole += 1;
                    bytes += n;
                }
                (429, true, _) => paced += 1,
                // The address's request rate answers the rest.
                (429, false, _) => {}
                other => panic!("the description answered {other:?}"),
            }
        }
        (bytes, whole, paced)
    });
    let results = futures_util::future::join_all(loops).await;
    let secs = started.elapsed().as_secs_f64();
    let bytes: usize = results.iter().map(|r| r.0).sum();
    let whole: usize = results.iter().map(|r| r.1).sum();
    let paced: usize = results.iter().map(|r| r.2).sum();
    let one = include_str!("../../../docs/openapi.yaml").len() as f64;
    let share = BURST + RATE * secs + 4.0 * one;
    let (other, _, _) = get([127, 0, 0, 20]).await;
    figure(
        json!({"case": "the API description asked in a loop by four connections of one address",
                  "answers_200": whole, "paced_429": paced, "mb_sent": (bytes as f64 / 1e6).round(),
                  "mb_share": (share / 1e6).round(), "seconds": secs}),
    );
    assert!(
        bytes as f64 <= share,
        "{bytes} bytes of the description in {secs:.1} s: past the address's share ({share})"
    );
    assert!(paced > 0, "no request was refused for the share");
    assert_eq!(other, 200, "another address was refused the description");
}
