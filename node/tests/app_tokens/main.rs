//! App tokens against one real node: JWTs signed by an app's backend (HS256, RS256,
//! ES256, EdDSA, from a JWKS that rotates), per-file grants at hello and on HTTP,
//! refresh on a live socket, expiry, and the hostile tokens.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use atrium_testkit::jwt::{self, key_pair, Algorithm, Minter};
use common::*;
use serde_json::{json, Value};

const ISS: &str = "https://app.example.test";
const AUD: &str = "atrium-test";
const SECRET: &str = "a test HS256 secret, thirty-two bytes or more";

/// A node that takes app tokens of the settings `extra` adds to the HS256 secret.
async fn node(extra: &[(&str, &str)]) -> Node {
    let mut envs: Vec<(&str, &str)> = vec![
        ("ATRIUM_APP_TOKEN_ISSUER", ISS),
        ("ATRIUM_APP_TOKEN_AUDIENCE", AUD),
        ("ATRIUM_APP_TOKEN_HS256_SECRET", SECRET),
        ("ATRIUM_APP_TOKEN_SKEW_S", "0"),
    ];
    envs.extend_from_slice(extra);
    Node::start(&envs).await
}

fn hs() -> Minter {
    Minter::hs256(SECRET.as_bytes())
}

/// Claims for `sub` living `ttl_s`, with a grant of `files`.
fn claims(sub: &str, ttl_s: i64, files: Value) -> Value {
    jwt::claims(ISS, AUD, sub, ttl_s, files)
}

/// Creates a file with the given id through an app token that may create files (owned
/// by the app).
async fn app_file(node: &Node, id: &str) {
    let mut c = claims("backend", 60, json!({}));
    c["create"] = json!("app");
    let r = send_json(
        node,
        "POST",
        "/api/files",
        Some(&hs().sign(&c)),
        &json!({"id": id, "name": id}),
    )
    .await;
    r.assert_status(201);
    assert_eq!(r.json.as_ref().unwrap()["id"], id);
}

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}", &secret()[..10])
}

mod api_keys;
mod hello;
mod hostile;
mod http_routes;
mod jwks;
mod refresh;
