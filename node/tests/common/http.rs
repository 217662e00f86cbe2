//! HTTP to a node: requests, accounts, files and documents.

use super::*;

mod accounts;
mod files;

pub use accounts::*;
pub use files::*;

pub use atrium_testkit::http::Resp;

/// Sends one request to the node on a fresh connection and reads the whole answer.
pub async fn http(
    node: &Node,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    http_at(node.port, method, path, headers, body).await
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// GET with an optional session token.
pub async fn get(node: &Node, path: &str, token: Option<&str>) -> Resp {
    match token {
        Some(t) => http(node, "GET", path, &[("authorization", &bearer(t))], None).await,
        None => http(node, "GET", path, &[], None).await,
    }
}

/// GET with a link key (and no token).
pub async fn get_with_key(node: &Node, path: &str, key: &str) -> Resp {
    http(node, "GET", path, &[("x-atrium-key", key)], None).await
}

/// A request with a JSON body and an optional session token.
pub async fn send_json(
    node: &Node,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> Resp {
    let raw = body.to_string().into_bytes();
    match token {
        Some(t) => {
            http(
                node,
                method,
                path,
                &[("authorization", &bearer(t))],
                Some(raw),
            )
            .await
        }
        None => http(node, method, path, &[], Some(raw)).await,
    }
}

/// A request without a body and an optional session token.
pub async fn send_empty(node: &Node, method: &str, path: &str, token: Option<&str>) -> Resp {
    match token {
        Some(t) => http(node, method, path, &[("authorization", &bearer(t))], None).await,
        None => http(node, method, path, &[], None).await,
    }
}

pub fn s(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v}"))
}
