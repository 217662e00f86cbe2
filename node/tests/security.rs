//! Security boundaries against one real node:
//! who may edit, read and see what, what a signed-out token can still do,
//! whether one account can use up the capacity of others, and whether
//! secrets reach the node's logs.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const FAST_HASH: [(&str, &str); 2] = [
    ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
    ("ATRIUM_ARGON2_ITERATIONS", "1"),
];

async fn node(extra: &[(&str, &str)]) -> Node {
    let mut envs: Vec<(&str, &str)> = FAST_HASH.to_vec();
    envs.extend_from_slice(extra);
    Node::start(&envs).await
}

/// Sends a patch and returns the answer (skipping presence traffic, role
/// changes and other people's relayed patches).
async fn answer(c: &mut Client, id: u64, ops: Vec<Value>) -> Value {
    c.send_patch(id, ops).await;
    loop {
        let m = c.recv_json().await;
        if m["type"] != "patch" && m["type"] != "role" {
            return m;
        }
    }
}

fn assert_reject(m: &Value, id: u64, code: &str) {
    assert_eq!(m["type"], "reject", "expected a reject {code}, got {m}");
    assert_eq!(m["id"], json!(id), "{m}");
    assert_eq!(m["code"], code, "{m}");
}

// ---------------------------------------------------------------------------
// Viewers and view keys
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_cannot_edit_by_any_message() {
    let node = node(&[]).await;
    let f = shared_file(&node, "view").await;
    let (mut owner, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    assert_eq!(
        owner.patch_acked(1, vec![put("a", json!({"x": 1}))]).await,
        1
    );

    // A viewer by view key, and an edit-key holder while the link is `view`.
    let viewer_hello = Hello::key(&f.view_key);
    let (mut viewer, wv) = Client::join(&node, &f.id, &viewer_hello).await;
    assert_eq!(wv["role"], "viewer");
    let edit_hello = Hello::key(&f.edit_key);
    let (mut held, we) = Client::join(&node, &f.id, &edit_hello).await;
    assert_eq!(
        (we["role"].clone(), we["reason"].clone()),
        (json!("viewer"), json!("view-link"))
    );
    // A signed-in stranger with the edit key: still a viewer.
    let stranger = new_account(&node, "stranger").await;
    let mut stranger_hello = Hello::token(&stranger);
    stranger_hello.key = Some(f.edit_key.clone());
    let (mut strange, ws) = Client::join(&node, &f.id, &stranger_hello).await;
    assert_eq!(ws["role"], "viewer");

    let mut tried = 0;
    for c in [&mut viewer, &mut held, &mut strange] {
        // Every kind of patch, an empty one, a huge op id, op id 1 (the
        // owner's first id), the same op again.
        for (id, ops) in [
            (1, vec![put("a", json!({"x": 666}))]),
            (1, vec![put("a", json!({"x": 666}))]),
            (2, vec![set("a", json!({"x": 666}))]),
            (3, vec![delete("a")]),
            (4, vec![]),
            (u64::MAX, vec![put("b", json!({}))]),
        ] {
            assert_reject(&answer(c, id, ops).await, id, "viewer");
            tried += 1;
        }
        // A second hello on the same socket, now with the edit key: refused,
        // and the socket is still a viewer.
        let mut again = Hello::key(&f.edit_key);
        again.token = Some(f.owner.clone());
        c.send_json(&again.to_json()).await;
        let m = c.recv_json().await;
        assert_eq!(
            (m["type"].clone(), m["code"].clone()),
            (json!("reject"), json!("invalid")),
            "{m}"
        );
        assert_reject(
            &answer(c, 5, vec![put("a", json!({"x": 666}))]).await,
            5,
            "viewer",
        );
        tried += 2;
    }
    // A new socket with the same client id as the edit-key holder and the
    // edit key again: replaces the old one, still a viewer.
    let (mut held2, w2) = Client::join(&node, &f.id, &edit_hello).await;
    held.expect_close(4010).await;
    assert_eq!(w2["role"], "viewer");
    assert_reject(&answer(&mut held2, 6, vec![delete("a")]).await, 6, "viewer");
    // The view key with the viewer's client id after the link became
    // `edit`: a view key never edits.
    set_link(&node, &f.owner, &f.id, "edit").await;
    assert_reject(
        &answer(&mut viewer, 7, vec![delete("a")]).await,
        7,
        "viewer",
    );
    let (mut viewer2, w3) = Client::join(&node, &f.id, &viewer_hello).await;
    viewer.expect_close(4010).await;
    assert_eq!(w3["role"], "viewer");
    assert_reject(
        &answer(&mut viewer2, 8, vec![delete("a")]).await,
        8,
        "viewer",
    );
    set_link(&node, &f.owner, &f.id, "view").await;

    // Over HTTP: key holders cannot change the file's settings or keys.
    for key in [&f.view_key, &f.edit_key] {
        for (method, path, body) in [
            (
                "PATCH",
                format!("/api/files/{}", f.id),
                Some(json!({"link": "edit"})),
            ),
            ("POST", format!("/api/files/{}/keys", f.id), None),
            ("DELETE", format!("/api/files/{}", f.id), None),
        ] {
            let body = body.map(|b| b.to_string().into_bytes());
            let r = http(&node, method, &path, &[("x-atrium-key", key)], body).await;
            assert!(
                r.status == 401 || r.status == 403,
                "{method} {path} with a key: {} {}",
                r.status,
                r.text
            );
            tried += 1;
        }
    }
    let r = send_json(
        &node,
        "PATCH",
        &format!("/api/files/{}", f.id),
        Some(&stranger),
        &json!({"link": "edit"}),
    )
    .await;
    r.assert_error(403, "forbidden");

    let (version, doc) = get_doc(&node, &f.owner, &f.id).await;
    assert_eq!(
        (version, doc),
        (1, json!({"a": {"x": 1}})),
        "a viewer changed the file"
    );
    let file = get(&node, &format!("/api/files/{}", f.id), Some(&f.owner)).await;
    assert_eq!(file.body()["link"], "view", "a key holder changed the link");
    figure(json!({"case": "a viewer cannot edit", "attempts": tried, "changed": 0}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_key_never_yields_edit_nor_the_edit_key() {
    let node = node(&[]).await;
    let f = shared_file(&node, "edit").await;
    let stranger = new_account(&node, "stranger").await;
    let mut checked = 0;
    for link in ["view", "edit"] {
        set_link(&node, &f.owner, &f.id, link).await;
        // As a guest and signed in, joining and re-joining.
        let mut signed = Hello::token(&stranger);
        signed.key = Some(f.view_key.clone());
        for hello in [Hello::key(&f.view_key), signed] {
            for _ in 0..2 {
                let (c, w) = Client::join(&node, &f.id, &hello).await;
                assert_eq!(w["role"], "viewer", "link {link}: {w}");
                assert!(w.get("reason").is_none_or(Value::is_null), "{w}");
                c.close().await;
                checked += 1;
            }
        }
        // HTTP: the file is readable with the view key, the keys are not shown.
        for r in [
            get_with_key(&node, &format!("/api/files/{}", f.id), &f.view_key).await,
            get_with_key(&node, &format!("/api/files/{}", f.id), &f.edit_key).await,
            http(
                &node,
                "GET",
                &format!("/api/files/{}", f.id),
                &[
                    ("authorization", &bearer(&stranger)),
                    ("x-atrium-key", &f.view_key),
                ],
                None,
            )
            .await,
        ] {
            r.assert_status(200);
            let body = r.body();
            assert!(
                body.get("view_key").is_none() && body.get("edit_key").is_none(),
                "keys shown to a key holder: {}",
                r.text
            );
            assert!(
                !r.text.contains(&f.edit_key) && !r.text.contains(&f.view_key),
                "{}",
                r.text
            );
            checked += 1;
        }
    }
    figure(json!({"case": "a view key never yields edit", "checks": checked}));
}

// ---------------------------------------------------------------------------
// Guests without a key
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_without_a_key_cannot_read_a_private_file() {
    let node = node(&[]).await;
    let f = shared_file(&node, "none").await;
    let (mut owner, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    owner
        .patch_acked(1, vec![put("secret", json!({"text": "the plan"}))])
        .await;
    let paths = [
        format!("/api/files/{}", f.id),
        format!("/api/files/{}/doc", f.id),
    ];
    let mut checked = 0;

    // No key, an empty key, a made-up key, a key of another file.
    let other = shared_file(&node, "edit").await;
    for link in ["none", "view", "edit"] {
        set_link(&node, &f.owner, &f.id, link).await;
        for path in &paths {
            let r = get(&node, path, None).await;
            r.assert_error(401, "unauthorized");
            for key in [secret(), other.view_key.clone(), other.edit_key.clone()] {
                let r = get_with_key(&node, path, &key).await;
                r.assert_error(401, "unauthorized");
                assert!(!r.text.contains("the plan"));
                checked += 1;
            }
        }
        for hello in [
            Hello::anonymous(),
            Hello {
                key: Some(String::new()),
                ..Hello::anonymous()
            },
            Hello::key(&secret()),
            Hello::key(&other.edit_key),
        ] {
            Client::join_expect_close(&node, &f.id, &hello, 4001).await;
            checked += 1;
        }
    }
    // The file's own keys while the link is `none`: 403 and 4003.
    set_link(&node, &f.owner, &f.id, "none").await;
    let keys = [f.view_key.as_str(), f.edit_key.as_str()];
    checked += refused_everywhere(&node, &f.id, &paths, &keys, (403, "forbidden"), 4003).await;
    // Rotated-out keys: 401 and 4001.
    set_link(&node, &f.owner, &f.id, "edit").await;
    let r = send_empty(
        &node,
        "POST",
        &format!("/api/files/{}/keys", f.id),
        Some(&f.owner),
    )
    .await;
    r.assert_status(200);
    checked += refused_everywhere(&node, &f.id, &paths, &keys, (401, "unauthorized"), 4001).await;
    figure(json!({"case": "a guest without a key cannot read", "checks": checked}));
}

/// Each key is refused on every path with `error` and at the socket with `close`;
/// how many checks that made.
async fn refused_everywhere(
    node: &Node,
    file: &str,
    paths: &[String],
    keys: &[&str],
    error: (u16, &str),
    close: u16,
) -> usize {
    let mut checked = 0;
    for key in keys {
        for path in paths {
            get_with_key(node, path, key)
                .await
                .assert_error(error.0, error.1);
            checked += 1;
        }
        Client::join_expect_close(node, file, &Hello::key(key), close).await;
        checked += 1;
    }
    checked
}

// ---------------------------------------------------------------------------
// Signing out
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_out_token_is_refused_everywhere_at_once() {
    let node = node(&[]).await;
    let email = unique_email("leaver");
    let (token, _) = signup(&node, &email).await;
    // A second session of the same account, which must survive.
    let other_session = signin(&node, &email).await;
    let a = create_file(&node, &token, "A", None).await;
    let b = create_file(&node, &token, "B", None).await;
    let (a, b) = (s(&a["id"]).to_string(), s(&b["id"]).to_string());

    let mut sockets = Vec::new();
    for file in [&a, &a, &b] {
        sockets.push(Client::join(&node, file, &Hello::token(&token)).await.0);
    }
    let (mut survivor, _) = Client::join(&node, &a, &Hello::token(&other_session)).await;

    let out = send_empty(&node, "POST", "/api/signout", Some(&token)).await;
    out.assert_status(204);
    let signed_out = Instant::now();
    let mut slowest = Duration::ZERO;
    for mut c in sockets {
        c.expect_close_within(4001, Duration::from_secs(2)).await;
        slowest = slowest.max(signed_out.elapsed());
    }
    assert!(
        slowest <= Duration::from_secs(2),
        "sockets closed {slowest:?} after the sign-out"
    );

    // Every HTTP route, and the socket.
    let routes = [
        ("GET", "/api/me".to_string()),
        ("GET", "/api/files".to_string()),
        ("POST", "/api/files".to_string()),
        ("GET", format!("/api/files/{a}")),
        ("GET", format!("/api/files/{a}/doc")),
        ("PATCH", format!("/api/files/{a}")),
        ("POST", format!("/api/files/{a}/keys")),
        ("DELETE", format!("/api/files/{a}")),
        ("POST", "/api/signout".to_string()),
    ];
    for (method, path) in &routes {
        let body = matches!(*method, "POST" | "PATCH").then(|| b"{}".to_vec());
        let r = http(
            &node,
            method,
            path,
            &[("authorization", &bearer(&token))],
            body,
        )
        .await;
        r.assert_error(401, "unauthorized");
    }
    Client::join_expect_close(&node, &a, &Hello::token(&token), 4001).await;
    // A bad token with a valid key is still refused (the client should learn).
    let shared_file = shared_file(&node, "edit").await;
    let mut with_key = Hello::token(&token);
    with_key.key = Some(shared_file.edit_key.clone());
    Client::join_expect_close(&node, &shared_file.id, &with_key, 4001).await;

    // The other session carries on.
    survivor.expect_quiet(Duration::from_millis(300)).await;
    assert_eq!(
        survivor.patch_acked(1, vec![put("still", json!({}))]).await,
        1
    );
    get(&node, "/api/me", Some(&other_session))
        .await
        .assert_status(200);
    figure(
        json!({"case": "a signed-out token", "sockets_closed_4001": 3,
               "slowest_close_ms": slowest.as_millis(), "http_routes_401": routes.len()}),
    );
}

// ---------------------------------------------------------------------------
// Other accounts' files
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_accounts_files_are_invisible() {
    let node = node(&[]).await;
    let alice = new_account(&node, "alice").await;
    let bob = new_account(&node, "bob").await;
    let mut alices = Vec::new();
    for (i, link) in ["none", "view", "edit"].into_iter().enumerate() {
        let f = create_file(&node, &alice, &format!("Alice {i}"), None).await;
        let id = s(&f["id"]).to_string();
        if link != "none" {
            set_link(&node, &alice, &id, link).await;
        }
        alices.push(id);
    }
    let bobs = s(&create_file(&node, &bob, "Bob's", None).await["id"]).to_string();

    let list = get(&node, "/api/files", Some(&bob)).await;
    list.assert_status(200);
    let ids: Vec<&str> = list.body()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| s(&f["id"]))
        .collect();
    assert_eq!(ids, vec![bobs.as_str()], "Bob's list");
    let list = get(&node, "/api/files", Some(&alice)).await;
    assert!(!list.text.contains(&bobs), "Alice sees Bob's file");

    let mut checked = 0;
    for id in &alices {
        // Whatever the link says, a token alone does not reach another's file.
        for (method, path) in [
            ("GET", format!("/api/files/{id}")),
            ("GET", format!("/api/files/{id}/doc")),
            ("PATCH", format!("/api/files/{id}")),
            ("POST", format!("/api/files/{id}/keys")),
            ("DELETE", format!("/api/files/{id}")),
        ] {
            let body =
                (method == "PATCH").then(|| json!({"name": "mine"}).to_string().into_bytes());
            let r = http(
                &node,
                method,
                &path,
                &[("authorization", &bearer(&bob))],
                body,
            )
            .await;
            r.assert_error(403, "forbidden");
            assert!(!r.text.contains("Alice"), "{}", r.text);
            checked += 1;
        }
        Client::join_expect_close(&node, id, &Hello::token(&bob), 4003).await;
        checked += 1;
    }
    // Alice's files are as they were.
    for id in &alices {
        let r = get(&node, &format!("/api/files/{id}"), Some(&alice)).await;
        r.assert_status(200);
        assert!(r.body()["name"].as_str().unwrap().starts_with("Alice"));
    }
    figure(json!({"case": "another account's files", "checks": checked}));
}

// ---------------------------------------------------------------------------
// Capacity: one account's caps bite before anyone else's
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_account_cannot_exhaust_the_socket_capacity_of_others() {
    let node = node(&[]).await;
    let f = shared_file(&node, "edit").await;
    let hog = new_account(&node, "hog").await;
    let mut hog_hello = Hello::token(&hog);
    hog_hello.key = Some(f.edit_key.clone());

    // Ten sockets (the default cap) for the hog; the eleventh and more: 4029.
    let mut held = Vec::new();
    for _ in 0..10 {
        let h = Hello {
            client: secret(),
            ..hog_hello.clone()
        };
        held.push(Client::join(&node, &f.id, &h).await.0);
    }
    for _ in 0..5 {
        let h = Hello {
            client: secret(),
            ..hog_hello.clone()
        };
        Client::join_expect_close(&node, &f.id, &h, 4029).await;
    }
    // Everyone else still gets in: the owner, another account, a guest.
    let other = new_account(&node, "other").await;
    let mut other_hello = Hello::token(&other);
    other_hello.key = Some(f.edit_key.clone());
    for hello in [Hello::token(&f.owner), other_hello, Hello::key(&f.view_key)] {
        let (c, w) = Client::join(&node, &f.id, &hello).await;
        assert_eq!(w["type"], "welcome");
        c.close().await;
    }
    // The hog's slot comes back when one of its sockets goes.
    held.pop().unwrap().close().await;
    let h = Hello {
        client: secret(),
        ..hog_hello.clone()
    };
    Client::join_when_freed(&node, &f.id, &h, 4029, Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_email_or_address_cannot_exhaust_sign_in_for_others() {
    let node = node(&[("ATRIUM_TRUST_PROXY", "127.0.0.1")]).await;
    let victim = unique_email("victim");
    signup(&node, &victim).await;
    let bystander = unique_email("bystander");
    signup(&node, &bystander).await;
    let port = node.port;
    let sign_in = |email: String, password: &'static str, from: &'static str| async move {
        signin_from(port, &email, password, from).await
    };
    // Guessing one email's password, from many addresses: its limit on wrong
    // passwords (10 a minute) answers 429 past it ...
    let addresses = [
        "10.0.0.1",
        "10.0.0.2",
        "10.0.0.3",
        "10.0.0.4",
        "10.0.0.5",
        "10.0.0.6",
        "10.0.0.7",
        "10.0.0.8",
        "10.0.0.9",
        "10.0.0.10",
        "10.0.0.11",
        "10.0.0.12",
    ];
    let mut codes = Vec::new();
    for from in addresses {
        codes.push(sign_in(victim.clone(), "wrong password", from).await.status);
    }
    assert_eq!(codes.iter().filter(|c| **c == 401).count(), 10, "{codes:?}");
    assert!(codes[10..].iter().all(|c| *c == 429), "{codes:?}");
    // ... but never to the right password.
    sign_in(victim.clone(), PASSWORD, "10.0.0.13")
        .await
        .assert_status(200);
    // Another email signs in fine from a fresh address.
    sign_in(bystander.clone(), PASSWORD, "10.9.9.9")
        .await
        .assert_status(200);

    // One address trying many emails: its limit (20 a minute) bites, and
    // another address still signs in.
    let mut codes = Vec::new();
    for i in 0..25 {
        codes.push(
            sign_in(
                format!("guess{i}@example.test"),
                "wrong password",
                "10.5.5.5",
            )
            .await
            .status,
        );
    }
    assert!(codes[..20].iter().all(|c| *c == 401), "{codes:?}");
    let r = sign_in(
        "guess99@example.test".to_string(),
        "wrong password",
        "10.5.5.5",
    )
    .await;
    r.assert_error(429, "rate-limited");
    sign_in(bystander, PASSWORD, "10.8.8.8")
        .await
        .assert_status(200);
}

// ---------------------------------------------------------------------------
// Secrets and logs
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_tokens_and_keys_never_reach_the_logs() {
    for level in ["debug", "trace"] {
        let mut envs: Vec<(&str, &str)> = FAST_HASH.to_vec();
        envs.push(("ATRIUM_LOG", level));
        let node = Node::start(&envs).await;
        let password = format!("pw-{}", secret());
        let email = unique_email("logs");
        let r = send_json(
            &node,
            "POST",
            "/api/signup",
            None,
            &json!({"email": email, "password": password, "name": "Logs"}),
        )
        .await;
        r.assert_status(201);
        let token = s(&r.body()["token"]).to_string();
        let wrong = format!("wrong-{}", secret());
        send_json(
            &node,
            "POST",
            "/api/signin",
            None,
            &json!({"email": email, "password": wrong}),
        )
        .await
        .assert_status(401);
        let r = send_json(
            &node,
            "POST",
            "/api/signin",
            None,
            &json!({"email": email, "password": password}),
        )
        .await;
        let token2 = s(&r.body()["token"]).to_string();
        let f = create_file(&node, &token, "Logged", None).await;
        let id = s(&f["id"]).to_string();
        set_link(&node, &token, &id, "edit").await;
        let (view_key, edit_key) = (s(&f["view_key"]).to_string(), s(&f["edit_key"]).to_string());
        get_with_key(&node, &format!("/api/files/{id}"), &view_key)
            .await
            .assert_status(200);
        let bogus_token = secret();
        get(&node, "/api/me", Some(&bogus_token))
            .await
            .assert_status(401);

        let owner_hello = Hello::token(&token);
        let guest_hello = Hello::key(&edit_key);
        let (mut c, _) = Client::join(&node, &id, &owner_hello).await;
        let (mut g, _) = Client::join(&node, &id, &guest_hello).await;
        c.patch_acked(1, vec![put("n", json!({"x": 1}))]).await;
        g.send_json(&json!({"type": "hello", "token": token2, "key": view_key, "client": "x"}))
            .await;
        g.recv_json().await;
        Client::join_expect_close(&node, &id, &Hello::token(&bogus_token), 4001).await;
        let rotated = send_empty(
            &node,
            "POST",
            &format!("/api/files/{id}/keys"),
            Some(&token),
        )
        .await;
        let new_keys = [
            s(&rotated.body()["view_key"]).to_string(),
            s(&rotated.body()["edit_key"]).to_string(),
        ];
        g.expect_close(4003).await;
        send_empty(&node, "POST", "/api/signout", Some(&token))
            .await
            .assert_status(204);
        c.expect_close(4001).await;
        tokio::time::sleep(Duration::from_millis(300)).await;

        let log = node.log();
        assert!(
            log.lines().count() > 3,
            "the node logged almost nothing at {level}:\n{log}"
        );
        let secrets = [
            ("password", password.as_str()),
            ("wrong password", wrong.as_str()),
            ("token", token.as_str()),
            ("second token", token2.as_str()),
            ("bogus token", bogus_token.as_str()),
            ("view key", view_key.as_str()),
            ("edit key", edit_key.as_str()),
            ("new view key", new_keys[0].as_str()),
            ("new edit key", new_keys[1].as_str()),
            ("owner client id", owner_hello.client.as_str()),
            ("guest client id", guest_hello.client.as_str()),
        ];
        for (what, secret) in secrets {
            assert!(
                !log.contains(secret),
                "the {what} appears in the {level} log:\n{log}"
            );
        }
        figure(
            json!({"case": "secrets in logs", "level": level, "log_lines": log.lines().count(), "secrets_checked": secrets.len(), "found": 0}),
        );
    }
}

// ---------------------------------------------------------------------------
// Public links without fear: the HTTP side under an outside review
// ---------------------------------------------------------------------------

/// A body of the wrong shape gets a fixed sentence: nothing of the JSON
/// parser's own text (types, positions, the names of the node's structs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_errors_never_echo_the_json_parser() {
    let node = node(&[]).await;
    let token = new_account(&node, "parser").await;
    let file = s(&create_file(&node, &token, "Shape", None).await["id"]).to_string();
    let bodies: [(&str, String, Option<&str>); 6] = [
        ("POST", "/api/signin".into(), None),
        ("POST", "/api/signup".into(), None),
        ("POST", "/api/files".into(), Some(token.as_str())),
        ("PATCH", format!("/api/files/{file}"), Some(token.as_str())),
        ("POST", "/api/signin".into(), None),
        ("PATCH", format!("/api/files/{file}"), Some(token.as_str())),
    ];
    let payloads: [&[u8]; 6] = [
        br#"{"email": 5, "password": []}"#,
        br#"{"email": "a@b.c", "password": "long enough", "name": {"x": 1}}"#,
        br#"{"name": ["not", "a", "name"]}"#,
        br#"{"link": 42}"#,
        br#"{"email": "a@b.c", "password": "x"#,
        b"[1, 2, 3",
    ];
    let mut checked = 0;
    for ((method, path, token), payload) in bodies.iter().zip(payloads) {
        let auth = token.map(bearer);
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("authorization", a)])
            .unwrap_or_default();
        let r = http(&node, method, path, &headers, Some(payload.to_vec())).await;
        r.assert_error(400, "bad-request");
        let message = r.body()["error"]["message"].as_str().unwrap_or("");
        for leak in [
            "line ",
            "column",
            "invalid type",
            "expected",
            "`",
            "EOF",
            "integer",
            "sequence",
        ] {
            assert!(
                !message.contains(leak),
                "{method} {path}: the message carries the parser's text ({leak:?}): {message}"
            );
        }
        checked += 1;
    }
    figure(json!({"case": "parser text in errors", "bodies": checked, "leaks": 0}));
}

/// The review's lockout: wrong passwords for someone's email, from one address
/// and then from many, never keep the owner's right password out (it was 429
/// after 10 wrong ones from anywhere). The guesser's own address is what runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_can_lock_a_person_out_of_sign_in() {
    let node = node(&[("ATRIUM_TRUST_PROXY", "127.0.0.1")]).await;
    let victim = unique_email("victim");
    signup(&node, &victim).await;
    let sign_in = |password: &'static str, from: String| {
        let node = &node;
        let email = victim.clone();
        async move {
            http(
                node,
                "POST",
                "/api/signin",
                &[("x-forwarded-for", from.as_str())],
                Some(
                    json!({"email": email, "password": password})
                        .to_string()
                        .into_bytes(),
                ),
            )
            .await
        }
    };
    // One address guesses: 10 wrong passwords, then its (address, email) limit.
    let mut codes = Vec::new();
    for _ in 0..15 {
        codes.push(sign_in("wrong password", "10.66.0.1".into()).await.status);
    }
    assert!(codes[..10].iter().all(|c| *c == 401), "{codes:?}");
    assert!(codes[10..].iter().all(|c| *c == 429), "{codes:?}");
    let r = sign_in("wrong password", "10.66.0.1".into()).await;
    r.assert_error(429, "rate-limited");
    assert!(
        r.header("retry-after").is_some(),
        "429 says when to come back"
    );
    // The owner, elsewhere, signs in at once.
    let started = Instant::now();
    sign_in(PASSWORD, "10.77.0.1".into())
        .await
        .assert_status(200);
    // Many addresses guess (each once): past the email's failure limit the
    // wrong ones get 429; the owner still signs in, from a new address and from
    // one of the guessers' (shared NAT).
    let mut codes = Vec::new();
    for i in 0..20 {
        codes.push(
            sign_in("wrong password", format!("10.88.0.{i}"))
                .await
                .status,
        );
    }
    assert!(codes.iter().all(|c| *c == 401 || *c == 429), "{codes:?}");
    assert!(codes.contains(&429), "{codes:?}");
    sign_in(PASSWORD, "10.77.0.2".into())
        .await
        .assert_status(200);
    sign_in(PASSWORD, "10.88.0.3".into())
        .await
        .assert_status(200);
    figure(
        json!({"case": "sign-in lockout", "wrong_from_one": 15, "wrong_from_many": 20,
               "owner_answers": [200, 200, 200], "owner_ms": started.elapsed().as_millis()}),
    );
}

/// Per-address limits count an IPv6 client by its /64: twenty-one sign-ins from
/// twenty-one addresses of one /64 (through a trusted proxy) meet the address
/// limit of 20 a minute, while another /64 is not affected (before: every IPv6
/// address was a client of its own, so the limit never bit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv6_addresses_of_one_64_share_the_address_limit() {
    let node = node(&[("ATRIUM_TRUST_PROXY", "127.0.0.1")]).await;
    let sign_in = |i: usize, from: String| {
        let node = &node;
        async move {
            http(
                node,
                "POST",
                "/api/signin",
                &[("x-forwarded-for", from.as_str())],
                Some(
                    json!({"email": format!("v6-{i}@example.test"), "password": "wrong password"})
                        .to_string()
                        .into_bytes(),
                ),
            )
            .await
        }
    };
    let mut codes = Vec::new();
    for i in 0..21 {
        codes.push(
            sign_in(i, format!("2001:db8:5:6::{:x}", i + 1))
                .await
                .status,
        );
    }
    assert!(codes[..20].iter().all(|c| *c == 401), "{codes:?}");
    assert_eq!(codes[20], 429, "{codes:?}");
    sign_in(99, "2001:db8:5:6:ffff:ffff:ffff:ffff".into())
        .await
        .assert_error(429, "rate-limited");
    sign_in(100, "2001:db8:5:7::1".into())
        .await
        .assert_status(401);
}

