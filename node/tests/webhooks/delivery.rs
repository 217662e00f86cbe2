//! Signed messages, their payloads, and their order per file.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rooms_life_arrives_signed_and_in_order() {
    let hooks = Receiver::start().await;
    let (node, key) = node_with_key(None, &[]).await;
    let (_, secret) = endpoint(&node, &key, &hooks.url(), None).await;
    let (owner, file) = board(&node).await;
    let (mut ann, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
    for i in 1..=5u64 {
        ann.patch_acked(i, vec![put(&format!("n{i}"), json!({"i": i}))])
            .await;
    }
    // A second burst after the first was sent: a second `file.updated`.
    hooks
        .wait_for(Duration::from_secs(10), "the first file.updated", |g| {
            g.iter().any(|g| g.kind() == "file.updated")
        })
        .await;
    for i in 6..=8u64 {
        ann.patch_acked(i, vec![put(&format!("n{i}"), json!({"i": i}))])
            .await;
    }
    ann.close().await;
    let got = hooks
        .wait_for(Duration::from_secs(20), "room.closed", |g| {
            g.iter().any(|g| g.kind() == "room.closed")
        })
        .await;
    let mine = of_file(&got, &file);
    let k = kinds(&mine);
    assert_eq!(k.first().map(String::as_str), Some("room.opened"), "{k:?}");
    assert_eq!(k.last().map(String::as_str), Some("room.closed"), "{k:?}");
    let at = |kind: &str| k.iter().position(|x| x == kind).unwrap();
    assert!(at("person.joined") < at("person.left"), "{k:?}");
    // Debounced: far fewer than 8 messages, increasing, ending at the last version.
    let v = versions(&mine);
    assert!(!v.is_empty() && v.len() <= 4, "{v:?}");
    assert!(v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
    assert_eq!(*v.last().unwrap(), 8);
    for g in &mine {
        assert!(verify(&secret, g), "bad signature on {}", g.body);
        assert!(g.id.starts_with("msg_"));
        let skew = (g.timestamp
            - std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64)
            .abs();
        assert!(skew < 120, "timestamp {} is not now", g.timestamp);
        assert!(g.json["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    let mut ids: Vec<&str> = mine.iter().map(|g| g.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), mine.len(), "each message has its own id");
    let joined = mine.iter().find(|g| g.kind() == "person.joined").unwrap();
    let person = &joined.json["data"]["person"];
    assert_eq!(person["name"], "Test Person");
    assert_eq!(person["role"], "editor");
    assert!(person["account_id"].is_string());
    // A wrong secret does not verify.
    let other = format!("whsec_{}", "A".repeat(44));
    assert!(!verify(&other, mine[0]));
    let text = metrics_text(&node).await;
    assert!(metric(&text, "atrium_webhook_delivered_total", &[]) >= mine.len() as f64);
    assert!(has_metric(&text, "atrium_webhook_delivery_seconds_bucket"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_file_is_in_order_and_events_are_filtered() {
    let hooks = Receiver::start().await;
    let (node, key) = node_with_key(None, &[("ATRIUM_WEBHOOK_DEBOUNCE_MS", "0")]).await;
    let (_, secret) = endpoint(
        &node,
        &key,
        &hooks.url(),
        Some(&["file.updated", "version.created"]),
    )
    .await;
    let mut files = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..3 {
        let (owner, file) = board(&node).await;
        let (c, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
        files.push((owner, file));
        clients.push(c);
    }
    for i in 1..=30u64 {
        for c in clients.iter_mut() {
            c.patch_acked(i, vec![put(&format!("n{i}"), json!({"i": i}))])
                .await;
        }
    }
    // A named version: `version.created`.
    let (owner, file0) = &files[0];
    send_json(
        &node,
        "POST",
        &format!("/api/files/{file0}/versions"),
        Some(owner),
        &json!({"title": "Milestone"}),
    )
    .await
    .assert_status(201);
    let got = hooks
        .wait_for(
            Duration::from_secs(20),
            "version 30 of every file and the version",
            |g| {
                files
                    .iter()
                    .all(|(_, f)| versions(&of_file(g, f)).last() == Some(&30))
                    && g.iter().any(|g| g.kind() == "version.created")
            },
        )
        .await;
    for (_, f) in &files {
        let mine = of_file(&got, f);
        let v = versions(&mine);
        assert!(v.windows(2).all(|w| w[0] < w[1]), "{f}: {v:?}");
        assert!(mine.iter().all(|g| verify(&secret, g)));
    }
    assert!(got
        .iter()
        .all(|g| matches!(g.kind(), "file.updated" | "version.created")));
    let version = got.iter().find(|g| g.kind() == "version.created").unwrap();
    assert_eq!(version.json["data"]["title"], "Milestone");
    assert_eq!(version.json["data"]["file_id"], file0.as_str());
}

/// One account's busy files (guests joining and leaving in a loop) built a backlog at the
/// endpoint, and every other file's messages waited behind all of it, oldest first: the
/// review measured a person's join told 32 s late. Files now take turns: a file's message
/// waits for one turn of the other busy files, not for their backlogs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_files_take_turns_with_the_others() {
    const BUSY: usize = 10;
    const CHURNS: usize = 20;
    let hooks = Receiver::start().await;
    // One request at a time to the endpoint, so the order it is served in is the order sent.
    let (node, key) = node_with_key(None, &[("ATRIUM_WEBHOOK_PER_ENDPOINT", "1")]).await;
    endpoint(
        &node,
        &key,
        &hooks.url(),
        Some(&["person.joined", "person.left"]),
    )
    .await;
    // The endpoint failing while the backlog builds: each busy file's first message is
    // tried and waits for its retry, the rest behind it.
    hooks.answer(503);
    let owner = new_account(&node, "busy").await;
    for n in 0..BUSY {
        let busy = file_of(&node, owner.clone(), &format!("Busy {n}"), "view").await;
        for _ in 0..CHURNS {
            let (c, _) = Client::join(&node, &busy.id, &Hello::key(&busy.view_key)).await;
            c.close().await;
        }
    }
    let quiet = shared_file(&node, "view").await;
    // The endpoint answers again; once every busy file's first message is told, the
    // backlog drains, and a person comes to the quiet file.
    hooks.answer(200);
    let draining = hooks
        .wait_for(
            Duration::from_secs(30),
            "every busy file's first message",
            |g| g.len() >= BUSY,
        )
        .await;
    let before = draining.len();
    let mut hello = Hello::key(&quiet.view_key);
    hello.name = Some("Quiet".into());
    let (_stays, _) = Client::join(&node, &quiet.id, &hello).await;
    let got = hooks
        .wait_for(Duration::from_secs(60), "the quiet file's join told", |g| {
            !of_file(g, &quiet.id).is_empty()
        })
        .await;
    let place = got.iter().position(|g| g.file() == quiet.id).unwrap() + 1 - before;
    eprintln!(
        "FIGURE {}",
        json!({"case": "busy files take turns", "backlog": BUSY * CHURNS * 2,
               "quiet_join_told_as": place})
    );
    // At most one turn of each busy file before it, and as many again for those told while
    // the join was under way.
    assert!(
        place <= 2 * BUSY,
        "the quiet file's join was the {place}th message told after it happened, behind a \
         backlog of {}",
        BUSY * CHURNS * 2 - before
    );
}

/// Messages to one receiver share a few kept connections: each message opened one of its
/// own before (and, for https, a TLS handshake of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_to_one_receiver_share_its_connections() {
    let hooks = Receiver::start().await;
    let (node, key) = node_with_key(None, &[]).await;
    endpoint(&node, &key, &hooks.url(), None).await;
    // Rooms opened and closed one after another: five or more messages each.
    for _ in 0..4 {
        let (owner, file) = board(&node).await;
        let (mut ann, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
        ann.patch_acked(1, vec![put("n", json!({}))]).await;
        ann.close().await;
        hooks
            .wait_for(Duration::from_secs(20), "room.closed", |g| {
                g.iter()
                    .any(|g| g.file() == file && g.kind() == "room.closed")
            })
            .await;
    }
    let messages = hooks.delivered().len();
    let connections = hooks.connections();
    println!("FIGURE {{\"messages\":{messages},\"connections\":{connections}}}");
    assert!(messages >= 16, "{messages} messages");
    assert!(
        connections <= 8,
        "{messages} messages took {connections} connections"
    );
    let opened = metric(
        &metrics_text(&node).await,
        "atrium_webhook_connections_total",
        &[],
    );
    assert_eq!(opened, connections as f64, "the node counts what it opens");
}
