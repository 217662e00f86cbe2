//! A file's version history over HTTP: list (paged, newest first), read, compare, name,
//! rename, delete, restore. Editors and the owner may do all but delete (the owner's);
//! viewers may list and read only when the owner allows it (`viewers_see_history`).
//!
//! Saving, deleting and restoring go through the file's room (its history worker, and the
//! journal for a restore), so they are ordered with its edits and fenced by its epoch.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::access::{granted, Granted};
use crate::history::turns::{DocSize, WorkRefused, Working, COMPARE_COST, READ_COST, RESTORE_COST};
use crate::history::{self, Stored, VersionInfo, VersionKind};
use crate::http::{
    empty, json_response, plain_name, rate_limited, read_json, ApiError, ApiResult, SMALL_BODY,
};
use crate::ids::FileId;
use crate::limits::{Party, Planned};
use crate::memory::AnswerKey;
use crate::room::access::Role;
use crate::room::history::NameRequest;
use crate::room::restore::{RestoreError, RestoreRequest};
use crate::room::shares::Opener;
use crate::room::{JoinError, RoomCmd};
use crate::state::AppState;
use crate::storage::{Share, StorageError};

const MAX_TITLE_CHARS: usize = 200;
const MAX_DESCRIPTION_CHARS: usize = 2000;
const DEFAULT_PAGE: u64 = 50;
const MAX_PAGE: u64 = 200;

fn forbidden(what: &str) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "forbidden", what)
}

/// Listing and reading: editors, and viewers when the owner allows it.
fn may_read(g: &Granted) -> Result<(), ApiError> {
    if crate::room::access::sees_history(g.role, &g.file) {
        Ok(())
    } else {
        Err(forbidden("viewers of this file may not see its history"))
    }
}

/// Who a version is rebuilt for, out of debt with their share of document bytes: the same
/// rate as each address's (`ATRIUM_DOCUMENT_BYTES_PER_IP_*`) for a signed-in caller's account
/// from all its addresses together, whatever key it came with, and one more for the guests
/// of one owner's files who come by a link key with no account. So one account reading or
/// comparing versions from many addresses is paced as one (a free account's compare loop
/// from six addresses took 1.6 cores), and the owner's own share is never a guest's.
/// What a request plans to rebuild is charged before the work, and settled after: a client
/// that leaves while its versions are rebuilt has paid for them.
struct RebuiltFor(Planned<String>);

impl RebuiltFor {
    fn ready(state: &AppState, g: &Granted) -> Result<Self, ApiError> {
        let (key, message) = match &g.caller {
            Some(account) => (
                format!("account:{account}"),
                "this account's versions were rebuilt for it up to its share for now; try again later",
            ),
            None => (
                format!("links-of:{}", g.file.owner),
                "versions of this owner's files were rebuilt for guests without an account up to their share for now; try again later",
            ),
        };
        state
            .documents_rebuilt
            .ready(&key)
            .map_err(|wait| super::paced(state, message, wait))?;
        Ok(Self(Planned::new(key)))
    }

    /// Charges the `bytes` of documents the work will likely rebuild to the caller and to
    /// the address it goes `to`, before the work.
    fn plan(&mut self, state: &AppState, to: &mut super::DocumentsTo, bytes: u64) {
        self.0.plan(&state.documents_rebuilt, bytes);
        to.plan(state, bytes);
    }

    /// The work failed on the node's side (no room, a store error): neither the caller nor
    /// the address pays for it (a client that left while it ran has paid: its request never
    /// gets here).
    fn failed(self, state: &AppState, to: super::DocumentsTo, e: ApiError) -> ApiError {
        self.settle(state, 0);
        to.charge(state, 0);
        e
    }

    /// Settles the charge at the `bytes` rebuilt.
    fn settle(self, state: &AppState, bytes: u64) {
        self.0.settle(&state.documents_rebuilt, bytes);
    }
}

/// Comparing, naming and restoring: editors (the owner is one).
fn may_edit(g: &Granted) -> Result<(), ApiError> {
    match g.role {
        Role::Editor => Ok(()),
        Role::Viewer => Err(forbidden("only editors may do this")),
    }
}

