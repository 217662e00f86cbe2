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
/// and sign-in are 403 `forbidden` for everyone but the server's admins (no password of
/// theirs is hashed), and app tokens work as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_password_accounts_takes_app_tokens_only() {
    let admin = unique_email("admin");
    let node = node(&[
        ("ATRIUM_PASSWORD_ACCOUNTS", "false"),
        ("ATRIUM_ADMINS", admin.as_str()),
    ])
    .await;
    let someone = unique_email("someone");
    let r = signup_answer(&node, &someone, PASSWORD, "Someone").await;
    r.assert_error(403, "forbidden");
    let r = signin_answer(&node, &someone, PASSWORD).await;
    r.assert_error(403, "forbidden");
    // The server's admins still have password accounts, to make API keys with.
    let (token, account) = signup(&node, &admin).await;
    assert_eq!(account["admin"], true);
    signin_answer(&node, &admin.to_uppercase(), PASSWORD)
        .await
        .assert_status(200);
    let body = json!({"name": "backend", "scopes": ["revoke"]});
    send_json(&node, "POST", "/api/admin/api-keys", Some(&token), &body)
        .await
        .assert_status(201);
    // The app's people are unaffected.
    let id = unique("f");
    app_file(&node, &id).await;
    let grant = hs().sign(&claims("ann", 60, json!({ id.clone(): "edit" })));
    get(&node, &format!("/api/files/{id}/doc"), Some(&grant))
        .await
        .assert_status(200);
}
