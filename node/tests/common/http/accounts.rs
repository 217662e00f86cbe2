//! Accounts over HTTP: signing up and in, and what a token still opens.

use super::*;

/// A sign-up attempt; the answer, whatever it is.
pub async fn signup_answer(node: &Node, email: &str, password: &str, name: &str) -> Resp {
    let body = json!({"email": email, "password": password, "name": name});
    send_json(node, "POST", "/api/signup", None, &body).await
}

/// Signs up a new account; returns (token, account).
pub async fn signup(node: &Node, email: &str) -> (String, Value) {
    let r = signup_answer(node, email, PASSWORD, "Test Person").await;
    r.assert_status(201);
    let token = r.body()["token"]
        .as_str()
        .unwrap_or_else(|| panic!("sign-up answer lacks a token: {}", r.text))
        .to_string();
    (token, r.body()["account"].clone())
}

/// A sign-in attempt; the answer, whatever it is.
pub async fn signin_answer(node: &Node, email: &str, password: &str) -> Resp {
    let body = json!({"email": email, "password": password});
    send_json(node, "POST", "/api/signin", None, &body).await
}

/// Signs in with the test password; the new session's token.
pub async fn signin(node: &Node, email: &str) -> String {
    let r = signin_answer(node, email, PASSWORD).await;
    r.assert_status(200);
    s(&r.body()["token"]).to_string()
}

/// A token that still opens the account: `GET /api/me` answers 200.
pub async fn assert_token_works(node: &Node, token: &str) {
    get(node, "/api/me", Some(token)).await.assert_status(200);
}

/// A token that no longer opens anything: the account routes answer 401 and a
/// socket to `file` closes with 4001.
pub async fn assert_token_refused(node: &Node, token: &str, file: &str) {
    for path in ["/api/me", "/api/files"] {
        get(node, path, Some(token))
            .await
            .assert_error(401, "unauthorized");
    }
    Client::join_expect_close(node, file, &Hello::token(token), 4001).await;
}

/// A sign-in attempt on `port` as if from `from` (`X-Forwarded-For`, for a node that
/// trusts the test as its proxy); the answer, whatever it is.
pub async fn signin_from(port: u16, email: &str, password: &str, from: &str) -> Resp {
    let body = json!({"email": email, "password": password}).to_string();
    let headers = [("x-forwarded-for", from)];
    http_at(
        port,
        "POST",
        "/api/signin",
        &headers,
        Some(body.into_bytes()),
    )
    .await
}

/// Signs up an account with a unique email; returns its token.
pub async fn new_account(node: &Node, who: &str) -> String {
    signup(node, &unique_email(who)).await.0
}

/// A new API key of `scopes`: (secret, id).
pub async fn make_key(node: &Node, admin: &str, scopes: &[&str]) -> (String, String) {
    let r = send_json(
        node,
        "POST",
        "/api/admin/api-keys",
        Some(admin),
        &json!({"name": "Import job", "scopes": scopes}),
    )
    .await;
    r.assert_status(201);
    (
        s(&r.body()["key"]).to_owned(),
        s(&r.body()["id"]).to_owned(),
    )
}
