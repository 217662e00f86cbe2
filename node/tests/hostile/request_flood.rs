//! Plain HTTP requests as fast as one address can send them, on kept-alive connections.

use super::*;

/// The status of the first whole answer in `bytes`, and its length (head and body).
fn one_answer(bytes: &[u8]) -> Option<(String, usize)> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
    let status = head.get(9..12)?.to_string();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    (bytes.len() >= end + length).then_some((status, end + length))
}

/// Sends `GET path` with `key` 32 at a time on one kept-alive connection from `source`
/// until `done`; the answers by status line.
async fn flood(
    source: [u8; 4],
    port: u16,
    path: String,
    key: String,
    done: Arc<AtomicBool>,
) -> HashMap<String, u64> {
    let mut seen = HashMap::new();
    let mut stream = atrium_testkit::tcp::connect_from(source, port).await;
    let one = format!("GET {path} HTTP/1.1\r\nhost: x\r\nx-atrium-key: {key}\r\n\r\n");
    let batch = one.repeat(32);
    let mut buf = vec![0u8; 1 << 16];
    let mut text = Vec::new();
    while !done.load(Ordering::SeqCst) {
        if stream.write_all(batch.as_bytes()).await.is_err() {
            *seen.entry("write failed".into()).or_insert(0) += 1;
            stream = atrium_testkit::tcp::connect_from(source, port).await;
            continue;
        }
        let mut answers = 0;
        while answers < 32 {
            match tokio::time::timeout(WAIT, stream.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => {
                    text.extend_from_slice(&buf[..n]);
                    while let Some((status, used)) = one_answer(&text) {
                        *seen.entry(status).or_insert(0) += 1;
                        answers += 1;
                        text.drain(..used);
                    }
                }
                _ => {
                    *seen.entry("closed".into()).or_insert(0) += 1;
                    stream = atrium_testkit::tcp::connect_from(source, port).await;
                    text.clear();
                    break;
                }
            }
        }
    }
    seen
}

/// Eight kept-alive connections of one address send `GET /api/files/{id}` (and two
/// routes with limits of their own, asked as they are not meant to be) 32 at a time
/// for six seconds: the node serves the address's burst and then its rate, slowing the
/// connections (each waits its turn) instead of answering as fast as they send; another
/// address is served, and the people editing a file on the node are not slowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_flood_from_one_address_is_held_to_its_rate() {
    const RATE: f64 = 100.0;
    const BURST: f64 = 200.0;
    let (_serial, r, mut probe, base) = case(&[
        ("ATRIUM_REQUESTS_PER_IP_PER_SECOND", "100"),
        ("ATRIUM_REQUEST_BURST_PER_IP", "200"),
    ])
    .await;
    let other = create_file(&r.node, &r.owner, "Other", None).await;
    let other_id = s(&other["id"]).to_string();
    set_link(&r.node, &r.owner, &other_id, "view").await;
    let key = s(&other["view_key"]).to_string();
    let cpu0 = cpu_seconds(r.node.pid());
    // Besides a route every guest may use, two that have limits of their own once they
    // are what they claim (the fifth review): a socket route asked without an upgrade,
    // and the server API without a key.
    let paths = [
        format!("/api/files/{other_id}"),
        format!("/files/{other_id}/ws"),
        "/api/server/nope".to_string(),
    ];
    let port = r.node.port;
    let (tasks, during, secs) = attack(&mut probe, 8, |n, done| {
        let path = paths[n % paths.len()].clone();
        tokio::spawn(flood([127, 0, 0, 12], port, path, key.clone(), done))
    })
    .await;
    let cpu = cpu_seconds(r.node.pid()) - cpu0;
    let mut seen: HashMap<String, u64> = HashMap::new();
    for answers in tasks {
        for (k, v) in answers {
            *seen.entry(k).or_insert(0) += v;
        }
    }
    // Another address, during its turn's absence for the first.
    let headers = [("x-atrium-key", key.as_str())];
    let path = format!("/api/files/{other_id}");
    let elsewhere = atrium_testkit::http::request(r.node.port, "GET", &path, &headers, None).await;
    let served = seen
        .iter()
        .filter(|(status, _)| status.as_str() != "429")
        .map(|(_, n)| *n)
        .sum::<u64>() as f64;
    // The burst, the rate over the run, and one batch per connection under way at the end.
    let share = BURST + RATE * (secs + 2.0) + 8.0 * 32.0;
    let paced = metric(
        &metrics_text(&r.node).await,
        "atrium_requests_paced_total",
        &[],
    );
    report(
        "a request flood from one address: 8 kept-alive connections, 32 requests at a time, three routes",
        &base,
        &during,
        json!({"answers": seen, "share": share.round(), "seconds": secs,
               "node_cores": cpu / secs, "paced": paced}),
    );
    assert!(
        served <= share,
        "{served} requests served in {secs:.1} s, past the share of {share} ({seen:?})"
    );
    assert!(paced > 0.0, "no request waited its turn");
    let expected = ["200", "400", "401", "404", "429"];
    assert!(
        seen.keys().all(|k| expected.contains(&k.as_str())),
        "{seen:?}"
    );
    assert_eq!(elsewhere.status, 200, "another address was not served");
    probe.settle().await;
}
