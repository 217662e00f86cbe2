//! Files with the app's own ids: made with a chosen id, owner, link setting and initial
//! document (`POST /api/server/files`), listed by id prefix a page at a time
//! (`GET /api/server/files`), and deleted by id prefix in bounded batches
//! (`DELETE /api/server/files`).

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{limit, query_id, server_key};
use crate::apptoken::owner_for;
use crate::http::files::{file_json, file_name, initial_doc, read_new_file_body};
use crate::http::{json_response, parse_json, ApiError, ApiResult};
use crate::ids::{new_secret, AccountId, FileId};
use crate::state::AppState;
use crate::store::{FileRecord, LinkAccess, StoreError};

/// Files in one page of a listing, by default and at most.
const PAGE: usize = 100;
const MOST: usize = 1000;

#[derive(Deserialize)]
struct NewFile {
    id: String,
    name: Option<String>,
    owner: Option<String>,
    link: Option<String>,
    viewers_see_history: Option<bool>,
    doc: Option<Box<serde_json::value::RawValue>>,
}

/// `POST /api/server/files`: 201 with the file (keys included), 409 `file-exists`.
pub async fn create(state: &AppState, req: Request<Incoming>) -> ApiResult {
    server_key(state, &req).await?;
    // Promised from the memory budget as any file's creation is (the key is trusted, but a
    // leaked one must not be a way to take the node's memory).
    let (body, _memory) = read_new_file_body(req, state).await?;
    let limits = state.limits.clone();
    let (body, doc) = crate::lane::run(body.len(), &state.metrics, move || {
        let b: NewFile = parse_json(&body)?;
        let doc = initial_doc(b.doc.as_deref(), &limits)?;
        Ok::<_, ApiError>((b, doc))
    })
    .await?;
    let id = FileId::parse(&body.id)
        .ok_or_else(|| ApiError::bad_request("`id` must match [A-Za-z0-9_-]{1,64}"))?;
    let name = file_name(body.name.as_deref().unwrap_or("Untitled"))?;
    let link = match body.link.as_deref() {
        None => LinkAccess::None,
        Some(l) => LinkAccess::parse(l)
            .ok_or_else(|| ApiError::bad_request("`link` is none, view or edit"))?,
    };
    let owner = match body.owner.as_deref() {
        // The app's own stand-in account (it can never sign in).
        None => app_account(state).await?,
        Some(o) => {
            let id = AccountId::parse(o)
                .ok_or_else(|| ApiError::bad_request("`owner` must be an account id"))?;
            match state.store.account_by_id(&id).await {
                Ok(a) => a.id,
                Err(StoreError::NotFound) => {
                    return Err(ApiError::bad_request("`owner` names no account"))
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let record = FileRecord {
        id,
        owner,
        name,
        link,
        view_key: new_secret(),
        edit_key: new_secret(),
        key_generation: 0,
        version: 0,
        updated_at: crate::clock::unix_ms(),
        viewers_see_history: body.viewers_see_history.unwrap_or(false),
    };
    match state.store.create_file(&record, doc).await {
        Ok(()) => {}
        Err(StoreError::Conflict) => return Err(ApiError::file_exists()),
        Err(e) => return Err(e.into()),
    }
    tracing::info!(file = %record.id, owner = %record.owner, "file made by the server API");
    Ok(json_response(
        StatusCode::CREATED,
        &file_json(&record, true),
    ))
}

/// The app's stand-in account, made on first use.
async fn app_account(state: &AppState) -> Result<AccountId, ApiError> {
    let account = crate::store::Account {
        id: owner_for(None),
        email: format!("app token {}", owner_for(None)),
        name: "App".into(),
        password_hash: "!".into(),
    };
    match state.store.insert_account(&account).await {
        Ok(()) | Err(StoreError::Conflict) => Ok(account.id),
        Err(e) => Err(e.into()),
    }
}

fn prefix(req: &Request<Incoming>) -> Result<&str, ApiError> {
    query_id(req, "prefix")?.ok_or_else(|| {
        ApiError::bad_request("`prefix` is required: 1 to 64 characters of [A-Za-z0-9_-]")
    })
}

/// `GET /api/server/files?prefix=&after=&limit=`: files in id order, with `next` (the
/// `after` of the next page) while more may follow.
pub async fn list(state: &AppState, req: Request<Incoming>) -> ApiResult {
    server_key(state, &req).await?;
    let prefix = prefix(&req)?;
    let after = query_id(&req, "after")?;
    let limit = limit(&req, PAGE, MOST)?;
    let files = state
        .store
        .files_with_prefix(prefix, after, limit as u64 + 1)
        .await?;
    let more = files.len() > limit;
    let files: Vec<_> = files.iter().take(limit).collect();
    let next = more.then(|| files.last().map(|f| f.id.as_str().to_owned()));
    let items: Vec<_> = files.iter().map(|f| file_json(f, true)).collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({"files": items, "next": next.flatten()}),
    ))
}

/// `DELETE /api/server/files?prefix=`: deletes at most `ATRIUM_PREFIX_DELETE_MAX` files
/// whose ids start with `prefix` (the first in id order) and answers their ids and whether
/// more are left (`more`: call again). Their live sockets close with 4004 on every node.
pub async fn delete(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let key = server_key(state, &req).await?;
    let prefix = prefix(&req)?.to_owned();
    let most = state.config.prefix_delete_max.max(1);
    let files = state
        .store
        .files_with_prefix(&prefix, None, most as u64 + 1)
        .await?;
    let more = files.len() > most;
    let mut deleted = Vec::new();
    for f in files.iter().take(most) {
        match state.store.delete_file(&f.id).await {
            Ok(()) | Err(StoreError::NotFound) => {
                state.storage.remeasure(&state.storage.holder(f));
                deleted.push(f.id.clone())
            }
            Err(e) => {
                // What was deleted stays deleted; the caller calls again.
                crate::cluster::announce_deleted(state, &deleted).await;
                return Err(e.into());
            }
        }
    }
    crate::cluster::announce_deleted(state, &deleted).await;
    tracing::info!(key = %key.id, prefix = %prefix, deleted = deleted.len(), more, "files deleted by prefix");
    let ids: Vec<_> = deleted.iter().map(|f| f.as_str()).collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({"deleted": ids, "more": more}),
    ))
}
