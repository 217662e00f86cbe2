//! The socket upgrade (`GET /files/{id}/ws`): origin, memory and pacing checks,
//! then the socket on its own task.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Request, StatusCode};

use super::error::error_response;
use super::{busy, client_addr, rate_limited, ApiError, ApiResult, ConnSlot};
use crate::ids::FileId;
use crate::state::AppState;

/// The longest an upgrade waits for its address's turn (`Retry-After` beyond).
const MAX_UPGRADE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Upgrades `GET /files/{id}/ws`; the socket is served on its own task.
pub(super) async fn upgrade(
    state: &Arc<AppState>,
    mut req: Request<Incoming>,
    file: FileId,
) -> ApiResult {
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
    if !state.memory.admits_socket() {
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
