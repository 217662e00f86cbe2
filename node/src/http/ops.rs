//! Liveness, readiness and metrics.

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use serde_json::json;

use super::{json_response, ApiResult, Body};
use crate::metrics::metrics;
use crate::server::AppState;

pub async fn health(state: &AppState, _req: Request<Incoming>) -> ApiResult {
    Ok(json_response(
        StatusCode::OK,
        &json!({"ok": true, "node": state.config.node_id}),
    ))
}

/// 200 while the node takes new work: not draining, and its store answers.
pub async fn ready(state: &AppState) -> ApiResult {
    let ready = state.accepting() && state.store.ping().await;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok(json_response(
        status,
        &json!({"ready": ready, "node": state.config.node_id}),
    ))
}

pub fn metrics_text() -> Response<Body> {
    let mut resp = Response::new(http_body_util::Full::new(bytes::Bytes::from(
        metrics().render(),
    )));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}
