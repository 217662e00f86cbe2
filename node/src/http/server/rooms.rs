//! `GET /api/server/rooms?after=&limit=`: the rooms open on the fleet with the people in
//! each, from the nodes' reports in the coordinator (at most `ATRIUM_ROOM_REPORT_MS` old).

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde_json::json;

use super::{limit, query_id, server_key};
use crate::cluster::rooms::fleet_rooms;
use crate::http::{json_response, ApiError, ApiResult};
use crate::state::AppState;

const PAGE: usize = 100;
const MOST: usize = 1000;

pub async fn list(state: &AppState, req: Request<Incoming>) -> ApiResult {
    server_key(state, &req).await?;
    let after = query_id(&req, "after")?;
    let limit = limit(&req, PAGE, MOST)?;
    let (all, cut) = fleet_rooms(state)
        .await
        .map_err(|_| ApiError::unavailable("the coordinator cannot be reached; try again"))?;
    let total = all.len();
    let people: usize = all.iter().map(|r| r.2).sum();
    let page: Vec<_> = all
        .iter()
        .filter(|r| after.is_none_or(|a| r.0.as_str() > a))
        .take(limit + 1)
        .collect();
    let more = page.len() > limit;
    let rooms: Vec<_> = page
        .iter()
        .take(limit)
        .map(|(f, n, p)| json!({"file": f, "node": n.as_str(), "people": p}))
        .collect();
    let next = if more {
        page.get(limit - 1).map(|r| r.0.clone())
    } else {
        None
    };
    Ok(json_response(
        StatusCode::OK,
        &json!({"rooms": rooms, "next": next, "count": total, "people": people, "partial": cut}),
    ))
}
