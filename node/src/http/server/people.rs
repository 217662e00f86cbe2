//! Who is in a file now (`GET /api/files/{id}/people`), and removing them
//! (`POST /api/files/{id}/kick`). Both ask the room on the node that serves the file; a
//! file whose room is open nowhere has nobody in it, and no room is opened to say so.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{file_here, limit, query_id, server_key};
use crate::http::{json_response, read_json, ApiError, ApiResult};
use crate::ids::{is_valid_id, FileId};
use crate::room::server::{KickTarget, PeopleRequest};
use crate::room::RoomCmd;
use crate::state::AppState;

/// People in one page of the answer, by default and at most.
const PAGE: usize = 100;
const MOST: usize = 500;

/// Longest `sub` a kick names (as app tokens carry them).
const MAX_SUB: usize = 256;

/// `GET /api/files/{id}/people?after=&limit=`: people in person id order.
pub async fn list(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    server_key(state, &req).await?;
    let after = query_id(&req, "after")?.map(str::to_owned);
    let limit = limit(&req, PAGE, MOST)?;
    file_here(state, &id).await?;
    let people = match state.rooms.existing(&id) {
        None => Vec::new(),
        Some(room) => {
            let (reply, answer) = tokio::sync::oneshot::channel();
            // A room that is ending has nobody left to list.
            match room.tx.send(RoomCmd::People(PeopleRequest { reply })) {
                Ok(()) => answer.await.unwrap_or_default(),
                Err(_) => Vec::new(),
            }
        }
    };
    let total = people.len();
    let page: Vec<_> = people
        .into_iter()
        .filter(|p| after.as_deref().is_none_or(|a| p["id"].as_str() > Some(a)))
        .take(limit + 1)
        .collect();
    let more = page.len() > limit;
    let page: Vec<_> = page.into_iter().take(limit).collect();
    let next = if more {
        page.last()
            .and_then(|p| p["id"].as_str())
            .map(str::to_owned)
    } else {
        None
    };
    Ok(json_response(
        StatusCode::OK,
        &json!({"file": id.as_str(), "count": total, "people": page, "next": next}),
    ))
}

#[derive(Deserialize)]
struct Kick {
    person: Option<String>,
    sub: Option<String>,
}

/// `POST /api/files/{id}/kick`: every socket of a person (by their id in the room) or of
/// an app token's `sub` is closed with 4006 (the client stops).
pub async fn kick(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    server_key(state, &req).await?;
    let body: Kick = read_json(req, 4 * 1024).await?;
    let target = match (body.person, body.sub) {
        (Some(p), None) if is_valid_id(&p) => KickTarget::Person(p),
        (None, Some(s)) if !s.is_empty() && s.len() <= MAX_SUB => KickTarget::Sub(s),
        _ => {
            return Err(ApiError::bad_request(
                "name either a `person` (an id) or a `sub` (1 to 256 bytes)",
            ))
        }
    };
    file_here(state, &id).await?;
    let closed = match state.rooms.existing(&id) {
        None => 0,
        Some(room) => {
            let (reply, answer) = tokio::sync::oneshot::channel();
            match room.tx.send(RoomCmd::Kick(target.clone(), reply)) {
                Ok(()) => answer.await.unwrap_or(0),
                Err(_) => 0,
            }
        }
    };
    tracing::info!(file = %id, ?target, closed, "kick");
    Ok(json_response(StatusCode::OK, &json!({"closed": closed})))
}