/// The query's parameters, for names this route knows; anything unreadable is a 400.
fn query(req: &Request<Incoming>) -> Vec<(String, String)> {
    req.uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (p.to_owned(), String::new()),
        })
        .collect()
}

fn param<'a>(q: &'a [(String, String)], name: &str) -> Option<&'a str> {
    q.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A whole number written plainly: digits only, no sign, no leading zero (`01` and `+1` are
/// not version 1: one version, one spelling).
fn plain_number(text: &str) -> Option<u64> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let canonical = text == "0" || !text.starts_with('0');
    (digits && canonical).then(|| text.parse().ok()).flatten()
}

fn number(q: &[(String, String)], name: &str, min: u64, max: u64) -> Result<Option<u64>, ApiError> {
    param(q, name)
        .map(|v| {
            plain_number(v)
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| {
                    ApiError::bad_request(format!("`{name}` is a whole number from {min} to {max}"))
                })
        })
        .transpose()
}

pub(crate) fn version_id(segment: &str) -> Result<u64, ApiError> {
    plain_number(segment)
        .filter(|n| (1..=i64::MAX as u64).contains(n))
        .ok_or_else(|| ApiError::bad_request("a version id is a whole number from 1"))
}

fn unavailable(e: JoinError) -> ApiError {
    match e {
        JoinError::NotFound => ApiError::not_found(),
        JoinError::OverShare(over) => ApiError::unavailable(over.reason()),
        _ => ApiError::unavailable("the file cannot be loaded right now; try again"),
    }
}

/// `GET /api/files/{id}/versions?limit&before`: newest first; `next` is the `before` of the
/// next page, null on the last.
pub async fn list(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    // A page of 200 versions with long titles and descriptions is megabytes: it comes from
    // the address's share of document bytes, as a download does.
    let to = super::DocumentsTo::ready(state, &req)?;
    let g = granted(state, &req, &id).await?;
    may_read(&g)?;
    let q = query(&req);
    let limit = number(&q, "limit", 1, MAX_PAGE)?.unwrap_or(DEFAULT_PAGE);
    let before = number(&q, "before", 1, i64::MAX as u64)?;
    let mut versions = state.store.versions(&id, before, limit + 1).await?;
    let more = versions.len() as u64 > limit;
    versions.truncate(limit as usize);
    let next = if more {
        versions.last().map(|v| v.id)
    } else {
        None
    };
    // Held against the memory budget until the client has read it, as a document is.
    let page = serde_json::to_string(&versions).expect("versions serialize");
    let tail = format!(",\"next\":{}}}", json!(next));
    let reader = opener(&g, to.address());
    to.held_answer(
        state,
        (&g.file.owner, &reader),
        None,
        "{\"versions\":",
        page,
        &tail,
    )
}

/// A stored version's document, rebuilt within what `work` reserved, and its size as the
/// document limits count it.
async fn rebuilt(
    state: &AppState,
    id: &FileId,
    stored: Stored,
    work: &Working,
) -> Result<(history::VersionInfo, String, usize), ApiError> {
    state
        .history_work
        .rebuild(stored, id, work, &state.metrics)
        .await
        .map_err(ApiError::from)
}

/// `GET /api/files/{id}/versions/{vid}`: the version and its document.
pub async fn read(state: &AppState, req: Request<Incoming>, id: FileId, vid: u64) -> ApiResult {
    let mut to = super::DocumentsTo::ready(state, &req)?;
    let g = granted(state, &req, &id).await?;
    may_read(&g)?;
    let mut person = RebuiltFor::ready(state, &g)?;
    let turn = state.history_work.turn(to.address(), &id, &g.party).await?;
    let stored = history::stored(&*state.store, &id, vid).await?;
    let size = planned(state, &stored);
    let work = turn.reserve(&state.memory, READ_COST, size)?;
    person.plan(state, &mut to, likely(state, &stored));
    let (info, doc, _) = match rebuilt(state, &id, stored, &work).await {
        Ok(rebuilt) => rebuilt,
        Err(e) => return Err(person.failed(state, to, e)),
    };
    person.settle(state, doc.len() as u64);
    // The answer reserves its own bytes for as long as it is held; the rebuilt document
    // is in the next samples by now.
    drop(work);
    let info = serde_json::to_string(&info).expect("a version serializes");
    let head = format!("{{\"version\":{info},\"doc\":");
    let key = AnswerKey::Version(id, vid, info);
    let reader = opener(&g, to.address());
    to.held_answer(state, (&g.file.owner, &reader), Some(key), &head, doc, "}")
}

