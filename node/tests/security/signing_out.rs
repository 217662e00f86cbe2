//! Signing out and sessions ending: a token stops everywhere at once.

use super::*;

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
    assert_token_works(&node, &other_session).await;
    figure(
        json!({"case": "a signed-out token", "sockets_closed_4001": 3,
               "slowest_close_ms": slowest.as_millis(), "http_routes_401": routes.len()}),
    );
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
    assert_token_refused(&node, &token, &file).await;
    // Signing in again gives a new session that works.
    assert_token_works(&node, &signin(&node, &email).await).await;
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
    // Sessions are ordered by when they were made, to the millisecond.
    let pause = || tokio::time::sleep(Duration::from_millis(3));
    for _ in 0..2 {
        pause().await;
        tokens.push(signin(&node, &email).await);
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
    assert_token_works(&node, &bystander).await;
    survivor.expect_quiet(Duration::from_millis(300)).await;
    figure(
        json!({"case": "sign out everywhere", "sessions": 3, "sockets": 3, "slowest_close_ms": slowest.as_millis()}),
    );
}

/// An account keeps at most `ATRIUM_SESSIONS_PER_ACCOUNT` sessions: signing in in a loop
/// added a row each time, for the session's 30 days, and signing out everywhere then read
/// them all at once (the twelfth review: about 170 MB a month from one address). Past the
/// cap the oldest session ends as a sign-out ends it: its token 401, its socket 4001.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_keeps_at_most_its_sessions_and_the_oldest_end() {
    let node = node(&[("ATRIUM_SESSIONS_PER_ACCOUNT", "3")]).await;
    let email = unique_email("looper");
    let (first, _) = signup(&node, &email).await;
    let f = create_file(&node, &first, "Mine", None).await;
    let (mut socket, _) = Client::join(&node, s(&f["id"]), &Hello::token(&first)).await;
    let mut tokens = vec![first.clone()];
    // Sessions are ordered by when they were made, to the millisecond.
    let pause = || tokio::time::sleep(Duration::from_millis(3));
    for _ in 0..2 {
        pause().await;
        tokens.push(signin(&node, &email).await);
    }
    // Three sessions: all still work.
    for t in &tokens {
        assert_token_works(&node, t).await;
    }
    // A fourth ends the first, here and on its socket.
    pause().await;
    tokens.push(signin(&node, &email).await);
    socket
        .expect_close_within(4001, Duration::from_secs(2))
        .await;
    get(&node, "/api/me", Some(&first))
        .await
        .assert_error(401, "unauthorized");
    for t in &tokens[1..] {
        assert_token_works(&node, t).await;
    }
    // Another five: only the newest three ever work.
    for _ in 0..5 {
        pause().await;
        tokens.push(signin(&node, &email).await);
    }
    let working = {
        let mut n = 0;
        for t in &tokens {
            n += usize::from(get(&node, "/api/me", Some(t)).await.status == 200);
        }
        n
    };
    assert_eq!(working, 3, "of {} sessions", tokens.len());
    for t in &tokens[tokens.len() - 3..] {
        assert_token_works(&node, t).await;
    }
}