/// Files per account: a creation rate (the review's 60 creates in a burst all
/// answered 201) and a cap on files owned, each with an error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_account_cannot_make_files_without_bound() {
    let node = node(&[
        ("ATRIUM_FILE_CREATES_PER_MINUTE", "30"),
        ("ATRIUM_FILES_PER_ACCOUNT", "40"),
    ])
    .await;
    let token = new_account(&node, "maker").await;
    let create = |name: String| {
        let node = &node;
        let token = token.clone();
        async move {
            send_json(
                node,
                "POST",
                "/api/files",
                Some(&token),
                &json!({"name": name}),
            )
            .await
        }
    };
    // A burst of 60: the first 30 (the burst) land, the rest are 429 with Retry-After.
    let mut created = 0;
    let mut limited = 0;
    for i in 0..60 {
        let r = create(format!("Burst {i}")).await;
        match r.status {
            201 => created += 1,
            429 => {
                r.assert_error(429, "rate-limited");
                let wait: u64 = r
                    .header("retry-after")
                    .and_then(|v| v.parse().ok())
                    .expect("Retry-After in seconds");
                assert!((1..=2).contains(&wait), "one token every 2 s: {wait}");
                limited += 1;
            }
            other => panic!("unexpected {other}: {}", r.text),
        }
    }
    assert_eq!((created, limited), (30, 30), "a burst of 30, then 429");
    // Another account is not affected.
    let other = new_account(&node, "other").await;
    send_json(
        &node,
        "POST",
        "/api/files",
        Some(&other),
        &json!({"name": "Mine"}),
    )
    .await
    .assert_status(201);

    // The cap: with the rate waited out, creation stops at 40 files owned.
    let started = Instant::now();
    while created < 40 {
        let r = create(format!("Slow {created}")).await;
        if r.status == 201 {
            created += 1;
        } else {
            r.assert_error(429, "rate-limited");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(started.elapsed() < Duration::from_secs(40), "rate too slow");
    }
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let r = create("One too many".into()).await;
    r.assert_error(403, "too-many-files");
    assert!(
        r.body()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("40")),
        "{}",
        r.text
    );
    let list = get(&node, "/api/files", Some(&token)).await;
    assert_eq!(list.body()["files"].as_array().map(Vec::len), Some(40));
    // Deleting one makes room.
    let id = s(&list.body()["files"][0]["id"]).to_string();
    send_empty(&node, "DELETE", &format!("/api/files/{id}"), Some(&token))
        .await
        .assert_status(204);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    create("Room again".into()).await.assert_status(201);
    figure(
        json!({"case": "files per account", "burst_created": 30, "burst_limited": 30, "cap": 40}),
    );
}

