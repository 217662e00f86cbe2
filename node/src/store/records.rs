//! What the stores keep and hand back: accounts, files, patches.

use crate::ids::{AccountId, ClientKey, FileId};

#[derive(Debug, Clone)]
pub struct Account {
    pub id: AccountId,
    pub email: String,
    pub name: String,
    pub password_hash: String,
}

impl Account {
    /// A new account with a fresh id, as a store creates it.
    pub(crate) fn new(email: &str, name: &str, password_hash: &str) -> Self {
        Self {
            id: AccountId::generate(),
            email: email.to_owned(),
            name: name.to_owned(),
            password_hash: password_hash.to_owned(),
        }
    }
}

/// An API key of the app's backend: its id, name and scopes (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_at: i64,
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

/// Whose bytes a storage measure counts ([`crate::store::Store::stored_bytes`]): an
/// account's files together, or one file (the app's own files, whose account has no limit,
/// are held to a share each for the people who reach them by link).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Holder {
    Account(AccountId),
    File(FileId),
}

impl Holder {
    /// The `files` column a measure selects by, and the value it must have.
    pub(crate) fn column_and_value(&self) -> (&'static str, &str) {
        match self {
            Holder::Account(a) => ("owner", a.as_str()),
            Holder::File(f) => ("id", f.as_str()),
        }
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::Account(a) => write!(f, "account {a}"),
            Holder::File(id) => write!(f, "file {id}"),
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
    /// Whether viewers may list and read the file's versions (editors always may).
    pub viewers_see_history: bool,
}

/// Changes to a file's settings; `None` leaves a field alone.
#[derive(Debug, Clone, Default)]
pub struct FileUpdate {
    pub name: Option<String>,
    pub link: Option<LinkAccess>,
    /// New (view_key, edit_key).
    pub keys: Option<(String, String)>,
    pub viewers_see_history: Option<bool>,
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

/// A file's latest snapshot (version, document JSON), if any, and patches of its log.
pub(crate) type SnapshotAndLog = (Option<(u64, String)>, Vec<LoggedPatch>);

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

/// A snapshot to write: [`super::Store::write_snapshot`]'s arguments.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotWrite<'a> {
    pub file: &'a FileId,
    /// The writer's epoch: the write is fenced by it.
    pub epoch: u64,
    pub version: u64,
    /// The document JSON.
    pub doc: &'a str,
    /// How many patches to keep behind the snapshot.
    pub keep: u64,
}
