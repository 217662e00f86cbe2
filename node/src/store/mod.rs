//! The document store: accounts, sessions, files, snapshots and the op log.
//!
//! Rooms and the HTTP API talk only to the [`Store`] trait; the embedded store
//! ([`sqlite::SqliteStore`], a file database under the data folder) is the default.
//!
//! Ownership of a file's writes is fenced by its epoch (invariant 1 in docs/architecture.md):
//! [`Store::take_file`] raises the epoch before reading anything, and every append,
//! snapshot and trim carries the taker's epoch and fails with [`StoreError::Fenced`]
//! once someone else has raised it.

mod columns;
pub mod pg_tls;
pub mod postgres;
mod records;
pub mod sqlite;
mod webhooks;

#[cfg(test)]
pub(crate) mod conformance;

use std::sync::Arc;

use async_trait::async_trait;

pub use crate::apptoken::Revocation;
use crate::history::{VersionAge, VersionData, VersionInfo, VersionRow};
use crate::ids::{AccountId, ClientKey, FileId};
pub(crate) use records::SnapshotAndLog;
pub use records::{
    Account, ApiKey, FileAppend, FileRecord, FileUpdate, Holder, LinkAccess, LoggedPatch,
    SnapshotWrite, TakenFile,
};
pub use webhooks::{
    DueQuery, Trimmed, WebhookEndpoint, WebhookEvent, WebhookMessage, WebhookStore, WebhookUpdate,
    DROP_ORDER, EVENT_TYPES, FILE_UPDATED,
};

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

/// The first 8 bytes of the client key of every server API patch (`room::server`). A real
/// client's key is the first 16 bytes of a SHA-256, so it starts with these with a chance of
/// 2^-64. The stores index the rows that start with it, to forget expired ones cheaply.
pub const SERVER_OP_MARK: [u8; 8] = *b"\xA8svc-op\x01";

/// [`SERVER_OP_MARK`] in hex, as the stores' SQL spells it.
pub const SERVER_OP_MARK_HEX: &str = "a87376632d6f7001";

/// What one client's row of a file's `client_ops` (its highest op, so resends are never
/// applied twice) counts in [`Store::stored_bytes`]: about what it takes on disk with its
/// key and index. A row is kept for as long as the file, so a guest who says hello with a
/// new client id before each patch would otherwise add to the disk for free.
pub const CLIENT_ROW_BYTES: u64 = 128;

