//! The endpoint routes, who may use them, and their hostile inputs.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_are_made_changed_and_deleted_by_server_keys_only() {
    let (node, key) = node_with_key(None, &[("ATRIUM_WEBHOOK_MAX_ENDPOINTS", "2")]).await;
    let url = "http://127.0.0.1:9/hooks";
    let body = json!({"url": url, "events": ["room.opened"]});
    // No key, a session of someone who is not an admin: refused.
    send_json(&node, "POST", "/api/webhooks", None, &body)
        .await
        .assert_error(401, "unauthorized");
    let someone = new_account(&node, "someone").await;
    send_json(&node, "POST", "/api/webhooks", Some(&someone), &body)
        .await
        .assert_error(403, "forbidden");
    send_json(&node, "POST", "/api/webhooks", Some("atk_not_a_key"), &body)
        .await
        .assert_error(401, "unauthorized");
    for bad in [
        json!({}),
        json!({"url": "ftp://x/"}),
        json!({"url": "http://user@x/"}),
        json!({"url": format!("https://x/{}", "a".repeat(3000))}),
        json!({"url": url, "events": []}),
        json!({"url": url, "events": ["file.deleted"]}),
        json!({"url": url, "secret": "plain"}),
        json!({"url": url, "secret": "whsec_c2hvcnQ="}),
        json!({"url": url, "description": "a\nb"}),
        json!({"url": url, "enabled": "yes"}),
    ] {
        let r = send_json(&node, "POST", "/api/webhooks", Some(&key), &bad).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
        assert!(r.json.unwrap()["error"]["code"].is_string());
    }
    let huge = json!({"url": url, "description": "x".repeat(20_000)});
    assert_eq!(
        send_json(&node, "POST", "/api/webhooks", Some(&key), &huge)
            .await
            .status,
        413
    );
    assert!(
        get(&node, "/api/webhooks", Some(&key)).await.json.unwrap()["webhooks"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Made with a secret of its own, or given one.
    let given = format!("whsec_{}", "QUJD".repeat(8));
    let made = send_json(
        &node,
        "POST",
        "/api/webhooks",
        Some(&key),
        &json!({"url": url, "secret": given}),
    )
    .await;
    made.assert_status(201);
    let made = made.json.unwrap();
    assert_eq!(made["secret"], given.as_str());
    assert_eq!(
        made["events"].as_array().unwrap().len(),
        6,
        "all events by default"
    );
    let (id, secret) = endpoint(&node, &key, url, Some(&["room.opened", "room.opened"])).await;
    assert!(secret.starts_with("whsec_"));
    // At the cap.
    send_json(&node, "POST", "/api/webhooks", Some(&key), &body)
        .await
        .assert_error(403, "too-many-webhooks");
    let list = get(&node, "/api/webhooks", Some(&key)).await;
    list.assert_status(200);
    assert!(!list.text.contains("whsec_"), "secrets are not listed");
    let one = get(&node, &format!("/api/webhooks/{id}"), Some(&key)).await;
    assert_eq!(one.json.unwrap()["events"], json!(["room.opened"]));

    let path = format!("/api/webhooks/{id}");
    let off = send_json(
        &node,
        "PATCH",
        &path,
        Some(&key),
        &json!({"enabled": false}),
    )
    .await;
    off.assert_status(200);
    assert_eq!(off.json.unwrap()["enabled"], false);
    send_json(
        &node,
        "PATCH",
        &path,
        Some(&key),
        &json!({"events": ["nope"]}),
    )
    .await
    .assert_error(400, "bad-request");
    send_json(
        &node,
        "PATCH",
        "/api/webhooks/ep_none",
        Some(&key),
        &json!({}),
    )
    .await
    .assert_error(404, "not-found");
    send_empty(&node, "DELETE", &path, Some(&key))
        .await
        .assert_status(204);
    send_empty(&node, "DELETE", &path, Some(&key))
        .await
        .assert_error(404, "not-found");
    send_empty(&node, "PUT", &path, Some(&key))
        .await
        .assert_error(405, "method-not-allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_addresses_are_refused_when_blocked() {
    let hooks = Receiver::start().await;
    let secret = format!("whsec_{}", "QUJD".repeat(8));
    // The guard on (its default), and a static endpoint on loopback from settings: it is
    // stored, but the address is refused when the message would be sent.
    let (node, key) = node_with_key(
        None,
        &[
            ("ATRIUM_WEBHOOK_BLOCK_PRIVATE", "true"),
            ("ATRIUM_WEBHOOK_URL", &hooks.url()),
            ("ATRIUM_WEBHOOK_SECRET", &secret),
        ],
    )
    .await;
    for url in [
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
    ] {
        let r = send_json(
            &node,
            "POST",
            "/api/webhooks",
            Some(&key),
            &json!({"url": url}),
        )
        .await;
        assert_eq!(r.status, 400, "{url}: {}", r.text);
    }
    let listed = get(&node, "/api/webhooks", Some(&key)).await.json.unwrap();
    assert_eq!(listed["webhooks"][0]["id"], "static");
    let (owner, file) = board(&node).await;
    let (mut ann, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
    ann.patch_acked(1, vec![put("a", json!({}))]).await;
    wait_metric(
        &node,
        "atrium_webhook_retries_total",
        &[],
        |v| v >= 2.0,
        Duration::from_secs(15),
    )
    .await;
    assert!(
        hooks.all().is_empty(),
        "nothing reached the internal address"
    );
    assert!(
        node.log().contains("internal addresses"),
        "the refusal is logged"
    );
}
