//! A small HTTP/1.1 client over hyper's connection API: one connection per request, JSON in
//! and out, with a timeout. Enough for setup and `/health`.

use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

/// How long a setup request may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The base address of a node: `host:port`, and the host for the `Host` header.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub authority: String,
}

impl Endpoint {
    /// From `http://host:port`.
    pub fn from_url(url: &str) -> Endpoint {
        let authority = url.trim_start_matches("http://").to_string();
        Endpoint { authority }
    }

    pub fn ws_url(&self, file: &str) -> String {
        format!("ws://{}/files/{file}/ws", self.authority)
    }
}

/// An answer: status, parsed JSON body (null when empty or not JSON) and the node's
/// `Retry-After`, when it gave one.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub retry_after: Option<Duration>,
}

impl Answer {
    fn parse(raw: Raw) -> Answer {
        let body = serde_json::from_slice(&raw.bytes).unwrap_or(Value::Null);
        Answer {
            status: raw.status,
            body,
            retry_after: raw.retry_after,
        }
    }

    /// A 503 that says when to come back: the node is at a bound it will be under again
    /// soon (password hashing busy, the store briefly away).
    pub fn come_back_after(&self) -> Option<Duration> {
        (self.status == 503).then_some(self.retry_after).flatten()
    }

    /// The body when the status is 2xx, else an error with the server's reason.
    pub fn ok(self, what: &str) -> Result<Value> {
        if (200..300).contains(&self.status) {
            return Ok(self.body);
        }
        let reason = self.body["error"]["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| self.body.to_string());
        Err(anyhow!("{what}: HTTP {}: {reason}", self.status))
    }
}

/// Sends one request and reads the whole answer, within `timeout`.
pub async fn request(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
    timeout: Duration,
) -> Result<Answer> {
    tokio::time::timeout(
        timeout,
        request_raw(endpoint, method, path, token, None, body),
    )
    .await
    .map_err(|_| anyhow!("{method} {path}: no answer within {timeout:?}"))?
    .map(Answer::parse)
}

/// How long setup keeps coming back to a node that answers 503 with `Retry-After`: a
/// debug node on a busy machine hashes a password in about a second, and sign-ups wait
/// at most 2 s for a hashing slot before they are told to come back.
const COME_BACK_FOR: Duration = Duration::from_secs(60);

/// A setup request with a JSON body, sent again while the node answers 503 with
/// `Retry-After` (for at most [`COME_BACK_FOR`]); any other answer is the caller's.
pub async fn request_until_served(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> Result<Answer> {
    let give_up = tokio::time::Instant::now() + COME_BACK_FOR;
    loop {
        let answer = request(endpoint, method, path, token, Some(body), SETUP_TIMEOUT).await?;
        match answer.come_back_after() {
            Some(wait) if tokio::time::Instant::now() + wait < give_up => {
                tokio::time::sleep(wait).await
            }
            _ => return Ok(answer),
        }
    }
}

/// A request with a file's link key (`X-Atrium-Key`) and an optional JSON body, within
/// `timeout`.
pub async fn request_with_key(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    key: &str,
    body: Option<&Value>,
    timeout: Duration,
) -> Result<Answer> {
    tokio::time::timeout(
        timeout,
        request_raw(endpoint, method, path, None, Some(key), body),
    )
    .await
    .map_err(|_| anyhow!("{method} {path}: no answer within {timeout:?}"))?
    .map(Answer::parse)
}

/// A GET with a file's link key (`X-Atrium-Key`), within `timeout`.
pub async fn get_with_key(
    endpoint: &Endpoint,
    path: &str,
    key: &str,
    timeout: Duration,
) -> Result<Answer> {
    tokio::time::timeout(
        timeout,
        request_raw(endpoint, "GET", path, None, Some(key), None),
    )
    .await
    .map_err(|_| anyhow!("GET {path}: no answer within {timeout:?}"))?
    .map(Answer::parse)
}

/// A GET whose body is text (`/metrics`), within `timeout`; an error unless it is a 200.
pub async fn get_text(endpoint: &Endpoint, path: &str, timeout: Duration) -> Result<String> {
    let raw = tokio::time::timeout(
        timeout,
        request_raw(endpoint, "GET", path, None, None, None),
    )
    .await
    .map_err(|_| anyhow!("GET {path}: no answer within {timeout:?}"))??;
    if raw.status != 200 {
        return Err(anyhow!("GET {path}: HTTP {}", raw.status));
    }
    Ok(String::from_utf8_lossy(&raw.bytes).into_owned())
}

/// What came back, before the body is parsed.
struct Raw {
    status: u16,
    retry_after: Option<Duration>,
    bytes: Bytes,
}

async fn request_raw(
    endpoint: &Endpoint,
    method: &str,
    path: &str,
    token: Option<&str>,
    key: Option<&str>,
    body: Option<&Value>,
) -> Result<Raw> {
    let stream = TcpStream::connect(&endpoint.authority)
        .await
        .with_context(|| format!("cannot connect to {}", endpoint.authority))?;
    stream.set_nodelay(true)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", &endpoint.authority)
        .header("connection", "close");
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    if let Some(key) = key {
        req = req.header("x-atrium-key", key);
    }
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let req = req.body(Full::new(Bytes::from(payload)))?;
    let resp = sender
        .send_request(req)
        .await
        .with_context(|| format!("{method} {path}"))?;
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(hyper::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let bytes = resp.into_body().collect().await?.to_bytes();
    driver.abort();
    Ok(Raw {
        status,
        retry_after,
        bytes,
    })
}
