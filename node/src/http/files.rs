//! Files: create, list, read, rename, link setting, keys, delete, and the document.

mod access;
mod create;
pub mod versions;

pub use create::create;
pub(crate) use create::{initial_doc, read_new_file_body};

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, ETAG, IF_NONE_MATCH};
use hyper::{Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};

pub(super) use self::access::served_here;
use self::access::{owned, readable};
use super::{
    bearer_token, busy, client_addr, empty, json_response, plain_name, rate_limited, read_json,
    signed_in, strong_etag, ApiError, ApiResult, Body, SMALL_BODY,
};
use crate::ids::AccountId;
use crate::ids::{new_secret, FileId};
use crate::limits::Planned;
use crate::memory::{AnswerKey, HeldBody};
use crate::room::shares::{Opener, OverShare};
use crate::room::JoinError;
use crate::state::AppState;
use crate::store::{FileRecord, FileUpdate, LinkAccess};

const MAX_FILE_NAME_CHARS: usize = 200;

#[derive(Deserialize)]
struct FileChanges {
    name: Option<String>,
    link: Option<String>,
    viewers_see_history: Option<bool>,
}

pub(super) fn file_name(name: &str) -> Result<String, ApiError> {
    plain_name(
        name,
        MAX_FILE_NAME_CHARS,
        "a file name has 1 to 200 plain characters",
    )
    .map(str::to_owned)
}

/// The file as its owner sees it (with keys) or as a key holder does.
pub(super) fn file_json(f: &FileRecord, with_keys: bool) -> Value {
    let mut v = json!({
        "id": f.id.as_str(),
        "name": f.name,
        "link": f.link.as_str(),
        "version": f.version,
        "updated_at": f.updated_at,
        "owner": f.owner.as_str(),
        "viewers_see_history": f.viewers_see_history,
    });
    if with_keys {
        v["view_key"] = json!(f.view_key);
        v["edit_key"] = json!(f.edit_key);
    }
    v
}

pub async fn list(state: &AppState, req: Request<Incoming>) -> ApiResult {
    let account = signed_in(state, bearer_token(&req).as_deref()).await?;
    // The address's share first: the list is read and written out (most of a megabyte at
    // 1,000 files) only for an address that owes nothing, a 304 too.
    let to = DocumentsTo::ready(state, &req)?;
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
    drop(files);
    let text = json!({ "files": items }).to_string();
    let etag = strong_etag(text.as_bytes());
    let ours = etag.to_str().unwrap_or_default();
    let matches = req
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == ours || t.trim() == "*"));
    let mut resp = if matches {
        // What the client has already costs nothing.
        empty(StatusCode::NOT_MODIFIED)
    } else {
        // Charged to the address's share of document bytes, and held as a document is until
        // the client has read it (promised from the memory budget, within the account's and
        // the address's shares of answers): a list asked on many connections that never
        // read would otherwise stay in the node outside the budget.
        let reader = crate::room::shares::Opener {
            address: Some(to.address()),
            account: Some(account.id.clone()),
            editor: true,
        };
        to.held_answer(state, (&account.id, &reader), None, "", text, "")?
    };
    let headers = resp.headers_mut();
    headers.insert(ETAG, etag);
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    Ok(resp)
}

pub async fn get(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    let (file, owner) = readable(state, &req, &id).await?;
    Ok(json_response(StatusCode::OK, &file_json(&file, owner)))
}

pub async fn doc(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    // The address's share first: a refusal then costs no lookup.
    let to = DocumentsTo::ready(state, &req)?;
    let (file, owner) = readable(state, &req, &id).await?;
    let opener = crate::room::shares::Opener {
        address: Some(to.address()),
        account: owner.then(|| file.owner.clone()),
        // A download is a reader's: held to the owner's account share unless it is the owner.
        editor: false,
    };
    match state.rooms.document(&id, opener.clone()).await {
        Ok((version, doc)) => to.held_answer(
            state,
            (&file.owner, &opener),
            Some(AnswerKey::Doc(id.clone(), version)),
            &format!("{{\"version\":{version},\"doc\":"),
            doc,
            "}",
        ),
        Err(JoinError::NotFound) => Err(ApiError::not_found()),
        Err(JoinError::OverShare(over)) => Err(ApiError::unavailable(over.reason())),
        Err(_) => Err(ApiError::unavailable("the file cannot be loaded right now")),
    }
}

