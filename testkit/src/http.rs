//! One HTTP/1.1 request on a fresh loopback connection, read to the end.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::HeaderMap;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpStream;

/// How long a request may take before the test fails.
const WAIT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
    pub text: String,
}

impl Resp {
    /// The JSON body, or a panic naming what came instead.
    pub fn body(&self) -> &Value {
        self.json
            .as_ref()
            .unwrap_or_else(|| panic!("expected a JSON body, got {} {:?}", self.status, self.text))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("header is text").to_string())
    }

    pub fn assert_status(&self, status: u16) {
        assert_eq!(
            self.status, status,
            "expected {status}, got {} {}",
            self.status, self.text
        );
    }

    /// Asserts the status and the `{"error":{"code","message"}}` body.
    pub fn assert_error(&self, status: u16, code: &str) {
        self.assert_status(status);
        let err = self
            .body()
            .get("error")
            .unwrap_or_else(|| panic!("error body lacks `error`: {}", self.text));
        assert_eq!(err["code"], json!(code), "error code in {}", self.text);
        assert!(
            err["message"].as_str().is_some_and(|m| !m.is_empty()),
            "error message must be a non-empty string: {}",
            self.text
        );
    }
}

/// One request to `127.0.0.1:port`; `None` when the connection fails or the
/// answer does not come within 30 s. A body is sent as JSON unless a
/// `content-type` header says otherwise.
pub async fn try_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Option<Resp> {
    try_request_within(WAIT, port, method, path, headers, body).await
}

/// Like [`try_request`], waiting `wait` for the answer: for work a node is meant to put
/// behind everything interactive (an upload built on its bulk lane while under attack).
pub async fn try_request_within(
    wait: Duration,
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Option<Resp> {
    let exchange = async move {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", format!("127.0.0.1:{port}"));
        let typed = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        if body.is_some() && !typed {
            builder = builder.header("content-type", "application/json");
        }
        let req = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .ok()?;
        let resp = sender.send_request(req).await.ok()?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.ok()?.to_bytes();
        Some(Resp {
            status,
            headers,
            json: serde_json::from_slice(&bytes).ok(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        })
    };
    tokio::time::timeout(wait, exchange).await.ok().flatten()
}

/// Like [`try_request`], failing the test when no answer comes.
pub async fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    try_request(port, method, path, headers, body)
        .await
        .unwrap_or_else(|| panic!("{method} {path} on port {port}: no answer within {WAIT:?}"))
}

/// `GET path` on `port` as the person whose session `token` is given; `None` as with
/// [`try_request`].
pub async fn try_get_as(port: u16, path: &str, token: &str) -> Option<Resp> {
    let auth = format!("Bearer {token}");
    try_request(port, "GET", path, &[("authorization", &auth)], None).await
}

/// Like [`try_get_as`], failing the test when no answer comes.
pub async fn get_as(port: u16, path: &str, token: &str) -> Resp {
    try_get_as(port, path, token)
        .await
        .unwrap_or_else(|| panic!("GET {path} on port {port}: no answer within {WAIT:?}"))
}

#[cfg(test)]
pub(crate) mod tests;
