//! Webhook endpoints (docs/webhooks.md): made, listed, changed and deleted by the app's
//! backend with an API key of scope `server`, or by a server admin. Stored in the store,
//! so every node of a fleet sends to them.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use super::app::{api_key, KEY_PREFIX};
use super::{bearer_token, empty, json_response, read_json, signed_in, ApiError, ApiResult};
use crate::ids::random_string;
use crate::state::AppState;
use crate::store::{StoreError, WebhookEndpoint, WebhookUpdate, EVENT_TYPES};
use crate::webhook::{sign, target};

/// Largest body of these routes.
const BODY_LIMIT: usize = 8 * 1024;

/// Longest description, in characters.
const MAX_DESCRIPTION: usize = 200;

/// Lets in an API key with the `server` scope, or a signed-in server admin.
async fn server_caller(state: &AppState, req: &Request<Incoming>) -> Result<(), ApiError> {
    let token = bearer_token(req).ok_or_else(ApiError::unauthorized)?;
    if token.starts_with(KEY_PREFIX) {
        return api_key(state, req, "server").await.map(drop);
    }
    let account = signed_in(state, Some(&token)).await?;
    if !state.config.is_admin(&account.email) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "webhooks are for API keys with the `server` scope and server admins",
        ));
    }
    Ok(())
}

/// An endpoint as the API shows it; its secret only where asked.
fn endpoint_json(e: &WebhookEndpoint, with_secret: bool) -> Value {
    let mut v = json!({
        "id": e.id,
        "url": e.url,
        "events": e.events,
        "enabled": e.enabled,
        "description": e.description,
        "created_at": e.created_at,
    });
    if with_secret {
        v["secret"] = json!(e.secret);
    }
    v
}

fn check_url(state: &AppState, url: &str) -> Result<(), ApiError> {
    let t = target::parse(url).map_err(ApiError::bad_request)?;
    // A literal internal address is refused at once; a name is checked each time it is
    // resolved, when a message is sent.
    if state.config.webhook_block_private {
        let host = t.host.parse::<std::net::IpAddr>().ok();
        if t.host == "localhost" || host.is_some_and(|ip| !target::is_public(ip)) {
            return Err(ApiError::bad_request(
                "`url` names an internal address, which this server does not call \
                 (ATRIUM_WEBHOOK_BLOCK_PRIVATE)",
            ));
        }
    }
    Ok(())
}

fn check_events(events: Vec<String>) -> Result<Vec<String>, ApiError> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        if !EVENT_TYPES.contains(&e.as_str()) {
            return Err(ApiError::bad_request(format!(
                "`events` must name one or more of: {}",
                EVENT_TYPES.join(", ")
            )));
        }
        if !out.contains(&e) {
            out.push(e);
        }
    }
    if out.is_empty() {
        return Err(ApiError::bad_request("`events` must not be empty"));
    }
    Ok(out)
}

fn check_secret(secret: &str) -> Result<(), ApiError> {
    sign::secret_key(secret).map(drop).map_err(|e| {
        ApiError::bad_request(format!(
            "`secret`: {e} (`whsec_` and 24 to 64 bytes in base64)"
        ))
    })
}

fn check_description(d: &str) -> Result<String, ApiError> {
    let refusal = "`description` must have at most 200 characters, none of them control characters";
    if d.chars().count() > MAX_DESCRIPTION || d.chars().any(char::is_control) {
        return Err(ApiError::bad_request(refusal));
    }
    Ok(d.trim().to_owned())
}

#[derive(Deserialize)]
struct NewEndpoint {
    url: String,
    events: Option<Vec<String>>,
    secret: Option<String>,
    description: Option<String>,
    enabled: Option<bool>,
}