/// Who works on a file's history from `address`, for the shares of memory: the owner and
/// its editors are held to their address's share only, as when they open a room.
fn opener(g: &Granted, address: std::net::IpAddr) -> Opener {
    Opener {
        address: Some(address),
        account: g.owner.then(|| g.file.owner.clone()),
        editor: g.role == Role::Editor,
    }
}

/// What rebuilding a stored version takes: the largest document of its chain, as its rows
/// keep it (up to the document limit for versions saved before rows kept it).
fn planned(state: &AppState, stored: &Stored) -> DocSize {
    stored
        .largest
        .map_or(DocSize::AtMost(state.config.max_doc_bytes), DocSize::Known)
}

/// The bytes of document rebuilding a stored version likely takes (see
/// [`Stored::likely_size`]): what its work is charged before it runs.
fn likely(state: &AppState, stored: &Stored) -> u64 {
    stored.likely_size(state.config.max_doc_bytes) as u64
}

/// The size of the current document, from its room (opened for `opener` if need be).
async fn current_size(state: &AppState, id: &FileId, opener: &Opener) -> Result<DocSize, ApiError> {
    let n = state
        .rooms
        .document_size(id, opener.clone())
        .await
        .map_err(unavailable)?;
    Ok(DocSize::Known(n))
}

/// A side of a comparison as found before its work is planned: a stored version, or the
/// current document (by its size).
enum Side {
    Stored(Stored),
    Current(DocSize),
}

impl Side {
    /// `which` side of `id`: `current`, or a version's id.
    async fn find(
        state: &AppState,
        id: &FileId,
        which: &str,
        opener: &Opener,
    ) -> Result<Side, ApiError> {
        Ok(match which {
            "current" => Side::Current(current_size(state, id, opener).await?),
            version => {
                let vid = version_id(version)?;
                Side::Stored(history::stored(&*state.store, id, vid).await?)
            }
        })
    }

    fn planned(&self, state: &AppState) -> DocSize {
        match self {
            Side::Stored(stored) => planned(state, stored),
            Side::Current(size) => *size,
        }
    }

    fn likely(&self, state: &AppState) -> u64 {
        match self {
            Side::Stored(stored) => likely(state, stored),
            Side::Current(DocSize::Known(n) | DocSize::AtMost(n)) => *n as u64,
        }
    }
}

/// A side of a comparison rebuilt (or, the current document, fetched), and its size as the
/// document limits count it.
async fn side(
    state: &AppState,
    id: &FileId,
    which: Side,
    work: &Working,
    opener: &Opener,
) -> Result<(String, usize), ApiError> {
    match which {
        Side::Current(_) => {
            let doc = state.rooms.document(id, opener.clone()).await;
            let doc = doc.map_err(unavailable)?.1;
            // It may have grown since its room measured it.
            let charged = history::charged_len(&doc).map_err(|e| broken(id, e))?;
            if charged > work.limit {
                return Err(WorkRefused::NoRoom.into());
            }
            Ok((doc, charged))
        }
        // Measured, within the work's limit, as it was rebuilt.
        Side::Stored(stored) => {
            let (_, doc, charged) = rebuilt(state, id, stored, work).await?;
            Ok((doc, charged))
        }
    }
}

