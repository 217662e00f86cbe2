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
    tokio::time::timeout(WAIT, exchange).await.ok().flatten()
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_request_gets_status_headers_and_json() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let body = r#"{"error":{"code":"nope","message":"no"}}"#;
            let answer = format!(
                "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nx-seen: yes\r\n\
                 content-length: {}\r\n\r\n{body}",
                body.len()
            );
            s.write_all(answer.as_bytes()).await.unwrap();
            head
        });
        let resp = request(port, "POST", "/x", &[("x-test", "1")], Some(b"{}".to_vec())).await;
        resp.assert_error(404, "nope");
        assert_eq!(resp.header("x-seen").as_deref(), Some("yes"));
        let head = server.await.unwrap().to_ascii_lowercase();
        assert!(head.starts_with("post /x http/1.1"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains("x-test: 1"), "{head}");
    }

    #[tokio::test]
    async fn no_server_is_none() {
        let port = crate::env::free_port();
        assert!(try_request(port, "GET", "/", &[], None).await.is_none());
    }
}
