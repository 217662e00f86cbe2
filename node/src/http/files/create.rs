//! `POST /api/files`: a new file, with its initial document when one is sent.

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::Deserialize;

use super::{file_json, file_name};
use crate::apptoken::{is_app_token, owner_for, AppClaims, Grant, Level};
use crate::doc::{DocLimits, Document, PatchError};
use crate::http::app_claims;
use crate::http::{
    bearer_token, busy, json_response, parse_json, rate_limited, read_body_promised, signed_in,
    ApiError, ApiResult, SMALL_BODY,
};
use crate::ids::{new_secret, FileId};
use crate::memory::Reservation;
use crate::state::AppState;
use crate::store::{Account, FileRecord, LinkAccess, StoreError};

#[derive(Deserialize)]
struct NewFile {
    name: Option<String>,
    /// The file's id, chosen by the app (app tokens only), so its grants can name it.
    id: Option<String>,
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
type NewFileParts = (String, Option<String>, Option<String>);

fn new_file(body: &[u8], limits: &DocLimits) -> Result<NewFileParts, ApiError> {
    let body: NewFile = parse_json(body)?;
    let id = body.id;
    let name = file_name(body.name.as_deref().unwrap_or("Untitled"))?;
    let doc = initial_doc(body.doc.as_deref(), limits)?;
    Ok((name, doc, id))
}

/// A new file's `doc` as the store keeps it (none for absent or `null`), read and checked
/// node by node: 413 `too-large` past the limits, 400 when it is not a document.
pub(crate) fn initial_doc(
    raw: Option<&serde_json::value::RawValue>,
    limits: &DocLimits,
) -> Result<Option<String>, ApiError> {
    let Some(raw) = raw.filter(|r| r.get() != "null") else {
        return Ok(None);
    };
    match Document::from_json(raw.get().as_bytes(), limits) {
        Ok(doc) => Ok(Some(doc.to_json())),
        Err(PatchError::TooLarge(m)) => {
            Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", m))
        }
        Err(PatchError::Invalid(m)) => Err(ApiError::bad_request(format!(
            "`doc` is not a valid document: {m}"
        ))),
    }
}

/// The body of a request that makes a file, at most the largest document plus its framing,
/// with the memory that reading and checking its document takes promised from the budget:
/// its bytes as they arrive, then the rest before the document is read (413 `too-large`
/// when it is declared larger; 503 with `Retry-After` past the budget).
pub(crate) async fn read_new_file_body(
    req: Request<Incoming>,
    state: &AppState,
) -> Result<(Bytes, Reservation), ApiError> {
    let limit = state.config.max_doc_bytes.saturating_add(SMALL_BODY);
    // A body declared over the limit is refused as too large whatever the memory.
    let length = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if length.is_some_and(|n| n > limit) {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            "the body is too large",
        ));
    }
    let (body, mut memory) = read_body_promised(req, limit, state).await?;
    if !memory.grow_to((body.len() * BODY_MEMORY_FACTOR) as u64) {
        state.metrics.memory_refusals.inc();
        return Err(busy("the node is at its memory budget; try again shortly"));
    }
    Ok((body, memory))
}

/// A person's token (`"create": "sub"`) names only ids its own grant gives it edit on:
/// otherwise anyone allowed to create files could claim ids in another team's prefix and own
/// what that team then writes there (the fifteenth review). The app's own token
/// (`"create": "app"`) names any.
fn may_choose(claims: Option<&AppClaims>, id: &FileId) -> Result<(), ApiError> {
    match claims {
        Some(c) if c.create == Some(Grant::Sub) && c.level(id) != Some(Level::Edit) => {
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "a token with `\"create\": \"sub\"` may choose only an id its `files` grant \
                 gives it edit on",
            ))
        }
        _ => Ok(()),
    }
}

/// Who owns a file an app token creates, per its `create` claim (403 without one), with
/// the owner's stand-in account made if it is not there yet: files need an owner
/// account, and this one can never sign in (no email, no password).
async fn app_owner(state: &AppState, token: &str) -> Result<(Account, AppClaims), ApiError> {
    let claims = app_claims(state, token).await?;
    let owner = match claims.create {
        Some(Grant::Sub) => claims.account(),
        Some(Grant::App) => owner_for(None),
        None => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "this token may not create files (no `create` claim)",
            ))
        }
    };
    let account = Account {
        email: format!("app token {owner}"),
        name: if claims.create == Some(Grant::App) {
            "App".into()
        } else {
            claims.display_name()
        },
        password_hash: "!".into(),
        id: owner,
    };
    match state.store.insert_account(&account).await {
        Ok(()) | Err(StoreError::Conflict) => Ok((account, claims)),
        Err(e) => Err(e.into()),
    }
}

/// Memory a file's initial document takes while it is read and checked, per byte
/// of JSON: the body and its copy as text, then the document as it is built.
const BODY_MEMORY_FACTOR: usize = 2 + crate::doc::BUILD_BYTES_PER_JSON_BYTE;

pub async fn create(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let token = bearer_token(&req);
    let app = token.as_deref().is_some_and(is_app_token);
    let (account, claims) = match token.as_deref() {
        Some(t) if app => {
            let (account, claims) = app_owner(state, t).await?;
            (account, Some(claims))
        }
        t => (signed_in(state, t).await?, None),
    };
    // The rate first, before the body is read: a burst costs nothing.
    if let Err(wait) = state.file_creates.check(&account.id) {
        return Err(rate_limited(
            "too many files created in a short time; wait a little and try again",
            wait,
        ));
    }
    // An account already at its storage limit is refused before its body is read (the
    // measure is reused by the check below, once the document's size is known).
    state.storage.check(&account.id, 0, "create").await?;
    let (body, _memory) = read_new_file_body(req, state).await?;
    // Read, checked and rebuilt on the bulk lane when large (see `lane`).
    let limits = state.limits.clone();
    let (name, doc, id) =
        crate::lane::run(body.len(), &state.metrics, move || new_file(&body, &limits)).await?;
    let id = match id {
        None => FileId::generate(),
        Some(_) if !app => return Err(ApiError::bad_request("only app tokens choose a file's id")),
        Some(id) => {
            let id = FileId::parse(&id)
                .ok_or_else(|| ApiError::bad_request("a file id must match [A-Za-z0-9_-]{1,64}"))?;
            may_choose(claims.as_ref(), &id)?;
            id
        }
    };
    let record = FileRecord {
        id,
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
    // The document is the file's first stored bytes (the app's own account is not limited).
    let adding = doc.as_ref().map_or(0, |d| d.len() as u64);
    state.storage.check(&account.id, adding, "create").await?;
    // The app's own files are the app's business; people's are capped as accounts' are.
    let cap = if account.id == owner_for(None) {
        u64::MAX
    } else {
        state.config.files_per_account
    };
    match state.store.create_file_capped(&record, doc, cap).await {
        Ok(()) => {}
        Err(StoreError::Full) => return Err(too_many_files(cap)),
        Err(StoreError::Conflict) => return Err(ApiError::file_exists()),
        Err(e) => return Err(e.into()),
    }
    Ok(json_response(
        StatusCode::CREATED,
        &file_json(&record, true),
    ))
}