#[async_trait]
pub trait Store: WebhookStore + Send + Sync + 'static {
    /// Creates an account with a fresh id; `Conflict` when the email (in any case) is taken.
    async fn create_account(
        &self,
        email: &str,
        name: &str,
        password_hash: &str,
    ) -> StoreResult<Account> {
        let account = Account::new(email, name, password_hash);
        self.insert_account(&account).await?;
        Ok(account)
    }
    /// Stores a new account as [`Store::create_account`] made it: what each store implements.
    async fn insert_account(&self, account: &Account) -> StoreResult<()>;
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
    /// Deletes the account's sessions but `newest` (just made) and the `keep - 1` newest
    /// others, by when they were made; returns their token digests.
    async fn trim_sessions(
        &self,
        account: &AccountId,
        newest: [u8; 32],
        keep: u64,
    ) -> StoreResult<Vec<[u8; 32]>>;
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
    /// What an account's files (or one file) keep in the store, in bytes: each file's snapshot, the
    /// patches of its log, its versions (compressed, as stored, with their text and
    /// [`crate::history::VERSION_ROW_BYTES`] each), and [`CLIENT_ROW_BYTES`]
    /// for each client that ever had a patch of it logged. Text and blobs are counted by
    /// their length; other rows' own overhead is not.
    async fn stored_bytes(&self, holder: &Holder) -> StoreResult<u64>;
    async fn files_of(&self, owner: &AccountId) -> StoreResult<Vec<FileRecord>>;
    async fn update_file(&self, id: &FileId, update: FileUpdate) -> StoreResult<FileRecord>;
    async fn delete_file(&self, id: &FileId) -> StoreResult<()>;

    /// Raises the file's epoch, then reads its snapshot and the log after it, with
    /// `behind` patches before the snapshot kept for resume. A take that fails may still
    /// have raised the epoch (the embedded store commits it before it reads): the caller
    /// treats the file as taken by someone else.
    async fn take_file(&self, id: &FileId, behind: u64) -> StoreResult<TakenFile> {
        self.take_file_within(id, behind, u64::MAX).await
    }

    /// [`take_file`](Store::take_file), with the patches before the snapshot also bounded
    /// by their ops' bytes: the newest of them whose ops come to at most `behind_bytes`.
    /// They are only for resume, so a room's load reads no more of them than its recent
    /// operations can hold, however large the patches the log kept.
    async fn take_file_within(
        &self,
        id: &FileId,
        behind: u64,
        behind_bytes: u64,
    ) -> StoreResult<TakenFile>;
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
    ) -> StoreResult<()> {
        let write = SnapshotWrite {
            file,
            epoch,
            version,
            doc,
            keep,
        };
        self.put_snapshot(&write).await
    }
    /// What [`Store::write_snapshot`] does, its arguments in one: what each store implements.
    async fn put_snapshot(&self, write: &SnapshotWrite<'_>) -> StoreResult<()>;
    /// The latest snapshot and every patch after it (for compaction off the room).
    async fn snapshot_and_tail(
        &self,
        file: &FileId,
    ) -> StoreResult<(Option<(u64, String)>, Vec<LoggedPatch>)>;
    /// Whether the store answers (for /ready).
    async fn ping(&self) -> bool;

    // ------------------------------------------------------------ version history
    // Rows only: bases, deltas and what they mean are `crate::history`'s.

    /// Stores a file's next version (`info.id` is ignored: the store gives the next id,
    /// never reused) and answers its id. Fenced by `epoch`.
    async fn insert_version(
        &self,
        file: &FileId,
        epoch: u64,
        info: &VersionInfo,
        data: &VersionData,
    ) -> StoreResult<u64>;
    /// A file's versions with ids below `before` (all without it), newest first, at most
    /// `limit`. A file with no versions (or no file) answers an empty list.
    async fn versions(
        &self,
        file: &FileId,
        before: Option<u64>,
        limit: u64,
    ) -> StoreResult<Vec<VersionInfo>>;
    /// Every version of a file, newest first, with only what thinning needs (no text):
    /// kept light, as a file's named versions are many.
    async fn version_ages(&self, file: &FileId) -> StoreResult<Vec<VersionAge>>;
    /// The rows a version is read from: the newest base at or before it, then every row
    /// after that base up to the version itself, in id order. `NotFound` without it.
    async fn version_chain(&self, file: &FileId, id: u64) -> StoreResult<Vec<VersionRow>>;
    /// The version right after `id`, if any.
    async fn version_after(&self, file: &FileId, id: u64) -> StoreResult<Option<VersionRow>>;
    /// Names a version (it becomes `named`) or changes its title or description; `None`
    /// leaves a field alone, `Some(None)` clears the description.
    async fn name_version(
        &self,
        file: &FileId,
        id: u64,
        title: Option<String>,
        description: Option<Option<String>>,
    ) -> StoreResult<VersionInfo>;
    /// Deletes a version and, in the same transaction, replaces what the version after it
    /// stores (its delta merged, or made a base). Fenced by `epoch`.
    async fn drop_version(
        &self,
        file: &FileId,
        epoch: u64,
        id: u64,
        next: Option<(u64, VersionData)>,
    ) -> StoreResult<()>;
    /// Stores an API key by the digest of its secret; `Conflict` when the id is taken.
    async fn create_api_key(&self, key: &ApiKey, digest: [u8; 32]) -> StoreResult<()>;
    /// The API key whose secret has this digest.
    async fn api_key(&self, digest: [u8; 32]) -> StoreResult<ApiKey>;
    /// Every API key, oldest first.
    async fn api_keys(&self) -> StoreResult<Vec<ApiKey>>;
    /// Deletes an API key; `NotFound` when there is none with this id.
    async fn delete_api_key(&self, id: &str) -> StoreResult<()>;
    /// Records a revocation of app tokens until `until_ms` (a later one of the same
    /// `sub` or `jti` replaces it).
    async fn add_revocation(&self, r: &Revocation, until_ms: i64) -> StoreResult<()>;
    /// The revocations still in force, with when each ends (Unix ms).
    async fn revocations(&self) -> StoreResult<Vec<(Revocation, i64)>>;

    /// Files whose ids start with `prefix`, in id order (bytewise), after `after` if given,
    /// at most `limit`.
    async fn files_with_prefix(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u64,
    ) -> StoreResult<Vec<FileRecord>>;
    /// Forgets server API op ids (client keys starting with [`SERVER_OP_MARK`], whose logged
    /// op id is the time they were taken) taken before `before_ms`; answers how many.
    async fn prune_server_ops(&self, before_ms: i64) -> StoreResult<u64>;
}
