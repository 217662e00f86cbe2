//! The opening handshake, server side (RFC 6455 §4.2) and the negotiation of
//! permessage-deflate (RFC 7692 §7.1).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, Version};
use sha1::{Digest, Sha1};

mod deflate_offer;

use deflate_offer::negotiate_deflate;

/// The GUID appended to the client's key (RFC 6455 §1.3).
const ACCEPT_GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const KEY: &str = "sec-websocket-key";
const VERSION: &str = "sec-websocket-version";
const EXTENSIONS: &str = "sec-websocket-extensions";
const ACCEPT: &str = "sec-websocket-accept";

/// An accepted upgrade: the 101 answer to send, and whether deflate was agreed.
pub struct Accepted {
    pub response: Response<Full<Bytes>>,
    pub deflate: bool,
}

/// Why an upgrade request was refused. The caller answers `NotUpgrade` and
/// `MissingKey` with 400, and `BadVersion` with 426 and `Sec-WebSocket-Version: 13`.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("not a WebSocket upgrade request (HTTP/1.1 GET with Connection: upgrade and Upgrade: websocket)")]
    NotUpgrade,
    #[error("missing or unsupported Sec-WebSocket-Version (only 13 is supported)")]
    BadVersion,
    #[error("missing or malformed Sec-WebSocket-Key")]
    MissingKey,
    /// Whatever a body held would be read as the socket's first frames.
    #[error("an upgrade request carries no body")]
    WithBody,
}

/// Checks an upgrade request and builds the 101 answer. With `allow_deflate`,
/// the first permessage-deflate offer we can honour is accepted.
pub fn accept<B>(req: &Request<B>, allow_deflate: bool) -> Result<Accepted, HandshakeError> {
    let headers = req.headers();
    let upgrade_ok = req.method() == Method::GET
        && req.version() == Version::HTTP_11
        && has_token(headers, header::CONNECTION, "upgrade")
        && has_token(headers, header::UPGRADE, "websocket");
    if !upgrade_ok {
        return Err(HandshakeError::NotUpgrade);
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes().trim_ascii() != b"0");
    if declared || headers.contains_key(header::TRANSFER_ENCODING) {
        return Err(HandshakeError::WithBody);
    }
    match single(headers, VERSION) {
        Some(v) if v.as_bytes().trim_ascii() == b"13" => {}
        _ => return Err(HandshakeError::BadVersion),
    }
    let key = single(headers, KEY).ok_or(HandshakeError::MissingKey)?;
    let key = key.as_bytes().trim_ascii();
    // The key is 16 random bytes in base64 (RFC 6455 §4.1).
    match BASE64.decode(key) {
        Ok(raw) if raw.len() == 16 => {}
        _ => return Err(HandshakeError::MissingKey),
    }

    let deflate_answer = if allow_deflate {
        negotiate_deflate(headers)
    } else {
        None
    };
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let out = response.headers_mut();
    out.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    out.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    let accept = HeaderValue::from_str(&accept_key(key)).expect("base64 is a valid header value");
    out.insert(ACCEPT, accept);
    if let Some(answer) = &deflate_answer {
        let value = HeaderValue::from_str(answer).expect("our answer is ASCII");
        out.insert(EXTENSIONS, value);
    }
    Ok(Accepted {
        response,
        deflate: deflate_answer.is_some(),
    })
}

/// `Sec-WebSocket-Accept` for a client's key: base64(SHA-1(key + GUID)).
pub fn accept_key(key: &[u8]) -> String {
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(ACCEPT_GUID);
    BASE64.encode(sha.finalize())
}

/// The header's value if it occurs exactly once.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a HeaderValue> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    values.next().is_none().then_some(first)
}

/// Whether a comma-separated header (all its occurrences) holds `token`,
/// ignoring case. `Upgrade` entries may carry a version: `websocket/13`.
fn has_token(headers: &HeaderMap, name: HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().split('/').next().unwrap_or_default())
        .any(|t| t.eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests;