/// `GET /api/files/{id}/versions/compare?from&to` (`to` defaults to `current`).
pub async fn compare(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    // A comparison rebuilds two documents for its caller: its bytes come from the caller's
    // address's share of documents, as a download's do.
    let mut to_address = super::DocumentsTo::ready(state, &req)?;
    let g = granted(state, &req, &id).await?;
    may_edit(&g)?;
    let mut person = RebuiltFor::ready(state, &g)?;
    let opener = opener(&g, to_address.address());
    let q = query(&req);
    let from = param(&q, "from").ok_or_else(|| ApiError::bad_request("`from` is required"))?;
    let to = param(&q, "to").unwrap_or("current");
    if from != "current" {
        version_id(from)?;
    }
    if to != "current" {
        version_id(to)?;
    }
    let turn = state
        .history_work
        .turn(to_address.address(), &id, &g.party)
        .await?;
    let (older, newer) = (
        Side::find(state, &id, from, &opener).await?,
        Side::find(state, &id, to, &opener).await?,
    );
    let size = older.planned(state).max(newer.planned(state));
    let mut work = turn.reserve(&state.memory, COMPARE_COST, size)?;
    let likely = older.likely(state).max(newer.likely(state));
    person.plan(state, &mut to_address, likely.saturating_mul(2));
    let compared = async {
        let ((a, a_charged), (b, b_charged)) = (
            side(state, &id, older, &work, &opener).await?,
            side(state, &id, newer, &work, &opener).await?,
        );
        work.fit(a_charged.max(b_charged));
        let size = a.len() + b.len();
        let c = crate::lane::run(size, &state.metrics, move || history::compare(&a, &b))
            .await
            .map_err(|e| broken(&id, e))?;
        // Written out while the work's memory is still promised: the lists of a large
        // comparison are as large as the documents.
        let text = serde_json::to_string(&Compared {
            from,
            to,
            comparison: &c,
        })
        .map_err(|e| broken(&id, e.to_string()))?;
        Ok::<_, ApiError>((text, size))
    };
    let (text, size) = match compared.await {
        Ok(compared) => compared,
        Err(e) => return Err(person.failed(state, to_address, e)),
    };
    drop(work);
    person.settle(state, size as u64);
    // Held until read, promised from the budget, as a document is.
    to_address.held_result(state, (&g.file.owner, &opener), text, size as u64)
}

/// A comparison's answer.
#[derive(Serialize)]
struct Compared<'a> {
    from: &'a str,
    to: &'a str,
    #[serde(flatten)]
    comparison: &'a history::Comparison,
}

/// A stored version that could not be read or compared: logged, and answered with a fixed
/// sentence (what went wrong inside is no business of the caller's).
fn broken(file: &FileId, error: String) -> ApiError {
    tracing::error!(file = %file, %error, "a version could not be read or compared");
    ApiError::unavailable("this version cannot be read right now; try again later")
}

#[derive(Deserialize)]
struct Naming {
    title: Option<String>,
    #[serde(default, deserialize_with = "present")]
    description: Option<Option<String>>,
}

/// A field that was sent (even as null) is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Ok(Some(Option::deserialize(d)?))
}

fn title(t: &str) -> Result<String, ApiError> {
    plain_name(t, MAX_TITLE_CHARS, "a title has 1 to 200 plain characters").map(str::to_owned)
}

fn description(d: Option<String>) -> Result<Option<String>, ApiError> {
    match d {
        Some(d) if d.chars().count() > MAX_DESCRIPTION_CHARS => Err(ApiError::bad_request(
            "a description has at most 2000 characters",
        )),
        // Lines, but nothing that prints as nothing (bidi overrides, zero-width characters).
        Some(d) if d.chars().any(crate::protocol::is_deceptive) => Err(ApiError::bad_request(
            "a description may not hold invisible or direction-changing characters",
        )),
        Some(d) if d.trim().is_empty() => Ok(None),
        other => Ok(other),
    }
}

