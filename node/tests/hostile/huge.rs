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
    // The body itself is held while it is read (16 MiB, in buffers that grow by doubling),
    // not its parse (about 500 MiB: the old code rose by 550 MiB here).
    assert!(
        peak - rss0 < 6 * body.len() as u64 / 1024,
        "resident memory rose by {} KiB for {} bytes uploaded",
        peak - rss0,
        body.len()
    );
}

/// Requests for a large document from clients that never read the answer: each answer
/// stays in memory until it is read. Its bytes are promised from the memory budget until
/// then, so past the budget the node answers 503 with `Retry-After` instead of growing
/// (the review: 40 such requests for a 16 MB document, 117 → 751 MiB against 512 MiB).
/// Answers of the same document at the same version are one copy and one promise (the
/// tenth review: 35 unread downloads of a 24 MB file, each promising a copy, kept the node
/// refusing new files and sockets for 30 s at 180 MiB resident).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_document_answers_stay_within_the_budget() {
    let _serial = SERIAL.lock().await;
    let (r, file) = large_file_unpaced().await;
    let id = s(&file["id"]).to_string();
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);
    let request = format!(
        "GET /api/files/{id}/doc HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\r\n",
        r.owner
    );
    let (mut editor, _) = Client::join(&r.node, &id, &Hello::token(&r.owner)).await;
    let mut peak = rss0;
    // 1. Forty unread requests for the same version: one copy, every one answered, and
    //    the node still takes new work meanwhile.
    let mut same = Vec::new();
    for _ in 0..40 {
        same.push(unread_request(r.node.port, &request).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
        peak = peak.max(rss_kib(pid));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let small = json!({"name": "Small", "doc": {"a": {"x": 1}}});
    send_json(&r.node, "POST", "/api/files", Some(&r.owner), &small)
        .await
        .assert_status(201);
    let same_answers = first_lines(&mut same).await;
    drop(same);
    // 2. Forty unread requests, the document edited before each: forty versions, forty
    //    copies, each promised; past the budget 503.
    let mut held = Vec::new();
    for n in 0..40u64 {
        let put = json!({"op": "put", "id": format!("edit{n}"), "props": {"n": n}});
        editor.patch_acked(n + 1, vec![put]).await;
        held.push(unread_request(r.node.port, &request).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(rss_kib(pid));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    peak = peak.max(rss_kib(pid));
    let statuses = first_lines(&mut held).await;
    figure(
        json!({"case": "40 unread answers of an 8 MB document, then 40 of it edited between", "budget_mib": BUDGET_MIB,
                  "rss_start_mib": rss0 / 1024, "peak_rss_mib": peak / 1024,
                  "same_version": same_answers, "new_versions": statuses}),
    );
    assert!(
        peak / 1024 < BUDGET_MIB,
        "resident memory reached {} MiB",
        peak / 1024
    );
    assert_eq!(
        same_answers.get("HTTP/1.1 200"),
        Some(&40),
        "{same_answers:?}"
    );
    assert!(statuses.contains_key("HTTP/1.1 503"), "{statuses:?}");
    assert!(statuses.contains_key("HTTP/1.1 200"), "{statuses:?}");
    // Once the readers go, their memory comes back and the document is served again.
    drop(held);
    let mut served = false;
    for _ in 0..50 {
        if get(&r.node, &format!("/api/files/{id}/doc"), Some(&r.owner))
            .await
            .status
            == 200
        {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(served, "the document was never served again");
}

/// Strangers with the view key ask for an owner's 8 MB file from twelve addresses and never
/// read, the owner editing it before each request: every answer is a new version and so a
/// new copy (the tenth review's other half: unread downloads of many different documents
/// each promised a copy, until the budget was spent for the 30 s a write may take). The
/// copies count against the owner's share of answers, so the strangers get 503 past it,
/// and another account's download of its own 8 MB file, and the owner's own, are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_answers_of_one_accounts_files_hold_at_most_its_share() {
    let _serial = SERIAL.lock().await;
    let (r, file) = large_file_unpaced().await;
    let port = r.node.port;
    let id = s(&file["id"]).to_string();
    set_link(&r.node, &r.owner, &id, "view").await;
    let key = s(&file["view_key"]).to_string();
    let someone = new_account(&r.node, "someone").await;
    let theirs = create_file(&r.node, &someone, "Theirs", Some(large_document())).await;
    let theirs = s(&theirs["id"]).to_string();
    let (mut editor, _) = Client::join(&r.node, &id, &Hello::token(&r.owner)).await;
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);
    let mut peak = rss0;
    let request =
        format!("GET /api/files/{id}/doc HTTP/1.1\r\nhost: x\r\nx-atrium-key: {key}\r\n\r\n");
    let mut held = Vec::new();
    for n in 0..24u64 {
        let put = json!({"op": "put", "id": format!("edit{n}"), "props": {"n": n}});
        editor.patch_acked(n + 1, vec![put]).await;
        let source = [127, 0, 0, 60 + (n % 12) as u8];
        held.push(unread_request_from(source, port, &request).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(rss_kib(pid));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let strangers = first_lines(&mut held).await;
    // While the strangers' answers are held: someone else's download (from an address of
    // its own: the owner's room holds 127.0.0.1's share of rooms), and the owner's.
    let theirs = format!(
        "GET /api/files/{theirs}/doc HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {someone}\r\n\
         connection: close\r\n\r\n"
    );
    let someone_else = read_whole([127, 0, 0, 90], port, &theirs).await;
    let owner = get(&r.node, &format!("/api/files/{id}/doc"), Some(&r.owner)).await;
    peak = peak.max(rss_kib(pid));
    figure(json!({
        "case": "24 unread answers of an 8 MB file, edited between, from 12 addresses; then another account's download and the owner's",
        "budget_mib": BUDGET_MIB, "rss_start_mib": rss0 / 1024, "peak_rss_mib": peak / 1024,
        "strangers": strangers, "someone_else": someone_else.lines().next(), "owner": owner.status,
    }));
    assert!(
        peak / 1024 < BUDGET_MIB,
        "resident memory reached {} MiB",
        peak / 1024
    );
    assert!(strangers.contains_key("HTTP/1.1 200"), "{strangers:?}");
    assert!(strangers.contains_key("HTTP/1.1 503"), "{strangers:?}");
    assert!(
        someone_else.starts_with("HTTP/1.1 200"),
        "{}",
        &someone_else[..someone_else.len().min(400)]
    );
    assert_eq!(owner.status, 200, "{}", owner.text);
    drop(held);
}

/// The whole answer to `request` (which closes the connection), sent from `source`.
async fn read_whole(source: [u8; 4], port: u16, request: &str) -> String {
    let mut stream = atrium_testkit::tcp::connect_from(source, port).await;
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer))
        .await
        .expect("an answer within 30 s")
        .expect("a readable answer");
    String::from_utf8_lossy(&answer).into_owned()
}

/// The budget the unread-answer cases run with.
const BUDGET_MIB: u64 = 256;

/// A node with a [`BUDGET_MIB`] budget and an owner's 8 MB file on it (its creation
/// answer). The address's share of document bytes would refuse the cases' downloads
/// first: memory is what they test.
async fn large_file_unpaced() -> (Room, Value) {
    let budget = format!("{BUDGET_MIB}M");
    let r = room(&[
        ("ATRIUM_MEMORY_BUDGET", budget.as_str()),
        ("ATRIUM_DOCUMENT_BURST_BYTES_PER_IP", "4294967296"),
    ])
    .await;
    let file = create_file(&r.node, &r.owner, "Large", Some(large_document())).await;
    (r, file)
}

/// The status line each held answer starts with, counted.
async fn first_lines(held: &mut [TcpStream]) -> HashMap<String, u64> {
    let mut statuses = HashMap::<String, u64>::new();
    for stream in held {
        let mut head = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut head))
            .await
            .expect("an answer")
            .unwrap();
        let status = String::from_utf8_lossy(&head[..n.min(12)]).to_string();
        *statuses.entry(status).or_insert(0) += 1;
    }
    statuses
}

/// A document of about 7.8 MB: 60,000 nodes of a 100-character name and a number.
pub(super) fn large_document() -> Value {
    let doc: serde_json::Map<String, Value> = (0..60_000)
        .map(|k| (format!("n{k}"), json!({"name": "x".repeat(100), "x": k})))
        .collect();
    Value::Object(doc)
}

/// A connection with a 4 KiB receive buffer that sends `request` and reads nothing.
pub(super) async fn unread_request(port: u16, request: &str) -> TcpStream {
    unread_request_from([127, 0, 0, 1], port, request).await
}

/// [`unread_request`] from the loopback address `source`.
async fn unread_request_from(source: [u8; 4], port: u16, request: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind((source, 0).into()).unwrap();
    let mut stream = socket.connect(([127, 0, 0, 1], port).into()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// A document declared larger than the limit is refused as too large (413) before any of
/// it is read, whatever the node's memory: it was answered 503 (the memory budget) when
/// the largest document's cost did not fit (the fourth review).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_declared_over_the_limit_is_too_large_not_busy() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_MEMORY_BUDGET", "256M")]).await;
    let request = format!(
        "POST /api/files HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: 200000000\r\n\r\n",
        r.owner
    );
    let answer = raw_http(r.node.port, request.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#""code":"too-large""#), "{answer}");
}

/// A body is promised from the memory budget as its bytes come, not by what its header
/// declares: a free account's creations that declare a large document and send none of it
/// held nothing (the eleventh review: four requests saying 64 MiB each, 200 bytes sent, kept a
/// node with a 2 GiB budget refusing every socket and download for the body's deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_declared_and_never_sent_holds_none_of_the_budget() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_MEMORY_BUDGET", "256M")]).await;
    let port = r.node.port;
    // Six creations declaring 12 MiB each (60 MiB each at five times their size), none sent.
    let request = format!(
        "POST /api/files HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: 12582912\r\n\r\n{{\"name\":",
        r.owner
    );
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(unread_request(port, &request).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Everyone else is still served: a socket, a download, a new file.
    let upgrade = upgrade_answer(port, &r.id, "").await;
    let doc = atrium_testkit::http::request(
        port,
        "GET",
        &format!("/api/files/{}/doc", r.id),
        &[("authorization", &format!("Bearer {}", r.owner))],
        None,
    )
    .await;
    let created = create_file(&r.node, &r.owner, "Honest", None).await;
    let promised = metric(
        &metrics_text(&r.node).await,
        "atrium_memory_promised_bytes",
        &[],
    );
    figure(
        json!({"case": "bodies declared and never sent", "declared_bytes": 6 * 12 * 1024 * 1024,
                  "promised_bytes": promised, "upgrade": upgrade.lines().next(), "download": doc.status}),
    );
    assert!(upgrade.starts_with("HTTP/1.1 101"), "{upgrade}");
    doc.assert_status(200);
    assert!(created["id"].is_string(), "{created}");
    assert!(
        promised < 1024.0 * 1024.0,
        "{promised} bytes promised for bodies not sent"
    );
    // Each is ended by the body's deadline, as before: 408 `timeout`.
    drop(held);
}

/// The list of one's files is held until read as a document answer is: promised from the
/// memory budget and counted against the address's share of answers, so lists asked on
/// connections that never read get 503 past the share instead of staying in the node
/// outside the budget (the eleventh review: at 1,000 files, 0.8 MB a list, 164 connections
/// of one address held about 130 MB for the 30 s a write may take).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_lists_of_files_hold_at_most_the_address_share() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_ROOM_MEMORY_SHARE", "512K")]).await;
    // About 250 KB a list: more than the kernel takes off an unread connection.
    let long = "a long file name to make the list large ".repeat(4);
    for n in 0..999 {
        create_file(&r.node, &r.owner, &format!("{long}{n}"), None).await;
    }
    let request = format!(
        "GET /api/files HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\r\n",
        r.owner
    );
    let mut held = Vec::new();
    for _ in 0..16 {
        held.push(unread_request(r.node.port, &request).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answers = first_lines(&mut held).await;
    figure(
        json!({"case": "16 unread lists of 1,000 files from one address, 512 KiB share",
                  "answers": answers}),
    );
    assert!(answers.contains_key("HTTP/1.1 200"), "{answers:?}");
    assert!(answers.contains_key("HTTP/1.1 503"), "{answers:?}");
    drop(held);
    // Once they are gone, the list is served again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    get(&r.node, "/api/files", Some(&r.owner))
        .await
        .assert_status(200);
}

/// A comparison of versions is held until read as a document answer is: its lists are as
/// large as the documents, and they were built after the work's memory was given back and
/// sent outside the budget (the eleventh review). Comparisons asked on connections that
/// never read get 503 past the address's share of answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_comparisons_hold_at_most_the_address_share() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_ROOM_MEMORY_SHARE", "1M")]).await;
    let file = create_file(&r.node, &r.owner, "Grows", None).await;
    let id = s(&file["id"]).to_string();
    let path = format!("/api/files/{id}/versions");
    let named = send_json(
        &r.node,
        "POST",
        &path,
        Some(&r.owner),
        &json!({"title": "empty"}),
    )
    .await;
    let vid = named.body()["id"].as_u64().expect("a version");
    // 30,000 nodes added since: the comparison lists each (about 450 KB).
    let (mut c, _) = Client::join(&r.node, &id, &Hello::token(&r.owner)).await;
    for p in 0..30u64 {
        let ops = (0..1000)
            .map(|k| put(&format!("added{p:02}n{k:04}"), json!({})))
            .collect();
        c.patch_acked(p + 1, ops).await;
    }
    let request = format!(
        "GET /api/files/{id}/versions/compare?from={vid}&to=current HTTP/1.1\r\nhost: x\r\n\
         authorization: Bearer {}\r\n\r\n",
        r.owner
    );
    // One at a time (each answer's head read before the next is asked), so that no turn
    // for version work is what refuses one.
    let mut held = Vec::new();
    let mut answers = HashMap::<String, u64>::new();
    for _ in 0..8 {
        let mut one = [unread_request(r.node.port, &request).await];
        for (status, n) in first_lines(&mut one).await {
            *answers.entry(status).or_insert(0) += n;
        }
        held.extend(one);
    }
    figure(
        json!({"case": "8 unread comparisons listing 30,000 nodes from one address, 1 MiB share",
                  "answers": answers}),
    );
    assert!(answers.contains_key("HTTP/1.1 200"), "{answers:?}");
    assert!(answers.contains_key("HTTP/1.1 503"), "{answers:?}");
}
