//! The app's backend: API keys (made and revoked by server admins) and, with a key,
//! the revocation of app tokens by `sub` or `jti`, fleet-wide at once.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{bearer_token, empty, json_response, read_json, signed_in, ApiError, ApiResult};
use crate::apptoken::Revocation;
use crate::ids::{digest, new_secret, random_string};
use crate::state::AppState;
use crate::store::{ApiKey, StoreError};

/// Scopes an API key may hold: `revoke` (app tokens), `server` (the server API).
pub const SCOPES: &[&str] = &["revoke", "server"];

/// The prefix of every API key: it tells a key from a session token (base62, no `_`)
/// and from an app token (which holds `.`).
pub const KEY_PREFIX: &str = "atk_";

/// Largest body of these routes.
const BODY_LIMIT: usize = 4 * 1024;

/// Longest `sub` or `jti` a revocation names (as tokens carry them).
const MAX_CLAIM: usize = 256;

async fn admin(state: &AppState, req: &Request<Incoming>) -> Result<(), ApiError> {
    let account = signed_in(state, bearer_token(req).as_deref()).await?;
    if !state.config.is_admin(&account.email) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "API keys are for server admins",
        ));
    }
    Ok(())
}

fn key_json(k: &ApiKey) -> serde_json::Value {
    json!({"id": k.id, "name": k.name, "scopes": k.scopes, "created_at": k.created_at})
}

#[derive(Deserialize)]
struct NewKey {
    name: String,
    scopes: Vec<String>,
}

/// `POST /api/admin/api-keys`: a new key; the answer holds its secret, once.
pub async fn create_key(state: &AppState, req: Request<Incoming>) -> ApiResult {
    admin(state, &req).await?;
    let body: NewKey = read_json(req, BODY_LIMIT).await?;
    let name =
        crate::http::plain_name(&body.name, 100, "`name` must be 1 to 100 plain characters")?
            .to_owned();
    let mut scopes = body.scopes;
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() || scopes.iter().any(|s| !SCOPES.contains(&s.as_str())) {
        return Err(ApiError::bad_request(
            "`scopes` must name one or more of: revoke, server",
        ));
    }
    let secret = format!("{KEY_PREFIX}{}", new_secret());
    let key = ApiKey {
        id: random_string(16),
        name,
        scopes,
        created_at: crate::clock::unix_ms(),
    };
    state.store.create_api_key(&key, digest(&secret)).await?;
    tracing::info!(id = %key.id, name = %key.name, "API key created");
    let mut out = key_json(&key);
    out["key"] = json!(secret);
    Ok(json_response(StatusCode::CREATED, &out))
}

/// `GET /api/admin/api-keys`: every key, without its secret.
pub async fn list_keys(state: &AppState, req: Request<Incoming>) -> ApiResult {
    admin(state, &req).await?;
    let keys = state.store.api_keys().await?;
    let keys: Vec<_> = keys.iter().map(key_json).collect();
    Ok(json_response(StatusCode::OK, &json!({"keys": keys})))
}

/// `DELETE /api/admin/api-keys/{id}`: the key stops working at once.
pub async fn delete_key(state: &AppState, req: Request<Incoming>, id: &str) -> ApiResult {
    admin(state, &req).await?;
    match state.store.delete_api_key(id).await {
        Ok(()) => {
            tracing::info!(id = %id, "API key revoked");
            Ok(empty(StatusCode::NO_CONTENT))
        }
        Err(StoreError::NotFound) => Err(ApiError::not_found()),
        Err(e) => Err(e.into()),
    }
}

/// The API key of the request, if it has `scope`: 401 without a good key, 403 without
/// the scope.
pub async fn api_key(
    state: &AppState,
    req: &Request<Incoming>,
    scope: &str,
) -> Result<ApiKey, ApiError> {
    let token = bearer_token(req).ok_or_else(ApiError::unauthorized)?;
    if !token.starts_with(KEY_PREFIX) {
        return Err(ApiError::unauthorized());
    }
    let key = match state.store.api_key(digest(&token)).await {
        Ok(k) => k,
        Err(StoreError::NotFound) => return Err(ApiError::unauthorized()),
        Err(e) => return Err(e.into()),
    };
    if !key.scopes.iter().any(|s| s == scope) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("this API key lacks the `{scope}` scope"),
        ));
    }
    // Accepted: the key's own rate applies, not its address's (`http::pacing`), on every
    // route a key opens (revocations and webhooks had neither: the fifteenth review).
    super::KeyAccepted::mark(req);
    if let Err(wait) = state.server_api.check(&key.id) {
        return Err(super::rate_limited(
            "this API key sends more requests a second than ATRIUM_SERVER_API_PER_SECOND allows",
            wait,
        ));
    }
    Ok(key)
}

#[derive(Deserialize)]
struct Revoke {
    sub: Option<String>,
    jti: Option<String>,
}

/// `POST /api/app/revoke`: app tokens of a `sub` (issued until now) or with a `jti`
/// stop working on every node at once; their sockets close with 4001.
pub async fn revoke(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let key = api_key(state, &req, "revoke").await?;
    let body: Revoke = read_json(req, BODY_LIMIT).await?;
    let ok = |v: &Option<String>| {
        v.as_ref()
            .is_none_or(|s| !s.is_empty() && s.len() <= MAX_CLAIM)
    };
    if (body.sub.is_none() && body.jti.is_none()) || !ok(&body.sub) || !ok(&body.jti) {
        return Err(ApiError::bad_request(
            "name a `sub` or a `jti` (or both), each 1 to 256 bytes",
        ));
    }
    if !state.app_tokens.revocations().has_room() {
        return Err(super::busy(
            "the node holds as many revocations as it may; each is forgotten after \
             ATRIUM_APP_TOKEN_REVOCATION_TTL_MS",
        ));
    }
    // Tokens are taken with an `iat` up to the allowed skew ahead of this node's clock, so a
    // revocation covers those too: an app whose clock runs ahead issued them before it.
    let r = Revocation {
        sub: body.sub,
        jti: body.jti,
        at: crate::clock::unix_ms() / 1000 + state.config.app_token_skew_s as i64,
    };
    let until = crate::clock::unix_ms() + state.config.app_token_revocation_ttl_ms as i64;
    // Stored first, so a node that starts later knows it too; then here at once,
    // and on every other node through the coordinator.
    state.store.add_revocation(&r, until).await?;
    let closed = crate::cluster::apply_revocation(state, &r);
    crate::cluster::announce_revocation(state, &r).await;
    tracing::info!(key = %key.id, sub = ?r.sub, jti = ?r.jti, closed, "app tokens revoked");
    Ok(json_response(
        StatusCode::OK,
        &json!({"sub": r.sub, "jti": r.jti, "at": r.at}),
    ))
}
