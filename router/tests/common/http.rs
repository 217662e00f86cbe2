//! HTTP through a router or to a node: requests with JSON bodies, and the calls a person
//! makes (sign up, create a file, read its document).

use serde_json::{json, Value};

use super::{secret, PASSWORD};

pub use atrium_testkit::http::Resp;

/// One request on a fresh connection, with a JSON body; `None` when the connection fails.
pub async fn try_http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Option<Resp> {
    let body = body.map(|b| b.to_string().into_bytes());
    atrium_testkit::http::try_request(port, method, path, headers, body).await
}

pub async fn http_at(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Resp {
    let body = body.map(|b| b.to_string().into_bytes());
    atrium_testkit::http::request(port, method, path, headers, body).await
}

/// Signs up an account through `port`; its token.
pub async fn account(port: u16) -> String {
    let email = format!("rt-{}@example.test", &secret()[..12]);
    let r = http_at(
        port,
        "POST",
        "/api/signup",
        &[],
        Some(json!({"email": email, "password": PASSWORD, "name": "Router Test"})),
    )
    .await;
    r.assert_status(201);
    r.body()["token"].as_str().expect("token").to_string()
}

/// Creates a file through `port`; its id.
pub async fn create_file(port: u16, token: &str) -> String {
    let r = http_at(
        port,
        "POST",
        "/api/files",
        &[("authorization", &format!("Bearer {token}"))],
        Some(json!({"name": "Routed board"})),
    )
    .await;
    r.assert_status(201);
    r.body()["id"].as_str().expect("file id").to_string()
}

/// `GET /api/files/{id}/doc` through `port`: (version, doc).
pub async fn get_doc(port: u16, token: &str, file: &str) -> (u64, Value) {
    let r = atrium_testkit::http::get_as(port, &format!("/api/files/{file}/doc"), token).await;
    r.assert_status(200);
    (
        r.body()["version"].as_u64().expect("version"),
        r.body()["doc"].clone(),
    )
}