/// `POST /api/files/{id}/versions {title, description?}`: names the current state.
pub async fn name(state: &AppState, req: Request<Incoming>, id: FileId) -> ApiResult {
    let g = granted(state, &req, &id).await?;
    may_edit(&g)?;
    // Named versions are kept until the owner deletes them: a guest with the edit key
    // must not be able to fill the store with them.
    check_naming_rate(state, &id, &g.party)?;
    // A named version keeps up to a whole document: none while the owner is full, nor
    // from the link's guests past their share of it.
    room_to_keep(state, &g, "version").await?;
    let body: Naming = read_json(req, SMALL_BODY).await?;
    let t = title(
        body.title
            .as_deref()
            .ok_or_else(|| ApiError::bad_request("`title` is required"))?,
    )?;
    let d = description(body.description.flatten())?;
    let (reply, answer) = tokio::sync::oneshot::channel();
    let req = NameRequest {
        title: t,
        description: d,
        within: Share::by_link(g.party == Party::Link),
        reply,
    };
    state
        .rooms
        .send(&id, RoomCmd::NameVersion(req))
        .map_err(unavailable)?;
    let info = answer
        .await
        .map_err(|_| ApiError::unavailable("the room closed; try again"))??;
    Ok(json_response(StatusCode::CREATED, &json!(info)))
}

/// `PATCH /api/files/{id}/versions/{vid} {title?, description?}`: names or renames one.
pub async fn rename(state: &AppState, req: Request<Incoming>, id: FileId, vid: u64) -> ApiResult {
    let g = granted(state, &req, &id).await?;
    may_edit(&g)?;
    // Each rename is a write and a message to everyone in the file, carrying the
    // version's whole title and description (the fifth review: 686 renames a second made
    // the node send 420 MB a second to a room of 99).
    check_naming_rate(state, &id, &g.party)?;
    let body: Naming = read_json(req, SMALL_BODY).await?;
    let t = body.title.as_deref().map(title).transpose()?;
    let d = body.description.map(description).transpose()?;
    if t.is_none() && d.is_none() {
        return Err(ApiError::bad_request("give a `title` or a `description`"));
    }
    let was = version_info(state, &id, vid).await?;
    if was.kind != VersionKind::Named && was.title.is_none() && t.is_none() {
        return Err(ApiError::bad_request("name a version with a `title` first"));
    }
    // Longer text is kept as long as the version (a renamed automatic version is never
    // thinned again): it needs the storage, as a naming does.
    let mut renamed = was.clone();
    if let Some(t) = &t {
        renamed.title = Some(t.clone());
    }
    if let Some(d) = &d {
        renamed.description = d.clone();
    }
    let growth = renamed.text_bytes().saturating_sub(was.text_bytes());
    let share = Share::by_link(g.party == Party::Link);
    state
        .storage
        .check_share(&state.storage.holder(&g.file), growth, "version", share)
        .await?;
    let info = state.store.name_version(&id, vid, t, d).await?;
    state
        .rooms
        .tell(&id, RoomCmd::Announce("renamed", info.clone()));
    Ok(json_response(StatusCode::OK, &json!(info)))
}

/// One version's title, kind and times, without its data: a version's chain is up to a
/// document's worth of rows, read on the store's one bulk thread, and asking to delete or
/// rename an automatic version in a loop read it each time (the eleventh review).
async fn version_info(state: &AppState, id: &FileId, vid: u64) -> Result<VersionInfo, ApiError> {
    let newest_up_to = state
        .store
        .versions(id, Some(vid.saturating_add(1)), 1)
        .await?;
    newest_up_to
        .into_iter()
        .find(|v| v.id == vid)
        .ok_or_else(ApiError::not_found)
}

/// Versions named or renamed in a file: at most `ATRIUM_VERSIONS_NAMED_PER_MINUTE` a
/// minute by each party (the owner; each app-token person; the link's guests together).
fn check_naming_rate(state: &AppState, id: &FileId, party: &Party) -> Result<(), ApiError> {
    state.versions_named.check(&(id.clone(), party.clone())).map_err(|wait| {
        rate_limited(
            "too many versions named or renamed in this file in a short time; wait a little and try again",
            wait,
        )
    })
}

/// Whether `g`'s caller may keep one more version of the owner's (`what`: a naming or a
/// restore): not while the owner is full, nor past the link's share for those who came
/// by the link key.
async fn room_to_keep(state: &AppState, g: &Granted, what: &str) -> Result<(), ApiError> {
    let share = Share::by_link(g.party == Party::Link);
    Ok(state
        .storage
        .check_share(&state.storage.holder(&g.file), 0, what, share)
        .await?)
}

