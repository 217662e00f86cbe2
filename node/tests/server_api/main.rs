//! The server API against the real binary (`docs/server-api.md`): patches from the app's
//! server while people edit (both stores), idempotent retries (across a restart), bad input,
//! who is in a file and kicking them (4006), broadcast events, files with the app's own ids.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Map, Value};

mod events;
mod files;
mod patches;
mod people;

/// A node with a server admin, and an API key of `scopes` made by that admin: (node,
/// admin's session, the key's secret, the key's id).
pub async fn node_with_key(
    envs: &[(&str, &str)],
    scopes: &[&str],
) -> (Node, String, String, String) {
    let admin = unique_email("admin");
    let mut all: Vec<(&str, &str)> = vec![("ATRIUM_ADMINS", admin.as_str())];
    all.extend_from_slice(envs);
    let node = Node::start(&all).await;
    let (session, _) = signup(&node, &admin).await;
    let (key, id) = make_key(&node, &session, scopes).await;
    (node, session, key, id)
}
