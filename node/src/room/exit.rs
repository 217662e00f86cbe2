//! How a room ends, and what the core asks its shell to do.

use atrium_protocol::CloseCode;

use crate::store::FileAppend;

use super::snapshot::SnapshotJob;

/// What the shell carries out for the core.
pub enum Effect {
    /// Make this turn's patches durable; the result comes back as `Appended`.
    Append(FileAppend),
    /// Rebuild and write a snapshot; the result comes back as `SnapshotDone`.
    Snapshot(SnapshotJob),
    /// Save or delete a version, on the room's history worker (in order).
    History(super::versions::HistoryJob),
    /// A `person.*` webhook event of the file: its type, its `data` (the shell stamps the
    /// time), and the client address of the person it names (whose part of the room's
    /// allowance it takes).
    Webhook(&'static str, serde_json::Value, Option<std::net::IpAddr>),
    /// Prepare a restore's patch on the bulk lane; the result comes back as `RestorePrepared`.
    Restore(super::restore::prepare::PrepareJob),
}

/// How a room ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Idle,
    Shutdown,
    /// Handed over to the file's new ring owner.
    Moved,
    Deleted,
    /// The coordinator lease lapsed or went to another node.
    LeaseLost,
    /// A durable write was refused by the store's epoch fence: another node took the file.
    Fenced,
}

impl Exit {
    /// The `reason` label of `atrium_room_exits_total`.
    pub fn reason(self) -> &'static str {
        match self {
            Exit::Idle => "idle",
            Exit::Shutdown => "shutdown",
            Exit::Moved => "moved",
            Exit::Deleted => "deleted",
            Exit::LeaseLost => "lease-lost",
            Exit::Fenced => "fenced",
        }
    }

    /// What everyone still in the room is told as it ends.
    pub(super) fn close(self) -> Option<(CloseCode, &'static str)> {
        match self {
            Exit::Deleted => Some((CloseCode::NotFound, "file deleted")),
            Exit::Fenced | Exit::LeaseLost | Exit::Moved => {
                Some((CloseCode::Moved, "moved: this node no longer owns the file"))
            }
            Exit::Shutdown => Some((CloseCode::ServiceRestart, "server restarting")),
            Exit::Idle => None,
        }
    }
}

pub(super) struct Finishing {
    pub(super) exit: Exit,
    pub(super) reply: Option<tokio::sync::oneshot::Sender<()>>,
}

#[cfg(test)]
#[test]
fn every_exit_reason_is_exported_at_zero() {
    let all = [
        Exit::Idle,
        Exit::Shutdown,
        Exit::Moved,
        Exit::Deleted,
        Exit::LeaseLost,
        Exit::Fenced,
    ];
    for exit in all {
        assert!(crate::metrics::ROOM_EXIT_REASONS.contains(&exit.reason()));
    }
}
