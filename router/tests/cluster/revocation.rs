//! App tokens revoked through the router: every node closes the sockets of the revoked
//! `sub` within a second, and refuses its tokens from then on.

use std::time::{Duration, Instant};

use atrium_testkit::jwt::{self, Minter};
use serde_json::json;

use super::common::client::{Client, Event};
use super::common::http::{http_at, Resp};
use super::common::*;

const ISS: &str = "https://app.example.test";
const AUD: &str = "atrium-fleet";
const SECRET: &str = "the fleet's HS256 secret, thirty-two bytes or more";

fn token(sub: &str, files: serde_json::Value) -> String {
    Minter::hs256(SECRET.as_bytes()).sign(&jwt::claims(ISS, AUD, sub, 600, files))
}

async fn post(port: u16, path: &str, bearer: &str, body: serde_json::Value) -> Resp {
    http_at(
        port,
        "POST",
        path,
        &[("authorization", &format!("Bearer {bearer}"))],
        Some(body),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_through_the_router_closes_sockets_on_every_node_within_a_second() {
    let _serial = serial().await;
    let admin = format!("admin-{}@example.test", &secret()[..10]);
    let bins = Binaries {
        node: atrium_testkit::fleet::node_binary(),
        router: env!("CARGO_BIN_EXE_atrium-router").into(),
    };
    let fleet = Fleet::start_with(
        bins,
        "ATRIUM_TEST_NATS_URL",
        LEASE_MS,
        3,
        1,
        &[
            ("ATRIUM_APP_TOKEN_ISSUER", ISS),
            ("ATRIUM_APP_TOKEN_AUDIENCE", AUD),
            ("ATRIUM_APP_TOKEN_HS256_SECRET", SECRET),
            ("ATRIUM_ADMINS", &admin),
        ],
    )
    .await;
    let r = fleet.routers[0].port;
    // A server admin makes the backend's API key.
    let signup = http_at(
        r,
        "POST",
        "/api/signup",
        &[],
        Some(json!({"email": admin, "password": PASSWORD, "name": "Admin"})),
    )
    .await;
    signup.assert_status(201);
    let session = signup.body()["token"].as_str().unwrap().to_string();
    let made = post(
        r,
        "/api/admin/api-keys",
        &session,
        json!({"name": "backend", "scopes": ["revoke"]}),
    )
    .await;
    made.assert_status(201);
    let key = made.body()["key"].as_str().unwrap().to_string();

    // Files spread over the ring, each with a socket of the person to revoke and one
    // of a bystander.
    let files: Vec<String> = (0..9)
        .map(|i| format!("fleet_{}_{i}", &secret()[..8]))
        .collect();
    let mut maker = jwt::claims(ISS, AUD, "backend", 600, json!({}));
    maker["create"] = json!("app");
    let maker = Minter::hs256(SECRET.as_bytes()).sign(&maker);
    for f in &files {
        post(r, "/api/files", &maker, json!({"id": f}))
            .await
            .assert_status(201);
    }
    let grant = json!({"fleet_*": "edit"});
    let victim = token("victim", grant.clone());
    let bystander = token("bystander", grant.clone());
    let mut victims = Vec::new();
    let mut others = Vec::new();
    for f in &files {
        victims.push(Client::join(r, f, &victim).await);
        others.push(Client::join(r, f, &bystander).await);
    }
    let revoked = post(r, "/api/app/revoke", &key, json!({"sub": "victim"})).await;
    revoked.assert_status(200);
    let at = Instant::now();
    for c in &mut victims {
        loop {
            match c.next(Duration::from_secs(5)).await {
                Event::Json(_) => continue,
                Event::Close(code) => {
                    assert_eq!(code, Some(4001));
                    break;
                }
                other => panic!("expected 4001, got {other:?}"),
            }
        }
    }
    let took = at.elapsed();
    assert!(
        took <= Duration::from_secs(1),
        "closed {took:?} after the revocation"
    );
    // The bystander still edits; the victim's token is refused on every node.
    for (i, c) in others.iter_mut().enumerate() {
        c.send_patch(1, "k", json!(i)).await;
        c.expect("ack", Some(1), WAIT).await;
    }
    for f in &files {
        assert!(Client::try_join(r, f, &victim, &secret(), None)
            .await
            .is_none());
    }
    // A wrong key is 401, a key without the scope 403, and a deleted key stops at once.
    post(r, "/api/app/revoke", "atk_nope", json!({"sub": "x"}))
        .await
        .assert_status(401);
    let id = made.body()["id"].as_str().unwrap().to_string();
    http_at(
        r,
        "DELETE",
        &format!("/api/admin/api-keys/{id}"),
        &[("authorization", &format!("Bearer {session}"))],
        None,
    )
    .await
    .assert_status(204);
    post(r, "/api/app/revoke", &key, json!({"sub": "x"}))
        .await
        .assert_status(401);
}
