//! Version history against the real binary: the HTTP API of `docs/openapi.yaml`, the
//! `version` and `restored` messages of `docs/protocol.md`, automatic checkpoints, who may
//! do what, and restores while people edit (and while the node is killed).

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Map, Value};

mod api;
mod restore;

/// The file's versions as `who` lists them (all pages).
pub async fn all_versions(node: &Node, file: &str, token: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut path = format!("/api/files/{file}/versions?limit=2");
    loop {
        let r = get(node, &path, Some(token)).await;
        r.assert_status(200);
        let body = r.body();
        out.extend(
            body["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .cloned(),
        );
        match body["next"].as_u64() {
            Some(next) => path = format!("/api/files/{file}/versions?limit=2&before={next}"),
            None => return out,
        }
    }
}

/// Names the current state; the version made.
pub async fn name(node: &Node, file: &str, token: &str, title: &str) -> Value {
    let r = send_json(
        node,
        "POST",
        &format!("/api/files/{file}/versions"),
        Some(token),
        &json!({"title": title, "description": "saved by a test"}),
    )
    .await;
    r.assert_status(201);
    r.body().clone()
}

/// Restores a version as the token's account: the answer.
pub async fn restore_as(node: &Node, file: &str, token: &str, id: u64) -> Resp {
    send_empty(
        node,
        "POST",
        &format!("/api/files/{file}/versions/{id}/restore"),
        Some(token),
    )
    .await
}

/// A version's document.
pub async fn version_doc(node: &Node, file: &str, token: &str, id: u64) -> Value {
    let r = get(
        node,
        &format!("/api/files/{file}/versions/{id}"),
        Some(token),
    )
    .await;
    r.assert_status(200);
    r.body()["doc"].clone()
}
