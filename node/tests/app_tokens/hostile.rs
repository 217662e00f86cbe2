//! Hostile tokens at the hello and on HTTP: each is refused (4001 / 401) and the
//! node keeps serving.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_tokens_are_refused_at_hello_and_on_http() {
    let rs = key_pair(Algorithm::RS256, "rs");
    let path = rs.public_path.display().to_string();
    let node = node(&[("ATRIUM_APP_TOKEN_PUBLIC_KEYS", &path)]).await;
    let file = unique("doc");
    app_file(&node, &file).await;
    let grant = json!({ file.clone(): "edit" });
    let good = claims("eve", 60, grant.clone());
    let mut hostile: Vec<(&str, String)> = Vec::new();
    let mut c = good.clone();
    c["exp"] = json!(jwt::now_s() - 1);
    hostile.push(("expired", hs().sign(&c)));
    let mut c = good.clone();
    c["nbf"] = json!(jwt::now_s() + 120);
    hostile.push(("not yet valid", hs().sign(&c)));
    let mut c = good.clone();
    c["aud"] = json!("another-service");
    hostile.push(("wrong aud", hs().sign(&c)));
    let mut c = good.clone();
    c["iss"] = json!("https://evil.example");
    hostile.push(("wrong iss", hs().sign(&c)));
    let mut c = good.clone();
    c.as_object_mut().unwrap().remove("exp");
    hostile.push(("no exp", hs().sign(&c)));
    let other = Minter::hs256(b"not the node's secret, but as long as it");
    hostile.push(("wrong signature", other.sign(&good)));
    let other_rs = key_pair(Algorithm::RS256, "rs");
    hostile.push(("another RSA key", Minter::of(&other_rs).sign(&good)));
    hostile.push(("alg none", jwt::unsigned(&good)));
    hostile.push((
        "HS256 signed with the RSA public key",
        jwt::hs256_with(&rs.public_pem, Some("rs"), &good),
    ));
    let signed = hs().sign(&good);
    let (head, rest) = signed.split_once('.').unwrap();
    let (_, sig) = rest.split_once('.').unwrap();
    let mut tampered = good.clone();
    tampered["files"] = json!({ file.clone(): "edit", "*": "edit" });
    // The claims of another signed token (a wider grant) under this one's signature.
    let wider = hs().sign(&tampered);
    let body = wider.split('.').nth(1).unwrap();
    hostile.push(("tampered claims", format!("{head}.{body}.{sig}")));
    hostile.push(("garbage", "a.b.c".to_string()));
    hostile.push(("dots", "..".to_string()));
    for (what, token) in &hostile {
        Client::join_expect_close(&node, &file, &Hello::token(token), 4001).await;
        let r = get(&node, &format!("/api/files/{file}"), Some(token)).await;
        assert_eq!(r.status, 401, "{what}: {}", r.text);
        let r = get(&node, "/api/files", Some(token)).await;
        assert_eq!(r.status, 401, "{what}");
    }
    // The good one still works.
    let (_c, w) = Client::join(&node, &file, &Hello::token(&signed)).await;
    assert_eq!(w["role"], "editor");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_app_token_settings_refuses_them() {
    let plain = Node::start(&[]).await;
    let (session, _) = signup(&plain, &unique_email("owner")).await;
    let f = create_file(&plain, &session, "F", None).await;
    let id = s(&f["id"]).to_string();
    let token = hs().sign(&claims("ann", 60, json!({ id.clone(): "edit" })));
    Client::join_expect_close(&plain, &id, &Hello::token(&token), 4001).await;
    get(&plain, &format!("/api/files/{id}"), Some(&token))
        .await
        .assert_error(401, "unauthorized");
}
