//! Liveness, readiness and metrics.

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use serde_json::json;

use super::{bearer_token, caller, json_response, signed_in, ApiError, ApiResult, Body};
use crate::state::AppState;

/// Liveness, always 200. Statistics come along with `ATRIUM_HEALTH_STATS=1`, or
/// for a signed-in server admin.
pub async fn health(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let mut body = json!({"ok": true, "node": state.config.node_id});
    let admin = || async {
        let token = bearer_token(&req)?;
        let account = caller(state, Some(&token)).await.ok()??;
        state.config.is_admin(&account.email).then_some(())
    };
    if state.config.health_stats || admin().await.is_some() {
        body["stats"] = stats(state);
    }
    Ok(json_response(StatusCode::OK, &body))
}

/// Sum of a counter family over all its labels.
fn total(counter: &prometheus::IntCounterVec) -> u64 {
    use prometheus::core::Collector;
    counter
        .collect()
        .iter()
        .flat_map(|family| family.get_metric())
        .map(|m| m.get_counter().get_value() as u64)
        .sum()
}

fn stats(state: &AppState) -> serde_json::Value {
    let m = &state.metrics;
    json!({
        "cpu_seconds": crate::stats::cpu_seconds(),
        "rss_bytes": crate::stats::rss_bytes(),
        "connections": m.connections.get(),
        "rooms": state.rooms.len(),
        "people": m.people.get(),
        "editors": m.editors.get(),
        "busiest_room": {"people": state.rooms.busiest()},
        "scheduling_delay_p99_ms": state.delay.p99().as_secs_f64() * 1000.0,
        "messages_in": total(&m.messages_received),
        "messages_out": total(&m.messages_sent),
    })
}

/// 200 while the node takes new work: not draining, and its store answers.
pub async fn ready(state: &AppState) -> ApiResult {
    let ready = state.accepting() && state.store.ping().await;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut body = json!({"ready": ready, "node": state.config.node_id});
    if !ready {
        body["error"] =
            json!({"code": "unavailable", "message": "draining, or the store does not answer"});
    }
    Ok(json_response(status, &body))
}

/// The HTTP API's description (`docs/openapi.yaml`).
pub fn openapi() -> Response<Body> {
    let mut resp = Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
        include_str!("../../../docs/openapi.yaml").as_bytes(),
    )));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/yaml"));
    resp
}

/// `/metrics` on the main address (no admin address set): for server admins
/// only, by their session token (401 without a good token, 403 for others).
/// The admin address, when set, serves it to anyone who can reach it.
pub async fn admin_metrics(state: &AppState, req: &Request<Incoming>) -> ApiResult {
    let account = signed_in(state, bearer_token(req).as_deref()).await?;
    if !state.config.is_admin(&account.email) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "metrics are for server admins (or set ATRIUM_ADMIN_BIND and scrape that address)",
        ));
    }
    Ok(metrics_text(&state.metrics))
}

pub fn metrics_text(metrics: &crate::metrics::Metrics) -> Response<Body> {
    let mut resp = Response::new(http_body_util::Full::new(bytes::Bytes::from(
        metrics.render(),
    )));
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}
