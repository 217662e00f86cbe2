//! Huge messages: over 1 MiB, 100,000 ops, compression bombs.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_messages_close_1009_and_big_patches_are_too_large() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;
    let rss0 = rss_kib(r.node.pid());
    let hello = Hello::key(&r.edit_key);

    // A patch of 1,001 small ops, under 1 MiB: `too-large`, and the socket stays.
    let mut raw = Raw::join(port, &r.id, &hello, "").await;
    let ops: Vec<Value> = (0..1001).map(|i| delete(&format!("n{i}"))).collect();
    raw.text(&patch_msg(3, ops).to_string()).await;
    let m = raw.reject().await;
    assert_eq!(
        (m["id"].clone(), m["code"].clone()),
        (json!(3), json!("too-large"))
    );

    // The attacks, each on a fresh socket, repeated for two seconds while
    // the bystanders measure.
    let hundred_k: String = {
        let ops: Vec<Value> = (0..100_000).map(|i| delete(&format!("n{i}"))).collect();
        patch_msg(4, ops).to_string()
    };
    assert!(hundred_k.len() > 1 << 20, "{} bytes", hundred_k.len());
    let bomb = deflate(&vec![b' '; 64 << 20]);
    let variants: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "one byte over 1 MiB",
            client_frame(TEXT, &vec![b' '; (1 << 20) + 1]),
            "",
        ),
        (
            "100,000 ops (2.6 MB)",
            client_frame(TEXT, hundred_k.as_bytes()),
            "",
        ),
        (
            "a header claiming 2^62 bytes",
            {
                let mut f = vec![TEXT, 0x80 | 127];
                f.extend_from_slice(&(1u64 << 62).to_be_bytes());
                f.extend_from_slice(&MASK);
                f
            },
            "",
        ),
        (
            "three fragments of 400 KiB",
            [
                client_frame(TEXT_FIRST, &vec![b' '; 400 << 10]),
                client_frame(CONT, &vec![b' '; 400 << 10]),
                client_frame(CONT_LAST, &vec![b' '; 400 << 10]),
            ]
            .concat(),
            "",
        ),
        (
            "64 MiB deflated to a small frame",
            client_frame(TEXT | 0x40, &bomb),
            "Sec-WebSocket-Extensions: permessage-deflate\r\n",
        ),
    ];
    let variants = Arc::new(variants);
    let done = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let attacker = {
        let (file, key, variants) = (r.id.clone(), r.edit_key.clone(), variants.clone());
        let (done, rounds) = (done.clone(), rounds.clone());
        tokio::spawn(async move {
            let until = Instant::now() + Duration::from_secs(2);
            while Instant::now() < until {
                for (what, bytes, extra) in variants.iter() {
                    let mut raw = Raw::join(port, &file, &Hello::key(&key), extra).await;
                    raw.send(bytes).await;
                    let code = raw.close_code(WAIT).await;
                    assert_eq!(code, Some(1009), "{what}");
                }
                rounds.fetch_add(1, Ordering::Relaxed);
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let during = probe.sample_while(&done, 30, 400).await;
    attacker.await.expect("attacker");
    let rss1 = rss_kib(r.node.pid());
    assert_untouched(&r, &probe, 0, json!({})).await;
    let grew = rss1.saturating_sub(rss0);
    assert!(
        grew < 64 * 1024,
        "the node's RSS grew by {grew} KiB over the huge-message attacks"
    );
    report(
        "huge messages (over 1 MiB, 100,000 ops, 2^62-byte header, fragments, deflate bomb)",
        &base,
        &during,
        json!({
            "variants": variants.iter().map(|v| v.0).collect::<Vec<_>>(),
            "rounds": rounds.load(Ordering::Relaxed),
            "answer": "close 1009 (1,001 ops under 1 MiB: reject too-large)",
            "bomb_frame_bytes": bomb.len(),
            "rss_before_kib": rss0, "rss_after_kib": rss1,
        }),
    );
}

/// A document made of one node holding an array of small numbers: parsed whole, its
/// values took about 30 times its text (the review: 30.5 MiB uploaded, 808 MiB resident).
/// A node is at most one message's size (1 MiB), measured before it is parsed, so such an
/// upload is refused `too-large` and the node's memory barely moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_of_one_huge_node_is_refused_before_it_is_parsed() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_MEMORY_BUDGET", "256M")]).await;
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);
    let body = format!(
        r#"{{"name":"big","doc":{{"n":{{"a":[{}0]}}}}}}"#,
        "0,".repeat(8 << 20)
    );
    let peak = Arc::new(AtomicU64::new(rss0));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss_kib(pid), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let auth = format!("Bearer {}", r.owner);
    let resp = atrium_testkit::http::try_request_within(
        Duration::from_secs(120),
        r.node.port,
        "POST",
        "/api/files",
        &[
            ("authorization", auth.as_str()),
            ("content-type", "application/json"),
        ],
        Some(body.clone().into_bytes()),
    )
    .await
    .expect("an answer");
    sampler.abort();
    let peak = peak.load(Ordering::SeqCst).max(rss_kib(pid));
    figure(
        json!({"case": "a 16 MiB document of one node of small numbers",
                  "status": resp.status, "rss_start_mib": rss0 / 1024, "peak_rss_mib": peak / 1024}),
    );
    assert_eq!(resp.status, 413, "{}", resp.text);
    assert!(resp.text.contains("too-large"), "{}", resp.text);
    // The body itself is held while it is read (16 MiB), not its parse (about 500 MiB).
    assert!(
        peak - rss0 < 3 * body.len() as u64 / 1024,
        "resident memory rose by {} KiB for {} bytes uploaded",
        peak - rss0,
        body.len()
    );
}
