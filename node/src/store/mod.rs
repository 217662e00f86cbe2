//! The document store: accounts, sessions, files, snapshots and the op log.
//!
//! Rooms and the HTTP API talk only to the [`Store`] trait; the embedded store
//! ([`sqlite::SqliteStore`], a file database under the data folder) is the default.
//!
//! Ownership of a file's writes is fenced by its epoch (invariant 1 in docs/architecture.md):
//! [`Store::take_file`] raises the epoch before reading anything, and every append,
//! snapshot and trim carries the taker's epoch and fails with [`StoreError::Fenced`]
//! once someone else has raised it.

pub mod pg_tls;
pub mod postgres;
pub mod sqlite;

#[cfg(test)]
pub(crate) mod conformance;

use std::sync::Arc;

use async_trait::async_trait;

use crate::ids::{AccountId, ClientKey, FileId};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("already exists")]
    Conflict,
    /// Another node took the file: this writer must stop (close the room with 4009).
    #[error("fenced: the file's epoch moved on")]
    Fenced,
    /// The owner already has as many files as it may (see `create_file_capped`).
    #[error("the owner is at its cap of files")]
    Full,
    /// The store cannot be reached or failed; a retry may help.
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

#[derive(Debug, Clone)]
pub struct Account {
    pub id: AccountId,
    pub email: String,
    pub name: String,
    pub password_hash: String,
}

/// Who may reach a file by link key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkAccess {
    None,
    View,
    Edit,
}

impl LinkAccess {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkAccess::None => "none",
            LinkAccess::View => "view",
            LinkAccess::Edit => "edit",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(LinkAccess::None),
            "view" => Some(LinkAccess::View),
            "edit" => Some(LinkAccess::Edit),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct FileRecord {
    pub id: FileId,
    pub owner: AccountId,
    pub name: String,
    pub link: LinkAccess,
    pub view_key: String,
    pub edit_key: String,
    /// Bumped by every key rotation, so rooms can close sockets that joined with old keys.
    pub key_generation: u64,
    /// The last durable version.
    pub version: u64,
    pub updated_at: i64,
}

/// Changes to a file's settings; `None` leaves a field alone.
#[derive(Debug, Clone, Default)]
pub struct FileUpdate {
    pub name: Option<String>,
    pub link: Option<LinkAccess>,
    /// New (view_key, edit_key).
    pub keys: Option<(String, String)>,
}

/// One accepted patch, as the op log keeps it.
#[derive(Debug, Clone)]
pub struct LoggedPatch {
    pub version: u64,
    pub client: ClientKey,
    pub op_id: u64,
    /// Person id of the sender while its room lived (for relaying a resume).
    pub by: String,
    /// The `ops` array as the client sent it (validated JSON).
    pub ops: String,
    /// The sender's `t`, verbatim, when it gave one.
    pub t: Option<String>,
}

/// Everything a room appends for one file in one turn.
#[derive(Debug, Clone)]
pub struct FileAppend {
    pub file: FileId,
    pub epoch: u64,
    pub patches: Vec<LoggedPatch>,
}

/// What a node gets when it takes a file.
#[derive(Debug)]
pub struct TakenFile {
    pub record: FileRecord,
    pub epoch: u64,
    /// The latest snapshot: (version, document JSON).
    pub snapshot: Option<(u64, String)>,
    /// The log from (snapshot version - `behind` + 1) on, in version order: what
    /// the room replays on top of the snapshot and keeps for resume.
    pub log: Vec<LoggedPatch>,
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    async fn create_account(
        &self,
        email: &str,
        name: &str,
        password_hash: &str,
    ) -> StoreResult<Account>;
    /// The account of an email, matched without regard to case.
    async fn account_by_email(&self, email: &str) -> StoreResult<Account>;
    async fn account_by_id(&self, id: &AccountId) -> StoreResult<Account>;

    /// A session that works until `expires_at` (Unix ms).
    async fn create_session(
        &self,
        token_digest: [u8; 32],
        account: &AccountId,
        expires_at: i64,
    ) -> StoreResult<()>;
    /// The account a session token (by digest) belongs to; `NotFound` once it expired.
    async fn session_account(&self, token_digest: [u8; 32]) -> StoreResult<Account>;
    /// When a live session expires (Unix ms); `NotFound` when it is gone or expired.
    async fn session_expiry(&self, token_digest: [u8; 32]) -> StoreResult<i64>;
    async fn delete_session(&self, token_digest: [u8; 32]) -> StoreResult<()>;
    /// Deletes every session of an account; returns their digests (to close their sockets).
    async fn delete_sessions_of(&self, account: &AccountId) -> StoreResult<Vec<[u8; 32]>>;
    /// Deletes the sessions that expired; returns how many.
    async fn delete_expired_sessions(&self) -> StoreResult<u64>;

    /// Creates a file, with an optional initial document stored as its version-0 snapshot.
    async fn create_file(&self, record: &FileRecord, doc: Option<String>) -> StoreResult<()> {
        self.create_file_capped(record, doc, u64::MAX).await
    }
    /// Creates a file as [`Store::create_file`] does, unless its owner already owns
    /// `max_owned` files: then [`StoreError::Full`]. The count and the insert are one
    /// transaction, serialised per owner, so concurrent creations never pass the cap.
    async fn create_file_capped(
        &self,
        record: &FileRecord,
        doc: Option<String>,
        max_owned: u64,
    ) -> StoreResult<()>;
    async fn file(&self, id: &FileId) -> StoreResult<FileRecord>;
    async fn files_of(&self, owner: &AccountId) -> StoreResult<Vec<FileRecord>>;
    async fn update_file(&self, id: &FileId, update: FileUpdate) -> StoreResult<FileRecord>;
    async fn delete_file(&self, id: &FileId) -> StoreResult<()>;

    /// Raises the file's epoch, then reads its snapshot and the log after it, with
    /// `behind` patches before the snapshot kept for resume.
    async fn take_file(&self, id: &FileId, behind: u64) -> StoreResult<TakenFile>;
    /// Appends every file's patches in one transaction and one sync. Each file is
    /// fenced on its own: the result per file says whether its append landed.
    async fn append(&self, batch: Arc<[FileAppend]>) -> StoreResult<Vec<StoreResult<()>>>;
    /// The file's current epoch: whoever took it last raised it (`NotFound` when the file is
    /// gone). A holder whose lease lapsed checks it before taking the lease back.
    async fn epoch(&self, id: &FileId) -> StoreResult<u64>;
    /// The highest op id accepted from a client in a file, with its version.
    async fn client_op(&self, file: &FileId, client: ClientKey) -> StoreResult<Option<(u64, u64)>>;
    /// Writes a snapshot at `version` unless one of a higher version exists, then
    /// trims the log to `keep` patches behind it. Fenced by `epoch`.
    async fn write_snapshot(
        &self,
        file: &FileId,
        epoch: u64,
        version: u64,
        doc: &str,
        keep: u64,
    ) -> StoreResult<()>;
    /// The latest snapshot and every patch after it (for compaction off the room).
    async fn snapshot_and_tail(
        &self,
        file: &FileId,
    ) -> StoreResult<(Option<(u64, String)>, Vec<LoggedPatch>)>;
    /// Whether the store answers (for /ready).
    async fn ping(&self) -> bool;
}
