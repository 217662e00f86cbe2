//! `POST /api/files/{id}/patches`: a patch from the app's server, through the file's room.

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{file_here, server_key};
use crate::doc::{parse_ops, PatchError};
use crate::http::{json_response, parse_json, plain_name, read_body, ApiError, ApiResult};
use crate::ids::{is_valid_id, FileId};
use crate::room::server::{
    server_client, service_person, ServerPatch, ServerPatchError, ServerPatched,
};
use crate::room::RoomCmd;
use crate::state::AppState;

/// Longest service person name, in characters (as a guest's).
const MAX_SERVICE_NAME: usize = 64;

#[derive(Deserialize)]
struct NewPatch {
    op_id: Option<String>,
    ops: Box<serde_json::value::RawValue>,
    name: Option<String>,
}

/// The op id of the request: `op_id` in the body or the `Idempotency-Key` header (the
/// same one when both are given).
fn op_id(body: Option<String>, header: Option<&str>) -> Result<String, ApiError> {
    let id = match (body, header) {
        (Some(b), Some(h)) if b != h => {
            return Err(ApiError::bad_request(
                "`op_id` and the Idempotency-Key header differ",
            ))
        }
        (Some(b), _) => b,
        (None, Some(h)) => h.to_owned(),
        (None, None) => {
            return Err(ApiError::bad_request(
                "a server patch needs `op_id` (or an Idempotency-Key header): retries are told apart by it",
            ))
        }
    };
    if !is_valid_id(&id) {
        return Err(ApiError::bad_request(
            "`op_id` must match [A-Za-z0-9_-]{1,64}",
        ));
    }
    Ok(id)
}

fn patch_error(e: PatchError) -> ApiError {
    match e {
        PatchError::Invalid(m) => ApiError::new(StatusCode::BAD_REQUEST, "bad-request", m),
        PatchError::TooLarge(m) => ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", m),
    }
}

fn answer(v: u64, op_id: &str, by: &str, replayed: bool) -> ApiResult {
    let mut resp = json_response(
        StatusCode::OK,
        &json!({"v": v, "op_id": op_id, "by": by, "replayed": replayed}),
    );
    if replayed {
        resp.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(resp)
}

pub async fn apply(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    let key = server_key(state, &req).await?;
    let header = req
        .headers()
        .get("idempotency-key")
        .map(|v| {
            v.to_str()
                .map(str::to_owned)
                .map_err(|_| ApiError::bad_request("Idempotency-Key must be an id"))
        })
        .transpose()?;
    // As large as a socket's largest message, and checked as one.
    let body = read_body(req, state.config.max_message_bytes).await?;
    let limits = state.limits.clone();
    let parsed = crate::lane::run(body.len(), &state.metrics, move || {
        let p: NewPatch = parse_json(&body)?;
        let value: Value = serde_json::from_str(p.ops.get())
            .map_err(|_| ApiError::bad_request("`ops` is not valid JSON"))?;
        let ops = parse_ops(&value, &limits).map_err(patch_error)?;
        Ok::<_, ApiError>((p.op_id, ops, value.to_string(), p.name))
    })
    .await;
    let (body_op, ops, ops_json, name) = match parsed {
        Ok(p) => p,
        Err(e) => {
            state
                .metrics
                .server_patches
                .with_label_values(&["refused"])
                .inc();
            return Err(e);
        }
    };
    let op_id = op_id(body_op, header.as_deref())?;
    let name = match name {
        Some(n) => {
            plain_name(&n, MAX_SERVICE_NAME, "`name` has 1 to 64 plain characters")?.to_owned()
        }
        None => key.name.chars().take(MAX_SERVICE_NAME).collect(),
    };
    let by = service_person(&key.id);
    let client = server_client(&key.id, &op_id);
    file_here(state, &id).await?;
    // Taken before (in this room or another node's, before a restart or a failover):
    // the store holds its version with the patch.
    if let Some((_, v)) = state.store.client_op(&id, client).await? {
        state
            .metrics
            .server_patches
            .with_label_values(&["replayed"])
            .inc();
        return answer(v, &op_id, &by, true);
    }
    let unavailable = || ApiError::unavailable("the file's room is not available; try again");
    let room = state.rooms.open(&id).ok_or_else(unavailable)?;
    // Waits while the room is behind, as a socket's patch does: parsed patches never pile
    // up in its queue faster than it applies them.
    let ticket = room.inbound.admit(ops_json.len()).await;
    let (reply, answered) = tokio::sync::oneshot::channel();
    let patch = ServerPatch {
        client,
        by: by.clone(),
        name,
        ops,
        ops_json,
        at_ms: crate::clock::unix_ms().max(1) as u64,
        reply,
        ticket,
    };
    room.tx
        .send(RoomCmd::ServerPatch(patch))
        .map_err(|_| unavailable())?;
    let outcome = answered.await;
    let label = match &outcome {
        Ok(Ok(ServerPatched { replayed: true, .. })) => "replayed",
        Ok(Ok(_)) => "applied",
        _ => "refused",
    };
    state
        .metrics
        .server_patches
        .with_label_values(&[label])
        .inc();
    match outcome {
        Ok(Ok(done)) => {
            tracing::debug!(file = %id, key = %key.id, v = done.v, "server patch");
            answer(done.v, &op_id, &by, done.replayed)
        }
        Ok(Err(ServerPatchError::Refused(code, m))) => Err(match code {
            "too-large" => ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", m),
            _ => ApiError::bad_request(m),
        }),
        // Not answered: it may or may not have been kept. A retry with the same op id
        // is safe either way.
        Ok(Err(ServerPatchError::Unavailable)) | Err(_) => Err(ApiError::unavailable(
            "the file's room closed before answering; send the same request again",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_op_id_comes_from_the_body_or_the_header_and_is_an_id() {
        assert_eq!(op_id(Some("a".into()), None).unwrap(), "a");
        assert_eq!(op_id(None, Some("b")).unwrap(), "b");
        assert_eq!(op_id(Some("c".into()), Some("c")).unwrap(), "c");
        assert_eq!(op_id(Some("c".into()), Some("d")).unwrap_err().status, 400);
        assert_eq!(op_id(None, None).unwrap_err().status, 400);
        assert_eq!(
            op_id(Some("no spaces".into()), None).unwrap_err().status,
            400
        );
        assert_eq!(op_id(Some("x".repeat(65)), None).unwrap_err().status, 400);
    }
}
