//! Refresh on a live socket, and the end of a token that is not refreshed.

use super::*;

async fn refresh(c: &mut Client, token: &str) {
    c.send_json(&json!({"type": "refresh", "token": token}))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrefreshed_token_gets_a_notice_then_4001_within_a_second_of_exp() {
    let node = node(&[("ATRIUM_APP_TOKEN_NOTICE_MS", "1500")]).await;
    let file = unique("doc");
    app_file(&node, &file).await;
    let c = claims("ann", 3, json!({ file.clone(): "edit" }));
    let exp = c["exp"].as_i64().unwrap();
    let (mut client, _) = Client::join(&node, &file, &Hello::token(&hs().sign(&c))).await;
    let notice = client
        .recv_type("notice", Duration::from_secs(5))
        .await
        .expect("a notice before exp");
    assert_eq!(notice["reason"], "token-expiring", "{notice}");
    assert_eq!(notice["exp"], exp);
    assert!(jwt::now_s() < exp, "the notice comes before exp");
    // Closed within a second of exp.
    let exp_at = std::time::UNIX_EPOCH + Duration::from_secs(exp as u64);
    let until = exp_at
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default()
        + Duration::from_secs(1);
    client.expect_close_within(4001, until).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_extends_the_socket_and_narrows_its_grant_at_once() {
    let node = node(&[("ATRIUM_APP_TOKEN_NOTICE_MS", "1500")]).await;
    let file = unique("doc");
    app_file(&node, &file).await;
    let c = claims("ann", 3, json!({ file.clone(): "edit" }));
    let (mut client, _) = Client::join(&node, &file, &Hello::token(&hs().sign(&c))).await;
    client.patch_acked(1, vec![put("a", json!({}))]).await;
    client
        .recv_type("notice", Duration::from_secs(5))
        .await
        .expect("the notice");
    // Refreshed with a view grant: answered with the new exp, and a viewer at once.
    let fresh = claims("ann", 60, json!({ file.clone(): "view" }));
    refresh(&mut client, &hs().sign(&fresh)).await;
    let answer = client
        .recv_type("refreshed", WAIT)
        .await
        .expect("refreshed");
    assert_eq!(answer["exp"], fresh["exp"]);
    client.send_patch(2, vec![put("b", json!({}))]).await;
    let r = client.await_reject(json!(2)).await;
    assert_eq!(r["code"], "viewer");
    // Past the first token's exp, the socket stays open.
    client.expect_quiet(Duration::from_secs(3)).await;
    // Back to edit.
    refresh(
        &mut client,
        &hs().sign(&claims("ann", 60, json!({ file.clone(): "edit" }))),
    )
    .await;
    client
        .recv_type("refreshed", WAIT)
        .await
        .expect("refreshed");
    client.patch_acked(3, vec![put("c", json!({}))]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_without_the_file_closes_4003_and_bad_refreshes_are_refused() {
    let node = node(&[]).await;
    let (file, other) = (unique("doc"), unique("other"));
    app_file(&node, &file).await;
    let (mut client, _) = Client::join(
        &node,
        &file,
        &Hello::token(&hs().sign(&claims("ann", 60, json!({ file.clone(): "edit" })))),
    )
    .await;
    // Another person's token, a bad one, garbage: `bad-token`, and the socket stays.
    let bads = [
        hs().sign(&claims("bob", 60, json!({ file.clone(): "edit" }))),
        Minter::hs256(b"some other secret of thirty-two bytes!").sign(&claims(
            "ann",
            60,
            json!({}),
        )),
        jwt::unsigned(&claims("ann", 60, json!({ file.clone(): "edit" }))),
        "not-a-token".to_string(),
    ];
    for bad in &bads {
        refresh(&mut client, bad).await;
        let r = client.recv_type("reject", WAIT).await.expect("a reject");
        assert_eq!(r["code"], "bad-token", "{r}");
    }
    client.patch_acked(1, vec![put("a", json!({}))]).await;
    // A refresh whose grant dropped the file.
    refresh(
        &mut client,
        &hs().sign(&claims("ann", 60, json!({ other: "edit" }))),
    )
    .await;
    client.expect_close(4003).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_socket_cannot_refresh() {
    let node = node(&[]).await;
    let (session, _) = signup(&node, &unique_email("acct")).await;
    let f = create_file(&node, &session, "F", None).await;
    let id = s(&f["id"]).to_string();
    let (mut client, _) = Client::join(&node, &id, &Hello::token(&session)).await;
    let token = hs().sign(&claims("ann", 60, json!({ id.clone(): "edit" })));
    refresh(&mut client, &token).await;
    let r = client.recv_type("reject", WAIT).await.expect("a reject");
    assert_eq!(r["code"], "bad-token");
}
