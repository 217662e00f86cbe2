//! The HTTP API (PROTOCOL.md, "HTTP API"): routing, errors, and the helpers every
//! handler shares. Handlers live in `accounts` and `files`; health, readiness and
//! metrics in `ops`.

mod accounts;
mod assets;
mod files;
mod ops;

pub use ops::metrics_text as metrics_response;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::ids::{digest, FileId};
use crate::state::AppState;
use crate::store::{Account, StoreError};

pub type Body = Full<Bytes>;

/// Largest body of a request that is not a file creation.
const SMALL_BODY: usize = 64 * 1024;

/// An error as the contract shapes it: a status, a kebab-case code and a sentence.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// For `moved`: the node that owns the file.
    pub node: Option<String>,
    /// Seconds for a `Retry-After` header (429 and 503 answers).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            node: None,
            retry_after: None,
        }
    }

    /// 409 `moved`: another node serves this file; the router sends requests there.
    pub fn moved(node: &atrium_coordinator::NodeId) -> Self {
        Self {
            node: Some(node.to_string()),
            ..Self::new(
                StatusCode::CONFLICT,
                "moved",
                "another node serves this file; go through the router",
            )
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "sign in, or present a link key",
        )
    }

    pub fn forbidden() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "you have no access to this",
        )
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "no such thing here")
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ApiError::not_found(),
            StoreError::Conflict => {
                ApiError::new(StatusCode::CONFLICT, "conflict", "that already exists")
            }
            StoreError::Full => ApiError::new(
                StatusCode::FORBIDDEN,
                "too-many-files",
                "the account owns as many files as it may; delete some to make new ones",
            ),
            StoreError::Fenced | StoreError::Unavailable(_) => {
                tracing::warn!(error = %e, "store error answering a request");
                ApiError::unavailable("the store is unavailable; try again")
            }
        }
    }
}

pub type ApiResult = Result<Response<Body>, ApiError>;

pub fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(value.to_string())));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn error_response(e: &ApiError) -> Response<Body> {
    let mut error = json!({"code": e.code, "message": e.message});
    if let Some(node) = &e.node {
        error["node"] = json!(node);
    }
    let mut resp = json_response(e.status, &json!({ "error": error }));
    if let Some(seconds) = e.retry_after {
        resp.headers_mut()
            .insert(hyper::header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    resp
}

/// 503 `unavailable` with `Retry-After`: the node is at a bound it will be under again soon.
pub fn busy(message: impl Into<String>) -> ApiError {
    ApiError {
        retry_after: Some(2),
        ..ApiError::unavailable(message)
    }
}

/// 429 `rate-limited`, with `Retry-After` saying when to come back.
pub fn rate_limited(message: &str, wait: std::time::Duration) -> ApiError {
    ApiError {
        retry_after: Some(wait.as_secs_f64().ceil().clamp(1.0, 3600.0) as u32),
        ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate-limited", message)
    }
}

pub fn empty(status: StatusCode) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::new()));
    *resp.status_mut() = status;
    resp
}

/// When a request's body must have arrived in full (`ATRIUM_BODY_TIMEOUT_MS` after
/// its headers).
#[derive(Debug, Clone, Copy)]
pub struct BodyDeadline(pub tokio::time::Instant);

/// The connection's slot of `ATRIUM_MAX_CONNECTIONS`, which an upgraded socket keeps.
#[derive(Clone)]
pub struct ConnSlot(pub Arc<crate::limits::ConnectionSlot>);

/// 408 `timeout`: the body did not arrive in time (the connection is closed).
fn body_timeout() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "timeout",
        "the request body did not arrive in time",
    )
}

/// Reads a JSON body of at most `limit` bytes into `T`, by the request's
/// [`BodyDeadline`].
pub async fn read_json<T: DeserializeOwned>(
    req: Request<Incoming>,
    limit: usize,
) -> Result<T, ApiError> {
    parse_json(&read_body(req, limit).await?)
}

/// The request's body, at most `limit` bytes, by its deadline.
pub async fn read_body(req: Request<Incoming>, limit: usize) -> Result<Bytes, ApiError> {
    let deadline = req.extensions().get::<BodyDeadline>().copied();
    let collect = Limited::new(req.into_body(), limit).collect();
    let collected = match deadline {
        Some(BodyDeadline(at)) => tokio::time::timeout_at(at, collect)
            .await
            .map_err(|_| body_timeout())?,
        None => collect.await,
    };
    let bytes = collected
        .map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too-large",
                    "the body is too large",
                )
            } else {
                ApiError::bad_request("the body could not be read")
            }
        })?
        .to_bytes();
    Ok(bytes)
}