/// A download refused while a share of document bytes owes (`message` says whose):
/// 429 with how long until it is out of debt, counted in `atrium_documents_paced_total`.
pub(super) fn paced(state: &AppState, message: &str, wait: std::time::Duration) -> ApiError {
    state
        .metrics
        .documents_paced
        .with_label_values(&["download"])
        .inc();
    rate_limited(message, wait)
}

/// The client address a document is about to be sent to, out of debt with its share of
/// document bytes (`ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND`): checked before the document
/// is read, charged once its size is known (or, for a version rebuilt for it, before the
/// work, settled after), so downloading a large file in a loop gets 429 instead of making
/// the node send it as fast as the client reads, and a client that leaves while its
/// versions are rebuilt has paid for them.
pub(super) struct DocumentsTo(Planned<std::net::IpAddr>);

impl DocumentsTo {
    pub(super) fn ready(state: &AppState, req: &Request<Incoming>) -> Result<Self, ApiError> {
        let address = crate::limits::address_key(client_addr(req));
        state.documents_sent.ready(&address).map_err(|wait| {
            paced(
                state,
                "this address was sent its share of documents for now; try again later",
                wait,
            )
        })?;
        Ok(Self(Planned::new(address)))
    }

    /// The address the documents go to.
    pub(super) fn address(&self) -> std::net::IpAddr {
        *self.0.key()
    }

    /// Charges `bytes` the work is about to rebuild for the address, before it.
    pub(super) fn plan(&mut self, state: &AppState, bytes: u64) {
        self.0.plan(&state.documents_sent, bytes);
    }

    /// Settles the address's charge at `bytes` of documents (work done for it, not an
    /// answer).
    pub(super) fn charge(self, state: &AppState, bytes: u64) {
        self.0.settle(&state.documents_sent, bytes);
    }

    /// A 200 answer of JSON made of `head`, a document's text and `tail`, built once and
    /// charged to the address, also when it is refused for a share (the document was read
    /// or rebuilt for the address all the same: asking again in a loop after a refusal is
    /// paced like downloading), but not when the node's memory is what refused it (nobody's
    /// doing, and a retry must not wait for it). It is held until the client has read it all: its bytes stay
    /// promised from the memory budget until then, so many clients that ask and never read
    /// make the node answer 503 instead of growing past its budget. An answer for `key`
    /// that somebody still holds is given again as it is: one copy and one promise however
    /// many ask for the same document. A new copy also counts, while held, against the file
    /// owner's and the address's shares of answers (`ATRIUM_ROOM_MEMORY_SHARE`, counted
    /// apart from open rooms, and with the same exemptions for `reader`): else unread
    /// downloads of many different large files, or of one file edited between them, could
    /// hold the whole budget for the 30 s a write may take.
    pub(super) fn held_answer(
        self,
        state: &AppState,
        (owner, reader): (&AccountId, &Opener),
        key: Option<AnswerKey>,
        head: &str,
        doc: String,
        tail: &str,
    ) -> ApiResult {
        let sent = doc.len() as u64;
        let answer = self.answer(state, (owner, reader), key, head, doc, tail);
        let node_full = matches!(answer, Err(NotHeld::NodeFull(_)));
        self.charge(state, if node_full { 0 } else { sent });
        answer.map_err(ApiError::from)
    }

    /// A 200 answer of JSON `text` that work of `work_bytes` made for the address (a
    /// comparison of two versions), held as [`held_answer`](Self::held_answer) holds a
    /// document, and charged for the work rather than for the answer.
    pub(super) fn held_result(
        self,
        state: &AppState,
        (owner, reader): (&AccountId, &Opener),
        text: String,
        work_bytes: u64,
    ) -> ApiResult {
        let answer = self.answer(state, (owner, reader), None, "", text, "");
        self.charge(state, work_bytes);
        answer.map_err(ApiError::from)
    }

