//! Work on stored versions asked for by many at once: reading a version of a large file and
//! comparing it with the current document (the third review: 50 connections comparing a
//! 12 MB file's versions took a node with a 256 MiB budget to 879 MiB, and it refused all
//! new work for minutes after).

use super::*;

/// Forty connections with the edit key read and compare an 8 MB file's versions for eight
/// seconds: the node stays within its budget, answers 200 or 503 with `Retry-After`, and
/// takes new work at once afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_reads_and_comparisons_of_versions_stay_within_the_budget() {
    let _serial = SERIAL.lock().await;
    const BUDGET_MIB: u64 = 256;
    let budget = format!("{BUDGET_MIB}M");
    // Every asker is one address: its share of document bytes is not what this is about.
    let r = room(&[
        ("ATRIUM_MEMORY_BUDGET", budget.as_str()),
        ("ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND", "0"),
    ])
    .await;
    let file = create_file(&r.node, &r.owner, "Large", Some(huge::large_document())).await;
    let id = s(&file["id"]).to_string();
    set_link(&r.node, &r.owner, &id, "edit").await;
    let key = s(&file["edit_key"]).to_string();
    let named = send_json(
        &r.node,
        "POST",
        &format!("/api/files/{id}/versions"),
        Some(&r.owner),
        &json!({"title": "large"}),
    )
    .await;
    named.assert_status(201);
    let vid = named.body()["id"].as_u64().unwrap();
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);
    let answers = Arc::new(Mutex::new(HashMap::<String, u64>::new()));
    let until = Instant::now() + Duration::from_secs(8);
    let mut askers = Vec::new();
    for n in 0..40 {
        let (port, key, answers) = (r.node.port, key.clone(), answers.clone());
        let path = match n % 2 {
            0 => format!("/api/files/{id}/versions/compare?from={vid}"),
            _ => format!("/api/files/{id}/versions/{vid}"),
        };
        askers.push(tokio::spawn(async move {
            while Instant::now() < until {
                let headers = [("x-atrium-key", key.as_str())];
                let a = atrium_testkit::http::request(port, "GET", &path, &headers, None).await;
                let what = match a.status {
                    503 if a.header("retry-after").is_some() => "503 with Retry-After".to_string(),
                    // One address has two places for this work (the next test).
                    429 if a.header("retry-after").is_some() => "429 with Retry-After".to_string(),
                    status => status.to_string(),
                };
                *answers.lock().unwrap().entry(what).or_insert(0) += 1;
                if a.status == 503 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    let mut peak = rss0;
    while askers.iter().any(|a| !a.is_finished()) {
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for a in askers {
        a.await.expect("an asker");
    }
    let answers = answers.lock().unwrap().clone();
    // Afterwards: someone opens another file and edits it.
    let other = create_file(&r.node, &r.owner, "After", None).await;
    let (mut c, _) = Client::join(&r.node, s(&other["id"]), &Hello::token(&r.owner)).await;
    c.patch_acked(1, vec![json!({"op": "put", "id": "a", "props": {"x": 1}})])
        .await;
    figure(
        json!({"case": "40 connections read and compare an 8 MB file's versions for 8 s",
                  "budget_mib": BUDGET_MIB, "rss_start_mib": rss0 / 1024,
                  "peak_rss_mib": peak / 1024, "answers": answers}),
    );
    assert!(
        peak / 1024 < BUDGET_MIB,
        "resident memory reached {} MiB ({answers:?})",
        peak / 1024
    );
    let fine = |k: &str| ["200", "503 with Retry-After", "429 with Retry-After"].contains(&k);
    assert!(answers.keys().all(|k| fine(k)), "{answers:?}");
    assert!(answers.contains_key("200"), "some were served: {answers:?}");
}

/// `GET path` with the link key from a loopback `source` address, on a connection of its
/// own; the answer's status (0 when none came).
async fn get_from(source: [u8; 4], port: u16, path: &str, key: &str) -> u16 {
    let mut stream = atrium_testkit::tcp::connect_from(source, port).await;
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: x\r\nx-atrium-key: {key}\r\nconnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).await.is_err() {
        return 0;
    }
    let mut head = [0u8; 12];
    match tokio::time::timeout(Duration::from_secs(30), stream.read_exact(&mut head)).await {
        Ok(Ok(_)) => std::str::from_utf8(&head[9..12])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

/// Thirty connections of one address compare a 1.9 MB file's versions in a loop (the
/// sixth review: 200 connections of a free account made an owner's read of a one-node
/// version wait 10 s, then 503): the address has two places in the node's queue for
/// version work, and its comparisons draw on its share of document bytes, so the owner,
/// at another address, reads a version of a small file at once, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_fill_the_queue_for_version_work() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;
    let (big_id, key, vid) = big_file_with_a_version(&r).await;
    // The owner's own small file, with a version to read.
    let small = create_file(&r.node, &r.owner, "Small", Some(json!({"a": {"x": 1}}))).await;
    let small_id = s(&small["id"]).to_string();
    let small_vid = named_version(&r, &small_id).await;
    let small_versions = format!("/api/files/{small_id}/versions");

    let compare = format!("/api/files/{big_id}/versions/compare?from={vid}");
    let answers = Arc::new(Mutex::new(HashMap::<u16, u64>::new()));
    let owner_reads = Arc::new(Mutex::new(Vec::new()));
    let (_, during, secs) = attack(&mut probe, 31, |n, done| {
        let (compare, key, answers) = (compare.clone(), key.clone(), answers.clone());
        let (owner, reads) = (r.owner.clone(), owner_reads.clone());
        let read = format!("{small_versions}/{small_vid}");
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                if n == 30 {
                    // The owner, at 127.0.0.1, every half second.
                    let started = Instant::now();
                    let a = atrium_testkit::http::request(
                        port,
                        "GET",
                        &read,
                        &[("authorization", &format!("Bearer {owner}"))],
                        None,
                    )
                    .await;
                    reads.lock().unwrap().push((a.status, started.elapsed()));
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                let status = get_from([127, 0, 0, 17], port, &compare, &key).await;
                *answers.lock().unwrap().entry(status).or_insert(0) += 1;
                if status != 200 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        })
    })
    .await;
    let answers = answers.lock().unwrap().clone();
    let reads = owner_reads.lock().unwrap().clone();
    let slowest = reads.iter().map(|(_, t)| *t).max().unwrap_or_default();
    report(
        "30 connections of one address compare a 1.9 MB file's versions; the owner reads a small version",
        &base,
        &during,
        json!({"answers": answers, "owner_reads": reads.len(), "slowest_owner_read_ms": ms(slowest).round(),
               "seconds": secs}),
    );
    assert!(
        answers.get(&429).is_some_and(|&n| n > 0),
        "no comparison was refused its place: {answers:?}"
    );
    assert!(reads.len() >= 5, "the owner read {} times", reads.len());
    assert!(reads.iter().all(|(status, _)| *status == 200), "{reads:?}");
    // Far under the queue's 10 s wait, which the owner's reads met before.
    assert!(
        slowest < Duration::from_secs(3),
        "the owner waited {slowest:?} for a version"
    );
    probe.settle().await;
}

/// Guests with the edit key compare a file's versions in a loop from six addresses (the
/// tenth review: they held the file's two places for version work, and the owner's reads,
/// comparisons and restores of their own file were answered 429). The link's guests have
/// the file's places for the link; the owner has places of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_cannot_take_the_owners_places_for_version_work() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;
    let (id, key, vid) = big_file_with_a_version(&r).await;
    let compare = format!("/api/files/{id}/versions/compare?from={vid}");
    let answers = Arc::new(Mutex::new(HashMap::<u16, u64>::new()));
    let owner = Arc::new(Mutex::new(Vec::new()));
    let (_, during, secs) = attack(&mut probe, 13, |n, done| {
        let (compare, key, answers) = (compare.clone(), key.clone(), answers.clone());
        let (token, owner) = (r.owner.clone(), owner.clone());
        let read = format!("/api/files/{id}/versions/{vid}");
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                if n == 12 {
                    // The owner, at 127.0.0.1: a read and a comparison of the same file.
                    for path in [&read, &compare] {
                        let auth = format!("Bearer {token}");
                        let a = atrium_testkit::http::request(
                            port,
                            "GET",
                            path,
                            &[("authorization", &auth)],
                            None,
                        )
                        .await;
                        owner.lock().unwrap().push(a.status);
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                // Two connections from each of six addresses.
                let source = [127, 0, 0, 21 + (n / 2) as u8];
                let status = get_from(source, port, &compare, &key).await;
                *answers.lock().unwrap().entry(status).or_insert(0) += 1;
                if status != 200 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        })
    })
    .await;
    let answers = answers.lock().unwrap().clone();
    let owner = owner.lock().unwrap().clone();
    report(
        "guests compare a 1.9 MB file's versions from six addresses; its owner reads and compares",
        &base,
        &during,
        json!({"guests": answers, "owner": owner, "seconds": secs}),
    );
    assert!(
        answers.get(&429).is_some_and(|&n| n > 0),
        "the guests never filled their places: {answers:?}"
    );
    assert!(owner.len() >= 6, "the owner asked {} times", owner.len());
    assert!(
        owner.iter().all(|status| *status == 200),
        "the owner's answers: {owner:?}"
    );
    probe.settle().await;
}

/// A 1.9 MB file of the owner's (100,000 nodes) shared with edit access, and a version of
/// it: its id, its edit key and the version's id.
async fn big_file_with_a_version(r: &Room) -> (String, String, u64) {
    let doc: serde_json::Map<String, Value> = (0..100_000)
        .map(|k| (format!("n{k}"), json!({"x": k})))
        .collect();
    let big = create_file(&r.node, &r.owner, "Big", Some(Value::Object(doc))).await;
    let id = s(&big["id"]).to_string();
    set_link(&r.node, &r.owner, &id, "edit").await;
    let key = s(&big["edit_key"]).to_string();
    let vid = named_version(r, &id).await;
    (id, key, vid)
}

/// Names the current state of `file` as its owner; the version's id.
async fn named_version(r: &Room, file: &str) -> u64 {
    let path = format!("/api/files/{file}/versions");
    let title = json!({"title": "named"});
    let named = send_json(&r.node, "POST", &path, Some(&r.owner), &title).await;
    named.body()["id"].as_u64().expect("a version")
}

/// An editor names ten versions of an 8 MB file at once (the ninth review: ten namings of a
/// 36 MB file in a row queued ten copies of the document and their rebuilds, and took a
/// node with a 256 MiB budget to 416 MiB). Each save promises what it takes from the
/// budget first: the node stays within it, each naming is 201 or 503 with `Retry-After`,
/// and edits go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namings_of_a_large_file_stay_within_the_budget() {
    let _serial = SERIAL.lock().await;
    const BUDGET_MIB: u64 = 160;
    let budget = format!("{BUDGET_MIB}M");
    let r = room(&[("ATRIUM_MEMORY_BUDGET", budget.as_str())]).await;
    let file = create_file(&r.node, &r.owner, "Large", Some(huge::large_document())).await;
    let id = s(&file["id"]).to_string();
    let (mut c, _) = Client::join(&r.node, &id, &Hello::token(&r.owner)).await;
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);
    let mut namings = Vec::new();
    for n in 0..10 {
        let (port, token, path) = (
            r.node.port,
            r.owner.clone(),
            format!("/api/files/{id}/versions"),
        );
        namings.push(tokio::spawn(async move {
            let auth = format!("Bearer {token}");
            let body = json!({"title": format!("v{n}")}).to_string();
            let headers = [
                ("authorization", auth.as_str()),
                ("content-type", "application/json"),
            ];
            let a = atrium_testkit::http::request(
                port,
                "POST",
                &path,
                &headers,
                Some(body.into_bytes()),
            )
            .await;
            match a.status {
                503 if a.header("retry-after").is_some() => "503 with Retry-After".to_string(),
                status => status.to_string(),
            }
        }));
    }
    let mut peak = rss0;
    while namings.iter().any(|n| !n.is_finished()) {
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The saves' work may go on a moment after the answers.
    for _ in 0..100 {
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut answers = HashMap::<String, u64>::new();
    for n in namings {
        *answers.entry(n.await.expect("a naming")).or_insert(0) += 1;
    }
    c.patch_acked(
        1,
        vec![json!({"op": "put", "id": "after", "props": {"x": 1}})],
    )
    .await;
    let peak_mib = peak as f64 / 1024.0;
    figure(
        json!({"case": "ten namings of an 8 MB file at once", "budget_mib": BUDGET_MIB,
                  "rss_start_mib": rss0 / 1024, "peak_rss_mib": (peak_mib * 10.0).round() / 10.0,
                  "answers": answers}),
    );
    assert!(
        peak_mib < BUDGET_MIB as f64,
        "resident memory reached {peak_mib:.1} MiB with a budget of {BUDGET_MIB} MiB ({answers:?})"
    );
    let saved = answers.get("201").copied().unwrap_or(0);
    let refused = answers.get("503 with Retry-After").copied().unwrap_or(0);
    assert!(saved >= 1, "no naming was saved: {answers:?}");
    assert_eq!(saved + refused, 10, "each 201 or 503: {answers:?}");
}

/// Versions of a document of many empty nodes: saving one as a delta parsed the version
/// before it and the document into maps of nodes, about 25 times the document's size for
/// nodes this small, while it promised 4 times from the budget. A guest with the edit key
/// can make such a document. Now the texts are walked in id order: the node stays within
/// its budget, and every naming is saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_of_a_document_of_tiny_nodes_stay_within_the_budget() {
    let _serial = SERIAL.lock().await;
    const BUDGET_MIB: u64 = 160;
    const NODES: usize = 600_000;
    let budget = format!("{BUDGET_MIB}M");
    let r = room(&[("ATRIUM_MEMORY_BUDGET", budget.as_str())]).await;
    let doc: serde_json::Map<String, Value> =
        (0..NODES).map(|k| (format!("{k:06}"), json!({}))).collect();
    let doc_bytes = serde_json::to_string(&doc).expect("a document").len();
    let file = create_file(&r.node, &r.owner, "Tiny", Some(Value::Object(doc))).await;
    let id = s(&file["id"]).to_string();
    let (mut c, _) = Client::join(&r.node, &id, &Hello::token(&r.owner)).await;
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);
    let mut peak = rss0;
    let mut answers = Vec::new();
    for n in 0..4u64 {
        // Each version differs from the one before by one node, so each after the first
        // is saved as a delta.
        let put = json!({"op": "put", "id": format!("{n:06}"), "props": {"v": n}});
        c.patch_acked(n + 1, vec![put]).await;
        // A save promises four times the document from the budget until the node has
        // sampled its memory since: a naming right after another may be refused with
        // `Retry-After`, and is asked again after it.
        let mut tries = 0;
        let status = loop {
            tries += 1;
            let (port, token, path) = (
                r.node.port,
                r.owner.clone(),
                format!("/api/files/{id}/versions"),
            );
            let naming = tokio::spawn(async move {
                let auth = format!("Bearer {token}");
                let headers = [
                    ("authorization", auth.as_str()),
                    ("content-type", "application/json"),
                ];
                let body = json!({"title": format!("v{n}")}).to_string().into_bytes();
                atrium_testkit::http::request(port, "POST", &path, &headers, Some(body)).await
            });
            while !naming.is_finished() {
                peak = peak.max(rss_kib(pid));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let a = naming.await.expect("a naming");
            match a.header("retry-after").and_then(|s| s.parse::<u64>().ok()) {
                Some(wait) if a.status == 503 && tries < 20 => {
                    tokio::time::sleep(Duration::from_secs(wait.clamp(1, 5))).await;
                }
                _ => break a.status,
            }
        };
        answers.push((status, tries));
    }
    let peak_mib = peak as f64 / 1024.0;
    figure(
        json!({"case": "versions of a document of 600,000 empty nodes", "budget_mib": BUDGET_MIB,
                  "doc_bytes": doc_bytes, "rss_start_mib": rss0 / 1024,
                  "peak_rss_mib": (peak_mib * 10.0).round() / 10.0, "answers": answers}),
    );
    assert!(
        peak_mib < BUDGET_MIB as f64,
        "resident memory reached {peak_mib:.1} MiB with a budget of {BUDGET_MIB} MiB ({answers:?})"
    );
    assert!(
        answers.iter().all(|(status, _)| *status == 201),
        "every naming saved: {answers:?}"
    );
}

/// A restore's patch and the room's copy are as large as the document it starts from, and
/// for tiny nodes many times their text: restoring an empty version of a file whose
/// document holds 450,000 small nodes took a node with a 160 MiB budget past it, since the
/// memory reserved was sized by the version alone. Now the reservation must cover the
/// room's document too (counted as the document limits count it, each node as at least
/// 24 bytes), else 503 with `Retry-After`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_is_within_the_budget_however_large_the_document_it_starts_from() {
    let _serial = SERIAL.lock().await;
    const BUDGET_MIB: u64 = 160;
    const NODES: usize = 450_000;
    let budget = format!("{BUDGET_MIB}M");
    let r = room(&[
        ("ATRIUM_MEMORY_BUDGET", budget.as_str()),
        ("ATRIUM_WS_BYTES_PER_SECOND", "67108864"),
        ("ATRIUM_WS_PER_SECOND", "10000"),
    ])
    .await;
    let file = create_file(&r.node, &r.owner, "Tiny", Some(json!({}))).await;
    let id = s(&file["id"]).to_string();
    let versions = format!("/api/files/{id}/versions");
    let body = json!({"title": "empty"});
    let named = send_json(&r.node, "POST", &versions, Some(&r.owner), &body).await;
    named.assert_status(201);
    let vid = named.body()["id"].as_u64().expect("a version id");
    let (mut c, _) = Client::join(&r.node, &id, &Hello::token(&r.owner)).await;
    // The document alone comes near the budget's mark, where the node takes only small
    // patches until it has given back what it freed: a refused chunk is sent again.
    let mut op = 0u64;
    for chunk in 0..NODES / 1000 {
        let ops: Vec<Value> = (chunk * 1000..(chunk + 1) * 1000)
            .map(|k| json!({"op": "put", "id": format!("{k:06}"), "props": {"v": 1}}))
            .collect();
        let mut refused = 0;
        loop {
            op += 1;
            c.send_patch(op, ops.clone()).await;
            let m = loop {
                let m = c.recv_json().await;
                if matches!(m["type"].as_str(), Some("ack" | "reject")) {
                    break m;
                }
            };
            if m["type"] == "ack" {
                break;
            }
            let at_mark = m["message"]
                .as_str()
                .is_some_and(|t| t.contains("memory budget"));
            assert!(at_mark && refused < 50, "chunk {chunk}: {m}");
            refused += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);
    let (port, token, path) = (
        r.node.port,
        r.owner.clone(),
        format!("{versions}/{vid}/restore"),
    );
    let restore = tokio::spawn(async move {
        let auth = format!("Bearer {token}");
        let headers = [("authorization", auth.as_str())];
        atrium_testkit::http::request(port, "POST", &path, &headers, None).await
    });
    let mut peak = rss0;
    while !restore.is_finished() {
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A restore made is relayed and saved after its answer.
    for _ in 0..200 {
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let answer = restore.await.expect("a restore");
    let peak_mib = peak as f64 / 1024.0;
    figure(
        json!({"case": "restore of an empty version over 450,000 small nodes",
                  "budget_mib": BUDGET_MIB, "rss_start_mib": rss0 / 1024,
                  "peak_rss_mib": (peak_mib * 10.0).round() / 10.0, "answer": answer.status}),
    );
    assert!(
        peak_mib < BUDGET_MIB as f64,
        "resident memory reached {peak_mib:.1} MiB with a budget of {BUDGET_MIB} MiB (answer {})",
        answer.status
    );
    match answer.status {
        503 => assert!(answer.header("retry-after").is_some(), "{}", answer.text),
        status => assert_eq!(status, 200, "{}", answer.text),
    }
    // The room goes on either way.
    c.patch_acked(
        1_000,
        vec![json!({"op": "put", "id": "after", "props": {}})],
    )
    .await;
}

/// Reads of two small files' versions in a loop, from six addresses (a reading of
/// `history::turns` after the tenth review: each piece of version work reserved for the
/// largest document it might rebuild, half of the budget's room, so three reads of small
/// versions at once kept seven eighths of it promised, and other people's uploads and
/// room openings met a budget that was not used). Versions keep their document's size and
/// work reserves for that: what is promised stays small, and another person's uploads of
/// 3 MB documents all go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_small_versions_leave_the_budget_to_others() {
    let (_serial, r, mut probe, base) = case(&[("ATRIUM_MEMORY_BUDGET", "160M")]).await;
    let port = r.node.port;
    let admin = r.node.admin_port().expect("an admin address");
    let mut reads = Vec::new();
    for name in ["One", "Two"] {
        let doc: serde_json::Map<String, Value> = (0..5_000)
            .map(|k| (format!("n{k}"), json!({"x": k})))
            .collect();
        let file = create_file(&r.node, &r.owner, name, Some(Value::Object(doc))).await;
        let id = s(&file["id"]).to_string();
        set_link(&r.node, &r.owner, &id, "edit").await;
        let vid = named_version(&r, &id).await;
        let key = s(&file["edit_key"]).to_string();
        reads.push((format!("/api/files/{id}/versions/{vid}"), key));
    }
    let someone = new_account(&r.node, "someone").await;
    let upload: serde_json::Map<String, Value> = (0..60_000)
        .map(|k| (format!("n{k}"), json!({"x": k, "p": "a".repeat(32)})))
        .collect();
    let upload = json!({"name": "Upload", "doc": Value::Object(upload)}).to_string();
    let readers = Arc::new(Mutex::new(HashMap::<u16, u64>::new()));
    let uploads = Arc::new(Mutex::new(HashMap::<u16, u64>::new()));
    let promised = Arc::new(AtomicU64::new(0));
    let (_, during, secs) = attack(&mut probe, 14, |n, done| {
        let (reads, readers) = (reads.clone(), readers.clone());
        let (someone, upload, uploads) = (someone.clone(), upload.clone(), uploads.clone());
        let promised = promised.clone();
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                match n {
                    12 => {
                        // Someone else uploads a 3 MB document every quarter second.
                        let auth = format!("Bearer {someone}");
                        let headers = [("authorization", auth.as_str())];
                        let body = Some(upload.clone().into_bytes());
                        let a = atrium_testkit::http::request(
                            port,
                            "POST",
                            "/api/files",
                            &headers,
                            body,
                        )
                        .await;
                        *uploads.lock().unwrap().entry(a.status).or_insert(0) += 1;
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                    13 => {
                        // What the budget has promised, as the node samples it.
                        let m = http_at(admin, "GET", "/metrics", &[], None).await;
                        let now = metric_sum(&m.text, "atrium_memory_promised_bytes", &[]);
                        promised.fetch_max(now.expect("the gauge") as u64, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    _ => {
                        let (path, key) = &reads[n % 2];
                        let source = [127, 0, 0, 41 + (n / 2) as u8];
                        let status = get_from(source, port, path, key).await;
                        *readers.lock().unwrap().entry(status).or_insert(0) += 1;
                        if status != 200 {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
            }
        })
    })
    .await;
    let readers = readers.lock().unwrap().clone();
    let uploads = uploads.lock().unwrap().clone();
    let promised_mib = promised.load(Ordering::SeqCst) as f64 / (1 << 20) as f64;
    report(
        "version reads of two small files from six addresses; someone else uploads 3 MB documents",
        &base,
        &during,
        json!({"readers": readers, "uploads": uploads, "seconds": secs,
               "peak_promised_mib": (promised_mib * 10.0).round() / 10.0}),
    );
    assert!(
        readers.get(&200).is_some_and(|&n| n > 100),
        "the reads were not under way: {readers:?}"
    );
    // An upload promises 18 MB while it is read and built; the reads a little each.
    assert!(
        promised_mib < 32.0,
        "{promised_mib:.1} MiB promised at once (uploads {uploads:?})"
    );
    let made = uploads.get(&201).copied().unwrap_or(0);
    assert!(made >= 3, "uploads: {uploads:?}");
    assert_eq!(made, uploads.values().sum::<u64>(), "uploads: {uploads:?}");
    probe.settle().await;
}

/// `GET path` with `credentials` (a header line, `authorization: Bearer ...` or
/// `x-atrium-key: ...`) from a loopback `source` address, on a connection of its own; the
/// answer's status (0 when none came).
async fn get_as_from(source: [u8; 4], port: u16, path: &str, credentials: &str) -> u16 {
    let mut stream = atrium_testkit::tcp::connect_from(source, port).await;
    let request =
        format!("GET {path} HTTP/1.1\r\nhost: x\r\n{credentials}\r\nconnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return 0;
    }
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer));
    match read.await {
        Ok(Ok(_)) if answer.len() >= 12 => std::str::from_utf8(&answer[9..12])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

/// One account compares its file's versions from six addresses at once (the tenth review's
/// compare loop: a free account from six addresses, 1.6 of the node's 2 cores). Each
/// address has its share of document bytes, and the account has one share for all its
/// addresses: together they are paced as one address is. The same loop by the file's link
/// key with no account (which went around the account's share, a review found) draws on
/// the share of the owner's link guests. Another account's comparisons go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_account_comparing_from_many_addresses_is_paced_as_one() {
    // 100 KB a second after 1 MB at once, for each address and each account.
    let r = room(&[
        ("ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND", "100000"),
        ("ATRIUM_DOCUMENT_BURST_BYTES_PER_IP", "1000000"),
    ])
    .await;
    let port = r.node.port;
    // About 200 KB of document: a comparison rebuilds 400 KB.
    let doc: serde_json::Map<String, Value> = (0..2_000)
        .map(|k| (format!("n{k}"), json!({"t": "x".repeat(90)})))
        .collect();
    let file = create_file(&r.node, &r.owner, "Mine", Some(Value::Object(doc))).await;
    let id = s(&file["id"]).to_string();
    set_link(&r.node, &r.owner, &id, "edit").await;
    let edit_key = s(&file["edit_key"]).to_string();
    let vid = named_version(&r, &id).await;
    let compare = format!("/api/files/{id}/versions/compare?from={vid}");

    // Six addresses for three seconds each way: signed in, then by the file's own edit
    // key with no account (which once went around the account's share).
    let by_token = format!("authorization: Bearer {}", r.owner);
    let by_key = format!("x-atrium-key: {edit_key}");
    let signed_in = compare_loop(port, &compare, &by_token, 20).await;
    let by_link = compare_loop(port, &compare, &by_key, 30).await;

    // Another account compares its own file meanwhile paced by nothing of the first's.
    let other = new_account(&r.node, "other").await;
    let theirs = create_file(&r.node, &other, "Theirs", Some(json!({"a": {"x": 1}}))).await;
    let theirs_id = s(&theirs["id"]).to_string();
    let path = format!("/api/files/{theirs_id}/versions");
    let named = send_json(&r.node, "POST", &path, Some(&other), &json!({"title": "t"})).await;
    let theirs_vid = named.body()["id"].as_u64().expect("a version");
    let theirs_compare = format!("/api/files/{theirs_id}/versions/compare?from={theirs_vid}");
    let credentials = format!("authorization: Bearer {other}");
    let status = get_as_from([127, 0, 0, 40], port, &theirs_compare, &credentials).await;

    figure(
        json!({"case": "one account compares from six addresses for 3 s, then by its link key",
                  "per_address_and_account": "100 KB/s after 1 MB", "signed_in": signed_in,
                  "by_link_key": by_link, "another_account": status}),
    );
    for answers in [&signed_in, &by_link] {
        assert!(
            answers.keys().all(|s| [200, 429].contains(s)),
            "{answers:?}"
        );
        // 1 MB at once and 100 KB a second for 3 s is under four comparisons of 400 KB,
        // and two more may have been let in before the one that spent it was charged (a
        // party has two places per file); each address alone would have had that much
        // (19 in all before).
        let served = answers.get(&200).copied().unwrap_or(0);
        assert!(
            (1..=7).contains(&served),
            "served {served} comparisons ({answers:?})"
        );
    }
    assert_eq!(status, 200, "another account's comparison");
}

/// `path` asked for with `credentials` in a loop from six loopback addresses (127.0.0.`first`
/// on) for three seconds; how it was answered.
async fn compare_loop(port: u16, path: &str, credentials: &str, first: u8) -> HashMap<u16, u64> {
    let until = Instant::now() + Duration::from_secs(3);
    let mut askers = Vec::new();
    for n in 0..6u8 {
        let (path, credentials) = (path.to_string(), credentials.to_string());
        askers.push(tokio::spawn(async move {
            let mut answers = HashMap::<u16, u64>::new();
            while Instant::now() < until {
                let status = get_as_from([127, 0, 0, first + n], port, &path, &credentials).await;
                *answers.entry(status).or_insert(0) += 1;
                if status == 429 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            answers
        }));
    }
    let mut answers = HashMap::<u16, u64>::new();
    for a in askers {
        for (status, n) in a.await.expect("an asker") {
            *answers.entry(status).or_insert(0) += n;
        }
    }
    answers
}

/// A guest starts comparing a large file's versions and leaves before the answer (the
/// review's note: the address was charged only once the work was done, so a client that
/// left each time got its comparisons rebuilt for free). What the work plans is charged to
/// the address before it runs: the address's next download, of another account's file,
/// waits its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_left_before_its_answer_is_charged_to_the_address() {
    left_before_its_answer(Asked::Comparison).await;
}

/// The same for versions saved before versions kept their document's size (their work is
/// planned for the largest document a file may hold, and was charged only once done): it
/// is charged before the work by what their rows likely rebuild to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_of_versions_without_their_size_left_before_its_answer_is_charged() {
    left_before_its_answer(Asked::VersionsWithoutSize).await;
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Asked {
    Comparison,
    VersionsWithoutSize,
}

async fn left_before_its_answer(asked: Asked) {
    let _serial = SERIAL.lock().await;
    let r = room(&[
        ("ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND", "100000"),
        ("ATRIUM_DOCUMENT_BURST_BYTES_PER_IP", "1000000"),
    ])
    .await;
    let port = r.node.port;
    let file = create_file(&r.node, &r.owner, "Large", Some(huge::large_document())).await;
    let id = s(&file["id"]).to_string();
    set_link(&r.node, &r.owner, &id, "edit").await;
    let by_key = format!("x-atrium-key: {}", s(&file["edit_key"]));
    let vid = named_version(&r, &id).await;
    let path = match asked {
        Asked::Comparison => format!("/api/files/{id}/versions/compare?from={vid}"),
        Asked::VersionsWithoutSize => {
            // As a store written before rows kept their document's size left it.
            let db = rusqlite::Connection::open(r.node.data.join("atrium.sqlite3"))
                .expect("the node's store");
            db.busy_timeout(Duration::from_secs(5))
                .expect("a busy timeout");
            let forgotten = db
                .execute(
                    "UPDATE versions SET doc_bytes = NULL WHERE file_id = ?1",
                    [&id],
                )
                .expect("the version's size forgotten");
            assert!(forgotten > 0, "the file's versions");
            format!("/api/files/{id}/versions/compare?from={vid}&to={vid}")
        }
    };
    let other = new_account(&r.node, "other").await;
    let theirs = create_file(&r.node, &other, "Theirs", Some(json!({"a": {"x": 1}}))).await;
    let download = format!("/api/files/{}/doc", s(&theirs["id"]));
    let theirs_credentials = format!("authorization: Bearer {other}");

    // The address may download at first: its share is whole.
    let guest = [127, 0, 0, 70];
    let first = get_as_from(guest, port, &download, &theirs_credentials).await;
    // Rebuilding the 8 MB file's versions takes longer than the guest waits: it leaves
    // long before the work is done.
    let mut stream = atrium_testkit::tcp::connect_from(guest, port).await;
    let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\n{by_key}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("sent");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut answered = [0u8; 1];
    let answered_before_leaving = matches!(stream.try_read(&mut answered), Ok(n) if n > 0);
    drop(stream);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = get_as_from(guest, port, &download, &theirs_credentials).await;
    // Another address is not charged for it.
    let elsewhere = get_as_from([127, 0, 0, 71], port, &download, &theirs_credentials).await;
    figure(
        json!({"case": format!("a guest leaves an 8 MB file's {asked:?} after 100 ms"),
                  "download_before": first, "answered_before_leaving": answered_before_leaving,
                  "download_after": after, "another_address": elsewhere}),
    );
    assert_eq!(first, 200, "the address's first download");
    assert!(
        !answered_before_leaving,
        "the work was answered within 100 ms"
    );
    assert_eq!(after, 429, "the address's download after the work it left");
    assert_eq!(elsewhere, 200, "another address's download");
}
