//! Signing out (one session, or every session of the account, fleet-wide) and `me`.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde_json::json;

use super::account_json;
use crate::http::{bearer_token, empty, json_response, signed_in, ApiError, ApiResult};
use crate::ids::digest;
use crate::state::AppState;

pub async fn signout(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let token = bearer_token(&req).ok_or_else(ApiError::unauthorized)?;
    if crate::apptoken::is_app_token(&token) {
        return Err(app_token_signout());
    }
    signed_in(state, Some(&token)).await?;
    let d = digest(&token);
    state.store.delete_session(d).await?;
    // Here at once, and on every other node through the coordinator.
    state.sockets.sign_out(d);
    crate::cluster::announce_signout(state, d).await;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Ends every session of the caller's account, here and on every node: their
/// tokens stop working at once and their sockets close with 4001.
pub async fn signout_all(state: &AppState, req: Request<Incoming>) -> ApiResult {
    if bearer_token(&req).is_some_and(|t| crate::apptoken::is_app_token(&t)) {
        return Err(app_token_signout());
    }
    let account = signed_in(state, bearer_token(&req).as_deref()).await?;
    let digests = state.store.delete_sessions_of(&account.id).await?;
    signed_out(state, &digests).await;
    tracing::info!(account = %account.id, sessions = digests.len(), "signed out everywhere");
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Sessions the store no longer has: their sockets close 4001 here at once, and on every
/// other node through the coordinator.
pub(super) async fn signed_out(state: &AppState, digests: &[[u8; 32]]) {
    for d in digests {
        state.sockets.sign_out(*d);
    }
    crate::cluster::announce_signouts(state, digests).await;
}

/// App tokens are not sessions: they end at their `exp`, or by revocation.
fn app_token_signout() -> ApiError {
    ApiError::bad_request(
        "an app token is not a session: it ends at its `exp`, or when the app revokes it",
    )
}

pub async fn me(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let account = signed_in(state, bearer_token(&req).as_deref()).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"account": account_json(state, &account)}),
    ))
}
