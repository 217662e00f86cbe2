//! `POST /api/files`: a new file, with its initial document when one is sent.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;

use super::{file_json, file_name};
use crate::doc::{DocLimits, Document, PatchError};
use crate::http::{
    bearer_token, busy, json_response, parse_json, rate_limited, read_body, signed_in, ApiError,
    ApiResult, SMALL_BODY,
};
use crate::ids::{new_secret, FileId};
use crate::state::AppState;
use crate::store::{FileRecord, LinkAccess, StoreError};

#[derive(Deserialize)]
struct NewFile {
    name: Option<String>,
    /// Kept as text and read node by node: never held as JSON values.
    doc: Option<Box<serde_json::value::RawValue>>,
}

/// 403 `too-many-files`: the account owns as many files as it may.
fn too_many_files(cap: u64) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "too-many-files",
        format!("an account may own at most {cap} files; delete some to make new ones"),
    )
}

/// A new file's name and its initial document (as the store keeps it), from the
/// body of `POST /api/files`.
fn new_file(body: &[u8], limits: &DocLimits) -> Result<(String, Option<String>), ApiError> {
    let body: NewFile = parse_json(body)?;
    let name = file_name(body.name.as_deref().unwrap_or("Untitled"))?;
    let doc = match body.doc {
        None => None,
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => match Document::from_json(raw.get().as_bytes(), limits) {
            Ok(doc) => Some(doc.to_json()),
            Err(PatchError::TooLarge(m)) => {
                return Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", m))
            }
            Err(PatchError::Invalid(m)) => {
                return Err(ApiError::bad_request(format!(
                    "`doc` is not a valid document: {m}"
                )))
            }
        },
    };
    Ok((name, doc))
}

/// Memory a file's initial document takes while it is read and checked, per byte
/// of JSON: the body and its copy as text, then the document as it is built.
const BODY_MEMORY_FACTOR: usize = 2 + crate::doc::BUILD_BYTES_PER_JSON_BYTE;

pub async fn create(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let account = signed_in(state, bearer_token(&req).as_deref()).await?;
    // The rate first, before the body is read: a burst costs nothing.
    if let Err(wait) = state.file_creates.check(&account.id) {
        return Err(rate_limited(
            "too many files created in a short time; wait a little and try again",
            wait,
        ));
    }
    // Room for the largest document plus its JSON framing.
    let limit = state.config.max_doc_bytes.saturating_add(SMALL_BODY);
    // A document sent with the file is read and checked whole, at several times
    // its size in memory: promised from the memory budget first.
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        .unwrap_or(limit)
        .min(limit);
    let _memory = match state.memory.reserve((declared * BODY_MEMORY_FACTOR) as u64) {
        Some(r) => r,
        None => {
            state.metrics.memory_refusals.inc();
            return Err(busy("the node is at its memory budget; try again shortly"));
        }
    };
    // Read, checked and rebuilt on the bulk lane when large (see `lane`).
    let body = read_body(req, limit).await?;
    let limits = state.limits.clone();
    let (name, doc) =
        crate::lane::run(body.len(), &state.metrics, move || new_file(&body, &limits)).await?;
    let record = FileRecord {
        id: FileId::generate(),
        owner: account.id.clone(),
        name,
        link: LinkAccess::None,
        view_key: new_secret(),
        edit_key: new_secret(),
        key_generation: 0,
        version: 0,
        updated_at: crate::clock::unix_ms(),
        viewers_see_history: false,
    };
    let cap = state.config.files_per_account;
    match state.store.create_file_capped(&record, doc, cap).await {
        Ok(()) => {}
        Err(StoreError::Full) => return Err(too_many_files(cap)),
        Err(e) => return Err(e.into()),
    }
    Ok(json_response(
        StatusCode::CREATED,
        &file_json(&record, true),
    ))
}
