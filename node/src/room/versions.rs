//! What the room and its history worker pass each other: the room's memory between
//! versions, the jobs it hands the worker, a person's request to name a version, and
//! what came of a restore.
//! Kept apart from `history.rs` (the room's side of versions), which needs the room.

use std::time::Instant;

use serde_json::json;
use tokio::sync::oneshot;

use crate::history::turns::WorkRefused;
use crate::history::{VersionInfo, VersionKind};
use crate::ids::FileId;
use crate::memory::Reservation;
use crate::storage::Share;
use crate::store::{Holder, StoreResult};

/// What the room remembers between versions.
#[derive(Default)]
pub struct HistoryState {
    /// Who edited since the last version, in the order they first did.
    pub(super) editors: Vec<String>,
    /// When the first edit since the last version was applied.
    pub(super) dirty_since: Option<Instant>,
    /// Some edit since the last version came by a link key: an automatic version of them
    /// is held to the link's share of storage, as the guests' own patches are (else a
    /// guest rewriting text in place had the owner's storage, or the app's files' without
    /// a limit, fill with automatic versions).
    pub(super) by_link: bool,
    /// Versions handed to the worker so far; a version not kept puts its edits back only
    /// when it was the last (a later one holds the same document).
    pub(super) queued: u64,
    /// Versions handed to the worker that may still not be kept (their share of storage
    /// is checked there): until they are, the edits they hold may be in no version, so a
    /// restore and a room's end keep a version of their own.
    pub(super) unconfirmed: usize,
}

impl HistoryState {
    /// Whether the document holds edits that may be in no kept version.
    pub(super) fn unkept(&self) -> bool {
        self.dirty_since.is_some() || self.unconfirmed > 0
    }
}

/// What came of a version the room handed its worker.
pub struct SaveOutcome {
    /// Its place among the room's versions ([`HistoryState::queued`] when it was queued).
    pub queued: u64,
    /// Whether its storage was to be checked (it counted in [`HistoryState::unconfirmed`]).
    pub checked: bool,
    /// It held edits made since the version before it.
    pub had_edits: bool,
    /// Some of them came by a link key ([`HistoryState::by_link`]).
    pub by_link: bool,
    /// Who edited since the version before it.
    pub editors: Vec<String>,
    /// Saved (announced to everyone), or not kept.
    pub saved: Option<VersionInfo>,
}

/// A version for the worker to save.
pub struct SaveJob {
    pub file: FileId,
    pub epoch: u64,
    pub doc: String,
    pub info: VersionInfo,
    pub reply: Option<oneshot::Sender<Result<VersionInfo, WorkRefused>>>,
    /// What saving it takes, promised from the memory budget (none for a small document)
    /// and kept until the version is written.
    pub memory: Option<Reservation>,
    /// Whose storage the version is counted in: the file's owner's, or the file's own
    /// (the app's files; [`crate::storage::Storage::holder`]).
    pub holder: Holder,
    /// The share of the owner's storage the version must fit once its size is known (it
    /// is not saved past it); None for a restore's versions, kept whatever (the restore
    /// was checked before it was made, and must stay undoable).
    pub within: Option<Share>,
    /// Its place among the room's versions, and whether it held edits since the one
    /// before (see [`SaveOutcome`]).
    pub queued: u64,
    pub had_edits: bool,
    /// Some of its edits came by a link key.
    pub by_link: bool,
}

/// A version the room is to save, before it has a document: what kind, its words, and
/// the share of storage it must fit (see [`SaveJob::within`]).
pub struct Draft {
    pub kind: VersionKind,
    pub title: Option<String>,
    pub description: Option<String>,
    pub restored_from: Option<u64>,
    pub within: Option<Share>,
}

impl Draft {
    /// A version saved without being asked for: after edits, within the owner's storage.
    /// An automatic version, held to `share` of the storage.
    pub fn checkpoint(share: Share) -> Self {
        Self {
            kind: VersionKind::Auto,
            title: None,
            description: None,
            restored_from: None,
            within: Some(share),
        }
    }
}

/// What the history worker does for a room, in the order it was asked.
pub enum HistoryJob {
    Save(Box<SaveJob>),
    /// Delete a version (its delta folded into the next).
    Delete {
        file: FileId,
        epoch: u64,
        id: u64,
        reply: oneshot::Sender<StoreResult<()>>,
    },
}

/// What a person asks of the history through the room.
pub struct NameRequest {
    pub title: String,
    pub description: Option<String>,
    /// The share of the owner's storage the version must fit: the link's guests', or
    /// the whole.
    pub within: Share,
    /// Who names it (their name joins the version's editors only if they edited).
    pub reply: oneshot::Sender<Result<VersionInfo, WorkRefused>>,
}

/// News of the history for everyone in the room: `{"type":"version","event",...}`.
pub fn version_message(event: &str, version: &VersionInfo) -> String {
    json!({"type": "version", "event": event, "version": version}).to_string()
}

/// A restore the room carried out: the version it gave the restore's patch.
#[derive(Debug, Clone)]
pub struct Restored {
    /// The document version the restore was given.
    pub v: u64,
    pub restored_from: u64,
}

/// Why a room could not restore.
#[derive(Debug, Clone)]
pub enum RestoreError {
    /// The room is closing (ask again).
    Unavailable,
    /// As many restores of the file wait already as a room keeps (ask again).
    Busy,
    /// The restored document does not fit the document limits.
    TooLarge(String),
    /// The room's document is larger than the memory reserved for the restore covers
    /// (ask again when the node has more room).
    NoRoom,
    /// Its patch does not fit this share of the owner's storage (the whole limit, or the
    /// link's guests' part of it).
    StorageFull(Share),
}