/// A body read as JSON (an empty body as `{}`).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let bytes = if bytes.is_empty() { b"{}" } else { bytes };
    // A fixed sentence: the parser's own text (types, positions, field names of
    // our structs) is no business of the caller's.
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(match e.classify() {
            serde_json::error::Category::Data => {
                "the body is JSON but does not have the fields this route takes, \
                 with their types (see /api/openapi.yaml)"
            }
            _ => "the body is not valid JSON",
        })
    })
}

/// The caller's session token, if it sent one.
pub fn bearer_token(req: &Request<Incoming>) -> Option<String> {
    let header = req
        .headers()
        .get(hyper::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    crate::auth::bearer(header).map(str::to_owned)
}

/// The account behind the request's token: `Ok(None)` without a token, 401 for a
/// bad or signed-out one.
pub async fn caller(state: &AppState, token: Option<&str>) -> Result<Option<Account>, ApiError> {
    let Some(token) = token else { return Ok(None) };
    match state.store.session_account(digest(token)).await {
        Ok(a) => Ok(Some(a)),
        Err(StoreError::NotFound) => Err(ApiError::unauthorized()),
        Err(e) => Err(e.into()),
    }
}

pub async fn signed_in(state: &AppState, token: Option<&str>) -> Result<Account, ApiError> {
    caller(state, token)
        .await?
        .ok_or_else(ApiError::unauthorized)
}

/// The client's address (the peer, or what a trusted proxy forwarded).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::IpAddr);

/// The client address of a request.
pub fn client_addr(req: &Request<Incoming>) -> std::net::IpAddr {
    req.extensions()
        .get::<ClientAddr>()
        .map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |a| a.0)
}

/// Answers one request; never fails (errors become JSON error bodies).
pub async fn handle(
    state: Arc<AppState>,
    mut req: Request<Incoming>,
    peer: std::net::SocketAddr,
) -> Response<Body> {
    let forwarded = req
        .headers()
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok());
    let addr = crate::limits::client_address(peer.ip(), forwarded, &state.trusted);
    req.extensions_mut().insert(ClientAddr(addr));
    req.extensions_mut().insert(BodyDeadline(
        tokio::time::Instant::now() + state.config.body_timeout(),
    ));
    let mut resp = match route(&state, req).await {
        Ok(resp) => resp,
        Err(e) => {
            match e.code {
                "rate-limited" => state.metrics.rate_limited.inc(),
                "timeout" => state.metrics.body_timeouts.inc(),
                _ => {}
            }
            error_response(&e)
        }
    };
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

fn file_id(segment: &str) -> Result<FileId, ApiError> {
    FileId::parse(segment)
        .ok_or_else(|| ApiError::bad_request("a file id must match [A-Za-z0-9_-]{1,64}"))
}

