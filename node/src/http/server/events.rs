//! `POST /api/files/{id}/events`: an event for everyone in the file, never stored.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{file_here, server_key};
use crate::http::{json_response, parse_json, plain_name, read_body, ApiError, ApiResult};
use crate::ids::FileId;
use crate::outbox::shared;
use crate::room::server::{event_message, service_person, Event};
use crate::room::RoomCmd;
use crate::state::AppState;

#[derive(Deserialize)]
struct NewEvent {
    data: Box<serde_json::value::RawValue>,
    name: Option<String>,
}

/// Sends `{"type":"event","by":"svc-…","name","data"}` to everyone in the file now;
/// answers how many people it went to (0 when the file's room is open nowhere: no
/// room is opened for an event).
pub async fn send(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    let key = server_key(state, &req).await?;
    let most = state.config.event_max_bytes;
    // The body is the data plus a little framing.
    let body = read_body(req, most + 1024).await?;
    let ev: NewEvent = parse_json(&body)?;
    let data = ev.data.get();
    if data.len() > most {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            format!("`data` is at most {most} bytes of JSON"),
        ));
    }
    let name = match &ev.name {
        Some(n) => plain_name(n, 64, "`name` has 1 to 64 plain characters")?.to_owned(),
        None => key.name.chars().take(64).collect(),
    };
    file_here(state, &id).await?;
    let people = match state.rooms.existing(&id) {
        None => 0,
        Some(room) => {
            let n = room.people.load(std::sync::atomic::Ordering::Relaxed);
            let frame = shared(event_message(&service_person(&key.id), Some(&name), data));
            match room.tx.send(RoomCmd::Event(Event::Server(frame))) {
                Ok(()) => n,
                Err(_) => 0,
            }
        }
    };
    Ok(json_response(StatusCode::OK, &json!({"people": people})))
}
