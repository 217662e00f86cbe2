//! Keys from a JWKS served on loopback, rotated while sockets are open: none drops.

use super::*;
use atrium_testkit::jwt::{JwksServer, TestCa};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_rotation_mid_run_drops_no_socket() {
    let old = key_pair(Algorithm::ES256, "2024-old");
    let new = key_pair(Algorithm::RS256, "2025-new");
    let jwks = JwksServer::start(vec![old.jwk.clone()]).await;
    let url = jwks.url();
    let node = node(&[
        ("ATRIUM_APP_TOKEN_JWKS_URL", &url),
        ("ATRIUM_APP_TOKEN_JWKS_MIN_REFETCH_MS", "200"),
        ("ATRIUM_APP_TOKEN_JWKS_REFRESH_MS", "500"),
    ])
    .await;
    let file = unique("doc");
    app_file(&node, &file).await;
    let grant = json!({ file.clone(): "edit" });
    let mut sockets = Vec::new();
    for i in 0..5 {
        let t = Minter::of(&old).sign(&claims(&format!("p{i}"), 60, grant.clone()));
        sockets.push(Client::join(&node, &file, &Hello::token(&t)).await.0);
    }
    // Rotation: the new key is published next to the old, tokens are signed with it,
    // then the old one is dropped from the set.
    jwks.set_keys(vec![old.jwk.clone(), new.jwk.clone()]);
    // Signing with a new key starts at least ATRIUM_APP_TOKEN_JWKS_MIN_REFETCH_MS after
    // it is published (docs/auth.md): the first token with its `kid` fetches the set.
    tokio::time::sleep(Duration::from_millis(250)).await;
    for i in 5..10 {
        let t = Minter::of(&new).sign(&claims(&format!("p{i}"), 60, grant.clone()));
        sockets.push(Client::join(&node, &file, &Hello::token(&t)).await.0);
    }
    jwks.set_keys(vec![new.jwk.clone()]);
    // Past a periodic refresh or two.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // Old-key sockets refresh with old-key tokens (kept after they left the set) and
    // everyone still edits: 0 sockets dropped.
    for (i, c) in sockets.iter_mut().enumerate() {
        let m = if i < 5 {
            Minter::of(&old)
        } else {
            Minter::of(&new)
        };
        let t = m.sign(&claims(&format!("p{i}"), 60, grant.clone()));
        c.send_json(&json!({"type": "refresh", "token": t})).await;
        c.recv_type("refreshed", WAIT).await.expect("refreshed");
        c.patch_acked(1, vec![put(&format!("n{i}"), json!({}))])
            .await;
    }
    assert!(jwks.fetches() >= 2, "fetched {} times", jwks.fetches());
    // New sockets with the new key.
    let t = Minter::of(&new).sign(&claims("late", 60, grant.clone()));
    Client::join(&node, &file, &Hello::token(&t)).await;
}

/// A JWKS over HTTPS: the node checks the server's certificate against the roots it trusts
/// (here a private CA named by `SSL_CERT_FILE`, as an operator would); a node that trusts
/// another CA fetches nothing and takes none of the keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_over_https_is_trusted_only_through_its_ca() {
    let key = key_pair(Algorithm::EdDSA, "https-key");
    let (ca, other_ca) = (TestCa::new(), TestCa::new());
    let jwks = JwksServer::start_https(vec![key.jwk.clone()], &ca).await;
    let url = jwks.url();
    assert!(url.starts_with("https://"), "{url}");
    let grant = |sub: &str| claims(sub, 60, json!({"*": "edit"}));

    let trusting = node(&[
        ("ATRIUM_APP_TOKEN_JWKS_URL", &url),
        ("SSL_CERT_FILE", ca.ca_file().to_str().unwrap()),
    ])
    .await;
    let file = unique("doc");
    app_file(&trusting, &file).await;
    let token = Minter::of(&key).sign(&grant("reader"));
    let (mut c, _) = Client::join(&trusting, &file, &Hello::token(&token)).await;
    c.patch_acked(1, vec![put("over-https", json!({}))]).await;
    let fetched = jwks.fetches();
    assert!(fetched >= 1, "the trusting node never fetched the JWKS");

    let distrusting = node(&[
        ("ATRIUM_APP_TOKEN_JWKS_URL", &url),
        ("SSL_CERT_FILE", other_ca.ca_file().to_str().unwrap()),
        ("ATRIUM_APP_TOKEN_JWKS_MIN_REFETCH_MS", "100"),
    ])
    .await;
    let other = unique("doc");
    app_file(&distrusting, &other).await;
    let token = Minter::of(&key).sign(&grant("stranger"));
    Client::join_expect_close(&distrusting, &other, &Hello::token(&token), 4001).await;
    // Its handshakes failed before any request was made.
    assert_eq!(
        jwks.fetches(),
        fetched,
        "a request reached the server over an untrusted TLS"
    );
}
