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

/// A hundred edit-key sockets of one address send 490 KB patches of arrays of small
/// numbers, each refused `invalid` once parsed, as fast as their byte rate allows (the
/// sixth review: the estimates of what their parses might take, promised while they
/// waited for the lane and kept after they were refused, held the node "at its memory
/// budget" with a third of it used, and the owner's creations of 1 MB documents were 503
/// in 18 of 20 tries). A parse's cost is promised when the parse starts; the owner's
/// creations go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_patches_do_not_hold_the_memory_budget() {
    let arrays = vec![format!("[{}0]", "0,".repeat(149)); 1_001].join(",");
    refused_patches_beside_the_owner(
        100,
        format!(r#"{{"type":"patch","id":1,"ops":[{arrays}]}}"#),
        "100 edit-key sockets of one address send 490 KB patches of arrays, each refused; the owner makes 1 MB files",
    )
    .await;
}

/// Twenty edit-key sockets of one address send 60 KB patches of 200 arrays of zeros: parsed
/// where they arrive (under the lane's size), each refused `invalid` once parsed (the
/// seventh review: each one's estimate, about 2.9 MB, was kept 300 ms after its refusal, and
/// the stream of them held the node "at its memory budget" at 67 MiB resident of 256; 12-14
/// of 20 of the owner's creations were 503). An inline parse's promise ends with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_small_patches_do_not_hold_the_memory_budget() {
    let arrays = vec![format!("[{}0]", "0,".repeat(149)); 200].join(",");
    refused_patches_beside_the_owner(
        20,
        format!(r#"{{"type":"patch","id":1,"ops":[{arrays}]}}"#),
        "20 edit-key sockets of one address send 60 KB patches of arrays, each refused; the owner makes 1 MB files",
    )
    .await;
}

/// `sockets` edit-key sockets of one address send `patch` (refused once parsed) for the
/// length of an attack while the owner makes a file of about 1 MB every half second: at
/// most one creation is refused, or no more than are made.
async fn refused_patches_beside_the_owner(sockets: usize, patch: String, case_name: &str) {
    const BUDGET_MIB: u64 = 256;
    let budget = format!("{BUDGET_MIB}M");
    let (_serial, r, mut probe, base) = case(&[
        ("ATRIUM_MEMORY_BUDGET", budget.as_str()),
        ("ATRIUM_ROOM_EDITORS", "200"),
    ])
    .await;
    let frame = Arc::new(client_frame(TEXT, patch.as_bytes()));
    let attackers = Raw::edit_keys_from([127, 0, 0, 18], &r, sockets).await;
    let (owner, node) = (r.owner.clone(), &r.node);
    let creations = Arc::new(Mutex::new(HashMap::<u16, u64>::new()));
    let doc: serde_json::Map<String, Value> = (0..10_000)
        .map(|k| (format!("n{k}"), json!({"name": "z".repeat(80), "x": k})))
        .collect();
    let body = serde_json::to_vec(&json!({"name": "Mine", "doc": doc})).unwrap();
    let (_, during, secs) = attack(&mut probe, sockets + 1, |k, done| {
        let (frame, creations, body) = (frame.clone(), creations.clone(), body.clone());
        let (owner, port) = (owner.clone(), node.port);
        let raw = (k < sockets).then(|| attackers.lock().unwrap()[k].take().expect("once"));
        tokio::spawn(async move {
            let Some(mut raw) = raw else {
                // The owner, from 127.0.0.1, makes a file of about 1 MB every half second.
                while !done.load(Ordering::SeqCst) {
                    let auth = format!("Bearer {owner}");
                    let headers = [("authorization", auth.as_str())];
                    let a = atrium_testkit::http::request(
                        port,
                        "POST",
                        "/api/files",
                        &headers,
                        Some(body.clone()),
                    )
                    .await;
                    *creations.lock().unwrap().entry(a.status).or_insert(0) += 1;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                return;
            };
            let mut buf = vec![0u8; 1 << 16];
            while !done.load(Ordering::SeqCst) {
                let _ =
                    tokio::time::timeout(Duration::from_millis(500), raw.stream.write_all(&frame))
                        .await;
                // Take the rejects, so the node's writes never wait.
                while let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_millis(1), raw.stream.read(&mut buf)).await
                {
                    if n == 0 {
                        break;
                    }
                }
            }
        })
    })
    .await;
    let creations = creations.lock().unwrap().clone();
    let refusals = metric(
        &metrics_text(&r.node).await,
        "atrium_memory_refusals_total",
        &[],
    );
    report(
        case_name,
        &base,
        &during,
        json!({"creations": creations, "memory_refusals": refusals, "seconds": secs,
               "rss_mib": rss_kib(r.node.pid()) / 1024, "budget_mib": BUDGET_MIB}),
    );
    let made = creations.get(&201).copied().unwrap_or(0);
    let total: u64 = creations.values().sum();
    // Creations wait for the lane behind the attackers' parses, so they are few, and on a
    // machine busy with other tests fewer still (4 in 12 s, 2 of them refused once in a
    // full suite run): what is held to is that most go through. Before the fixes, 18 of 20
    // and 12-14 of 20 were refused.
    assert!(
        made >= 1 && total - made <= 1.max(made),
        "only {made} of {total} creations made ({creations:?}; {refusals} memory refusals)"
    );
    probe.settle().await;
}