/// `DELETE /api/files/{id}/versions/{vid}`: the owner deletes a named version.
pub async fn delete(state: &AppState, req: Request<Incoming>, id: FileId, vid: u64) -> ApiResult {
    let g = granted(state, &req, &id).await?;
    may_read(&g)?;
    if !g.owner {
        return Err(forbidden("only the file's owner may delete a version"));
    }
    let info = version_info(state, &id, vid).await?;
    if info.kind != VersionKind::Named {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            "only named versions are deleted by hand; automatic ones thin with age",
        ));
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = crate::room::history::HistoryJob::Delete {
        file: id.clone(),
        epoch: 0,
        id: vid,
        reply,
    };
    state
        .rooms
        .send(&id, RoomCmd::History(job))
        .map_err(unavailable)?;
    answer
        .await
        .map_err(|_| ApiError::unavailable("the room closed; try again"))??;
    state.storage.remeasure(&state.storage.holder(&g.file));
    state.rooms.tell(&id, RoomCmd::Announce("deleted", info));
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `POST /api/files/{id}/versions/{vid}/restore`: an edit through the room.
pub async fn restore(state: &AppState, req: Request<Incoming>, id: FileId, vid: u64) -> ApiResult {
    let g = granted(state, &req, &id).await?;
    may_edit(&g)?;
    // Each restore makes a version that is kept, and sends the whole difference to
    // everyone in the file: a guest with the edit key must not be able to loop on it.
    if let Err(wait) = state.restores.check(&(id.clone(), g.party.clone())) {
        return Err(rate_limited(
            "too many restores of this file in a short time; wait a little and try again",
            wait,
        ));
    }
    // A restore keeps a version and may grow the document: none while the owner is full,
    // nor from the link's guests past their share.
    room_to_keep(state, &g, "restore").await?;
    let address = crate::limits::address_key(crate::http::client_addr(&req));
    let turn = state.history_work.turn(address, &id, &g.party).await?;
    // The restore's patch and copies are as large as the larger of the version and the
    // document it starts from.
    let stored = history::stored(&*state.store, &id, vid).await?;
    let current = current_size(state, &id, &opener(&g, address)).await?;
    let size = planned(state, &stored).max(current);
    // Held until the room has made the restore (or refused it).
    let work = turn.reserve(&state.memory, RESTORE_COST, size)?;
    let (from, doc, _) = rebuilt(state, &id, stored, &work).await?;
    let (reply, answer) = tokio::sync::oneshot::channel();
    let restore = RestoreRequest {
        from,
        doc,
        limit: work.limit,
        by: g.name,
        within: Share::by_link(g.party == Party::Link),
        reply,
    };
    state
        .rooms
        .send(&id, RoomCmd::Restore(restore))
        .map_err(unavailable)?;
    match answer.await {
        Ok(Ok(done)) => Ok(json_response(
            StatusCode::OK,
            &json!({"v": done.v, "restored_from": done.restored_from}),
        )),
        Ok(Err(RestoreError::TooLarge(m))) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "too-large",
            format!("the version does not fit the document limits now: {m}"),
        )),
        Ok(Err(RestoreError::Busy)) => Err(ApiError::unavailable(
            "other restores of this file are waiting; try again",
        )),
        Ok(Err(RestoreError::NoRoom)) => Err(crate::history::turns::WorkRefused::NoRoom.into()),
        Ok(Err(RestoreError::StorageFull(full))) => Err(StorageError::full(full).into()),
        Ok(Err(RestoreError::Unavailable)) | Err(_) => Err(ApiError::unavailable(
            "the room closed before the restore was made; nothing was changed, try again",
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_ids_have_one_spelling() {
        assert_eq!(super::version_id("17").ok(), Some(17));
        for odd in [
            "01",
            "+1",
            "0",
            "",
            "1.0",
            " 1",
            "1e3",
            "99999999999999999999",
        ] {
            assert!(super::version_id(odd).is_err(), "{odd:?} was taken");
        }
    }
}
