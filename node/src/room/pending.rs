//! What waits in a room for a version to become durable before it may leave.

use tokio::sync::oneshot;

use super::server::requests::{ServerPatchError, ServerPatched};
use super::versions::HistoryJob;
use super::versions::{RestoreError, Restored};
use crate::outbox::{ConnId, Msg};

/// Something waiting for a version to become durable.
pub(super) enum Pending {
    /// An accepted patch: its ack for the sender, its relay for everyone else.
    Patch {
        v: u64,
        from: ConnId,
        ack: Msg,
        relay: Msg,
        /// Its place in the room's inbound bytes, held until it is durable and sent: what
        /// a room holds of patches not yet durable (their text for the journal, their
        /// relay, their parsed ops) is bounded by the same
        /// [`INBOUND_BYTES`](super::registry::INBOUND_BYTES) as its queue, and sockets
        /// sending more wait, reading nothing.
        _inbound: super::registry::Ticket,
    },
    /// A frame for one socket (the ack of a resent patch).
    Direct { v: u64, to: ConnId, frame: Msg },
    /// A welcome: it may be larger than a send queue (see [`Budget`]). `charged` is what
    /// its joiner's address was charged for it, given back if it is never sent.
    Welcome {
        v: u64,
        to: ConnId,
        frame: crate::outbox::Out,
        charged: Option<(std::net::IpAddr, u64)>,
    },
    Doc {
        v: u64,
        doc: String,
        reply: oneshot::Sender<(u64, String)>,
    },
    /// A version to save once the document it holds is durable.
    Version { v: u64, job: HistoryJob },
    /// A restore: its patch for everyone, the `restored` message, the caller's answer.
    Restore {
        v: u64,
        relay: Msg,
        notice: Msg,
        reply: oneshot::Sender<Result<Restored, RestoreError>>,
        done: Restored,
    },
    /// A server API patch (or a retry of one: no relay): its relay, the caller's answer.
    Server {
        v: u64,
        relay: Option<Msg>,
        reply: oneshot::Sender<Result<ServerPatched, ServerPatchError>>,
        done: ServerPatched,
    },
}

impl Pending {
    pub(super) fn version(&self) -> u64 {
        match self {
            Pending::Patch { v, .. }
            | Pending::Direct { v, .. }
            | Pending::Welcome { v, .. }
            | Pending::Doc { v, .. }
            | Pending::Version { v, .. }
            | Pending::Restore { v, .. }
            | Pending::Server { v, .. } => *v,
        }
    }
}