/// Rooms in memory, from /health's statistics (the node runs with them public).
async fn rooms_open(node: &Node) -> u64 {
    let r = get(node, "/health", None).await;
    r.body()["stats"]["rooms"]
        .as_u64()
        .expect("stats in /health (ATRIUM_HEALTH_STATS=1)")
}

/// A hello with no credentials for a private file used to open its room (the
/// lease taken, the epoch raised, the whole document read and kept for the idle
/// time) before it was refused. Now the file and the access it gives are checked
/// first: a refused joiner costs one lookup and no room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_hello_never_opens_a_room() {
    let n = node(&[("ATRIUM_HEALTH_STATS", "1")]).await;
    let private = shared_file(&n, "none").await;
    let stranger = new_account(&n, "stranger").await;
    let viewable = shared_file(&n, "view").await;
    assert_eq!(rooms_open(&n).await, 0);

    let cases: Vec<(&str, Hello, u16)> = vec![
        (private.id.as_str(), Hello::anonymous(), 4001),
        (
            private.id.as_str(),
            Hello::key("made-up-key-0123456789abcdef"),
            4001,
        ),
        (private.id.as_str(), Hello::key(&private.view_key), 4003),
        (private.id.as_str(), Hello::key(&private.edit_key), 4003),
        (private.id.as_str(), Hello::token(&stranger), 4003),
        (viewable.id.as_str(), Hello::anonymous(), 4001),
        (viewable.id.as_str(), Hello::key(&private.view_key), 4001),
        ("no-such-file-here", Hello::key(&private.view_key), 4004),
    ];
    for (file, hello, code) in &cases {
        Client::join_expect_close(&n, file, hello, *code).await;
        assert_eq!(
            rooms_open(&n).await,
            0,
            "a hello refused with {code} opened a room for {file}"
        );
    }
    // The same file still opens for someone it lets in.
    let (_viewer, w) = Client::join(&n, &viewable.id, &Hello::key(&viewable.view_key)).await;
    assert_eq!(w["role"], "viewer");
    assert_eq!(rooms_open(&n).await, 1);
}

