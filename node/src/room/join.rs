//! What a join asks of a room, and what it is answered.

use atrium_protocol::CloseCode;

use std::sync::Arc;

use crate::apptoken::Level;
use crate::ids::{AccountId, ClientKey, PersonId};
use crate::outbox::Outbox;

use super::access::{self, Denied, Role};

#[derive(Clone)]
pub struct JoinRequest {
    pub outbox: Outbox,
    pub client: ClientKey,
    pub account: Option<(AccountId, String)>,
    pub key: Option<String>,
    pub name: Option<String>,
    pub since: Option<u64>,
    /// The client's highest durable op id in this file, read from the store.
    pub stored_op: u64,
    /// When that read began: a room that has forgotten durable writers since asks for it
    /// again ([`JoinError::Reread`]).
    pub stored_op_read_at: std::time::Instant,
    /// Where the room tells the socket its role.
    pub seat: access::Seat,
    /// What an app token's grant gives on this file.
    pub grant: Option<Level>,
    /// An app person's `sub`, color and avatar, shown to others.
    pub profile: Option<Arc<Profile>>,
    /// Whether the joiner may edit the file, as checked before the room was asked for
    /// (see `shares::Opener::editor`); None when it was not checked because the room was
    /// open (the room checks every joiner itself), and then the join opens no room.
    pub may_edit: Option<bool>,
}

/// What others see of a person an app token let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub sub: String,
    pub color: Option<String>,
    pub avatar: Option<String>,
}

#[derive(Debug)]
pub struct Joined {
    pub person: PersonId,
    pub role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinError {
    Denied(Denied),
    NotFound,
    /// The file has as many people as it allows (4031).
    Full,
    /// The room is closing; ask the registry again.
    Retry,
    /// The node is shutting down or cannot load the file.
    Unavailable(CloseCode),
    /// The joiner's address has been sent its share of documents; it may come back
    /// after this long (1013 with `retry-ms`).
    Paced(std::time::Duration),
    /// Opening the room would take its account or its opening address past their share of
    /// the memory open rooms take (1013).
    OverShare(super::shares::OverShare),
    /// The room closed before a joiner whose access was not checked reached it: check,
    /// then ask again (never sent to a client).
    Unchecked,
    /// The room forgot writers whose patches are durable after the joiner's op id was read
    /// from the store (or was opened after it: it knew nobody then), and does not know the
    /// joiner: the read may miss a patch that was not yet durable then. Read it again, then
    /// ask again; after a few tries, a close 1013 "try again later".
    Reread,
}

impl JoinError {
    pub fn reason(self) -> &'static str {
        match self {
            JoinError::Denied(Denied::Unauthorized) => "not signed in, or a bad key",
            JoinError::Denied(Denied::Forbidden) => "no access to this file",
            JoinError::NotFound => "file not found",
            JoinError::Full => "the file is full",
            JoinError::Retry
            | JoinError::Unchecked
            | JoinError::Reread
            | JoinError::Unavailable(CloseCode::TryAgainLater) => "try again later",
            JoinError::Paced(_) => {
                "this address was sent its share of documents for now; try again later"
            }
            JoinError::OverShare(over) => over.reason(),
            JoinError::Unavailable(CloseCode::Moved) => "moved: another node serves this file",
            JoinError::Unavailable(_) => "server restarting",
        }
    }

    pub fn close_code(self) -> CloseCode {
        match self {
            JoinError::Denied(d) => d.close_code(),
            JoinError::NotFound => CloseCode::NotFound,
            JoinError::Full => CloseCode::FileFull,
            JoinError::Retry
            | JoinError::Unchecked
            | JoinError::Reread
            | JoinError::Paced(_)
            | JoinError::OverShare(_) => CloseCode::TryAgainLater,
            JoinError::Unavailable(code) => code,
        }
    }
}
