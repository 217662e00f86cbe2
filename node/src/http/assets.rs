//! The browser client (`web/`), embedded in the binary at compile time and served at `/`
//! (the page) and `/assets/...` (its stylesheet and ES modules), so every node serves the
//! same client with no files to install.
//!
//! Caching: at first use the node hashes every embedded file (SHA-256) into one short
//! build id and rewrites the page's asset URLs from `/assets/<name>` to
//! `/assets/<build id>/<name>`. The modules import each other by relative paths, so they
//! keep the prefix, and every URL the page loads is tied to this exact set of files:
//! those answers are `Cache-Control: public, max-age=31536000, immutable`. The page itself
//! is `no-cache` (revalidated every time, with its ETag), so a new build reaches browsers
//! at once and brings new asset URLs with it. An asset asked for under another build id
//! (a page from an older node during a rolling update) or with no id is served from this
//! build with `no-cache`, never cached long. Every answer carries a strong ETag (a hash of
//! its bytes) and `If-None-Match` gets a 304.
//!
//! The page's modules (`web/src/`) import the client package, `@atrium/client`
//! (`clients/js/src/`), which is served under `/assets/client/` (the page's import map
//! names it). New files under either folder must be added to `FILES` (a test checks).

mod build;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use hyper::{Request, Response, StatusCode};

use self::build::{assets, Asset};
use super::{ApiError, ApiResult, Body};

const JS: &str = "text/javascript; charset=utf-8";
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const REVALIDATE: &str = "no-cache";

/// One embedded file: its path under `web/` (and under `/assets/`) and content type.
macro_rules! web_file {
    ($path:literal, $content_type:expr) => {
        (
            $path,
            include_bytes!(concat!("../../../web/", $path)) as &[u8],
            $content_type,
        )
    };
}

/// One module of `@atrium/client`, served at `/assets/client/<name>`.
macro_rules! client_file {
    ($name:literal) => {
        (
            concat!("client/", $name),
            include_bytes!(concat!("../../../clients/js/src/", $name)) as &[u8],
            JS,
        )
    };
}

/// The page's files: (path under `/assets/`, bytes, content type).
const FILES: &[(&str, &[u8], &str)] = &[
    web_file!("style.css", "text/css; charset=utf-8"),
    web_file!("src/app.js", JS),
    web_file!("src/history.js", JS),
    web_file!("src/history_inspect.js", JS),
    web_file!("src/history_ui.js", JS),
    web_file!("src/ui.js", JS),
    client_file!("api.js"),
    client_file!("backoff.js"),
    client_file!("client.js"),
    client_file!("closes.js"),
    client_file!("connection.js"),
    client_file!("doc.js"),
    client_file!("glide.js"),
    client_file!("index.js"),
    client_file!("messages.js"),
    client_file!("outbox.js"),
    client_file!("presence.js"),
    client_file!("room.js"),
    client_file!("tabstore.js"),
];

const INDEX: &str = include_str!("../../../web/index.html");

/// True when the request's `If-None-Match` names `etag` (or is `*`).
fn not_modified(req: &Request<Incoming>, etag: &HeaderValue) -> bool {
    let Some(inm) = req
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let ours = etag.to_str().unwrap_or_default();
    inm.split(',')
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || t == ours)
}

fn respond(req: &Request<Incoming>, a: &Asset, cache: &'static str) -> Response<Body> {
    let mut resp = if not_modified(req, &a.etag) {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = Response::new(Full::new(a.bytes.clone()));
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(a.content_type));
        r
    };
    let h = resp.headers_mut();
    h.insert(ETAG, a.etag.clone());
    h.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// `GET /`: the page (share links are `/?file=<id>#key=<key>`), always revalidated.
pub fn index(req: &Request<Incoming>) -> Response<Body> {
    respond(req, &assets().index, REVALIDATE)
}

/// `GET /assets/<build id>/<path>` (cached for good when the id is this build's) and
/// `GET /assets/<path>` (revalidated).
pub fn serve(req: &Request<Incoming>, segments: &[&str]) -> ApiResult {
    let a = assets();
    let (cache, rest) = match segments.split_first() {
        Some((first, rest)) if *first == a.build => (IMMUTABLE, rest),
        Some((first, rest))
            if first.len() == a.build.len() && first.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            (REVALIDATE, rest)
        }
        _ => (REVALIDATE, segments),
    };
    let path = rest.join("/");
    let file = a.files.get(path.as_str()).ok_or_else(ApiError::not_found)?;
    Ok(respond(req, file, cache))
}

#[cfg(test)]
mod tests;
