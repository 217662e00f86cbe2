//! Accounts: sign-up, sign-in, `/api/me`, sign-out and the sign-up rules.

use super::*;

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
    signup_answer(&node, &email.to_uppercase(), PASSWORD, "Other")
        .await
        .assert_error(409, "email-taken");

    // Wrong password, unknown email: the same answer.
    for (email, password) in [
        (email.clone(), "wrong password!"),
        (unique_email("nobody"), PASSWORD),
    ] {
        let r = signin_answer(&node, &email, password).await;
        r.assert_error(401, "bad-credentials");
    }

    // Sign in with the email in another case: a second session.
    let r = signin_answer(&node, &email.to_uppercase(), PASSWORD).await;
    r.assert_status(200);
    assert_eq!(r.body()["account"], account, "{}", r.text);
    let token2 = s(&r.body()["token"]).to_string();
    assert_ne!(token2, token);

    // Missing or malformed authorization.
    for token in [None, Some("garbage")] {
        let r = get(&node, "/api/me", token).await;
        r.assert_error(401, "unauthorized");
    }
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
    assert_token_refused(&node, &token, &id).await;
    // Signing out twice is refused too.
    send_empty(&node, "POST", "/api/signout", Some(&token))
        .await
        .assert_error(401, "unauthorized");

    // The other session is untouched.
    assert_token_works(&node, &token2).await;
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
    let r = signup_answer(&node, &unique_email("edge"), "12345678", &"n".repeat(64)).await;
    r.assert_status(201);
    assert_eq!(r.body()["account"]["name"], json!("n".repeat(64)));
}
