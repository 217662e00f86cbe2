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
