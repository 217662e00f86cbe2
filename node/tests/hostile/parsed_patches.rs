//! Patches whose parse costs many times their text.

use super::*;

/// A hundred guest editors each send three 1 MiB patches of `[0,0,0,…]`: parsed, such a
/// patch takes about 30 times its text, and parsed patches wait for their room. Each is
/// judged by what its parse may take before it is parsed, and a large frame is read only
/// once its bytes fit, so the node stays within its budget; what does not fit is refused
/// with `too-large`, and everyday edits go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_that_parse_large_keep_the_node_within_its_budget() {
    let _serial = SERIAL.lock().await;
    const BUDGET_MIB: u64 = 128;
    const SOCKETS: usize = 100;
    let budget = format!("{BUDGET_MIB}M");
    let r = room(&[
        ("ATRIUM_MEMORY_BUDGET", budget.as_str()),
        ("ATRIUM_WS_PER_IP", "1000"),
        ("ATRIUM_ROOM_EDITORS", "200"),
    ])
    .await;
    let port = r.node.port;
    let rss0 = rss_kib(r.node.pid());
    let zeros = Arc::new(format!("[{}0]", "0,".repeat(520_000)));
    let answers = Arc::new(Mutex::new(HashMap::<String, u64>::new()));
    let mut editors = Vec::new();
    for n in 0..SOCKETS {
        let (file, key, zeros, answers) = (
            r.id.clone(),
            r.edit_key.clone(),
            zeros.clone(),
            answers.clone(),
        );
        editors.push(tokio::spawn(async move {
            // Joins are refused too once the node is at its budget (1013, or 503 before the
            // upgrade): such an editor tries again, as a client would.
            let mut c = loop {
                match Sender::try_join(port, &file, &Hello::key(&key), "").await {
                    Ok(c) => break c,
                    Err(_) => {
                        *answers.lock().unwrap().entry("join refused".into()).or_insert(0) += 1;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            };
            for i in 1..=3u64 {
                let msg = format!(
                    r#"{{"type":"patch","id":{i},"ops":[{{"op":"put","id":"z{n}","props":{{"a":{zeros}}}}}]}}"#
                );
                c.text(&msg).await;
            }
            let mut answered = 0;
            while answered < 3 {
                let what = match c.raw.next(Duration::from_secs(120)).await {
                    Got::Text(m) if m["type"] == "ack" => "ack".to_string(),
                    Got::Text(m) if m["type"] == "reject" => format!("reject {}", s(&m["code"])),
                    Got::Text(_) => continue,
                    other => format!("{other:?}"),
                };
                answered += 1;
                *answers.lock().unwrap().entry(what).or_insert(0) += 1;
            }
        }));
    }
    let mut peak = rss0;
    let pid = r.node.pid();
    while editors.iter().any(|e| !e.is_finished()) {
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for e in editors {
        e.await.expect("editor");
    }
    let answers = answers.lock().unwrap().clone();
    let peak_mib = peak as f64 / 1024.0;
    figure(
        json!({"case": "100 editors, 1 MiB patches of small numbers", "budget_mib": BUDGET_MIB,
                  "rss_start_mib": rss0 / 1024, "peak_rss_mib": (peak_mib * 10.0).round() / 10.0,
                  "answers": answers}),
    );
    assert!(
        peak_mib < BUDGET_MIB as f64,
        "resident memory reached {peak_mib:.1} MiB with a budget of {BUDGET_MIB} MiB ({answers:?})"
    );
    let expected = answers.get("ack").copied().unwrap_or(0)
        + answers.get("reject too-large").copied().unwrap_or(0);
    assert_eq!(
        expected,
        3 * SOCKETS as u64,
        "every patch acked or refused: {answers:?}"
    );
    // After the burst, everyday edits go on: a fresh socket's small patch is acked (a join
    // may wait its turn while the node is at its mark).
    let mut c = None;
    for _ in 0..60 {
        match Sender::try_join(port, &r.id, &Hello::key(&r.edit_key), "").await {
            Ok(joined) => {
                c = Some(joined);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    let mut c = c.expect("no join within 30 s of the burst");
    c.text(r#"{"type":"patch","id":1,"ops":[{"op":"put","id":"after","props":{"x":1}}]}"#)
        .await;
    let answer = loop {
        match c.raw.next(Duration::from_secs(30)).await {
            Got::Text(m) if m["type"] == "ack" || m["type"] == "reject" => break m,
            Got::Text(_) => {}
            other => panic!("expected an ack, got {other:?}"),
        }
    };
    assert_eq!(answer["type"], "ack", "{answer}");
    assert!(health_ok(&r.node).await < Duration::from_secs(2));
}