    fn answer(
        &self,
        state: &AppState,
        (owner, reader): (&AccountId, &Opener),
        key: Option<AnswerKey>,
        head: &str,
        doc: String,
        tail: &str,
    ) -> Result<Response<Body>, NotHeld> {
        let len = head.len() + doc.len() + tail.len();
        let mut resp = json_response(StatusCode::OK, &Value::Null);
        if len <= SMALL_ANSWER {
            *resp.body_mut() = http_body_util::Full::new([head, &doc, tail].concat().into());
            return Ok(resp);
        }
        let refused = |over: OverShare| NotHeld::OverShare(busy(answers_over(over)));
        let shares = &state.answer_shares;
        let shared = key.as_ref().and_then(|k| state.answers.get(k));
        let (body, new) = match shared {
            Some(body) => (body, false),
            None => {
                let account = shares
                    .take_account(owner, reader, len as u64)
                    .map_err(refused)?;
                let held = state.memory.reserve(len as u64).ok_or_else(|| {
                    NotHeld::NodeFull(busy("the server is at its memory budget; try again"))
                })?;
                let body = [head, &doc, tail].concat().into_bytes();
                (HeldBody::new(body, Some(held), Some(account)), true)
            }
        };
        let holder = body
            .hold(self.address(), || {
                shares.take_address(self.address(), len as u64)
            })
            .map_err(refused)?;
        if let Some(key) = key.filter(|_| new) {
            state.answers.keep(key, &body);
        }
        *resp.body_mut() = http_body_util::Full::new(bytes::Bytes::from_owner(holder));
        Ok(resp)
    }
}

/// Why a document answer was not held: a share of the reader's or the owner's, or the node's
/// whole memory budget.
enum NotHeld {
    OverShare(ApiError),
    NodeFull(ApiError),
}

impl From<NotHeld> for ApiError {
    fn from(not: NotHeld) -> Self {
        match not {
            NotHeld::OverShare(e) | NotHeld::NodeFull(e) => e,
        }
    }
}

/// Why a document answer was refused for a share.
fn answers_over(over: OverShare) -> &'static str {
    match over {
        OverShare::Account => {
            "documents of this account's files waiting to be read hold their share of the server's memory; try again later"
        }
        OverShare::Address => {
            "documents waiting to be read by this address hold their share of the server's memory; try again later"
        }
    }
}

/// Answers at most this large are always given, even at the budget, as small patches are
/// always taken: what they hold is negligible.
const SMALL_ANSWER: usize = 64 * 1024;

/// A file's settings change at most `ATRIUM_FILE_CHANGES_PER_MINUTE` times a minute: each
/// change reaches everyone in the file (a link narrowed to view tells every guest their new
/// role), so an owner toggling it in a loop would make the node send to the whole room per
/// request.
fn check_change_rate(state: &AppState, id: &FileId) -> Result<(), ApiError> {
    state.file_changes.check(id).map_err(|wait| {
        rate_limited(
            "this file's settings changed too often in a short time; wait a little and try again",
            wait,
        )
    })
}

pub async fn update(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    owned(state, &req, &id).await?;
    check_change_rate(state, &id)?;
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
        viewers_see_history: body.viewers_see_history,
    };
    let file = state.store.update_file(&id, update).await?;
    state.rooms.file_changed(&file);
    Ok(json_response(StatusCode::OK, &file_json(&file, true)))
}

pub async fn rotate_keys(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    owned(state, &req, &id).await?;
    check_change_rate(state, &id)?;
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
    let file = owned(state, &req, &id).await?;
    state.store.delete_file(&id).await?;
    state.storage.remeasure(&state.storage.holder(&file));
    state.rooms.file_deleted(&id);
    Ok(empty(StatusCode::NO_CONTENT))
}