/// A socket over its account's cap waits briefly for a slot. It used to be
/// registered for sign-out only after that wait: a sign-out in the gap missed it,
/// and it was welcomed as an editor and its patch saved after its token had
/// stopped working everywhere else. Now it is registered before its token is
/// even checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_out_while_a_socket_waits_for_a_slot_closes_it() {
    let n = node(&[("ATRIUM_WS_PER_ACCOUNT", "1")]).await;
    let email = unique_email("waiter");
    let (first_token, _) = signup(&n, &email).await;
    let f = create_file(&n, &first_token, "Mine", None).await;
    let file = s(&f["id"]).to_string();
    let second_token = signin(&n, &email).await;

    // The account's one slot is taken by the first session's socket.
    let (holder, _) = Client::join(&n, &file, &Hello::token(&first_token)).await;
    // The second session's socket waits for it.
    let mut waiter = Client::connect(&n, &file).await;
    waiter
        .send_json(&Hello::token(&second_token).to_json())
        .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    send_empty(&n, "POST", "/api/signout", Some(&second_token))
        .await
        .assert_status(204);
    // The slot comes free while the waiter is still within its grace.
    holder.close().await;
    let started = Instant::now();
    match waiter.next_non_presence(WAIT).await {
        Event::Close(code) => assert_eq!(code, Some(4001), "closed with the wrong code"),
        other => panic!("a signed-out socket got {other:?} instead of a close 4001"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    // Its token is refused everywhere, and nothing was written in its name.
    get(&n, "/api/me", Some(&second_token))
        .await
        .assert_error(401, "unauthorized");
    let (version, _) = get_doc(&n, &first_token, &file).await;
    assert_eq!(version, 0);
}

/// Reads from a raw connection until EOF or `dur`; (bytes, whether EOF came).
async fn read_until_closed(stream: &mut tokio::net::TcpStream, dur: Duration) -> (String, bool) {
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + dur;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

/// Request bodies that never finish: 200 connections send headers and part of a
/// body, then nothing. Each gets 408 `timeout` at the body deadline and is
/// closed (before: all 200 stayed open for as long as the client liked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_finishes_is_answered_408_and_closed() {
    use tokio::io::AsyncWriteExt;
    let node = node(&[("ATRIUM_BODY_TIMEOUT_MS", "500")]).await;
    let token = new_account(&node, "slow").await;
    const SLOW: usize = 200;
    let started = Instant::now();
    let mut streams = Vec::new();
    for i in 0..SLOW {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", node.port))
            .await
            .expect("connect");
        let (path, auth) = match i % 3 {
            0 => ("/api/signin", String::new()),
            1 => ("/api/files", format!("Authorization: Bearer {token}\r\n")),
            _ => ("/api/signup", String::new()),
        };
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n\
             Content-Length: 1000\r\n\r\n{{\"email\": \"slow@exa"
        );
        stream.write_all(head.as_bytes()).await.expect("send");
        streams.push(stream);
    }
    let mut slowest = Duration::ZERO;
    for stream in &mut streams {
        let (text, closed) = read_until_closed(stream, Duration::from_secs(5)).await;
        assert!(text.starts_with("HTTP/1.1 408"), "answer: {text:?}");
        assert!(text.contains(r#""code":"timeout""#), "{text}");
        assert!(closed, "the connection stays open after the 408: {text}");
        slowest = slowest.max(started.elapsed());
    }
    // The node still answers everyone else.
    get(&node, "/health", None).await.assert_status(200);
    let timeouts = metric_sum(
        &metrics_text(&node).await,
        "atrium_body_timeouts_total",
        &[],
    );
    assert_eq!(timeouts, Some(SLOW as f64));
    figure(
        json!({"case": "unfinished bodies", "connections": SLOW, "answered_408_and_closed": SLOW,
               "slowest_close_ms": slowest.as_millis()}),
    );
}

/// A node-wide cap on open connections (HTTP and sockets together): at the cap
/// a new connection gets 503 `unavailable` with `Retry-After` and is closed, and
/// is counted; a freed slot is usable again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_node_cap_are_answered_503_and_closed() {
    use tokio::io::AsyncWriteExt;
    let node = node(&[("ATRIUM_MAX_CONNECTIONS", "20")]).await;
    let owner = new_account(&node, "capped").await;
    let file = s(&create_file(&node, &owner, "Capped", None).await["id"]).to_string();
    // 10 sockets (upgraded, never saying hello) and 10 idle connections.
    let mut sockets = Vec::new();
    for _ in 0..10 {
        sockets.push(RawWs::connect(&node, &file).await);
    }
    let mut idle = Vec::new();
    for _ in 0..10 {
        idle.push(
            tokio::net::TcpStream::connect(("127.0.0.1", node.port))
                .await
                .expect("connect"),
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = 0;
    for _ in 0..5 {
        let mut extra = tokio::net::TcpStream::connect(("127.0.0.1", node.port))
            .await
            .expect("the kernel accepts");
        let _ = extra
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            .await;
        let (text, closed) = read_until_closed(&mut extra, Duration::from_secs(5)).await;
        assert!(text.starts_with("HTTP/1.1 503"), "answer: {text:?}");
        assert!(text.to_lowercase().contains("retry-after: 2"), "{text}");
        assert!(text.contains(r#""code":"unavailable""#), "{text}");
        assert!(closed, "closed after the 503");
        refused += 1;
    }
    // Sockets hold their slot: closing idle connections, not sockets, frees room.
    drop(idle.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    get(&node, "/health", None).await.assert_status(200);
    let text = metrics_text(&node).await;
    assert_eq!(
        metric_sum(&text, "atrium_connections_refused_total", &[]),
        Some(refused as f64)
    );
    drop(sockets);
    figure(json!({"case": "connection cap", "cap": 20, "held": 20, "refused_503": refused}));
}

/// Without an admin address, /metrics on the main (public) address is for
/// server admins only (before: anyone could read it); the admin address, when
/// set, serves it to whoever reaches it (Prometheus), and the main one is 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_on_the_public_address_need_a_server_admin() {
    let admin_email = unique_email("ops");
    let node = node(&[("ATRIUM_ADMIN_BIND", ""), ("ATRIUM_ADMINS", &admin_email)]).await;
    assert_eq!(node.admin_port(), None);
    get(&node, "/metrics", None)
        .await
        .assert_error(401, "unauthorized");
    get(&node, "/metrics", Some("not-a-token"))
        .await
        .assert_error(401, "unauthorized");
    let someone = new_account(&node, "someone").await;
    get(&node, "/metrics", Some(&someone))
        .await
        .assert_error(403, "forbidden");
    let (admin, _) = signup(&node, &admin_email).await;
    let r = get(&node, "/metrics", Some(&admin)).await;
    r.assert_status(200);
    assert!(has_metric(&r.text, "atrium_connections"), "{}", r.text);

    let with_admin = self::node(&[]).await;
    let port = with_admin.admin_port().expect("admin address");
    http_at(port, "GET", "/metrics", &[], None)
        .await
        .assert_status(200);
    get(&with_admin, "/metrics", None).await.assert_status(404);
}

/// Sessions expire (ATRIUM_SESSION_TTL_MS): past it the token answers 401 and
/// 4001, and a socket opened with it closes with 4001 at the expiry (before:
/// tokens worked forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_expire_and_their_sockets_close_at_expiry() {
    let node = node(&[("ATRIUM_SESSION_TTL_MS", "3000")]).await;
    let email = unique_email("brief");
    let (token, _) = signup(&node, &email).await;
    let signed_up = Instant::now();
    let file = s(&create_file(&node, &token, "Short", None).await["id"]).to_string();
    let (mut socket, _) = Client::join(&node, &file, &Hello::token(&token)).await;
    get(&node, "/api/me", Some(&token)).await.assert_status(200);
    socket
        .expect_close_within(4001, Duration::from_secs(5))
        .await;
    let closed_after = signed_up.elapsed();
    assert!(
        closed_after >= Duration::from_millis(2900) && closed_after <= Duration::from_millis(4200),
        "closed {closed_after:?} after sign-up; the session lives 3 s"
    );
    get(&node, "/api/me", Some(&token))
        .await
        .assert_error(401, "unauthorized");
    get(&node, "/api/files", Some(&token))
        .await
        .assert_error(401, "unauthorized");
    Client::join_expect_close(&node, &file, &Hello::token(&token), 4001).await;
    // Signing in again gives a new session that works.
    let r = send_json(
        &node,
        "POST",
        "/api/signin",
        None,
        &json!({"email": email, "password": PASSWORD}),
    )
    .await;
    r.assert_status(200);
    get(&node, "/api/me", Some(s(&r.body()["token"])))
        .await
        .assert_status(200);
    figure(
        json!({"case": "session expiry", "ttl_ms": 3000, "socket_closed_after_ms": closed_after.as_millis()}),
    );
}

/// `POST /api/signout/all`: every session of the account stops at once, and
/// every socket of the account (any session, any file) closes with 4001 within a
/// second; another account is not touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_everywhere_ends_every_session_of_the_account() {
    let node = node(&[]).await;
    let email = unique_email("everywhere");
    let (first, _) = signup(&node, &email).await;
    let mut tokens = vec![first.clone()];
    for _ in 0..2 {
        let r = send_json(
            &node,
            "POST",
            "/api/signin",
            None,
            &json!({"email": email, "password": PASSWORD}),
        )
        .await;
        r.assert_status(200);
        tokens.push(s(&r.body()["token"]).to_string());
    }
    let a = s(&create_file(&node, &first, "A", None).await["id"]).to_string();
    let b = s(&create_file(&node, &first, "B", None).await["id"]).to_string();
    let mut sockets = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let file = if i % 2 == 0 { &a } else { &b };
        sockets.push(Client::join(&node, file, &Hello::token(t)).await.0);
    }
    let bystander = new_account(&node, "bystander").await;
    let (mut survivor, _) = Client::join(
        &node,
        s(&create_file(&node, &bystander, "Theirs", None).await["id"]),
        &Hello::token(&bystander),
    )
    .await;

    send_empty(&node, "POST", "/api/signout/all", Some(&tokens[1]))
        .await
        .assert_status(204);
    let out = Instant::now();
    let mut slowest = Duration::ZERO;
    for mut c in sockets {
        c.expect_close_within(4001, Duration::from_secs(1)).await;
        slowest = slowest.max(out.elapsed());
    }
    for t in &tokens {
        get(&node, "/api/me", Some(t))
            .await
            .assert_error(401, "unauthorized");
    }
    send_empty(&node, "POST", "/api/signout/all", Some(&first))
        .await
        .assert_error(401, "unauthorized");
    get(&node, "/api/me", Some(&bystander))
        .await
        .assert_status(200);
    survivor.expect_quiet(Duration::from_millis(300)).await;
    figure(
        json!({"case": "sign out everywhere", "sessions": 3, "sockets": 3, "slowest_close_ms": slowest.as_millis()}),
    );
}
