//! Files: create, list, read, rename, link setting, keys, delete, and the document.

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, ETAG, IF_NONE_MATCH};
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{
    bearer_token, caller, empty, json_response, parse_json, rate_limited, read_body, read_json,
    signed_in, ApiError, ApiResult, SMALL_BODY,
};
use crate::doc::{DocLimits, Document, PatchError};
use crate::ids::{new_secret, FileId};
use crate::room::access::{self, Denied};
use crate::room::JoinError;
use crate::state::AppState;
use crate::store::{Account, FileRecord, FileUpdate, LinkAccess, StoreError};

const MAX_FILE_NAME_CHARS: usize = 200;

#[derive(Deserialize)]
struct NewFile {
    name: Option<String>,
    /// Kept as text and read node by node: never held as JSON values.
    doc: Option<Box<serde_json::value::RawValue>>,
}

#[derive(Deserialize)]
struct FileChanges {
    name: Option<String>,
    link: Option<String>,
}

/// 403 `too-many-files`: the account owns as many files as it may.
fn too_many_files(cap: u64) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "too-many-files",
        format!("an account may own at most {cap} files; delete some to make new ones"),
    )
}

fn file_name(name: &str) -> Result<String, ApiError> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_FILE_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(ApiError::bad_request(
            "a file name has 1 to 200 plain characters",
        ));
    }
    Ok(name.to_owned())
}

/// The file as its owner sees it (with keys) or as a key holder does.
fn file_json(f: &FileRecord, with_keys: bool) -> Value {
    let mut v = json!({
        "id": f.id.as_str(),
        "name": f.name,
        "link": f.link.as_str(),
        "version": f.version,
        "updated_at": f.updated_at,
        "owner": f.owner.as_str(),
    });
    if with_keys {
        v["view_key"] = json!(f.view_key);
        v["edit_key"] = json!(f.edit_key);
    }
    v
}

/// The caller of a file route: the account behind the token and the link key.
struct Caller {
    account: Option<Account>,
    key: Option<String>,
}

async fn file_caller(state: &AppState, req: &Request<Incoming>) -> Result<Caller, ApiError> {
    let account = caller(state, bearer_token(req).as_deref()).await?;
    let key = req
        .headers()
        .get("x-atrium-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned);
    Ok(Caller { account, key })
}

fn denied(d: Denied) -> ApiError {
    match d {
        Denied::Unauthorized => ApiError::unauthorized(),
        Denied::Forbidden => ApiError::forbidden(),
    }
}

/// The file, if the caller may see it: owner, or a key the link allows.
async fn readable(
    state: &AppState,
    req: &Request<Incoming>,
    id: &FileId,
) -> Result<(FileRecord, bool), ApiError> {
    let who = file_caller(state, req).await?;
    let file = state.store.file(id).await?;
    let account = who.account.as_ref().map(|a| &a.id);
    let granted = access::access(&file, account, who.key.as_deref()).map_err(denied)?;
    access::role(&file, granted).map_err(denied)?;
    served_here(state, id).await?;
    let owner = granted == access::Access::Owner;
    Ok((file, owner))
}

/// File routes run where the file's room is: another node holding the lease
/// means 409 `moved` (with its id). Without a live holder, or with the
/// coordinator unreachable, the request is served here (the store's epoch fence
/// keeps the data safe either way). A room served here answers without asking
/// the coordinator at all: no round trip per request, and no wait on it during
/// a coordinator outage.
async fn served_here(state: &AppState, id: &FileId) -> Result<(), ApiError> {
    if state.rooms.serving(id) {
        return Ok(());
    }
    match state.coordinator.holder(id.as_str()).await {
        Ok(Some(holder)) if holder != state.node => Err(ApiError::moved(&holder)),
        _ => Ok(()),
    }
}

/// The file, if the caller owns it.
async fn owned(
    state: &AppState,
    req: &Request<Incoming>,
    id: &FileId,
) -> Result<FileRecord, ApiError> {
    let who = file_caller(state, req).await?;
    let file = state.store.file(id).await?;
    match &who.account {
        Some(a) if a.id == file.owner => {
            served_here(state, id).await?;
            Ok(file)
        }
        None if who.key.is_none() => Err(ApiError::unauthorized()),
        _ => Err(ApiError::forbidden()),
    }
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
            return Err(super::busy(
                "the node is at its memory budget; try again shortly",
            ));
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

pub async fn list(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let account = signed_in(state, bearer_token(&req).as_deref()).await?;
    let files = state.store.files_of(&account.id).await?;
    let items: Vec<Value> = files
        .iter()
        .map(|f| {
            json!({
                "id": f.id.as_str(),
                "name": f.name,
                "version": f.version,
                "updated_at": f.updated_at,
                "link": f.link.as_str(),
            })
        })
        .collect();
    let body = json!({ "files": items });
    let hash = Sha256::digest(body.to_string().as_bytes());
    let etag = format!(
        "\"{}\"",
        hash[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let matches = req
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut resp = if matches {
        empty(StatusCode::NOT_MODIFIED)
    } else {
        json_response(StatusCode::OK, &body)
    };
    let headers = resp.headers_mut();
    headers.insert(
        ETAG,
        HeaderValue::from_str(&etag).expect("hex is a valid header"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    Ok(resp)
}

pub async fn get(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    let (file, owner) = readable(state, &req, &id).await?;
    Ok(json_response(StatusCode::OK, &file_json(&file, owner)))
}

pub async fn doc(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    readable(state, &req, &id).await?;
    match state.rooms.document(&id).await {
        Ok((version, doc)) => {
            let body = format!("{{\"version\":{version},\"doc\":{doc}}}");
            let mut resp = json_response(StatusCode::OK, &Value::Null);
            *resp.body_mut() = http_body_util::Full::new(bytes::Bytes::from(body));
            Ok(resp)
        }
        Err(JoinError::NotFound) => Err(ApiError::not_found()),
        Err(_) => Err(ApiError::unavailable("the file cannot be loaded right now")),
    }
}

pub async fn update(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    owned(state, &req, &id).await?;
    let body: FileChanges = read_json(req, SMALL_BODY).await?;
    let update = FileUpdate {
        name: body.name.as_deref().map(file_name).transpose()?,
        link: body
            .link
            .as_deref()
            .map(|l| {
                LinkAccess::parse(l)
                    .ok_or_else(|| ApiError::bad_request("`link` is none, view or edit"))
            })
            .transpose()?,
        keys: None,
    };
    let file = state.store.update_file(&id, update).await?;
    state.rooms.file_changed(&file);
    Ok(json_response(StatusCode::OK, &file_json(&file, true)))
}

pub async fn rotate_keys(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    owned(state, &req, &id).await?;
    let update = FileUpdate {
        keys: Some((new_secret(), new_secret())),
        ..FileUpdate::default()
    };
    let file = state.store.update_file(&id, update).await?;
    state.rooms.file_changed(&file);
    Ok(json_response(
        StatusCode::OK,
        &json!({"view_key": file.view_key, "edit_key": file.edit_key}),
    ))
}

pub async fn delete(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    owned(state, &req, &id).await?;
    state.store.delete_file(&id).await?;
    state.rooms.file_deleted(&id);
    Ok(empty(StatusCode::NO_CONTENT))
}
