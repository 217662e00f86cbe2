//! `Authorization: Bearer` with an app token on the HTTP routes, where a session token goes.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_app_tokens_read_what_their_grant_allows() {
    let node = node(&[]).await;
    let (a, b) = (unique("a"), unique("b"));
    app_file(&node, &a).await;
    app_file(&node, &b).await;
    let token = hs().sign(&claims("ann", 60, json!({ a.clone(): "view" })));
    let r = get(&node, &format!("/api/files/{a}"), Some(&token)).await;
    r.assert_status(200);
    let r = get(&node, &format!("/api/files/{a}/doc"), Some(&token)).await;
    r.assert_status(200);
    let r = get(&node, &format!("/api/files/{b}"), Some(&token)).await;
    r.assert_error(403, "forbidden");
    // A grant is not ownership: no renaming, no keys, no deleting.
    let edit = hs().sign(&claims("ann", 60, json!({ a.clone(): "edit" })));
    let r = send_json(
        &node,
        "PATCH",
        &format!("/api/files/{a}"),
        Some(&edit),
        &json!({"name": "x"}),
    )
    .await;
    r.assert_error(403, "forbidden");
    let r = send_empty(&node, "DELETE", &format!("/api/files/{a}"), Some(&edit)).await;
    r.assert_error(403, "forbidden");
    // An app token is no session to sign out of.
    let r = send_empty(&node, "POST", "/api/signout", Some(&token)).await;
    assert_eq!(r.status, 400, "{}", r.text);
    // `me` names the person by the id their files are owned by.
    let r = get(&node, "/api/me", Some(&token)).await;
    r.assert_status(200);
    assert_eq!(r.json.as_ref().unwrap()["account"]["id"], "sub-ann");
}

/// A node whose people all come with app tokens (`ATRIUM_PASSWORD_ACCOUNTS=false`): sign-up
/// and sign-in are 403 `forbidden` before anything is read (an unfinished body is never
/// waited for), no password is hashed, and app tokens work as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_password_accounts_takes_app_tokens_only() {
    let node = node(&[
        ("ATRIUM_PASSWORD_ACCOUNTS", "false"),
        ("ATRIUM_BODY_TIMEOUT_MS", "60000"),
    ])
    .await;
    let r = signup_answer(&node, &unique_email("nobody"), PASSWORD, "Nobody").await;
    r.assert_error(403, "forbidden");
    let r = signin_answer(&node, "someone@example.test", PASSWORD).await;
    r.assert_error(403, "forbidden");
    // Headers that promise a body never sent: answered at once, not after the body deadline.
    let head = "POST /api/signin HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
                content-length: 1000\r\n\r\n";
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", node.port))
        .await
        .expect("a connection");
    stream
        .write_all(head.as_bytes())
        .await
        .expect("headers sent");
    let mut answer = [0u8; 12];
    // The body deadline is a minute here: an answer within 20 s came before it.
    tokio::time::timeout(Duration::from_secs(20), stream.read_exact(&mut answer))
        .await
        .expect("answered before the body")
        .expect("an answer");
    assert_eq!(
        &answer,
        b"HTTP/1.1 403",
        "{}",
        String::from_utf8_lossy(&answer)
    );
    // The app's people are unaffected.
    let id = unique("f");
    app_file(&node, &id).await;
    let token = hs().sign(&claims("ann", 60, json!({ id.clone(): "edit" })));
    get(&node, &format!("/api/files/{id}/doc"), Some(&token))
        .await
        .assert_status(200);
}
