//! Restoring a version: an edit like any other. The room computes the patch that turns its
//! document into the restored one, gives it the next version and hands it to the journal
//! with the turn (fenced by the epoch like every append); once it is durable the caller
//! hears of it, everyone in the room gets it as a `patch` (so every client converges without
//! a reload) and a `restored` message, and the result is saved as a "Restored from …"
//! version. Edits before it in the room's queue are applied before it, edits after it on
//! top of it: none is lost.
//!
//! The patch of a large document is computed off the room's task, in two steps:
//!
//! ```text
//! Restore ──▶ room: copy its document (version B), start noting the nodes edits touch
//!               └──Effect::Restore──▶ bulk lane: read the version, patch B → version
//! RestorePrepared ◀──────────────────────┘
//!   room: the patch, with the ops of the nodes touched since B made anew from the
//!   document as it is now; version+1, journal, and the restored document taken whole
//! ```
//!
//! The restore takes its place among the edits when its patch comes back: edits that
//! arrived meanwhile are ordered before it (and their nodes are corrected in its patch).
//! One restore is prepared at a time; `ATRIUM_RESTORES_WAITING` more may wait, and more than
//! that are refused (503).

use std::collections::HashSet;
use std::time::Instant;

use serde_json::json;

use super::core::RoomCore;
use super::pending::Pending;
use super::recent::RecentOp;
use super::versions::Draft;
pub use super::versions::{RestoreError, Restored};
use crate::history::{VersionInfo, VersionKind};
use crate::ids::ClientKey;
use crate::outbox::shared;
use crate::protocol;
use crate::store::LoggedPatch;

mod correct;
pub(in crate::room) mod prepare;
pub(in crate::room) mod state;
pub use correct::correct;
pub use prepare::{PrepareJob, Prepared, RestorePatch};
use state::InFlight;
pub use state::{RestoreRequest, RestoreState};

/// The client key restores are logged under (no real client's digest is all 0xA7).
pub const RESTORE_CLIENT: ClientKey = ClientKey([0xA7; 16]);
/// The `by` of a restore's `patch` message.
pub const RESTORE_PERSON: &str = "restore";
/// The title of the version a restore saves.
pub fn restored_title(from: &VersionInfo) -> String {
    match &from.title {
        Some(t) => format!("Restored from \u{201c}{t}\u{201d}"),
        None => format!("Restored from version {}", from.id),
    }
}

impl RoomCore {
    /// A restore asked for: prepared on the lane at once, or after the one before it.
    pub(super) fn restore(&mut self, req: RestoreRequest) {
        if self.finishing.is_some() {
            let _ = req.reply.send(Err(RestoreError::Unavailable));
        } else if self.doc.charged_len() > req.limit {
            // The patch and the copy are as large as the document it starts from, and the
            // memory reserved was for documents up to `limit`.
            let _ = req.reply.send(Err(RestoreError::NoRoom));
        } else if self.restores.preparing.is_none() {
            self.prepare_restore(req);
        } else if self.restores.waiting.len() < self.rules.config.restores_waiting {
            // Each waiting one holds a version's document: `ATRIUM_RESTORES_WAITING` bounds them.
            self.restores.waiting.push_back(req);
        } else {
            let _ = req.reply.send(Err(RestoreError::Busy));
        }
    }

    /// Hands the heavy part to the shell (the bulk lane) with a copy of the document.
    fn prepare_restore(&mut self, mut req: RestoreRequest) {
        self.restores.seq += 1;
        let job = PrepareJob {
            seq: self.restores.seq,
            base: self.doc.clone(),
            target: std::mem::take(&mut req.doc),
            limits: self.rules.limits.clone(),
        };
        self.restores.preparing = Some(InFlight {
            seq: job.seq,
            req,
            touched: Some(HashSet::new()),
        });
        self.effect(super::exit::Effect::Restore(job));
    }

    /// The lane's answer: the restore takes the next version now.
    pub(super) fn restore_prepared(&mut self, prepared: Prepared, now: Instant) {
        let Some(f) = self.restores.preparing.take_if(|f| f.seq == prepared.seq) else {
            return;
        };
        match (prepared.outcome, self.finishing.is_some()) {
            (_, true) => {
                let _ = f.req.reply.send(Err(RestoreError::Unavailable));
            }
            (Err(e), false) => {
                let _ = f.req.reply.send(Err(RestoreError::TooLarge(e)));
            }
            (Ok(patch), false) => self.apply_restore(f.req, patch, f.touched, now),
        }
        // The next that waits, and past any refused at once (for want of memory).
        while self.restores.preparing.is_none() {
            let Some(next) = self.restores.waiting.pop_front() else {
                break;
            };
            self.restore(next);
        }
    }

    fn apply_restore(
        &mut self,
        req: RestoreRequest,
        patch: RestorePatch,
        touched: Option<HashSet<String>>,
        now: Instant,
    ) {
        let (ops_json, doc) = correct(&self.doc, patch, touched);
        // The restore's patch is kept in the log and again, about, in the version it saves:
        // both must fit the share of the owner's storage of whoever restores.
        let keeps = 2 * ops_json.len() as u64;
        let storage = &self.rules.storage;
        let holder = &self.holder;
        if let Err(full) = storage.may_keep(holder, keeps, req.within, "restore") {
            let _ = req.reply.send(Err(RestoreError::StorageFull(full)));
            return;
        }
        storage.added(holder, ops_json.len() as u64);
        // Edits since the last version are kept as a version of their own first, so the
        // restore can be undone exactly by restoring the version before it.
        if self.history.unkept() {
            let memory = self.promise_save_if_room();
            let draft = Draft {
                within: None,
                ..Draft::checkpoint(crate::storage::Share::Whole)
            };
            self.save_version(draft, None, memory);
        }
        self.doc = doc;
        self.version += 1;
        let v = self.version;
        let relay = shared(protocol::relay(v, RESTORE_PERSON, &ops_json, None));
        self.snapshot.logged(ops_json.len(), now);
        self.recent.push(RecentOp {
            v,
            client: RESTORE_CLIENT,
            op_id: v,
            t: None,
            relay: relay.clone(),
        });
        self.unsent.push(LoggedPatch {
            version: v,
            client: RESTORE_CLIENT,
            op_id: v,
            by: RESTORE_PERSON.into(),
            ops: ops_json,
            t: None,
        });
        let notice = json!({
            "type": "restored",
            "v": v,
            "from": req.from,
            "by": req.by,
        })
        .to_string();
        self.pending.push_back(Pending::Restore {
            v,
            relay,
            notice: shared(notice),
            reply: req.reply,
            done: Restored {
                v,
                restored_from: req.from.id,
            },
        });
        self.edited(&req.by, now);
        let draft = Draft {
            kind: VersionKind::Restore,
            title: Some(restored_title(&req.from)),
            description: None,
            restored_from: Some(req.from.id),
            within: None,
        };
        self.save_version(draft, None, self.promise_save_if_room());
    }
}
