//! The HTTP API of `PROTOCOL.md` against the real binary.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use serde_json::{json, Value};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_ready_metrics_and_unknown_routes() {
    let node = Node::start(&[]).await;

    let r = get(&node, "/health", None).await;
    r.assert_status(200);
    assert_eq!(r.body()["ok"], json!(true), "{}", r.text);
    assert!(
        r.body()["node"].as_str().is_some_and(|n| !n.is_empty()),
        "health names the node: {}",
        r.text
    );

    get(&node, "/ready", None).await.assert_status(200);

    // On the admin address (the test nodes have one; without one, /metrics on
    // the main address is for server admins: security.rs).
    let text = metrics_text(&node).await;
    assert!(text.contains("atrium_"), "metrics: {text}");
    assert!(
        text.lines().any(|l| l.starts_with("# TYPE atrium_")),
        "Prometheus text format with TYPE lines: {text}"
    );

    for path in ["/nope", "/api/nope", "/api/files/abc/nope"] {
        get(&node, path, None).await.assert_error(404, "not-found");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_sign_up_in_me_out() {
    let node = Node::start(&[]).await;
    let email = unique_email("Alice");
    let (token, account) = signup(&node, &email).await;
    assert_id(&account["id"]);
    assert_eq!(account["email"], json!(email), "{account}");
    assert_eq!(account["name"], "Test Person");
    assert_eq!(account["admin"], json!(false));
    assert!(token.len() >= 22, "token must carry 128 bits: {token:?}");

    let r = get(&node, "/api/me", Some(&token)).await;
    r.assert_status(200);
    assert_eq!(r.body()["account"], account);

    // Same email in other case: taken.
    let r = send_json(
        &node,
        "POST",
        "/api/signup",
        None,
        &json!({"email": email.to_uppercase(), "password": PASSWORD, "name": "Other"}),
    )
    .await;
    r.assert_error(409, "email-taken");

    // Wrong password, unknown email: the same answer.
    let r = send_json(
        &node,
        "POST",
        "/api/signin",
        None,
        &json!({"email": email, "password": "wrong password!"}),
    )
    .await;
    r.assert_error(401, "bad-credentials");
    let r = send_json(
        &node,
        "POST",
        "/api/signin",
        None,
        &json!({"email": unique_email("nobody"), "password": PASSWORD}),
    )
    .await;
    r.assert_error(401, "bad-credentials");

    // Sign in with the email in another case: a second session.
    let r = send_json(
        &node,
        "POST",
        "/api/signin",
        None,
        &json!({"email": email.to_uppercase(), "password": PASSWORD}),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["account"], account, "{}", r.text);
    let token2 = s(&r.body()["token"]).to_string();
    assert_ne!(token2, token);

    // Missing or malformed authorization.
    get(&node, "/api/me", None)
        .await
        .assert_error(401, "unauthorized");
    get(&node, "/api/me", Some("garbage"))
        .await
        .assert_error(401, "unauthorized");
    http(&node, "GET", "/api/me", &[("authorization", &token)], None)
        .await
        .assert_error(401, "unauthorized");
    http(
        &node,
        "GET",
        "/api/me",
        &[("authorization", &format!("Basic {token}"))],
        None,
    )
    .await
    .assert_error(401, "unauthorized");

    // A socket opened with the first token closes with 4001 on sign-out.
    let file = create_file(&node, &token2, "Board", None).await;
    let id = s(&file["id"]).to_string();
    let (mut sock, _) = Client::join(&node, &id, &Hello::token(&token)).await;
    let (mut sock2, _) = Client::join(&node, &id, &Hello::token(&token2)).await;

    let r = send_empty(&node, "POST", "/api/signout", Some(&token)).await;
    r.assert_status(204);
    sock.expect_close_within(4001, Duration::from_secs(2)).await;
    get(&node, "/api/me", Some(&token))
        .await
        .assert_error(401, "unauthorized");
    get(&node, "/api/files", Some(&token))
        .await
        .assert_error(401, "unauthorized");
    Client::join_expect_close(&node, &id, &Hello::token(&token), 4001).await;
    // Signing out twice is refused too.
    send_empty(&node, "POST", "/api/signout", Some(&token))
        .await
        .assert_error(401, "unauthorized");

    // The other session is untouched.
    get(&node, "/api/me", Some(&token2))
        .await
        .assert_status(200);
    assert_eq!(sock2.patch_acked(1, vec![put("a", json!({}))]).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_validation() {
    let node = Node::start(&[]).await;
    let bad_bodies = [
        json!({"email": "no-at-sign.example", "password": PASSWORD, "name": "A"}),
        json!({"email": unique_email("short"), "password": "1234567", "name": "A"}),
        json!({"email": unique_email("noname"), "password": PASSWORD, "name": ""}),
        json!({"email": unique_email("longname"), "password": PASSWORD, "name": "n".repeat(65)}),
        json!({"email": unique_email("missing"), "name": "A"}),
        json!({"email": 5, "password": PASSWORD, "name": "A"}),
        json!([1, 2]),
    ];
    for body in &bad_bodies {
        send_json(&node, "POST", "/api/signup", None, body)
            .await
            .assert_error(400, "bad-request");
    }
    http(
        &node,
        "POST",
        "/api/signup",
        &[],
        Some(b"email=a@b&password=x".to_vec()),
    )
    .await
    .assert_error(400, "bad-request");
    http(&node, "POST", "/api/signin", &[], Some(b"{".to_vec()))
        .await
        .assert_error(400, "bad-request");

    // The edges of the rules are accepted: 8-char password, 64-char name.
    let r = send_json(
        &node,
        "POST",
        "/api/signup",
        None,
        &json!({"email": unique_email("edge"), "password": "12345678", "name": "n".repeat(64)}),
    )
    .await;
    r.assert_status(201);
    assert_eq!(r.body()["account"]["name"], json!("n".repeat(64)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_create_list_get_doc() {
    let node = Node::start(&[]).await;
    let owner = new_account(&node, "owner").await;
    let other = new_account(&node, "other").await;
    let before = now_ms();

    // Without an initial doc.
    let empty = create_file(&node, &owner, "Empty", None).await;
    assert_id(&empty["id"]);
    assert_eq!(empty["name"], "Empty");
    assert_eq!(empty["link"], "none");
    assert_eq!(empty["version"], 0);
    let (vk, ek) = (s(&empty["view_key"]), s(&empty["edit_key"]));
    assert!(vk.len() >= 22 && ek.len() >= 22 && vk != ek, "{empty}");
    let (v, doc) = get_doc(&node, &owner, s(&empty["id"])).await;
    assert_eq!((v, doc), (0, json!({})));

    // With one.
    let initial = json!({
        "p1": {"type": "page", "name": "Cover"},
        "r1": {"page": "p1", "x": 10, "y": -2.5, "fill": "#f00", "tags": ["a", {"b": null}]}
    });
    let full = create_file(&node, &owner, "Full", Some(initial.clone())).await;
    assert_eq!(full["version"], 0);
    let full_id = s(&full["id"]).to_string();
    let (v, doc) = get_doc(&node, &owner, &full_id).await;
    assert_eq!((v, doc), (0, initial));

    // Another account's file.
    let theirs = create_file(&node, &other, "Theirs", None).await;

    // Listing: own files only, with the listed fields.
    let r = get(&node, "/api/files", Some(&owner)).await;
    r.assert_status(200);
    let files = r.body()["files"].as_array().expect("files").clone();
    let mut ids: Vec<&str> = files.iter().map(|f| s(&f["id"])).collect();
    ids.sort();
    let mut want = vec![s(&empty["id"]), full_id.as_str()];
    want.sort();
    assert_eq!(ids, want, "{}", r.text);
    for f in &files {
        assert!(f["name"].is_string(), "{f}");
        assert_eq!(f["version"], 0, "{f}");
        assert_eq!(f["link"], "none", "{f}");
        let t = f["updated_at"].as_u64().expect("updated_at in ms");
        assert!(
            t + 60_000 >= before && t <= now_ms() + 60_000,
            "updated_at must be ms since the epoch: {t}"
        );
        assert!(
            f.get("edit_key").is_none() && f.get("view_key").is_none(),
            "{f}"
        );
    }
    let r = get(&node, "/api/files", Some(&other)).await;
    assert_eq!(
        r.body()["files"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.text
    );
    assert_eq!(r.body()["files"][0]["id"], theirs["id"]);
    get(&node, "/api/files", None)
        .await
        .assert_error(401, "unauthorized");

    // ETag and If-None-Match.
    let r = get(&node, "/api/files", Some(&owner)).await;
    let etag = r.header("etag").expect("GET /api/files has an ETag");
    let auth = bearer(&owner);
    let conditional = [
        ("authorization", auth.as_str()),
        ("if-none-match", etag.as_str()),
    ];
    let r = http(&node, "GET", "/api/files", &conditional, None).await;
    r.assert_status(304);
    // A change makes the old tag stale.
    send_json(
        &node,
        "PATCH",
        &format!("/api/files/{full_id}"),
        Some(&owner),
        &json!({"name": "Renamed"}),
    )
    .await
    .assert_status(200);
    let r = http(&node, "GET", "/api/files", &conditional, None).await;
    r.assert_status(200);
    assert_ne!(
        r.header("etag"),
        Some(etag),
        "ETag must change with the list"
    );
    assert!(r.text.contains("Renamed"), "{}", r.text);

    // GET one: the owner sees the keys and the owner id.
    let me = get(&node, "/api/me", Some(&owner)).await;
    let owner_id = me.body()["account"]["id"].clone();
    let r = get(&node, &format!("/api/files/{full_id}"), Some(&owner)).await;
    r.assert_status(200);
    let f = r.body();
    assert_eq!(f["id"], json!(full_id));
    assert_eq!(f["name"], "Renamed");
    assert_eq!(f["link"], "none");
    assert_eq!(f["version"], 0);
    assert_eq!(f["owner"], owner_id, "{f}");
    assert_eq!(f["view_key"], full["view_key"]);
    assert_eq!(f["edit_key"], full["edit_key"]);

    // A key holder sees the file but not the keys.
    set_link(&node, &owner, &full_id, "view").await;
    let r = get_with_key(
        &node,
        &format!("/api/files/{full_id}"),
        s(&full["view_key"]),
    )
    .await;
    r.assert_status(200);
    let f = r.body();
    assert_eq!(f["id"], json!(full_id));
    assert_eq!(f["owner"], owner_id, "{f}");
    assert!(
        f.get("view_key").is_none_or(Value::is_null)
            && f.get("edit_key").is_none_or(Value::is_null),
        "keys are for the owner only: {f}"
    );
    let r = get_with_key(
        &node,
        &format!("/api/files/{full_id}/doc"),
        s(&full["edit_key"]),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["version"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_access_errors() {
    let node = Node::start(&[]).await;
    let owner = new_account(&node, "owner").await;
    let other = new_account(&node, "other").await;
    let file = create_file(&node, &owner, "Private", None).await;
    let id = s(&file["id"]).to_string();
    let vk = s(&file["view_key"]).to_string();
    let ek = s(&file["edit_key"]).to_string();

    for path in [format!("/api/files/{id}"), format!("/api/files/{id}/doc")] {
        // No credentials at all: 401.
        get(&node, &path, None)
            .await
            .assert_error(401, "unauthorized");
        // Signed in, not the owner: 403.
        get(&node, &path, Some(&other))
            .await
            .assert_error(403, "forbidden");
        // A key while link is none: 403.
        get_with_key(&node, &path, &vk)
            .await
            .assert_error(403, "forbidden");
        // A key that matches neither of the file's keys is a bad credential: 401,
        // as a bad key closes a socket with 4001.
        get_with_key(&node, &path, &secret())
            .await
            .assert_error(401, "unauthorized");
    }
    // Unknown file: 404; bad id: 400.
    for path in ["/api/files/no-such-file", "/api/files/no-such-file/doc"] {
        get(&node, path, Some(&owner))
            .await
            .assert_error(404, "not-found");
    }
    let long = "a".repeat(65);
    for bad in ["a.b", long.as_str(), "a%20b"] {
        get(&node, &format!("/api/files/{bad}"), Some(&owner))
            .await
            .assert_error(400, "bad-request");
        get(&node, &format!("/api/files/{bad}/doc"), Some(&owner))
            .await
            .assert_error(400, "bad-request");
    }

    // PATCH / DELETE / keys: owner only.
    set_link(&node, &owner, &id, "edit").await;
    let patch_path = format!("/api/files/{id}");
    send_json(&node, "PATCH", &patch_path, None, &json!({"name": "x"}))
        .await
        .assert_error(401, "unauthorized");
    send_json(
        &node,
        "PATCH",
        &patch_path,
        Some(&other),
        &json!({"name": "x"}),
    )
    .await
    .assert_error(403, "forbidden");
    http(
        &node,
        "PATCH",
        &patch_path,
        &[("x-atrium-key", &ek)],
        Some(json!({"name": "x"}).to_string().into_bytes()),
    )
    .await
    .assert_error(403, "forbidden");
    send_empty(&node, "DELETE", &patch_path, Some(&other))
        .await
        .assert_error(403, "forbidden");
    send_empty(&node, "DELETE", &patch_path, None)
        .await
        .assert_error(401, "unauthorized");
    let keys_path = format!("/api/files/{id}/keys");
    send_empty(&node, "POST", &keys_path, Some(&other))
        .await
        .assert_error(403, "forbidden");
    send_empty(&node, "POST", &keys_path, None)
        .await
        .assert_error(401, "unauthorized");
    http(&node, "POST", &keys_path, &[("x-atrium-key", &ek)], None)
        .await
        .assert_error(403, "forbidden");

    // Bad bodies.
    let auth = bearer(&owner);
    http(
        &node,
        "PATCH",
        &patch_path,
        &[("authorization", &auth)],
        Some(b"name=x".to_vec()),
    )
    .await
    .assert_error(400, "bad-request");
    for bad in [
        json!({"link": "public"}),
        json!({"link": 1}),
        json!({"name": 7}),
    ] {
        send_json(&node, "PATCH", &patch_path, Some(&owner), &bad)
            .await
            .assert_error(400, "bad-request");
    }
    http(
        &node,
        "POST",
        "/api/files",
        &[("authorization", &auth)],
        Some(b"not json".to_vec()),
    )
    .await
    .assert_error(400, "bad-request");
    for bad_doc in [
        json!([1, 2]),
        json!("doc"),
        json!({"n1": 5}),
        json!({"../x": {}}),
        json!({"n1": {"p".repeat(65): 1}}),
    ] {
        send_json(
            &node,
            "POST",
            "/api/files",
            Some(&owner),
            &json!({"name": "Bad", "doc": bad_doc}),
        )
        .await
        .assert_error(400, "bad-request");
    }
    send_json(&node, "POST", "/api/files", None, &json!({"name": "x"}))
        .await
        .assert_error(401, "unauthorized");

    // Nothing above changed the file.
    let r = get(&node, &patch_path, Some(&owner)).await;
    r.assert_status(200);
    assert_eq!(r.body()["name"], "Private");
    assert_eq!(r.body()["link"], "edit");
    assert_eq!(r.body()["edit_key"], json!(ek));
    let r = get(&node, "/api/files", Some(&owner)).await;
    assert_eq!(
        r.body()["files"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_link_and_delete() {
    let node = Node::start(&[]).await;
    let owner = new_account(&node, "owner").await;
    let file = create_file(&node, &owner, "First", None).await;
    let id = s(&file["id"]).to_string();
    let path = format!("/api/files/{id}");

    let r = send_json(
        &node,
        "PATCH",
        &path,
        Some(&owner),
        &json!({"name": "Second"}),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["name"], "Second");
    assert_eq!(r.body()["id"], json!(id));
    assert_eq!(r.body()["link"], "none");

    for link in ["view", "edit", "none", "edit"] {
        set_link(&node, &owner, &id, link).await;
        let r = get(&node, &path, Some(&owner)).await;
        assert_eq!(r.body()["link"], json!(link));
        assert_eq!(r.body()["name"], "Second");
    }
    let r = send_json(
        &node,
        "PATCH",
        &path,
        Some(&owner),
        &json!({"name": "Third", "link": "view"}),
    )
    .await;
    r.assert_status(200);
    assert_eq!(
        (r.body()["name"].clone(), r.body()["link"].clone()),
        (json!("Third"), json!("view"))
    );

    // Live sockets close with 4004 when the file is deleted.
    let (mut owner_sock, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (mut guest_sock, _) = Client::join(&node, &id, &Hello::key(s(&file["view_key"]))).await;
    owner_sock.patch_acked(1, vec![put("a", json!({}))]).await;
    send_empty(&node, "DELETE", &path, Some(&owner))
        .await
        .assert_status(204);
    owner_sock.expect_close(4004).await;
    guest_sock.expect_close(4004).await;

    get(&node, &path, Some(&owner))
        .await
        .assert_error(404, "not-found");
    get(&node, &format!("{path}/doc"), Some(&owner))
        .await
        .assert_error(404, "not-found");
    send_empty(&node, "DELETE", &path, Some(&owner))
        .await
        .assert_error(404, "not-found");
    send_json(
        &node,
        "PATCH",
        &path,
        Some(&owner),
        &json!({"name": "Back"}),
    )
    .await
    .assert_error(404, "not-found");
    Client::join_expect_close(&node, &id, &Hello::token(&owner), 4004).await;
    let r = get(&node, "/api/files", Some(&owner)).await;
    assert_eq!(r.body()["files"], json!([]), "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_retires_old_keys() {
    let node = Node::start(&[]).await;
    let owner = new_account(&node, "owner").await;
    let file = create_file(&node, &owner, "Shared", None).await;
    let id = s(&file["id"]).to_string();
    set_link(&node, &owner, &id, "edit").await;
    let (old_vk, old_ek) = (
        s(&file["view_key"]).to_string(),
        s(&file["edit_key"]).to_string(),
    );

    let (mut by_edit, _) = Client::join(&node, &id, &Hello::key(&old_ek)).await;
    let (mut by_view, _) = Client::join(&node, &id, &Hello::key(&old_vk)).await;
    let (mut by_owner, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    get_with_key(&node, &format!("/api/files/{id}/doc"), &old_vk)
        .await
        .assert_status(200);

    let r = send_empty(
        &node,
        "POST",
        &format!("/api/files/{id}/keys"),
        Some(&owner),
    )
    .await;
    r.assert_status(200);
    let new_vk = s(&r.body()["view_key"]).to_string();
    let new_ek = s(&r.body()["edit_key"]).to_string();
    assert!(
        new_vk != old_vk && new_ek != old_ek && new_vk != new_ek,
        "{}",
        r.text
    );

    by_edit.expect_close(4003).await;
    by_view.expect_close(4003).await;
    // The owner's socket is unaffected.
    assert_eq!(by_owner.patch_acked(1, vec![put("a", json!({}))]).await, 1);

    get_with_key(&node, &format!("/api/files/{id}/doc"), &old_vk)
        .await
        .assert_error(401, "unauthorized");
    Client::join_expect_close(&node, &id, &Hello::key(&old_ek), 4001).await;

    let r = get(&node, &format!("/api/files/{id}"), Some(&owner)).await;
    assert_eq!(r.body()["view_key"], json!(new_vk));
    assert_eq!(r.body()["edit_key"], json!(new_ek));
    let (_c, w) = Client::join(&node, &id, &Hello::key(&new_ek)).await;
    assert_eq!(w["role"], "editor");
    assert_eq!(w["version"], 1);
    get_with_key(&node, &format!("/api/files/{id}/doc"), &new_vk)
        .await
        .assert_status(200);
}