async fn route(state: &Arc<AppState>, req: Request<Incoming>) -> ApiResult {
    let path = req.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = req.method().clone();
    match (&method, segments.as_slice()) {
        (&Method::GET, [""]) => Ok(assets::index(&req)),
        (&Method::GET, ["assets", rest @ ..]) => assets::serve(&req, rest),
        (&Method::GET, ["health"]) => ops::health(state, req).await,
        (&Method::GET, ["ready"]) => ops::ready(state).await,
        (&Method::GET, ["metrics"]) if state.config.admin_bind.is_none() => {
            ops::admin_metrics(state, &req).await
        }
        (&Method::POST, ["api", "signup"]) => accounts::signup(state, req).await,
        (&Method::POST, ["api", "signin"]) => accounts::signin(state, req).await,
        (&Method::POST, ["api", "signout"]) => accounts::signout(state, req).await,
        (&Method::POST, ["api", "signout", "all"]) => accounts::signout_all(state, req).await,
        (&Method::GET, ["api", "me"]) => accounts::me(state, req).await,
        (&Method::GET, ["api", "files"]) => files::list(state, req).await,
        (&Method::POST, ["api", "files"]) => files::create(state, req).await,
        (_, ["api", "files", id]) => {
            let id = file_id(id)?;
            match method {
                Method::GET => files::get(state, req, id).await,
                Method::PATCH => files::update(state, req, id).await,
                Method::DELETE => files::delete(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "doc"]) => {
            let id = file_id(id)?;
            match method {
                Method::GET => files::doc(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (_, ["api", "files", id, "keys"]) => {
            let id = file_id(id)?;
            match method {
                Method::POST => files::rotate_keys(state, req, id).await,
                _ => Err(method_not_allowed()),
            }
        }
        (&Method::GET, ["files", id, "ws"]) => {
            let id = file_id(id)?;
            upgrade(state, req, id).await
        }
        (&Method::GET, ["api", "openapi.yaml"]) => Ok(ops::openapi()),
        // With an admin address, /metrics is not a route here at all.
        (_, ["metrics"]) if state.config.admin_bind.is_some() => Err(ApiError::not_found()),
        (_, path) if KNOWN.contains(&path) => Err(method_not_allowed()),
        _ => Err(ApiError::not_found()),
    }
}

/// Routes that exist for some method: another method gets 405, not 404.
const KNOWN: &[&[&str]] = &[
    &[""],
    &["health"],
    &["ready"],
    &["metrics"],
    &["api", "signup"],
    &["api", "signin"],
    &["api", "signout"],
    &["api", "signout", "all"],
    &["api", "me"],
    &["api", "files"],
    &["api", "openapi.yaml"],
];

fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "that method is not allowed here",
    )
}

/// The longest an upgrade waits for its address's turn (`Retry-After` beyond).
const MAX_UPGRADE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Upgrades `GET /files/{id}/ws`; the socket is served on its own task.
async fn upgrade(state: &Arc<AppState>, mut req: Request<Incoming>, file: FileId) -> ApiResult {
    if !state.accepting() {
        return Err(ApiError::unavailable("the node is shutting down"));
    }
    if let Some(origin) = req.headers().get(hyper::header::ORIGIN) {
        // A page on another site must not open sockets with its visitors' cookies or
        // keys: only origins the operator listed may (any, when none are listed).
        let allowed = origin
            .to_str()
            .is_ok_and(|o| state.config.origin_allowed(o));
        if !allowed {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "pages of this origin may not open sockets here",
            ));
        }
    }
    if !state.memory.admits() {
        state.metrics.memory_refusals.inc();
        return Err(busy("the node is at its memory budget; try again shortly"));
    }
    let accepted = match crate::ws::accept(&req, true) {
        Ok(accepted) => accepted,
        Err(crate::ws::HandshakeError::BadVersion) => {
            let e = ApiError::new(
                StatusCode::UPGRADE_REQUIRED,
                "bad-request",
                "only WebSocket version 13 is supported",
            );
            let mut resp = error_response(&e);
            resp.headers_mut()
                .insert("sec-websocket-version", HeaderValue::from_static("13"));
            return Ok(resp);
        }
        Err(other) => return Err(ApiError::bad_request(other.to_string())),
    };
    let addr = client_addr(&req);
    // Counted from the upgrade, so sockets that never say hello (and upgrades that
    // wait their turn) count too.
    let slot = state.sockets_by_address.take(addr);
    // Upgrades from one address are paced: past the burst each waits its turn here,
    // before anything is spent on it, so a client that reconnects in a loop costs
    // the node a sleeping task per attempt instead of a join per attempt.
    match state
        .upgrades_by_address
        .reserve(&crate::limits::address_key(addr), MAX_UPGRADE_WAIT)
    {
        Ok(wait) if !wait.is_zero() => {
            state.metrics.upgrades_paced.inc();
            tokio::time::sleep(wait).await;
            if !state.accepting() {
                return Err(ApiError::unavailable("the node is shutting down"));
            }
        }
        Ok(_) => {}
        Err(wait) => {
            return Err(rate_limited(
                "too many sockets opened from this address; wait a little and try again",
                wait - MAX_UPGRADE_WAIT,
            ))
        }
    }
    let upgraded = hyper::upgrade::on(&mut req);
    // The socket keeps its connection's slot of ATRIUM_MAX_CONNECTIONS.
    let conn_slot = req.extensions().get::<ConnSlot>().cloned();
    let state = state.clone();
    let deflate = accepted.deflate;
    tokio::spawn(async move {
        // An upgrade that never completes is dropped by the hello deadline.
        match tokio::time::timeout(state.config.hello_timeout(), upgraded).await {
            Ok(Ok(io)) => {
                crate::socket::serve(io, deflate, file, state, slot).await;
                drop(conn_slot);
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "upgrade did not complete"),
            Err(_) => tracing::debug!("upgrade timed out"),
        }
    });
    Ok(accepted.response)
}
