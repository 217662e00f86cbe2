//! The HTTP API (docs/protocol.md, "HTTP"): routing (`routes`), errors (`error`), and the
//! helpers every handler shares (`body`, `caller`). Handlers live in `accounts` and
//! `files`; the socket upgrade in `upgrade`; health, readiness and metrics in `ops`.

mod accounts;
mod app;
mod assets;
mod body;
mod caller;
mod error;
mod files;
mod ops;
mod pacing;
mod routes;
mod server;
mod upgrade;
mod webhooks;

pub use body::{parse_json, plain_name, read_body, read_body_promised, read_json, BodyDeadline};
pub use caller::{
    app_account, app_claims, bearer_token, caller, client_addr, on_this_machine, signed_in,
    ClientAddr, OnThisMachine, Peer,
};
pub use error::{busy, rate_limited, ApiError};
pub use ops::metrics_text as metrics_response;
pub use pacing::KeyAccepted;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::state::AppState;

pub type Body = Full<Bytes>;

/// Largest body of a request that is not a file creation.
const SMALL_BODY: usize = 64 * 1024;

pub type ApiResult = Result<Response<Body>, ApiError>;

pub fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    json_text_response(status, value.to_string())
}

/// An answer of JSON already written out.
pub fn json_text_response(status: StatusCode, text: String) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(text)));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

pub fn empty(status: StatusCode) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::new()));
    *resp.status_mut() = status;
    resp
}

/// A strong ETag for a body: the first 12 bytes of its SHA-256, in hex, quoted.
pub fn strong_etag(bytes: &[u8]) -> HeaderValue {
    let hex: String = Sha256::digest(bytes)[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    HeaderValue::from_str(&format!("\"{hex}\"")).expect("hex is a valid header value")
}

/// Every `X-Forwarded-For` line, joined in order (a proxy may add a line of its own rather
/// than append to the client's, and the client's first line must not be all that is read);
/// a line that is not text becomes an entry that names no address.
pub(crate) fn forwarded_for(headers: &hyper::HeaderMap) -> Option<String> {
    let mut lines = headers.get_all("x-forwarded-for").iter().peekable();
    lines.peek()?;
    let lines: Vec<&str> = lines.map(|v| v.to_str().unwrap_or("unknown")).collect();
    Some(lines.join(","))
}

/// The connection's slot of `ATRIUM_MAX_CONNECTIONS`, which an upgraded socket keeps.
#[derive(Clone)]
pub struct ConnSlot(pub Arc<crate::limits::ConnectionSlot>);

/// Answers one request; never fails (errors become JSON error bodies).
pub async fn handle(
    state: Arc<AppState>,
    mut req: Request<Incoming>,
    peer: std::net::SocketAddr,
) -> Response<Body> {
    let forwarded = forwarded_for(req.headers());
    // A dual-stack bind sees IPv4 peers as `::ffff:a.b.c.d`: the same client, and the same
    // trusted proxy, as `a.b.c.d` (the twenty-ninth review: a trusted 127.0.0.1 was not
    // recognised, so every client behind it shared its one address).
    let peer_ip = peer.ip().to_canonical();
    let addr = crate::limits::client_address(peer_ip, forwarded.as_deref(), &state.trusted);
    req.extensions_mut().insert(ClientAddr(addr));
    req.extensions_mut().insert(Peer(peer_ip));
    req.extensions_mut().insert(BodyDeadline(
        tokio::time::Instant::now() + state.config.body_timeout(),
    ));
    let counted = pacing::Counted::of(&mut req);
    let key = crate::limits::address_key(addr);
    let answer = match counted.admit(&state, key).await {
        Ok(()) => routes::route(&state, req).await,
        Err(e) => Err(e),
    };
    let mut resp = match answer {
        Ok(resp) => resp,
        Err(e) => {
            match e.code {
                "rate-limited" => state.metrics.rate_limited.inc(),
                "timeout" => state.metrics.body_timeouts.inc(),
                _ => {}
            }
            error::error_response(&e)
        }
    };
    counted.answered(&state, key, resp.status());
    if resp.status() == StatusCode::REQUEST_TIMEOUT {
        // What is left of a body that came too slowly is not read: close.
        resp.headers_mut()
            .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    }
    let class = match resp.status().as_u16() {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    };
    state
        .metrics
        .http_requests
        .with_label_values(&[class])
        .inc();
    resp
}