/// `POST /api/webhooks`: a new endpoint; the answer holds its secret.
pub async fn create(state: &AppState, req: Request<Incoming>) -> ApiResult {
    server_caller(state, &req).await?;
    let body: NewEndpoint = read_json(req, BODY_LIMIT).await?;
    check_url(state, &body.url)?;
    let events = match body.events {
        Some(events) => check_events(events)?,
        None => EVENT_TYPES.iter().map(|e| (*e).to_owned()).collect(),
    };
    let secret = match body.secret {
        Some(secret) => {
            check_secret(&secret)?;
            secret
        }
        None => sign::new_secret(),
    };
    let endpoint = WebhookEndpoint {
        id: format!("ep_{}", random_string(16)),
        url: body.url,
        secret,
        events,
        enabled: body.enabled.unwrap_or(true),
        description: check_description(body.description.as_deref().unwrap_or(""))?,
        created_at: crate::clock::unix_ms(),
    };
    match state
        .store
        .create_webhook(&endpoint, state.config.webhook_max_endpoints)
        .await
    {
        Ok(()) => {}
        Err(StoreError::Full) => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "too-many-webhooks",
                "there are as many webhook endpoints as ATRIUM_WEBHOOK_MAX_ENDPOINTS allows",
            ))
        }
        Err(e) => return Err(e.into()),
    }
    if endpoint.enabled {
        state.webhooks.set_active(true);
        crate::webhook::announce_change(state).await;
    }
    tracing::info!(id = %endpoint.id, events = ?endpoint.events, "webhook endpoint created");
    Ok(json_response(
        StatusCode::CREATED,
        &endpoint_json(&endpoint, true),
    ))
}

/// `GET /api/webhooks`: every endpoint, without secrets.
pub async fn list(state: &AppState, req: Request<Incoming>) -> ApiResult {
    server_caller(state, &req).await?;
    let all = state.store.webhooks().await?;
    let all: Vec<Value> = all.iter().map(|e| endpoint_json(e, false)).collect();
    Ok(json_response(StatusCode::OK, &json!({ "webhooks": all })))
}

async fn find(state: &AppState, id: &str) -> Result<WebhookEndpoint, ApiError> {
    state
        .store
        .webhooks()
        .await?
        .into_iter()
        .find(|e| e.id == id)
        .ok_or_else(ApiError::not_found)
}

/// `GET /api/webhooks/{id}`: one endpoint, with its secret.
pub async fn get(state: &AppState, req: Request<Incoming>, id: &str) -> ApiResult {
    server_caller(state, &req).await?;
    let e = find(state, id).await?;
    Ok(json_response(StatusCode::OK, &endpoint_json(&e, true)))
}

#[derive(Deserialize)]
struct Change {
    url: Option<String>,
    events: Option<Vec<String>>,
    secret: Option<String>,
    description: Option<String>,
    enabled: Option<bool>,
}

/// `PATCH /api/webhooks/{id}`: changes its URL, events, secret, description, or
/// disables it (`"enabled": false`: nothing new is recorded for it, what waits stays).
pub async fn update(state: &AppState, req: Request<Incoming>, id: &str) -> ApiResult {
    server_caller(state, &req).await?;
    let body: Change = read_json(req, BODY_LIMIT).await?;
    if let Some(url) = &body.url {
        check_url(state, url)?;
    }
    if let Some(secret) = &body.secret {
        check_secret(secret)?;
    }
    let update = WebhookUpdate {
        url: body.url,
        events: body.events.map(check_events).transpose()?,
        secret: body.secret,
        enabled: body.enabled,
        description: body
            .description
            .as_deref()
            .map(check_description)
            .transpose()?,
    };
    let e = state.store.update_webhook(id, update).await?;
    if e.enabled {
        state.webhooks.set_active(true);
    }
    crate::webhook::announce_change(state).await;
    tracing::info!(id = %e.id, enabled = e.enabled, "webhook endpoint changed");
    Ok(json_response(StatusCode::OK, &endpoint_json(&e, false)))
}

/// `DELETE /api/webhooks/{id}`: the endpoint and every message waiting for it.
pub async fn delete(state: &AppState, req: Request<Incoming>, id: &str) -> ApiResult {
    server_caller(state, &req).await?;
    state.store.delete_webhook(id).await?;
    tracing::info!(id = %id, "webhook endpoint deleted");
    Ok(empty(StatusCode::NO_CONTENT))
}
