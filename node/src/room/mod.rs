//! A room: one open file, everyone in it, and the single writer of its versions.
//!
//! Each room is one task that owns its document. Sockets send it commands; it
//! validates and applies patches in arrival order, giving each the next version,
//! and hands each turn's patches to the [journal](crate::journal). Nothing a patch
//! causes (its ack, its relay, a welcome that includes it) leaves the room before
//! the journal reports it durable: those wait in `pending`, in version order.
//!
//! ```text
//! socket ──Patch──▶ room: apply, version+1 ──turn──▶ journal: one commit, one sync
//!                    ▲                                   │
//!                    └──────────── Appended(upto) ◀──────┘
//!                    release pending ≤ upto: ack to the sender, patch to everyone else
//! ```
//!
//! The decisions live in [`RoomCore`](self::core::RoomCore), which has no I/O and
//! no clock: the task here (the shell) feeds it commands and the time, and carries
//! out the effects it returns (journal appends, snapshots), so every rule can be
//! unit-tested without a socket or a store (`room/tests/`).

pub mod access;
mod changes;
mod compaction;
pub mod core;
mod durable;
mod edits;
mod exit;
pub mod history;
mod join;
mod load;
mod participant;
mod pending;
mod people;
pub mod presence;
pub mod recent;
pub mod registry;
pub mod restore;
mod rewrites;
mod seats;
pub mod server;
pub mod server_ops;
pub mod shares;
mod shell;
mod snapshot;
mod stall;
#[cfg(test)]
mod tests;
mod upkeep;
pub mod versions;
mod welcome;

use std::sync::Arc;

use tokio::sync::oneshot;

use atrium_coordinator::{Coordinator, NodeId};

use self::core::Rules;
use crate::journal::{Appended, Journal};
use crate::outbox::ConnId;
use crate::protocol::{Patch, PresenceUpdate};
use crate::store::{FileRecord, Store, StoreError};
pub use join::{JoinError, JoinRequest, Joined, Profile};
pub use rewrites::AddressRewrites;
pub use shell::Room;

/// What rooms share: settings, the store, the journal and the coordinator.
pub struct RoomContext {
    /// What every room's core decides by: settings, limits, budgets, metrics.
    pub rules: Rules,
    pub store: Arc<dyn Store>,
    pub journal: Journal,
    pub coordinator: Arc<dyn Coordinator>,
    pub node: NodeId,
    /// What loading each recent file cost, to refuse one too large without reading it.
    pub load_costs: load::LoadCosts,
    /// What each account's and each address's open rooms hold (`ATRIUM_ROOM_MEMORY_SHARE`).
    pub shares: Arc<shares::RoomShares>,
    /// Where the room's webhook events go (never waits).
    pub webhooks: Arc<crate::webhook::handle::Webhooks>,
}

pub enum RoomCmd {
    Join(JoinRequest, oneshot::Sender<Result<Joined, JoinError>>),
    Leave(ConnId),
    /// A patch, with its place in the room's bounded queue.
    Patch(ConnId, Patch, registry::Ticket),
    Presence(ConnId, PresenceUpdate),
    /// Presence waits in the room's inbox (`RoomHandle::presences`) for its next tick: a
    /// wake, sent by the first update since the room last took them.
    PresenceWaiting,
    Appended(Appended),
    SnapshotDone(Result<u64, StoreError>),
    /// The file's settings changed (link, keys, name).
    FileChanged(FileRecord),
    /// A socket's app token was refreshed: its new grant on this file (`None`: the
    /// file left the grant) and the new `exp`, answered with `refreshed` or a 4003.
    Regrant {
        conn: ConnId,
        grant: Option<crate::apptoken::Level>,
        exp: i64,
    },
    /// The file was deleted: everyone leaves with 4004.
    Deleted,
    /// The current document, once everything in it is durable.
    GetDoc(oneshot::Sender<(u64, String)>),
    /// The current document's size as the document limits count it.
    DocSize(oneshot::Sender<usize>),
    /// Finish what is in flight, close every socket with 1012, and stop.
    Shutdown(oneshot::Sender<()>),
    /// The file belongs to another node now (the ring changed): finish what is
    /// in flight, release the lease, close every socket with 4009, and stop.
    Move,
    /// Another node was seen taking the file's lease: the shell has its lease checked
    /// at once (a lost lease ends the room with 4009).
    CheckLease,
    /// Save the current document as a named version.
    NameVersion(versions::NameRequest),
    /// Restore a version: an edit through the room.
    Restore(restore::RestoreRequest),
    /// A restore's patch, prepared on the bulk lane.
    RestorePrepared(restore::Prepared),
    /// A job for the room's history worker (deleting a version), in order with its saves.
    History(versions::HistoryJob),
    /// Tell everyone in the room a version was saved, renamed or deleted.
    Announce(&'static str, crate::history::VersionInfo),
    /// What came of a version the room's worker was handed: saved, or not kept.
    VersionDone(versions::SaveOutcome),
    /// A patch from the server API: an edit under a service person.
    ServerPatch(server::ServerPatch),
    /// Who is in the room now.
    People(server::PeopleRequest),
    /// Close the sockets of a person or a `sub` with 4006; answers how many.
    Kick(server::KickTarget, oneshot::Sender<usize>),
    /// An event for everyone in the room (from a socket: not back to it), never stored.
    Event(server::Event),
}
