//! What a room keeps about restores: the one being prepared off the room's task (and the
//! nodes edits touched since its copy was taken), and those waiting their turn.

use std::collections::{HashSet, VecDeque};

use tokio::sync::oneshot;

use crate::doc::Op;
use crate::history::VersionInfo;
use crate::room::versions::{RestoreError, Restored};

/// Nodes noted as touched while a restore is prepared; past this the room computes the
/// whole patch itself (one pass over both documents) instead of correcting the lane's.
const TOUCHED_MAX: usize = 4096;

pub struct RestoreRequest {
    /// The version restored, and its document (compact JSON).
    pub from: VersionInfo,
    pub doc: String,
    /// The most document bytes (counted as the document limits count them) the memory
    /// reserved for this restore covers: the room's document over it is refused.
    pub limit: usize,
    /// Who restores it (a name, for the version's editors).
    pub by: String,
    /// The share of the owner's storage the restore must fit: the link's guests', or
    /// the whole.
    pub within: crate::storage::Share,
    pub reply: oneshot::Sender<Result<Restored, RestoreError>>,
}

/// The restores of a room: the one being prepared (and the nodes edits touched since its
/// copy was taken), and those waiting their turn.
#[derive(Default)]
pub struct RestoreState {
    pub(super) seq: u64,
    pub(super) preparing: Option<InFlight>,
    pub(super) waiting: VecDeque<RestoreRequest>,
}

pub(super) struct InFlight {
    pub(super) seq: u64,
    pub(super) req: RestoreRequest,
    /// Nodes that edits since the copy changed; `None` once more than [`TOUCHED_MAX`].
    pub(super) touched: Option<HashSet<String>>,
}

impl RestoreState {
    /// Nothing prepared or waiting (a room may then end when idle).
    pub fn is_idle(&self) -> bool {
        self.preparing.is_none() && self.waiting.is_empty()
    }

    /// An edit was applied: its nodes, if a restore is being prepared. Every path that changes
    /// the room's document calls this (a socket's patch, the server API's): a change it misses
    /// is in the log and at the clients but not in the restored document.
    pub(in crate::room) fn touched(&mut self, ops: &[Op]) {
        let Some(f) = &mut self.preparing else {
            return;
        };
        if let Some(t) = &mut f.touched {
            t.extend(ops.iter().map(|op| op.id().to_owned()));
            if t.len() > TOUCHED_MAX {
                f.touched = None;
            }
        }
    }
}
