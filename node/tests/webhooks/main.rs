//! Webhooks against one real node and a real receiver on loopback (`receiver`): signed
//! messages in order per file, endpoints through the routes and their hostile inputs,
//! at-least-once across `kill -9` of the sender and across the receiver being down, a
//! dead endpoint that does not slow a room, and the address guard.

#[path = "../common/mod.rs"]
mod common;
mod receiver;

use std::time::{Duration, Instant};

use common::*;
use receiver::{verify, Got, Receiver, HANG};
use serde_json::json;

/// Loopback receivers need the address guard off; short debounce and retries. A case
/// signs up a score of accounts from one address at once, past the default sign-up burst
/// (it passed only while a debug node hashed slowly enough for the limit to refill).
const QUICK: [(&str, &str); 6] = [
    ("ATRIUM_WEBHOOK_BLOCK_PRIVATE", "false"),
    ("ATRIUM_WEBHOOK_DEBOUNCE_MS", "200"),
    ("ATRIUM_WEBHOOK_RETRY_BASE_MS", "100"),
    ("ATRIUM_WEBHOOK_RETRY_MAX_MS", "1000"),
    ("ATRIUM_ROOM_IDLE_MS", "1000"),
    ("ATRIUM_AUTH_PER_IP_PER_MINUTE", "1000"),
];

/// A node with `extra` settings on top of `QUICK` and an admin; answers the node and an
/// API key of scope `server`.
async fn node_with_key(data: Option<&std::path::Path>, extra: &[(&str, &str)]) -> (Node, String) {
    let admin = unique_email("admin");
    let mut envs: Vec<(&str, &str)> = QUICK.to_vec();
    envs.push(("ATRIUM_ADMINS", &admin));
    envs.extend_from_slice(extra);
    let node = match data {
        Some(d) => Node::start_in(d, &envs).await,
        None => Node::start(&envs).await,
    };
    let (session, _) = signup(&node, &admin).await;
    let made = send_json(
        &node,
        "POST",
        "/api/admin/api-keys",
        Some(&session),
        &json!({"name": "backend", "scopes": ["server"]}),
    )
    .await;
    made.assert_status(201);
    let key = s(&made.json.unwrap()["key"]).to_string();
    (node, key)
}

/// Makes an endpoint for `url` wanting `events` (all when `None`); answers (id, secret).
async fn endpoint(node: &Node, key: &str, url: &str, events: Option<&[&str]>) -> (String, String) {
    let mut body = json!({"url": url, "description": "test receiver"});
    if let Some(events) = events {
        body["events"] = json!(events);
    }
    let r = send_json(node, "POST", "/api/webhooks", Some(key), &body).await;
    r.assert_status(201);
    let v = r.json.unwrap();
    (s(&v["id"]).to_string(), s(&v["secret"]).to_string())
}

/// A file of a new account, with the owner's token.
async fn board(node: &Node) -> (String, String) {
    let owner = new_account(node, "owner").await;
    let id = s(&create_file(node, &owner, "Board", None).await["id"]).to_string();
    (owner, id)
}

fn of_file<'a>(got: &'a [Got], file: &str) -> Vec<&'a Got> {
    got.iter().filter(|g| g.file() == file).collect()
}

fn kinds(got: &[&Got]) -> Vec<String> {
    got.iter().map(|g| g.kind().to_string()).collect()
}

/// The versions `file.updated` reported, in the order they arrived.
fn versions(got: &[&Got]) -> Vec<u64> {
    got.iter()
        .filter(|g| g.kind() == "file.updated")
        .map(|g| g.json["data"]["version"].as_u64().unwrap())
        .collect()
}

mod delivery;
mod endpoints;
mod fleet;
mod outages;
